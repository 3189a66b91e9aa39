package sandbox

import (
	"os"
	"sync"
	"sync/atomic"
)

// floodLimit is how much a command may print, stdout and stderr together, before it is
// killed: past it, the output is noise to the model and the command likely loops.
const floodLimit = 64 << 20

// capture reads one output pipe to its end, keeping the first max bytes and counting the
// rest, so that a command printing gigabytes never blocks on a full pipe.
type capture struct {
	max     int
	buf     []byte
	dropped int64
}

// outputs is the two captures of one command and their shared flood accounting.
type outputs struct {
	stdout, stderr capture
	total          atomic.Int64
	flooded        chan struct{} // closed once total passes floodLimit
	once           sync.Once
	wg             sync.WaitGroup
}

func newOutputs(max int) *outputs {
	return &outputs{stdout: capture{max: max}, stderr: capture{max: max}, flooded: make(chan struct{})}
}

// drain starts reading f into c; wait for it with o.wg.
func (o *outputs) drain(f *os.File, c *capture) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		p := make([]byte, 64<<10)
		for {
			n, err := f.Read(p)
			if n > 0 {
				keep := min(n, c.max-len(c.buf))
				c.buf = append(c.buf, p[:keep]...)
				c.dropped += int64(n - keep)
				if o.total.Add(int64(n)) > floodLimit {
					o.once.Do(func() { close(o.flooded) })
				}
			}
			if err != nil {
				return
			}
		}
	}()
}

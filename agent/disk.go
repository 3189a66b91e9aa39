package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The sandbox caps each file (RLIMIT_FSIZE) and the private /tmp, but the copy and the Go
// build cache live on the user's disk and a command could fill it with many files. A disk
// guard watches the free space of the copy's file system while each command runs (a statfs
// every 50 ms); when it has shrunk by more than the budget, it measures what the copy and the
// cache really hold (others' writes do not count) and kills the command once the episode's
// commands have added more than their budget: by default 8 GiB, and never more than half of
// what was free when the episode began, so the machine keeps working.

// DefaultDiskBudget is Options.DiskBudget's default.
const DefaultDiskBudget = 8 << 30

// diskSlack is what a command may still add when the episode is already over its budget:
// enough to run `rm`, `git status` and a test, not enough to matter.
const diskSlack = 64 << 20

// diskPoll is how often a running command's disk use is looked at; a command writing at
// disk speed overshoots the budget by about this much time's worth.
const diskPoll = 50 * time.Millisecond

var errDiskBudget = errors.New("disk budget exceeded")

type diskGuard struct {
	dirs   []string // what the commands can write on disk: the copy, their Go build cache
	budget int64

	mu    sync.Mutex
	start int64 // free bytes when the episode began, moved up by others' writes (rebase) and by any space freed
	base  int64 // bytes the dirs held when the episode began
}

// newDiskGuard measures the free space of the first dir's file system and what dirs hold.
func newDiskGuard(limit int64, dirs ...string) (*diskGuard, error) {
	free, err := freeBytes(dirs[0])
	if err != nil {
		return nil, fmt.Errorf("agent: free space of %s: %w", dirs[0], err)
	}
	g := &diskGuard{dirs: dirs, start: free, budget: min(limit, free/2)}
	g.base = g.held()
	return g, nil
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// used is how much the file system's free space shrank since the episode began: cheap, but
// other programs' writes count too, so it only triggers a closer look (grown).
func (g *diskGuard) used() int64 {
	free, err := freeBytes(g.dirs[0])
	if err != nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// Space freed by others (or by the episode itself) raises the baseline: otherwise a
	// large delete elsewhere during a command hides as much of the command's own writes
	// (it did in a loaded test run). Measured from the highest free space seen, the cheap
	// figure never counts less than the episode's own growth; over-counting only costs a
	// closer look (grown).
	if free > g.start {
		g.start = free
	}
	return g.start - free
}

// held is the disk space the dirs take (blocks, so sparse files count for what they use).
func (g *diskGuard) held() int64 {
	var n int64
	for _, d := range g.dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				if info, err := e.Info(); err == nil {
					if st, ok := info.Sys().(*syscall.Stat_t); ok {
						n += st.Blocks * 512
					}
				}
			}
			return nil
		})
	}
	return n
}

// grown is what the episode's commands really added; the free-space figure is brought in
// line with it, so that others' writes stop counting.
func (g *diskGuard) grown() int64 {
	free, _ := freeBytes(g.dirs[0])
	grown := g.held() - g.base
	g.mu.Lock()
	g.start = free + grown
	g.mu.Unlock()
	return grown
}

// watch cancels ctx with errDiskBudget once the episode's commands have added more than
// the budget, or, when they were already past it as the command began, once the command
// adds diskSlack more. Call the returned function when the command is over.
func (g *diskGuard) watch(cancel context.CancelCauseFunc) (stop func()) {
	u := g.used()
	if u > g.budget {
		u = g.grown() // over by the cheap measure: look closer before holding it against the command
	}
	limit := max(g.budget, u+diskSlack)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(diskPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if g.used() > limit && g.grown() > limit {
					cancel(errDiskBudget)
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// diskNote tells the model why its command was stopped.
func (g *diskGuard) diskNote() string {
	return fmt.Sprintf("\n[killed: the episode has written more than its disk budget of %d MiB (%d MiB now); remove large files you made before going on]",
		g.budget>>20, max(g.used(), 0)>>20)
}

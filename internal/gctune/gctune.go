// Package gctune paces the garbage collector of the language server, a long-running
// process whose heap is small but which allocates a new copy of a document on every
// keystroke (117 KB for a 10,000-line file). At Go's default GOGC of 100 a small heap is
// collected every few keystrokes, and a keystroke that lands on a collection is the slow
// one: the p99 of didChange + codeAction. A larger GOGC while the heap is small makes
// collections rarer, for a bounded amount of memory (Headroom), and returns to the
// default as the heap grows.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

const (
	// Headroom is what a collection lets the heap grow by before the next one, at most
	// (the live heap times GOGC/100), unless GOGC is already at its floor.
	Headroom = 64 << 20
	// Max is the GOGC for a heap of Headroom/4 or less; Min the one for a heap of
	// Headroom or more (Go's default).
	Max = 400
	Min = 100
)

// Percent is the GOGC for a live heap of live bytes: Headroom/live in percent, kept
// between Min and Max.
func Percent(live uint64) int {
	if live == 0 {
		return Max
	}
	p := uint64(Headroom) * 100 / live
	return int(min(max(p, Min), Max))
}

// Start sets GOGC to Percent of the live heap, and again after every collection, until
// stop is called, which restores the GOGC it found. It does nothing when the user set
// GOGC (getenv reads the environment): theirs wins.
func Start(getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	t := &tuner{}
	t.prev = debug.SetGCPercent(Max)
	t.cur = Max
	t.arm()
	return t.stop
}

type tuner struct {
	mu      sync.Mutex // guards all below: the cleanup goroutine against stop
	cur     int
	prev    int
	stopped bool
	sample  [1]metrics.Sample
}

// sentinel is garbage made to learn when a collection happened: its cleanup runs after
// one. Large enough not to share a tiny-allocator block, whose cleanups may never run.
type sentinel struct{ _ [32]byte }

func (t *tuner) arm() {
	s := new(sentinel)
	runtime.AddCleanup(s, (*tuner).collected, t)
}

// collected runs on the runtime's cleanup goroutine after each collection.
func (t *tuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.sample[0].Name = "/gc/heap/live:bytes"
	metrics.Read(t.sample[:])
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	if p := Percent(live); p != t.cur {
		debug.SetGCPercent(p)
		t.cur = p
	}
	t.arm()
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	debug.SetGCPercent(t.prev)
}

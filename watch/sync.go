package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// ErrClosed is returned by Sync once the watcher has stopped.
var ErrClosed = errors.New("watch: the watcher is closed")

// Sync returns once every change made before it was called has been delivered to onBatch
// (the batch being gathered is delivered at once, without waiting for the debounce). A
// caller about to act on what it was told, such as a run about to start from the copy kept
// ready, calls it so that a file saved a moment earlier is not missed.
//
// It works as a barrier in the kernel's event queue, which is in order: Sync writes a
// marker file into a private folder that the same inotify instance watches (made on first
// use in the temp dir, removed by Close), and all events queued before the marker's are
// handled before it.
func (w *Watcher) Sync(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case w.syncs <- done:
	case <-w.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-w.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// barrier is the loop's side of Sync.
type barrier struct {
	dir     string
	n       int
	waiting []waiter // in marker order
}

type waiter struct {
	marker string
	done   chan<- error
}

// startSync writes a marker for a Sync call; its Create event releases the caller.
func (w *Watcher) startSync(done chan<- error) {
	b := &w.barrier
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "frognano-watch-sync-")
		if err != nil {
			done <- fmt.Errorf("watch: sync: %w", err)
			return
		}
		b.dir = dir
	}
	if err := w.watchSyncDir(); err != nil {
		done <- err
		return
	}
	b.n++
	marker := filepath.Join(b.dir, fmt.Sprintf("m%d", b.n))
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		done <- fmt.Errorf("watch: sync: %w", err)
		return
	}
	b.waiting = append(b.waiting, waiter{marker, done})
}

// watchSyncDir (re)adds the marker folder's watch: a rebuild after lost events starts a new
// inotify instance without it. Adding a watch that exists is a no-op.
func (w *Watcher) watchSyncDir() error {
	if w.barrier.dir == "" {
		return nil
	}
	if err := w.fsw.Add(w.barrier.dir); err != nil {
		return fmt.Errorf("watch: sync: %w", err)
	}
	return nil
}

// handleSync takes an event in the marker folder; false if ev is not one.
func (w *Watcher) handleSync(ev fsnotify.Event) bool {
	b := &w.barrier
	if b.dir == "" || !strings.HasPrefix(ev.Name, b.dir+string(filepath.Separator)) {
		return false
	}
	if !ev.Has(fsnotify.Create) {
		return true
	}
	// An overflow handed over before this event may not be recorded yet: wait until it is,
	// so that flush reports it instead of a batch that lacks the lost events.
	reply := make(chan struct{})
	select {
	case w.drained <- reply:
		<-reply
	case <-w.ctx.Done():
	}
	w.flush()
	for i, s := range b.waiting { // flush may have answered them all (overflow)
		if s.marker == ev.Name {
			w.releaseSyncs(i+1, nil)
			break
		}
	}
	return true
}

// releaseSyncs answers the first n waiting Sync calls with err and removes their markers.
func (w *Watcher) releaseSyncs(n int, err error) {
	b := &w.barrier
	for _, s := range b.waiting[:n] {
		os.Remove(s.marker)
		s.done <- err
	}
	b.waiting = b.waiting[n:]
}

// endSync releases every waiting Sync and removes the marker folder; the loop is ending.
func (w *Watcher) endSync() {
	w.releaseSyncs(len(w.barrier.waiting), ErrClosed)
	if w.barrier.dir != "" {
		os.RemoveAll(w.barrier.dir)
	}
}

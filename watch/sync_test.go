package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSync: with a debounce far longer than the test, Sync still returns only after the
// changes made before it were delivered, every time; after Close it fails and its folder
// is gone.
func TestSync(t *testing.T) {
	root := t.TempDir()
	w, r := startWatch(t, context.Background(), root, Options{Debounce: time.Hour})
	for i, name := range []string{"a.go", "b.go", "sub/c.go"} {
		write(t, filepath.Join(root, name), "x")
		if err := w.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-r.ch:
			if !allPaths([]Batch{b})[name] {
				t.Errorf("sync %d: batch %v lacks %s", i, b.Paths, name)
			}
		default:
			t.Fatalf("sync %d returned before %s was delivered", i, name)
		}
	}
	if err := w.Sync(context.Background()); err != nil { // nothing pending: no batch
		t.Fatal(err)
	}
	select {
	case b := <-r.ch:
		t.Errorf("an empty sync delivered %+v", b)
	default:
	}
	dir := w.barrier.dir
	w.Close()
	if err := w.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker folder %s outlived the watcher", dir)
	}
}

// A folder renamed onto an empty watched one (mv -T, atomic folder swaps): inotify sends no
// Remove for the folder replaced, and the new one must be watched, not taken for the old.
func TestRenameOntoWatchedFolder(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "a"), 0o755)
	write(t, filepath.Join(root, "b", "old"), "x")
	_, r := startWatch(t, context.Background(), root, Options{})
	// syscall: os.Rename refuses an existing folder as the target, rename(2) takes an empty one.
	if err := syscall.Rename(filepath.Join(root, "b"), filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	r.waitPaths("a", "a/old")
	write(t, filepath.Join(root, "a", "f"), "later")
	r.waitPaths("a/f")
}

// The root itself moved away: the watcher reports Overflow once and stops, so that Sync
// fails and its users check the whole folder themselves instead of trusting silence.
func TestRootMovedStopsTheWatcher(t *testing.T) {
	root := filepath.Join(t.TempDir(), "proj")
	write(t, filepath.Join(root, "f"), "x")
	w, r := startWatch(t, context.Background(), root, Options{})
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(root, 0o755)
	r.waitFor("an Overflow batch", func(bs []Batch) bool { return bs[len(bs)-1].Overflow })
	select {
	case <-w.Done():
	case <-time.After(deadline):
		t.Fatal("the watcher kept running without its root")
	}
	if err := w.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after the root moved: %v", err)
	}
}

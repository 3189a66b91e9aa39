package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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

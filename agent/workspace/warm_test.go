package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// snapshot describes a tree for comparison: relative path → "file <mode> <content>",
// "link <target>" or "dir"; .git folders are left out.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		switch {
		case r == ".":
		case d.Name() == ".git":
			if d.IsDir() {
				return filepath.SkipDir
			}
		case d.IsDir():
			m[r] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[r] = "link " + l
		default:
			info, _ := d.Info()
			b, _ := os.ReadFile(p)
			m[r] = fmt.Sprintf("file %v %s", info.Mode().Perm()&0o111, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameTree(t *testing.T, src, copy string) {
	t.Helper()
	want, got := snapshot(t, src), snapshot(t, copy)
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: copy has %q, source %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: in the copy only", p)
		}
	}
}

func newWarm(t *testing.T, files map[string]string) (*Warm, string) {
	t.Helper()
	src := t.TempDir()
	write(t, src, files)
	w, err := NewWarm(src, filepath.Join(t.TempDir(), "copies"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, src
}

// take takes a copy and, as the language server does after a run, has the next one made
// and waits for it: changes the test makes next happen after that copy was made.
func take(t *testing.T, w *Warm, overlays map[string][]byte) *Workspace {
	t.Helper()
	ws, err := w.Take(context.Background(), overlays)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Remove() })
	w.Prefetch()
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ws
}

// touch rewrites a file with content of the same size and moves its time, the case a
// size-only comparison would miss.
func touch(t *testing.T, p, content string, when time.Time) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

// Without a watcher every Take compares the whole tree, so any change to the folder is in
// the copy: edits, new and removed files and folders, a file turned into a folder, modes,
// links. The copy's base is the folder plus overlays: no changes are reported at first.
func TestWarmWithoutWatcherSeesEveryChange(t *testing.T) {
	w, src := newWarm(t, map[string]string{"a.go": "package a\n", "sub/b.go": "package sub\n", "sub/deep/c.txt": "c", "gone/x": "x", "f": "file", "run.sh": "#!/bin/sh\n"})
	os.Symlink("a.go", filepath.Join(src, "link"))
	w.Prefetch()
	first := take(t, w, nil)
	sameTree(t, src, first.Root)

	touch(t, filepath.Join(src, "a.go"), "package b\n", time.Now().Add(-time.Hour))
	write(t, src, map[string]string{"new/dir/n.go": "package dir\n", "sub/deep/d.txt": "d"})
	os.RemoveAll(filepath.Join(src, "gone"))
	os.Remove(filepath.Join(src, "sub/b.go"))
	os.Remove(filepath.Join(src, "f"))
	write(t, src, map[string]string{"f/inside": "now a folder"})
	os.Chmod(filepath.Join(src, "run.sh"), 0o755)
	os.Remove(filepath.Join(src, "link"))
	os.Symlink("sub", filepath.Join(src, "link"))

	ws := take(t, w, map[string][]byte{"a.go": []byte("package unsaved\n")})
	if ws.Root == first.Root {
		t.Fatal("the same copy was handed out twice")
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Root, "a.go")); string(b) != "package unsaved\n" {
		t.Errorf("overlay not laid: %q", b)
	}
	os.WriteFile(filepath.Join(ws.Root, "a.go"), []byte("package b\n"), 0o644) // undo the overlay to compare
	sameTree(t, src, ws.Root)

	os.WriteFile(filepath.Join(ws.Root, "a.go"), []byte("package unsaved\n"), 0o644)
	c, err := ws.Changes(context.Background())
	if err != nil || len(c.Files) != 0 {
		t.Fatalf("the base must be the folder with its overlays: %+v %v", c, err)
	}
	os.WriteFile(filepath.Join(ws.Root, "sub/deep/c.txt"), []byte("agent"), 0o644)
	if c, err = ws.Changes(context.Background()); err != nil || len(c.Files) != 1 || c.Files[0].Path != "sub/deep/c.txt" || string(c.Files[0].Base) != "c" {
		t.Fatalf("changes against the base: %+v %v", c, err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "sub/deep/c.txt")); string(b) != "c" {
		t.Error("the source was written")
	}
}

// With a watcher, Take trusts it: only reported paths and the unwatched folders are
// checked. A change nobody reported shows that no whole-tree comparison ran.
func TestWarmWithWatcherRefreshesReportedPaths(t *testing.T) {
	w, src := newWarm(t, map[string]string{"a.go": "a1", "b.go": "b1", "node_modules/m/i.js": "m1", "d/e.go": "e1", "d/f.go": "f1"})
	w.Watching(func() []string { return []string{"node_modules"} })
	take(t, w, nil)

	old := time.Now().Add(-time.Hour)
	touch(t, filepath.Join(src, "a.go"), "a2", old)                // reported
	touch(t, filepath.Join(src, "b.go"), "b2", old)                // not reported
	touch(t, filepath.Join(src, "node_modules/m/i.js"), "m2", old) // unwatched folder
	os.RemoveAll(filepath.Join(src, "d"))                          // reported as the folder
	write(t, src, map[string]string{"d/g.go": "g1"})
	w.Changed("a.go", filepath.Join(src, "d"), "/elsewhere/x.go", "../up.go")

	ws := take(t, w, nil)
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(ws.Root, p)); return string(b) }
	if read("a.go") != "a2" || read("node_modules/m/i.js") != "m2" || read("d/g.go") != "g1" {
		t.Errorf("reported or unwatched changes missing: a.go=%q i.js=%q d/g.go=%q", read("a.go"), read("node_modules/m/i.js"), read("d/g.go"))
	}
	if _, err := os.Stat(filepath.Join(ws.Root, "d/e.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a file of a removed folder survived")
	}
	if read("b.go") != "b1" {
		t.Errorf("b.go was refreshed although nobody reported it: the whole tree was compared")
	}

	w.ChangedAll() // the watcher lost events
	sameTree(t, src, take(t, w, nil).Root)

	w.NotWatching()
	touch(t, filepath.Join(src, "b.go"), "b3", old.Add(time.Minute))
	take(t, w, nil) // made while watching: nothing reported
	touch(t, filepath.Join(src, "b.go"), "b4", old.Add(2*time.Minute))
	sameTree(t, src, take(t, w, nil).Root)
}

func TestWarmCloseAndCancel(t *testing.T) {
	w, _ := newWarm(t, map[string]string{"a.go": "a"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Take(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Take with a cancelled context: %v", err)
	}
	taken := take(t, w, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Take(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Take after Close: %v", err)
	}
	left, _ := os.ReadDir(w.parent)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(left) != 2 || filepath.Join(w.parent, left[0].Name()) != taken.Root || filepath.Join(w.parent, left[1].Name()) != taken.gitDir {
		t.Errorf("after Close only the taken copy and its repository may remain: %v", names)
	}
	if _, err := NewWarm(w.src, filepath.Join(w.src, "inside")); err == nil || !strings.Contains(err.Error(), "contain") {
		t.Errorf("copies inside the folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.src, "inside")); err == nil {
		t.Error("a folder was made inside the user's folder")
	}
}

// Changes are reported from the watcher's goroutine while runs take copies.
func TestWarmConcurrentChanges(t *testing.T) {
	w, src := newWarm(t, map[string]string{"a.go": "a"})
	w.Watching(nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			w.Changed(fmt.Sprintf("f%d", i%50))
		}
	}()
	for range 3 {
		take(t, w, nil)
	}
	close(stop)
	wg.Wait()
	write(t, src, map[string]string{"late.go": "late"})
	w.Changed("late.go")
	sameTree(t, src, take(t, w, nil).Root)
}

// A folder replaced by a symlink into the user's folder, reported with a path below it,
// must not make Take write through the link (it once truncated the user's file); a folder
// replaced by a file is a removal, not an error.
func TestWarmReplacedFolders(t *testing.T) {
	w, src := newWarm(t, map[string]string{"a/x": "old a/x", "b/x": "precious user data", "c/y": "c"})
	w.Watching(nil)
	take(t, w, nil)

	os.RemoveAll(filepath.Join(src, "a"))
	if err := os.Symlink(filepath.Join(src, "b"), filepath.Join(src, "a")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(src, "c"))
	write(t, src, map[string]string{"c": "now a file"})
	w.Changed("a", "a/x")
	w.Changed("c", "c/y")
	ws := take(t, w, nil)
	if b, _ := os.ReadFile(filepath.Join(src, "b/x")); string(b) != "precious user data" {
		t.Fatalf("the user's file was written through the link: %q", b)
	}
	sameTree(t, src, ws.Root)
	if l, err := os.Readlink(filepath.Join(ws.Root, "a")); err != nil || l != filepath.Join(src, "b") {
		t.Errorf("a in the copy: %q %v", l, err)
	}
}

// A file rewritten with the same size within the clock tick of its copy looks unchanged by
// size and time; files modified around the making of the copy are copied regardless.
func TestWarmRacyFiles(t *testing.T) {
	w, src := newWarm(t, map[string]string{"a.go": "one"})
	take(t, w, nil) // the next copy is made now, right after a.go was written
	p := filepath.Join(src, "a.go")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, st.ModTime(), st.ModTime()) // the same tick
	if b, _ := os.ReadFile(filepath.Join(take(t, w, nil).Root, "a.go")); string(b) != "two" {
		t.Errorf("a same-size edit in the copy's tick was missed: %q", b)
	}
}

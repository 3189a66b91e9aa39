package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func prepare(t *testing.T, files map[string]string, overlays map[string][]byte) (*Workspace, string) {
	t.Helper()
	src := t.TempDir()
	write(t, src, files)
	w, err := Prepare(context.Background(), src, filepath.Join(t.TempDir(), "copy"), overlays)
	if err != nil {
		t.Fatal(err)
	}
	// git's output took more than the default 5s to be read after git exited under -race at
	// load 25 on 2 cores (TestPrunedAndCapped: "WaitDelay expired").
	w.gitWaitDelay = time.Minute
	return w, src
}

func TestPrepareCopiesAndOverlays(t *testing.T) {
	w, src := prepare(t, map[string]string{"a.go": "package a\n", "sub/b.go": "package sub\n", ".git/HEAD": "ref: refs/heads/main\n"},
		map[string][]byte{"a.go": []byte("package a // unsaved\n")})
	if b, _ := os.ReadFile(filepath.Join(w.Root, "a.go")); string(b) != "package a // unsaved\n" {
		t.Errorf("overlay not laid: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Root, "sub/b.go")); string(b) != "package sub\n" {
		t.Errorf("copy: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Root, ".git/HEAD")); strings.Contains(string(b), "refs/heads/main") {
		t.Error("the user's .git was copied")
	}
	c, err := w.Changes(context.Background())
	if err != nil || len(c.Files) != 0 || c.Diff != "" {
		t.Fatalf("a fresh copy has no changes: %+v %v", c, err)
	}
	if b, _ := os.ReadFile(filepath.Join(src, "a.go")); string(b) != "package a\n" {
		t.Error("the source was modified")
	}
}

func TestResolveConfines(t *testing.T) {
	w, _ := prepare(t, map[string]string{"a.go": "x", "dir/b.go": "y"}, nil)
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(w.Root, "out"))
	os.Symlink("dir", filepath.Join(w.Root, "in"))
	os.Symlink(filepath.Join(outside, "nope"), filepath.Join(w.Root, "dangling"))
	for _, tc := range []struct {
		path     string
		forWrite bool
		ok       bool
	}{
		{"a.go", false, true},
		{filepath.Join(w.Root, "a.go"), false, true},
		{"in/b.go", false, true},
		{"new/deep/file.go", true, true},
		{"new/file.go", false, false}, // reading what does not exist
		{"../a.go", false, false},
		{"dir/../../a.go", true, false},
		{"/etc/passwd", false, false},
		{"out/x", true, false},
		{"out", false, false},
		{"dangling", true, false},
		{"", false, false},
	} {
		_, err := w.Resolve(tc.path, tc.forWrite)
		if (err == nil) != tc.ok {
			t.Errorf("Resolve(%q, write=%v): err = %v, want ok=%v", tc.path, tc.forWrite, err, tc.ok)
		}
	}
	if _, err := w.Resolve("../x", false); !errors.Is(err, ErrOutside) {
		t.Errorf("want ErrOutside, got %v", err)
	}
}

func TestChangesAndApply(t *testing.T) {
	w, src := prepare(t, map[string]string{"keep.txt": "same\n", "edit.txt": "old\n", "gone.txt": "bye\n", "move.txt": "moving content that is long enough to be detected as a rename\n"}, nil)
	write(t, w.Root, map[string]string{"edit.txt": "new\n", "added/new.txt": "hello\n"})
	os.Remove(filepath.Join(w.Root, "gone.txt"))
	os.Rename(filepath.Join(w.Root, "move.txt"), filepath.Join(w.Root, "moved.txt"))
	// The agent's own commits must not hide its changes.
	if _, err := w.git(context.Background(), "commit", "-qam", "agent commit"); err != nil {
		t.Fatal(err)
	}

	c, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileChange{}
	for _, f := range c.Files {
		got[f.Path] = f
	}
	if f := got["edit.txt"]; f.Kind != Modified || f.BaseHash != Hash([]byte("old\n")) || string(f.Content) != "new\n" {
		t.Errorf("edit.txt: %+v", f)
	}
	if f := got["added/new.txt"]; f.Kind != Created || f.BaseHash != "" {
		t.Errorf("added: %+v", f)
	}
	if f := got["gone.txt"]; f.Kind != Deleted || f.Content != nil {
		t.Errorf("gone: %+v", f)
	}
	if f := got["moved.txt"]; f.Kind != Renamed || f.OldPath != "move.txt" {
		t.Errorf("moved: %+v", f)
	}
	if len(c.Files) != 4 || !strings.Contains(c.Diff, "-old\n+new") {
		t.Errorf("files %d, diff:\n%s", len(c.Files), c.Diff)
	}

	// A file the user changed meanwhile blocks the whole apply, and nothing is written.
	write(t, src, map[string]string{"edit.txt": "user's edit\n"})
	if err := Apply(src, c); err == nil || !strings.Contains(err.Error(), "edit.txt") {
		t.Fatalf("apply over a changed file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, "added/new.txt")); err == nil {
		t.Fatal("a refused apply wrote files")
	}
	write(t, src, map[string]string{"edit.txt": "old\n"})
	if err := Apply(src, c); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"edit.txt": "new\n", "added/new.txt": "hello\n", "keep.txt": "same\n", "moved.txt": "moving content that is long enough to be detected as a rename\n"} {
		if b, _ := os.ReadFile(filepath.Join(src, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	for _, name := range []string{"gone.txt", "move.txt"} {
		if _, err := os.Stat(filepath.Join(src, name)); err == nil {
			t.Errorf("%s should be gone", name)
		}
	}
}

func TestPrepareRefusesNesting(t *testing.T) {
	src := t.TempDir()
	if _, err := Prepare(context.Background(), src, filepath.Join(src, "copy"), nil); err == nil {
		t.Fatal("a copy inside its source must be refused")
	}
}

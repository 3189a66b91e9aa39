package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestEnclosingRepos: the places of git around a folder, read from a real repository with
// a linked worktree: from a subfolder of the main worktree, its top and the worktree; from
// the worktree, the main repository's git directory, its folder and the worktree's own
// git directory.
func TestEnclosingRepos(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	main, wt := filepath.Join(base, "main"), filepath.Join(base, "wt")
	os.MkdirAll(filepath.Join(main, "sub"), 0o755)
	os.WriteFile(filepath.Join(main, "sub", "a.txt"), []byte("a\n"), 0o644)
	gitOut(t, main, "init", "-q")
	gitOut(t, main, "add", "-A")
	gitOut(t, main, "commit", "-qm", "c")
	gitOut(t, main, "worktree", "add", "-q", wt)

	got := enclosingRepos(filepath.Join(main, "sub"))
	for _, want := range []string{main, wt} {
		if !slices.Contains(got, want) {
			t.Errorf("from a subfolder: %q, want %s among them", got, want)
		}
	}
	got = enclosingRepos(filepath.Join(wt, "sub"))
	for _, want := range []string{wt, main, filepath.Join(main, ".git"), filepath.Join(main, ".git", "worktrees", "wt")} {
		if !slices.Contains(got, want) {
			t.Errorf("from the worktree: %q, want %s among them", got, want)
		}
	}
	if got := enclosingRepos(base); len(got) != 0 {
		t.Errorf("outside any repository: %q", got)
	}
}

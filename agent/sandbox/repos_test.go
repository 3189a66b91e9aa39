package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@u", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@u"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// TestRepositories: the places of git around a folder, read from real repositories: from a
// subfolder of the main worktree, its top and the linked worktree; from the worktree, the
// main repository's git directory, its folder and the worktree's own git directory; from a
// clone made with --shared, the repository it borrows objects from.
func TestRepositories(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	main, wt, shared := filepath.Join(base, "main"), filepath.Join(base, "wt"), filepath.Join(base, "shared")
	os.MkdirAll(filepath.Join(main, "sub"), 0o755)
	os.WriteFile(filepath.Join(main, "sub", "a.txt"), []byte("a\n"), 0o644)
	git(t, main, "init", "-q")
	git(t, main, "add", "-A")
	git(t, main, "commit", "-qm", "c")
	git(t, main, "worktree", "add", "-q", wt)
	git(t, base, "clone", "-q", "--shared", main, shared)

	for _, c := range []struct {
		from string
		want []string
	}{
		{filepath.Join(main, "sub"), []string{main, wt}},
		{filepath.Join(wt, "sub"), []string{wt, main, filepath.Join(main, ".git"), filepath.Join(main, ".git", "worktrees", "wt")}},
		{shared, []string{shared, main, wt}},
	} {
		got := repositories(c.from)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("from %s: %q, want %s among them", c.from, got, w)
			}
		}
	}
	if got := repositories(base); len(got) != 0 {
		t.Errorf("outside any repository: %q", got)
	}
}

// TestHiddenRepository: hiding a linked worktree (a rollout hides the task's repository,
// which may be one) hides its main repository too: before, the main worktree's files and
// every branch in its .git were readable.
func TestHiddenRepository(t *testing.T) {
	for _, m := range []Mode{ModeBwrap, ModeUnshare} {
		t.Run(string(m), func(t *testing.T) {
			base := varTmpDir(t)
			os.Chmod(base, 0o755)
			main, wt := filepath.Join(base, "main"), filepath.Join(base, "wt")
			os.MkdirAll(main, 0o755)
			os.WriteFile(filepath.Join(main, "a.txt"), []byte("a\n"), 0o644)
			git(t, main, "init", "-q")
			git(t, main, "add", "-A")
			git(t, main, "commit", "-qm", "c")
			git(t, main, "worktree", "add", "-q", wt)
			os.WriteFile(filepath.Join(main, "notes.txt"), []byte(secretMark+"main\n"), 0o644)
			r, err := NewRunner(context.Background(), Options{Mode: m, Hide: []string{wt}})
			if err != nil {
				skipOrFail(t, m, err)
			}
			defer r.Close()
			o, err := r.Run(context.Background(), Cmd{Dir: t.TempDir(), Command: fmt.Sprintf("cat %q/notes.txt %q/.git/HEAD; echo done", main, main), Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(o.Stdout, secretMark) || strings.Contains(o.Stdout, "ref:") || !strings.Contains(o.Stdout, "done") {
				t.Errorf("the main repository of a hidden worktree shows: stdout %q stderr %q", o.Stdout, o.Stderr)
			}
		})
	}
}

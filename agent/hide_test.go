package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
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

// TestGoCacheDir: Options.GoCacheDir is the commands' GOCACHE, not the repository's own
// one that every copy of the folder shares (rollouts give each episode its own).
func TestGoCacheDir(t *testing.T) {
	ctx := context.Background()
	ws, err := workspace.Prepare(ctx, userRepo(t), filepath.Join(t.TempDir(), "repo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	own := filepath.Join(t.TempDir(), "gocache")
	t.Setenv("FROGNANO_SANDBOX_GOCACHE", "") // the suites' shared one would win otherwise
	for _, c := range []struct {
		opts Options
		want string
	}{{Options{GoCacheDir: own}, own}, {Options{}, sandbox.GoCacheFor(ws.Source)}} {
		r, err := newRunner(ctx, ws, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(ctx, sandbox.Cmd{Dir: ws.Root, Command: "go env GOCACHE", Timeout: time.Minute})
		r.Close()
		if err != nil || strings.TrimSpace(string(out.Stdout)) != c.want {
			t.Errorf("GoCacheDir %q: GOCACHE %q (%v, %s), want %s", c.opts.GoCacheDir, out.Stdout, err, out.Stderr, c.want)
		}
	}
	os.RemoveAll(sandbox.GoCacheFor(ws.Source))
}

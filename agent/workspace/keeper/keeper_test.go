package keeper

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/frognano/frognano/watch"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestKeeperFollowsHead: a commit made in the folder reaches OnHead and Status, without
// anything of lsp; Close removes the copies.
func TestKeeperFollowsHead(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	git(t, root, "init", "-q", "-b", "main")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-qm", "one")
	heads := make(chan watch.HeadChange, 4)
	parent := t.TempDir()
	k, err := Start(root, Options{Parent: parent, OnHead: func(h watch.HeadChange) { heads <- h }})
	if err != nil {
		t.Fatal(err)
	}
	first := k.Status().Commit
	if !k.Watching() || first == "" || k.Status().Branch != "main" {
		t.Fatalf("status at start: %+v", k.Status())
	}
	os.WriteFile(filepath.Join(root, "b.txt"), []byte("b\n"), 0o644)
	git(t, root, "add", "-A")
	git(t, root, "commit", "-qm", "two")
	select {
	case h := <-heads:
		if h.Old != first || h.New == first || h.New != k.Status().Commit {
			t.Errorf("head change %+v, status %+v", h, k.Status())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the new commit was not reported")
	}
	k.Sync(context.Background())
	k.Close()
	if m, _ := filepath.Glob(filepath.Join(parent, "frognano-ready-*")); len(m) != 0 {
		t.Errorf("copies left after Close: %v", m)
	}
}

// TestKeeperWithoutWatcher: a folder that cannot be watched still gets a keeper, which
// says why, and follows HEAD when told of a change under .git.
func TestKeeperWithoutWatcher(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644)
	git(t, root, "init", "-q", "-b", "main")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-qm", "one")
	var heads []watch.HeadChange
	k, err := Start(root, Options{Parent: t.TempDir(), OnHead: func(h watch.HeadChange) { heads = append(heads, h) },
		StartWatcher: func(context.Context, string, watch.Options, func(watch.Batch)) (*watch.Watcher, error) {
			return nil, errors.New("no watching here")
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if st := k.Status(); k.Watching() || st.Watching || st.Why != "no watching here" {
		t.Errorf("status %+v", st)
	}
	git(t, root, "commit", "-q", "--allow-empty", "-m", "two")
	k.ReadHead(context.Background())
	if len(heads) != 1 || heads[0].New != k.Status().Commit {
		t.Errorf("heads %+v, status %+v", heads, k.Status())
	}
}

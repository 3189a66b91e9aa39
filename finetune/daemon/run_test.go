package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/watch"
)

// TestFresh: a new commit makes the next new iteration synthesize on it (loop's Fresh),
// not an iteration being resumed, and not the first run (nothing to compare with); once
// synthesis is done with the commit, it is not new any more.
func TestFresh(t *testing.T) {
	repo := fixture.Repo(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	d := &daemon{dir: t.TempDir(), heads: make(chan string, 1), o: Options{Loop: loop.Config{Repo: repo, Dir: t.TempDir()}, Logf: t.Logf}}
	if d.fresh(ctx) {
		t.Fatal("fresh on the first run")
	}
	d.progress(loop.Progress{Iteration: 1, Phase: loop.PhaseSynth, Fraction: 1})
	first := d.st.Head
	if h, _ := watch.Head(ctx, repo); first == "" || first != h.New {
		t.Fatalf("after synthesis the status's head is %q, want HEAD %q", first, h.New)
	}
	if d.fresh(ctx) {
		t.Fatal("fresh with HEAD unchanged")
	}
	os.WriteFile(filepath.Join(repo, "b.txt"), []byte("b\n"), 0o644)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("add", "b.txt")
	git("commit", "-q", "-m", "b")
	if !d.fresh(ctx) {
		t.Fatal("not fresh after a commit")
	}
	state := func(phase string) {
		os.WriteFile(loop.StatePath(d.o.Loop.Dir), []byte(`{"version":1,"phase":"`+phase+`","frontier":{}}`), 0o644)
	}
	state("rollouts")
	if d.fresh(ctx) {
		t.Fatal("fresh for an iteration being resumed")
	}
	state("done")
	if !d.fresh(ctx) {
		t.Fatal("not fresh for a new iteration after a commit")
	}
	d.progress(loop.Progress{Iteration: 2, Phase: loop.PhaseSynth, Fraction: 1})
	if d.st.Head == first || d.fresh(ctx) {
		t.Fatalf("after synthesis on the new commit: head %q, fresh %v", d.st.Head, d.fresh(ctx))
	}
}

// TestNewCommitEndsPause: the keeper's new HEAD ends the pause between iterations.
func TestNewCommitEndsPause(t *testing.T) {
	d := &daemon{dir: t.TempDir(), heads: make(chan string, 1), o: Options{Logf: t.Logf}}
	done := make(chan error)
	go func() { done <- d.wait(context.Background(), time.Hour, "pausing") }()
	waitFor(t, d, "pausing until")
	d.onHead(watch.HeadChange{New: "abc"})
	d.onHead(watch.HeadChange{New: "def"}) // must not block
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pause went on after a new commit")
	}
}

package reward

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
)

// moduleTask is a task on a repository of files (several Go modules) whose patch turns old
// into new in file, with spec saying where its tests run, and the options to score it
// (the base's trusted layer, kept between runs as setup's is).
func moduleTask(t *testing.T, files map[string]string, file, old, new string, spec task.TestSpec, f2p, p2p []string) (*task.Task, Options) {
	t.Helper()
	repo := fixture.Repo(t, files)
	ctx := context.Background()
	head, err := env.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	src := files[file]
	patch, err := task.MakePatch(ctx, []task.Change{{Path: file, Old: []byte(src), New: []byte(strings.Replace(src, old, new, 1))}})
	if err != nil {
		t.Fatal(err)
	}
	spec.Kind = env.KindGo
	tk := &task.Task{Version: task.Version, ID: task.MakeID(head, patch), Repo: repo, BaseCommit: head, Patch: patch,
		FailToPass: f2p, PassToPass: p2p, Test: spec}
	return tk, Options{Trusted: trustedCache(t, ctx, repo, head, files), Timeout: 2 * time.Minute}
}

// TestScoreModules: a task whose bug lies in a module the top's requires (lib/, by a
// replace) and whose hidden tests are in three modules builds and runs each package in its
// own module's folder: the honest fix earns 1, no change 0 with exactly the broken tests
// failed.
func TestScoreModules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	files := fixture.MultiModule()
	spec := task.TestSpec{Modules: map[string]string{"example.com/lib/calc": "lib", "example.com/app/tools/count": "tools"}}
	f2p := []string{"example.com/app/report TestSpread", "example.com/lib/calc TestMax"}
	p2p := []string{"example.com/app/tools/count TestPositive", "example.com/lib/calc TestAbs"}
	tk, o := moduleTask(t, files, "lib/calc/calc.go", "if a > b {", "if a < b {", spec, f2p, p2p)

	t.Run("honest fix", func(t *testing.T) {
		ws := agentCopy(t, tk)
		write(t, ws.Root, "lib/calc/calc.go", files["lib/calc/calc.go"])
		if res := score(t, tk, ws, o); res.Reward != 1 || len(res.Passed) != 4 {
			t.Errorf("reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
		}
	})
	t.Run("no change", func(t *testing.T) {
		ws := agentCopy(t, tk)
		if res := score(t, tk, ws, o); res.Reward != 0 || !slices.Equal(res.Failed, f2p) {
			t.Errorf("reward %v (%s), failed %v", res.Reward, res.Reason, res.Failed)
		}
	})
}

// TestScoreWorkspace: with a go.work at the top, the task's tests build with it (b needs
// it to find a), and only when the task says so.
func TestScoreWorkspace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	files := fixture.Workspace()
	spec := task.TestSpec{Workspace: true, Modules: map[string]string{"example.com/a/calc": "a", "example.com/b": "b"}}
	f2p := []string{"example.com/a/calc TestSum", "example.com/b TestTotal"}
	tk, o := moduleTask(t, files, "a/calc/calc.go", "i := 0;", "i := 1;", spec, f2p, []string{"example.com/a/calc TestAbs"})
	ws := agentCopy(t, tk)
	write(t, ws.Root, "a/calc/calc.go", files["a/calc/calc.go"])
	if res := score(t, tk, ws, o); res.Reward != 1 {
		t.Errorf("reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
	}
	alone := *tk
	alone.Test.Workspace = false
	if res := score(t, &alone, ws, o); res.Reward != 0 || !slices.Contains(res.Failed, "example.com/b TestTotal") || !strings.Contains(res.Reason, "did not build") {
		t.Errorf("without the workspace: reward %v (%s), failed %v", res.Reward, res.Reason, res.Failed)
	}
}

// TestScoreNestedWorkspace: a module tied by a go.work below the top (test.works) builds
// with that one (b needs it to find a), and only when the task says so.
func TestScoreNestedWorkspace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	files := fixture.NestedWorkspace()
	spec := task.TestSpec{Modules: map[string]string{"example.com/a/calc": "ws/a", "example.com/b": "ws/b"},
		Works: map[string]string{"ws/a": "ws", "ws/b": "ws"}}
	f2p := []string{"example.com/a/calc TestSum", "example.com/b TestTotal"}
	tk, o := moduleTask(t, files, "ws/a/calc/calc.go", "i := 0;", "i := 1;", spec, f2p, []string{"example.com/a/calc TestAbs"})
	ws := agentCopy(t, tk)
	write(t, ws.Root, "ws/a/calc/calc.go", files["ws/a/calc/calc.go"])
	if res := score(t, tk, ws, o); res.Reward != 1 {
		t.Errorf("reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
	}
	alone := *tk
	alone.Test.Works = nil
	if res := score(t, &alone, ws, o); res.Reward != 0 || !slices.Contains(res.Failed, "example.com/b TestTotal") || !strings.Contains(res.Reason, "did not build") {
		t.Errorf("without the workspace: reward %v (%s), failed %v", res.Reward, res.Reason, res.Failed)
	}
	outside := *tk
	outside.Test.Works = map[string]string{"ws/b": "../x"}
	ch, err := ws.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Score(context.Background(), &outside, ch, o); err == nil || !strings.Contains(err.Error(), "outside the tree") {
		t.Errorf("a go.work folder outside the tree: %+v, %v", res, err)
	}
}

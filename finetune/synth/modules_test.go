package synth

import (
	"context"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
)

// TestSynthesizeModules synthesizes every task of a repository of three Go modules (the
// top's, lib/ which the top requires through a replace, and tools/, nested under the top's
// path) and checks each in the folder of its tests' module: tasks come from every module,
// a mutant of lib is caught by the top module's tests too, and each task records where its
// tests run.
func TestSynthesizeModules(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, fixture.MultiModule())
	opts := testOptions(t)
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("valid %d of %v, rejected %v", sum.Valid, sum.Candidates, sum.Rejected)
	if sum.Rejected[RejectUnconfirm] != 0 || sum.Rejected[RejectBuild] != 0 {
		t.Errorf("the switch and the plain patch disagree: %v", sum.Rejected)
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, err := store.List()
	if err != nil || len(tasks) == 0 {
		t.Fatalf("%d tasks: %v", len(tasks), err)
	}
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	from := map[string]int{} // tasks by the folder of the changed file's module
	crossed := false
	for _, tk := range tasks {
		dir := strings.SplitN(tk.Origin.File, "/", 2)[0]
		from[dir]++
		for _, id := range append(append([]string(nil), tk.FailToPass...), tk.PassToPass...) {
			pkg, _ := env.SplitID(id)
			want := s.Env.ModuleOf(pkg).Dir
			if got := tk.Test.ModuleDir(pkg); got != want {
				t.Errorf("%s: %s runs in %q, want %q", tk.ID, pkg, got, want)
			}
		}
		cross := dir == "lib" && strings.Contains(strings.Join(tk.FailToPass, ","), "example.com/app/report TestSpread")
		if dir == "tools" && !strings.Contains(tk.Issue.Text, "cd 'tools' && go test") {
			t.Errorf("%s: the failing test's command does not run it in its module: %s", tk.ID, tk.Issue.Text)
		}
		// One task of each module, and one that crosses modules, checked with git and go
		// (each check is two go test runs: all of them would take minutes).
		if from[dir] == 1 || cross && !crossed {
			checkTask(t, s, tk)
		}
		crossed = crossed || cross
	}
	if from["lib"] == 0 || from["tools"] == 0 || from["report"] == 0 {
		t.Errorf("tasks by folder: %v, want some in each module", from)
	}
	if !crossed {
		t.Error("no mutant of lib fails the tests of the module that requires it")
	}
}

// TestSynthesizeWorkspace: with a go.work at the top (and no module there), tasks come
// from both of its modules, run with the workspace (b builds only with it).
func TestSynthesizeWorkspace(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, fixture.Workspace())
	opts := testOptions(t)
	opts.N = 6
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("valid %d of %v, rejected %v", sum.Valid, sum.Candidates, sum.Rejected)
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	if len(tasks) != opts.N {
		t.Fatalf("%d tasks, want %d", len(tasks), opts.N)
	}
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inB := false
	for _, tk := range tasks {
		if !tk.Test.Workspace {
			t.Errorf("%s: not run with the workspace", tk.ID)
		}
		for _, id := range tk.FailToPass {
			if strings.HasPrefix(id, "example.com/b ") {
				inB = true
			}
		}
		checkTask(t, s, tk)
	}
	if !inB {
		t.Error("no task fails a test of b")
	}
}

// TestSynthesizeNestedWorkspace: a go.work below the top ties the modules it uses (b
// builds only with it): tasks come from them, say which go.work their tests run with, and
// check out so; the top's module runs alone.
func TestSynthesizeNestedWorkspace(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, fixture.NestedWorkspace())
	opts := testOptions(t)
	opts.N = 6
	opts.Synthesizers = []string{SynthMutation}
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("valid %d of %v, rejected %v, notes %q", sum.Valid, sum.Candidates, sum.Rejected, sum.Notes)
	if len(sum.Notes) != 0 {
		t.Errorf("notes %q", sum.Notes)
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	if len(tasks) != opts.N {
		t.Fatalf("%d tasks, want %d", len(tasks), opts.N)
	}
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inB := false
	for _, tk := range tasks {
		if tk.Test.Workspace || tk.Test.WorkDir("ws/a") != "ws" {
			t.Errorf("%s: workspace %v, works %v", tk.ID, tk.Test.Workspace, tk.Test.Works)
		}
		for _, id := range tk.FailToPass {
			if strings.HasPrefix(id, "example.com/b ") && !inB {
				inB = true
				checkTask(t, s, tk) // b's tests build only with ws/go.work
			}
		}
	}
	if !inB {
		t.Error("no task fails a test of b")
	}
}

// TestNestedWorkspaceNote: a go.work below the top that cannot be used (its use list
// leaves the repository) is named in the summary, with why, instead of leaving a module
// that builds only within it to fail its tests silently.
func TestNestedWorkspaceNote(t *testing.T) {
	t.Parallel()
	files := fixture.NestedWorkspace()
	files["ws/go.work"] = "go 1.22\n\nuse (\n\t./a\n\t../../elsewhere\n)\n"
	repo := fixture.Repo(t, files)
	opts := testOptions(t)
	opts.Progress = func(Progress) {}
	s, _, _, sum, err := open(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(sum.Notes) != 1 || !strings.HasPrefix(sum.Notes[0], "ws/go.work is not used: uses ../../elsewhere, outside the repository") {
		t.Errorf("notes %q", sum.Notes)
	}
}

package synth

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
)

// TestCombined: half the tasks are mutants, the others pairs of them in different
// functions, each validated again as one patch: two bugs, both parts named, and the
// combined patch proven like any task's.
func TestCombined(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":            fixture.GoMod("example.com/comb"),
		"calc/calc.go":      fixture.Calc,
		"calc/calc_test.go": fixture.CalcTest,
	})
	opts := testOptions(t)
	opts.Synthesizers = []string{SynthMutation, SynthCombined}
	opts.N = 8
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("candidates %v, valid %v, rejected %v", sum.Candidates, sum.ValidBy, sum.Rejected)
	// Four mutants make at most six pairs; those in one function are not paired.
	if sum.ValidBy[SynthMutation] != 4 || sum.ValidBy[SynthCombined] == 0 || sum.Candidates[SynthCombined] > 6 {
		t.Fatalf("want 4 mutation tasks and up to 4 combined ones")
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	byID := map[string]*task.Task{}
	for _, tk := range tasks {
		byID[tk.ID] = tk
	}
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tk := range tasks {
		if tk.Features.Synthesizer != SynthCombined {
			continue
		}
		if tk.Features.Bugs != 2 || len(tk.Origin.Parts) != 2 || tk.Features.FailToPass == 0 {
			t.Errorf("%s: %+v %+v", tk.ID, tk.Features, tk.Origin)
			continue
		}
		a, b := byID[tk.Origin.Parts[0]], byID[tk.Origin.Parts[1]]
		if a == nil || b == nil || a.Origin.Function == b.Origin.Function {
			t.Errorf("%s: parts %v", tk.ID, tk.Origin.Parts)
			continue
		}
		// Both parts' changed lines are in the combined patch.
		for _, part := range []*task.Task{a, b} {
			for _, l := range strings.Split(part.Patch, "\n") {
				if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") && !strings.Contains(tk.Patch, l) {
					t.Errorf("%s: %q of %s missing", tk.ID, l, part.ID)
				}
			}
		}
		checkTask(t, s, tk)
	}
}

func TestApart(t *testing.T) {
	t.Parallel()
	mk := func(fn, patch string) *task.Task {
		return &task.Task{Patch: patch, Origin: task.Origin{File: "a.go", Function: fn}}
	}
	p := func(line string) string { return "--- a/a.go\n+++ b/a.go\n@@ -" + line + " @@\n" }
	for _, c := range []struct {
		a, b *task.Task
		want bool
	}{
		{mk("F", p("3,7 +3,7")), mk("G", p("20,7 +20,7")), true},
		{mk("F", p("3,7 +3,7")), mk("G", p("9,7 +9,7")), false},   // overlapping context
		{mk("F", p("3,7 +3,7")), mk("F", p("30,7 +30,7")), false}, // the same function
	} {
		if got := apart(c.a, c.b); got != c.want {
			t.Errorf("apart(%q, %q) = %v", c.a.Patch, c.b.Patch, got)
		}
	}
}

// TestPairOrder: the pairs spread over the tasks before any task is reused, and pairs that
// are not apart are never made.
func TestPairOrder(t *testing.T) {
	t.Parallel()
	mk := func(fn string, line int) *task.Task {
		return &task.Task{Patch: fmt.Sprintf("--- a/a.go\n+++ b/a.go\n@@ -%d,7 +%d,7 @@\n", line, line), Origin: task.Origin{File: "a.go", Function: fn}}
	}
	// 0 and 3 change the same function: never paired.
	pool := []*task.Task{mk("F", 10), mk("G", 30), mk("H", 50), mk("F", 70)}
	got := fmt.Sprint(pairOrder(pool))
	if want := "[[0 1] [2 3] [0 2] [1 2] [1 3]]"; got != want {
		t.Errorf("pairOrder = %s, want %s", got, want)
	}
}

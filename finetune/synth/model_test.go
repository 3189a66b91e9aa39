package synth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestAllSynthesizers is a whole run with every synthesizer on a repository with history,
// uncommitted work, a stash and another branch, against the real Ollama server: a scripted
// model plays the self-play agent (it flips a comparison in Abs and also rewrites a test
// file, which must be dropped) and another writes the symptom-level issues. The user's
// HEAD, refs, index, stash and status are the same after the run.
func TestAllSynthesizers(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Start(t)
	srv.Scripted("breaker", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		{ToolCalls: []modelgen.ToolCall{
			{Name: "Edit", Arguments: map[string]any{"file_path": "calc/calc.go", "old_string": "if x < 0 {\n\t\treturn -x", "new_string": "if x > 0 {\n\t\treturn -x"}},
			{Name: "Write", Arguments: map[string]any{"file_path": "calc/calc_test.go", "content": "package calc\n"}},
		}},
		{Content: "I flipped the sign test in Abs."},
	}})
	const report = "I take the absolute value of a few numbers and some come back negative or wrong; TestAbs and TestMax say so. I expected the usual results."
	srv.Scripted("reporter", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: report}}})

	repo := historyRepo(t, historySteps())
	g := gitcmd.Repo{Dir: repo, Trust: gitcmd.User, Env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}}
	ctx := context.Background()
	os.WriteFile(filepath.Join(repo, "README"), []byte("stashed\n"), 0o644)
	for _, args := range [][]string{{"branch", "feature"}, {"stash", "-q"}} {
		if out, err := g.Run(ctx, nil, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(repo, "calc", "calc.go"), []byte(histCalc), 0o644) // uncommitted
	os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("untracked\n"), 0o644)
	before := gitState(t, repo)

	opts := testOptions(t)
	opts.Synthesizers = Synthesizers
	opts.N = 10
	opts.Model, opts.ModelName, opts.ModelNumCtx, opts.ModelTries = srv.Client, "breaker", 8192, 1
	opts.IssueModel, opts.IssueModelName, opts.HintLevel = srv.Client, "reporter", HintSymptom
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := gitState(t, repo); after != before {
		t.Errorf("the user's repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("candidates %v, validated %v, valid %v, rejected %v", sum.Candidates, sum.ValidatedBy, sum.ValidBy, sum.Rejected)
	if sum.ValidBy[SynthHistory] != 2 || sum.ValidBy[SynthModel] != 1 || sum.ValidBy[SynthCombined] == 0 ||
		sum.ValidBy[SynthMutation]+sum.ValidBy[SynthRemoval] == 0 || sum.Valid > opts.N || sum.IssueErrors != 0 {
		t.Errorf("want 2 history tasks, 1 model-written, some procedural and combined ones, all with issues")
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tk := range tasks {
		levels := map[int]bool{}
		for _, is := range tk.OtherIssues {
			levels[is.Level] = true
		}
		if tk.Issue.Level != HintSymptom || tk.Features.HintLevel != HintSymptom || !levels[HintLocation] || !levels[HintOutput] {
			t.Errorf("%s: issue levels %d and %v", tk.ID, tk.Issue.Level, levels)
		}
		if !strings.Contains(tk.Issue.Text, "absolute value") || strings.Contains(tk.Issue.Text, "TestAbs") {
			t.Errorf("%s: symptom %q (the report, without test names)", tk.ID, tk.Issue.Text)
		}
		if tk.Features.Synthesizer == SynthModel {
			if tk.Origin.Function != "Abs" || strings.Contains(tk.Patch, "_test.go") || !strings.Contains(tk.Patch, "+\tif x > 0 {") {
				t.Errorf("model task %+v:\n%s", tk.Origin, tk.Patch)
			}
			checkTask(t, s, tk)
		}
	}
}

// TestNoModel: the model-written synthesizer and the symptom level refuse to start
// without a model, saying so.
func TestNoModel(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Synthesizers: []string{SynthModel}}, {HintLevel: HintSymptom}, {Synthesizers: []string{"nope"}}, {HintLevel: 3}} {
		if err := o.check(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if err := (Options{Synthesizers: []string{SynthModel}}).check(); err != ErrNoModel {
		t.Errorf("model: %v", err)
	}
	if err := (Options{HintLevel: HintSymptom}).check(); err != ErrNoIssueModel {
		t.Errorf("symptom: %v", err)
	}
}

func TestCleanSymptom(t *testing.T) {
	t.Parallel()
	got, err := cleanSymptom("<think>it is Abs</think>\nAbsolute values come back negative; TestAbs and TestAbsolute fail.", []string{"m TestAbs", "m TestAbsolute"})
	if err != nil || got != "Absolute values come back negative; a check and a check fail." {
		t.Errorf("%q %v", got, err)
	}
	if _, err := cleanSymptom("<think>hmm</think> ok", nil); err == nil {
		t.Error("an empty report was accepted")
	}
}

// failingModel answers every chat with an error, as a model that hangs does at its limit.
type failingModel struct{ calls int }

func (m *failingModel) Chat(context.Context, *api.ChatRequest, api.ChatResponseFunc) error {
	m.calls++
	return errors.New("the model did not answer")
}

func (m *failingModel) Show(context.Context, *api.ShowRequest) (*api.ShowResponse, error) {
	return nil, errors.New("no")
}

// TestSymptomFallback: when the model cannot write the symptom, the task gets the nearest
// level there is, and the model is asked once per run, not once per task.
func TestSymptomFallback(t *testing.T) {
	t.Parallel()
	m := &failingModel{}
	r := &runner{s: &env.Session{Env: &env.Env{Packages: map[string]env.Package{}, Tests: map[string]env.Result{}},
		Checkout: &env.Checkout{Dir: t.TempDir()}}, opts: Options{IssueModel: m, IssueModelName: "x", HintLevel: HintSymptom}}
	for i := 0; i < 2; i++ {
		tk := &task.Task{FailToPass: []string{"p TestA"}}
		r.finishTask(context.Background(), tk, nil, []task.Issue{{Level: 0, Text: "zero"}, {Level: 1, Text: "one"}}, nil)
		if tk.Issue.Level != HintOutput || tk.Features.HintLevel != HintOutput || len(tk.OtherIssues) != 1 || tk.OtherIssues[0].Level != 0 {
			t.Errorf("task %d: issue %+v, others %+v", i, tk.Issue, tk.OtherIssues)
		}
	}
	if m.calls != 1 || r.issueErrors != 2 {
		t.Errorf("%d calls, %d errors: want 1 and 2", m.calls, r.issueErrors)
	}
}

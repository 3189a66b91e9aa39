// Package looptest holds what the end-to-end tests of the online loop and of its daemon
// share: a tiny random base model made by the real trainer and imported into the real
// Ollama, a small Go repository to synthesize tasks from, and a scorer whose rewards
// differ within every group (the random model cannot fix a bug).
package looptest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// Setup is what a test and the processes it starts share (as JSON).
type Setup struct {
	Repo, Base, Weights, Host, Dir, RegistryDir, StoreDir, EnvCache, Python string
}

// Python returns the trainer's interpreter, or skips the test when its virtual environment
// has not been built, except under CI, where that is a failure.
func Python(t *testing.T) string {
	t.Helper()
	p := trainer.Python()
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no trainer Python at %s under CI", p)
		}
		t.Skipf("no trainer Python at %s: run `go run ./cmd/frognano finetune setup` to run this test", p)
	}
	return p
}

// Prepare makes the repository, a tiny random Llama exported by the trainer and imported
// into srv as the base model (ChatML), and the folders.
func Prepare(t *testing.T, srv *ollamatest.Server) Setup {
	py := Python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, _, err := trainer.Start(ctx, trainer.Options{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if _, err := p.Load(ctx, trainer.Load{Random: &trainer.RandomModel{Arch: "llama", VocabSize: 320, InitializerRange: 0.2, TextOutput: true},
		Device: "cpu"}); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(t.TempDir(), "base")
	if ex, err := p.MergeExport(ctx, weights, "float16"); err != nil || len(ex.Problems) > 0 {
		t.Fatalf("merge_export: %+v, %v", ex, err)
	}
	// The export is whole once MergeExport returns; a trainer slow to shut down (torch's
	// teardown at a machine's load of 15 and more took over the trainer's 30 s) is killed by
	// Close and is no failure of what these tests test.
	if err := p.Close(); err != nil {
		t.Logf("%v (the export is whole)", err)
	}
	const base = "tiny-loop:base"
	if err := trainer.Import(ctx, srv.Client, trainer.ImportRequest{Name: base, Dir: weights, Template: modelgen.ChatMLTemplate(true, false),
		Parameters: map[string]any{"stop": []string{"<|im_end|>"}, "num_ctx": 8192}}, nil); err != nil {
		t.Fatal(err)
	}
	u, err := ollama.Config{Host: srv.Host}.BaseURL()
	if err != nil {
		t.Fatal(err)
	}
	// A fixed date makes the same commit on every run, and so the same task IDs: the
	// held-out split is a hash of the ID, and with the commit of the current second a run
	// could find all of round 0's tasks held out (as CI once did). At this date three of
	// iteration 1's first four mutants are training tasks (commit 2f857f12).
	repo := fixture.RepoAt(t, map[string]string{
		"go.mod":            fixture.GoMod("example.com/loop"),
		"calc/calc.go":      fixture.Calc,
		"calc/calc_test.go": fixture.CalcTest,
	}, "2026-01-10T00:00:00Z")
	return Setup{Repo: repo, Base: base, Weights: weights, Host: u.String(), Dir: t.TempDir(), RegistryDir: t.TempDir(),
		StoreDir: t.TempDir(), EnvCache: t.TempDir(), Python: py}
}

// Alternate is a scorer that gives each task's episodes 0 and 1 in turn, counted from the
// records already in the loop's folder dir (one episode at a time), so that every group
// differs and a restarted process scores as an uninterrupted one would.
func Alternate(dir string) rollout.Scorer {
	return func(_ context.Context, t *task.Task, _ *workspace.Changes) (rollout.Score, error) {
		recs, _ := filepath.Glob(filepath.Join(dir, "iterations", "*", "*", t.ID, "[0-9]*.json"))
		serving, _ := filepath.Glob(filepath.Join(dir, "iterations", "*", "gate-serving", "*", t.ID, "[0-9]*.json"))
		return rollout.Score{Reward: float64((len(recs) + len(serving)) % 2), Reason: "the test's alternating reward"}, nil
	}
}

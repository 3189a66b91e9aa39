package rollout_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestRunnerGroupTrains closes the loop from the runner to the trainer on CPU: a tiny
// random Llama, exported by the trainer and served by the real Ollama (ChatML), runs a
// group through rollout.Run; BuildGroup turns the group's trajectories into token-exact
// rollouts (none dropped) carrying the records' rewards and the task as group, and a GRPO
// step on them changes the adapter. The random model cannot fix anything, so this test's
// scorer gives 1 and 0 in turn: the rewards only have to differ here (real rewards are
// TestGoTaskBuildsOnTheTrustedCache's).
func TestRunnerGroupTrains(t *testing.T) {
	py := trainerPython(t)
	t.Parallel()
	srv := ollamatest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p, _, err := trainer.Start(ctx, trainer.Options{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if _, err := p.Load(ctx, trainer.Load{Random: &trainer.RandomModel{Arch: "llama", VocabSize: 320, InitializerRange: 0.2, TextOutput: true},
		LR: 1e-2, Device: "cpu"}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base")
	if ex, err := p.MergeExport(ctx, base, "float16"); err != nil || len(ex.Problems) > 0 {
		t.Fatalf("merge_export: %+v, %v", ex, err)
	}
	const name = "tiny-runner-chatml:0"
	importAs(ctx, t, srv.Client, name, base, chatMLFormat)

	tk := calcTask(t)
	out := t.TempDir()
	var mu sync.Mutex
	n := 0
	alternate := func(context.Context, *task.Task, *workspace.Changes) (rollout.Score, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return rollout.Score{Reward: float64(n % 2), Reason: "the test's alternating reward"}, nil
	}
	sums, err := rollout.Run(ctx, []*task.Task{tk}, rollout.Options{Model: name, Out: out, Score: alternate, Group: 2,
		Agent:         agent.Options{NumCtx: 8192, MaxSteps: 2, MaxTokensPerTurn: 24, TopP: 1, TopK: 100},
		SharedGoCache: true, Hosts: []rollout.Host{{Name: "shared", Model: srv.Client, Workers: 2}}, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Errors != 0 || !sums[0].Varied {
		t.Fatalf("summaries %+v", sums)
	}
	rs, dropped, err := rollout.BuildGroup(ctx, p, formatOf(t, srv.Client, name), out, sums[0])
	if err != nil || len(dropped) > 0 {
		t.Fatalf("BuildGroup: %v, dropped %v", err, dropped)
	}
	rewards := map[float64]int{}
	for _, r := range rs {
		rewards[r.Reward]++
		if r.Group != tk.ID {
			t.Errorf("rollout group %q, want the task %s", r.Group, tk.ID)
		}
	}
	if rewards[0] == 0 || rewards[1] == 0 {
		t.Fatalf("rollouts' rewards %v: want the records' 0 and 1", rewards)
	}
	before, err := p.MetricsDigest(ctx)
	if err != nil || len(before.AdapterDigests) != 1 {
		t.Fatalf("adapter digest: %+v, %v", before, err)
	}
	tr, err := p.Train(ctx, trainer.Batch{Rollouts: rs})
	if err != nil {
		t.Fatal(err)
	}
	after, err := p.MetricsDigest(ctx)
	if err != nil || tr.Steps == 0 || after.AdapterDigests[0] == before.AdapterDigests[0] {
		t.Fatalf("%d GRPO steps left the adapter unchanged (%v)", tr.Steps, err)
	}
	t.Logf("%d rollouts from a group of 2 (rewards %v), %d GRPO steps", len(rs), rewards, tr.Steps)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

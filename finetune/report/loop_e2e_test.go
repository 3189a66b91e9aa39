package report

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/internal/looptest"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/synth"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestRealIteration reads the state a real loop.Step leaves: one iteration on CPU against
// the real Ollama (synthesis from a real repository, rollouts of a tiny random Llama, a GRPO
// step, the export imported, the held-out gate), set up as finetune/loop's TestIteration is
// (finetune/internal/looptest's Prepare and Alternate; the loop's Config is that package's
// test code, which this package cannot import, so its few lines are repeated). It checks what the fixture-driven tests cannot: that the files the loop
// really writes are where Collect looks, and that its figures are the loop's own.
//
// It runs only when FROGNANO_REPORT_REAL_LOOP is set: the iteration took 9 minutes on 2
// shared cores at load 20 (finetune/loop's own end-to-end tests run the same iteration in
// `make test`), which would make `make test` that much longer for a check of the reading
// side. Run it after changing what the loop writes or where.
func TestRealIteration(t *testing.T) {
	if os.Getenv("FROGNANO_REPORT_REAL_LOOP") == "" {
		t.Skip("set FROGNANO_REPORT_REAL_LOOP=1 to run one real loop iteration (several minutes) and read its state")
	}
	t.Parallel()
	srv := ollamatest.Start(t)
	// The base model (a tiny random Llama, exported by the trainer and imported into Ollama),
	// the repository and the folders, as the loop's own end-to-end tests make them.
	su := looptest.Prepare(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	repo, dir, regDir := su.Repo, su.Dir, su.RegistryDir
	rule := gate.Rule{Alpha: 0.05, MinTasks: 1}
	cfg := loop.Config{
		Repo: repo, Base: su.Base, Weights: trainer.Load{Model: su.Weights, LR: 1e-2, Device: "cpu"},
		Client: srv.Client, Host: su.Host, Dir: dir, RegistryDir: regDir, StoreDir: su.StoreDir,
		Frontier: frontier.Config{HeldOut: 0.5, Seed: 1},
		Target:   2, HeldOut: 2,
		Synth: synth.Options{Env: env.Options{PackageTimeout: 10 * time.Second, GoCache: fixture.GoCache(), CacheDir: su.EnvCache}},
		Rollout: rollout.Options{Group: 2, Score: looptest.Alternate(dir), SharedGoCache: true,
			Hosts: []rollout.Host{{Name: "test", Model: srv.Client, Workers: 1}},
			Agent: agent.Options{NumCtx: 8192, MaxSteps: 2, MaxTokensPerTurn: 24, TopP: 1, TopK: 100}},
		Trainer:     trainer.Options{Python: su.Python},
		ExportDType: "float16",
		Rule:        &rule,
	}
	start := time.Now()
	st, err := loop.Step(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one iteration: %v; %s", time.Since(start).Round(time.Second), st.Outcome)

	s, err := Collect(Options{Repo: repo, Dir: dir, RegistryDir: regDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) > 0 {
		t.Errorf("notes: %v", s.Notes)
	}
	h := st.History[len(st.History)-1]
	if !s.Started || s.Iterations.Done != 1 || len(s.Series) != 1 || s.Series[0].MeanReward != h.MeanReward {
		t.Fatalf("summary %+v, loop history %+v", s, st.History)
	}
	pt := s.Series[0]
	// Every training group's episodes were read, with their times; the trainer's time is the loop's.
	if pt.Groups != len(st.Tasks) || pt.Episodes != 2*len(st.Tasks) || pt.Varied != pt.Groups || pt.Time.Rollouts <= 0 || pt.Time.Gate <= 0 {
		t.Errorf("point %+v for tasks %v", pt, st.Tasks)
	}
	if st.Trained == nil || st.Trained.Seconds <= 0 || pt.Time.Train != st.Trained.Seconds || h.Trained == nil || h.Verdict == nil {
		t.Errorf("train time %v, the loop's trained %+v, history %+v", pt.Time.Train, st.Trained, h)
	}
	// The checkpoints: the base and the candidate, with the gate's episodes as the registry has them.
	if len(s.Checkpoints) != 2 || s.Checkpoints[1].Model != st.Model || s.Checkpoints[1].HeldOut == nil ||
		s.Checkpoints[1].HeldOut.Attempts != 2*len(st.HeldOut) || s.Checkpoints[0].HeldOut == nil {
		t.Errorf("checkpoints %+v (held out %v)", s.Checkpoints, st.HeldOut)
	}
	if st.Verdict.Accept != (s.InUse == st.Model) || s.HeldOutNow == nil || s.HeldOutStart == nil {
		t.Errorf("in use %q, verdict %+v, held out %+v → %+v", s.InUse, st.Verdict, s.HeldOutStart, s.HeldOutNow)
	}
	if s.Tasks.Total != len(st.Frontier.Tasks) || s.Tasks.HeldOut < len(st.HeldOut) {
		t.Errorf("tasks %+v, frontier has %d", s.Tasks, len(st.Frontier.Tasks))
	}
	path, err := Write(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, files := checkPage(t, path, s); len(files) != len(figures) {
		t.Errorf("the page shows %v", files)
	}
}

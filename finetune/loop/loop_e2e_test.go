package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/internal/looptest"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/synth"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/internal/gocache"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/ollamatest"
)

func TestMain(m *testing.M) {
	gocache.HelperMain()
	if os.Getenv(envChild) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// setup is what the parent test and the re-executed child share, passed as JSON.
type setup = looptest.Setup

const (
	envChild  = "FROGNANO_LOOP_TEST_CHILD"  // the setup, JSON: run one Step and exit
	envKillAt = "FROGNANO_LOOP_TEST_KILLAT" // a phase (killed after writing it) or "record"
)

func prepare(t *testing.T, srv *ollamatest.Server) setup { return looptest.Prepare(t, srv) }

// config is the loop's configuration for the tests: groups of 2, two training tasks, two
// held-out ones (half of the tasks are held out), a gate that decides on one task, and a
// scorer that gives each task's episodes 0 and 1 in turn, counted from the records already
// on disk (one episode at a time), so that every group differs and a restarted process
// scores as an uninterrupted one would. The random model cannot fix a bug: the real
// rewards are finetune/reward's tests'.
func config(s setup, client *api.Client) Config {
	rule := gate.Rule{Alpha: 0.05, MinTasks: 1}
	return Config{
		Repo: s.Repo, Base: s.Base, Weights: trainer.Load{Model: s.Weights, LR: 1e-2, Device: "cpu"},
		Client: client, Host: s.Host, Dir: s.Dir, RegistryDir: s.RegistryDir, StoreDir: s.StoreDir,
		Frontier: frontier.Config{HeldOut: 0.5, Seed: 1},
		Target:   2, HeldOut: 2,
		Synth: synth.Options{Env: env.Options{PackageTimeout: 10 * time.Second, GoCache: fixture.GoCache(), CacheDir: s.EnvCache}},
		Rollout: rollout.Options{Group: 2, Score: looptest.Alternate(s.Dir), SharedGoCache: true,
			Hosts: []rollout.Host{{Name: "test", Model: client, Workers: 1}},
			Agent: agent.Options{NumCtx: 8192, MaxSteps: 2, MaxTokensPerTurn: 24, TopP: 1, TopK: 100}},
		Trainer:     trainer.Options{Python: s.Python},
		ExportDType: "float16",
		Rule:        &rule,
	}
}

// TestIteration is the loop end to end on CPU against the real Ollama: synthesis from a
// real repository, rollouts of the base model, the frontier's update, a GRPO step, the
// merged export imported under the registry's name, the held-out gate on both models, and
// the switch; then the state file and the registry are what an accepted iteration leaves.
func TestIteration(t *testing.T) {
	t.Parallel() // each test has its own Ollama; they overlap waits on Ollama and the trainer
	srv := ollamatest.Start(t)
	s := prepare(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := config(s, srv.Client)
	var phases, ended []Phase
	cfg.Progress = func(p Progress) {
		if p.Fraction == 0 && p.Detail == "" {
			phases = append(phases, p.Phase)
		}
		if p.Fraction == 1 && p.Detail == "" {
			ended = append(ended, p.Phase)
		}
	}
	start := time.Now()
	st, err := Step(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one iteration: %v; %s", time.Since(start).Round(time.Second), st.Outcome)
	if want := []Phase{PhaseSynth, PhaseRollouts, PhaseObserve, PhaseTrain, PhaseImport, PhaseGate}; fmt.Sprint(phases) != fmt.Sprint(want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if fmt.Sprint(ended) != fmt.Sprint(phases) {
		t.Errorf("phases ended %v, want each begun %v (the end names the phase that ended)", ended, phases)
	}
	checkEnd(t, ctx, s, srv.Client)
}

// checkEnd checks what an uninterrupted iteration leaves: the state file done and valid,
// every training task's group whole (G records, no more), the frontier's evidence counted
// once, one fine-tuned model in Ollama, accepted and in use.
func checkEnd(t *testing.T, ctx context.Context, s setup, client *api.Client) {
	t.Helper()
	st, err := Load(filepath.Join(s.Dir, "loop.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != PhaseDone || st.Iteration != 1 || len(st.History) != 1 {
		t.Fatalf("state: phase %s, iteration %d, history %+v", st.Phase, st.Iteration, st.History)
	}
	if len(st.Tasks) == 0 || len(st.HeldOut) == 0 {
		t.Fatalf("tasks %v, held out %v: want both", st.Tasks, st.HeldOut)
	}
	name := registry.Name(s.Repo, 1)
	if st.Model != name || st.Verdict == nil || !st.Verdict.Accept || st.Trained == nil || st.Trained.Steps == 0 {
		t.Fatalf("state: model %q (want %q), verdict %+v, trained %+v", st.Model, name, st.Verdict, st.Trained)
	}
	for _, id := range st.Tasks {
		recs, _ := filepath.Glob(filepath.Join(s.Dir, "iterations", "1", "rollouts", id, "[0-9]*.json"))
		if len(recs) != 2 {
			t.Errorf("task %s: %d records, want 2", id, len(recs))
		}
		if ts := st.Frontier.Tasks[id]; ts == nil || ts.Rollouts != 2 {
			t.Errorf("task %s: frontier %+v, want 2 rollouts counted once", id, ts)
		}
	}
	reg, err := registry.Load(registry.Path(s.RegistryDir, s.Repo))
	if err != nil {
		t.Fatal(err)
	}
	if reg.InUse != name || len(reg.Models) != 1 || reg.Models[0].Status != registry.Accepted {
		b, _ := json.MarshalIndent(reg, "", " ")
		t.Fatalf("registry: %s", b)
	}
	list, err := client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, m := range list.Models {
		if strings.HasPrefix(m.Name, "frognano-ft-") {
			ours = append(ours, m.Name)
		}
	}
	if len(ours) != 1 || !registry.SameName(ours[0], name) {
		t.Fatalf("Ollama has %v, want only %s", ours, name)
	}
}

// TestKilledIteration kills a process running the iteration with SIGKILL at several points
// (after synthesis, after the first episode's record, after training, after the import),
// each time starting it again, and checks that the end is what an uninterrupted iteration
// leaves: no duplicated model, no lost or extra record, the frontier counted once.
func TestKilledIteration(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Start(t)
	s := prepare(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{string(PhaseRollouts), "record", string(PhaseImport), string(PhaseGate), ""} {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+string(js), envKillAt+"="+at)
		out, err := cmd.CombinedOutput()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		killed := ws.Signaled() && ws.Signal() == syscall.SIGKILL
		switch {
		case at == "" && err != nil:
			t.Fatalf("the last run: %v\n%s", err, out)
		case at != "" && !killed:
			// Say where the iteration went instead: an iteration that ends early (nothing to
			// train on) never reaches the later phases.
			st, lerr := Load(filepath.Join(s.Dir, "loop.json"))
			if lerr == nil {
				t.Fatalf("the run to kill at %s was not killed: %v (the state: phase %s, outcome %q, trained %+v)\n%s", at, err, st.Phase, st.Outcome, st.Trained, out)
			}
			t.Fatalf("the run to kill at %s was not killed: %v\n%s", at, err, out)
		}
		st, err := Load(filepath.Join(s.Dir, "loop.json"))
		if err != nil {
			t.Fatalf("after a kill at %s: %v", at, err)
		}
		t.Logf("killed at %q: the state file says %s", at, st.Phase)
	}
	checkEnd(t, ctx, s, srv.Client)
}

// child runs one Step in the re-executed test binary, killing itself where envKillAt says.
func child() int {
	var s setup
	if err := json.Unmarshal([]byte(os.Getenv(envChild)), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	u, err := (ollama.Config{Host: s.Host}).BaseURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := config(s, api.NewClient(u, http.DefaultClient))
	at := os.Getenv(envKillAt)
	kill := func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	cfg.hook = func(p Phase) {
		if string(p) == at {
			kill()
		}
	}
	if at == "record" {
		cfg.Rollout.OnRecord = func(*rollout.Record) { kill() }
	}
	if _, err := Step(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

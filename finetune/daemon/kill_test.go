package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
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
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/synth"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/ollamatest"
	"github.com/frognano/frognano/watch"
)

const envKillChild = "FROGNANO_DAEMON_TEST_KILL" // the looptest.Setup, JSON: run the daemon in $envDir

// loopConfig is the configuration of loop's own end-to-end tests: groups of 2, two training
// tasks, two held-out ones, a gate that decides on one task, alternating rewards. (With one
// held-out task, synthesis made one training task, whose rollouts may all be dropped as
// not token-exact: the iteration then ends without a model, before the phases to kill.)
func loopConfig(s looptest.Setup, client *api.Client) loop.Config {
	rule := gate.Rule{Alpha: 0.05, MinTasks: 1}
	return loop.Config{
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

// killChild is the daemon the test kills: Run, as `frognano finetune daemon-run` calls it,
// with the test's loop configuration (its scorer cannot travel through flags).
func killChild() int {
	var s looptest.Setup
	if err := json.Unmarshal([]byte(os.Getenv(envKillChild)), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	u, err := (ollama.Config{Host: s.Host}).BaseURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	dir := os.Getenv(envDir)
	err = Run(ctx, Options{Dir: dir, Loop: loopConfig(s, api.NewClient(u, http.DefaultClient)), Pause: time.Hour,
		GPULock: filepath.Join(dir, "gpu.lock")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKill9 is the acceptance test: the daemon runs as a real process against the
// real Ollama with a tiny model and is killed with SIGKILL at random points of the
// iteration's phases (seeded: FROGNANO_KILL_SEED repeats a run), and once stopped with
// SIGTERM mid-phase; it is started again each time, and after each restart the files
// parse, no record or trajectory is torn, no task left the store, and every model the
// registry made is still in Ollama. The run then ends as an uninterrupted iteration does,
// and the user's repository is as it was.
func TestKill9(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Start(t)
	s := looptest.Prepare(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FROGNANO_KILL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (FROGNANO_KILL_SEED=%d repeats the kill points)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	js, _ := json.Marshal(s)
	argv := []string{os.Args[0], "-test.run=^$"}
	environ := append(os.Environ(), envKillChild+"="+string(js), envDir+"="+dir, "FROGNANO_CACHE="+t.TempDir())
	start := func() int {
		t.Helper()
		pid, already, err := Start(dir, argv, environ)
		if err != nil || already {
			t.Fatalf("Start: pid %d, already %v, %v\n%s", pid, already, err, tail(filepath.Join(dir, LogFile), 4000))
		}
		t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
		return pid
	}
	repoBefore := gitState(t, s.Repo)
	began := time.Now()
	var tasks map[string]bool

	// The phases to interrupt, each at a random moment within its first seconds (a later
	// moment only redoes more work); "term" is a stop with SIGTERM during rollouts.
	plan := []struct {
		phase loop.Phase
		upTo  time.Duration
		term  bool
	}{
		{loop.PhaseSynth, 3 * time.Second, false},
		{loop.PhaseSynth, 8 * time.Second, false},
		{loop.PhaseRollouts, 4 * time.Second, false},
		{loop.PhaseRollouts, 2 * time.Second, true},
		{loop.PhaseTrain, 6 * time.Second, false},
		{loop.PhaseImport, time.Second, false},
		{loop.PhaseGate, 4 * time.Second, false},
		{loop.PhaseGate, 10 * time.Second, false},
	}
	running := 0 // a daemon left running when the iteration ended before its interruption
	for i, k := range plan {
		pid := start()
		at := reach(t, ctx, dir, s.Dir, k.phase)
		delay := time.Duration(rng.Int64N(int64(k.upTo)))
		time.Sleep(delay)
		st, _ := ReadStatus(dir)
		// On a quiet machine the gate can end within the moment drawn: the iteration is
		// over, and a daemon started after a kill would begin the next one at once (the
		// pause is after an iteration of its own), leaving the state past the end checked.
		if ls, err := loop.Load(loop.StatePath(s.Dir)); err == nil && len(ls.History) > 0 {
			t.Logf("interruption %d: the iteration ended within the %v drawn in %s; not interrupted", i, delay.Round(time.Millisecond), k.phase)
			running = pid
			break
		}
		if k.term {
			stopped, err := Stop(ctx, dir, time.Minute)
			if err != nil || stopped.PID != pid || stopped.Killed {
				t.Fatalf("stop %d: %+v, %v; want an end within a minute of SIGTERM\n%s", i, stopped, err, tail(filepath.Join(dir, LogFile), 4000))
			}
			if st, err := ReadStatus(dir); err != nil || !strings.Contains(st.Ended, "stopped") {
				t.Fatalf("after SIGTERM the status says %+v, %v; want why it ended", st, err)
			}
			t.Logf("stop %d: SIGTERM in %s (reached as %s, +%v), ended in %v", i, k.phase, at, delay.Round(time.Millisecond), stopped.Took.Round(time.Millisecond))
		} else {
			syscall.Kill(pid, syscall.SIGKILL)
			if !gone(ctx, dir, 10*time.Second) {
				t.Fatalf("kill %d: the lock is held 10s after SIGKILL", i)
			}
			t.Logf("kill %d: SIGKILL in %s (reached as %s, +%v; the status said %s %.0f%% %s)", i, k.phase, at, delay.Round(time.Millisecond),
				st.Phase, 100*st.Fraction, st.Detail)
		}
		tasks = checkFiles(t, ctx, s, dir, srv.Client, tasks)
	}

	pid := running
	if pid == 0 {
		pid = start()
	}
	for {
		// The daemon's status counts the iteration once it has ended (after the loop's
		// history has it): stopping it before then would leave the count at 0.
		if st, err := ReadStatus(dir); err == nil && st.Iterations > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the iteration did not end\n%s", tail(filepath.Join(dir, LogFile), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopped, err := Stop(ctx, dir, time.Minute)
	if err != nil || stopped.PID != pid || stopped.Killed {
		t.Fatalf("the last stop: %+v, %v", stopped, err)
	}
	t.Logf("%d interruptions and the iteration's end in %v; the daemons' log says:", len(plan), time.Since(began).Round(time.Second))
	if b, err := os.ReadFile(filepath.Join(dir, LogFile)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "iteration 1:") || strings.Contains(line, "fine-tuning ") || strings.Contains(line, "stopped at") {
				t.Logf("  %s", line)
			}
		}
	}
	checkFiles(t, ctx, s, dir, srv.Client, tasks)
	checkEnd(t, ctx, s, srv.Client)
	st, err := ReadStatus(dir)
	if err != nil || st.Iterations != 1 || st.GPUSeconds <= 0 || !strings.Contains(st.Outcome, "accepted") || st.Model != registry.Name(s.Repo, 1) {
		t.Fatalf("status %+v, %v", st, err)
	}
	if h, err := watch.Head(ctx, s.Repo); err != nil || st.Head != h.New {
		t.Errorf("status head %q, want the commit synthesis worked on, HEAD %q (%v)", st.Head, h.New, err)
	}
	if o := Look(s.Repo, dir, s.Dir, s.RegistryDir); o.Running || o.Summary == nil || o.Summary.Iterations.Done != 1 || o.Summary.Iterations.Accepted != 1 ||
		o.Summary.HeldOutNow == nil || o.Summary.HeldOutStart == nil || o.Model != st.Model || len(o.Problems) > 0 {
		b, _ := json.Marshal(o)
		t.Fatalf("overview %s", b)
	}
	if after := gitState(t, s.Repo); after != repoBefore {
		t.Fatalf("the daemon changed the user's repository:\nbefore:\n%s\nafter:\n%s", repoBefore, after)
	}
}

// reach waits until the daemon's status shows phase (or a later one of the same
// iteration, or the iteration's end: a short phase can pass between two looks), and
// returns the phase seen.
func reach(t *testing.T, ctx context.Context, dir, loopDir string, phase loop.Phase) loop.Phase {
	t.Helper()
	want := slices.Index(loop.Phases, phase)
	for {
		if st, err := ReadStatus(dir); err == nil && st.Phase != "" && slices.Index(loop.Phases, st.Phase) >= want {
			return st.Phase
		}
		if ls, err := loop.Load(loop.StatePath(loopDir)); err == nil && len(ls.History) > 0 {
			t.Fatalf("the iteration ended before %s was reached: %s", phase, ls.Outcome)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s was not reached\n%s", phase, tail(filepath.Join(dir, LogFile), 4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkFiles checks what must hold after any interruption and returns the store's tasks:
// the state files parse, every episode record and its trajectory are whole, no task of
// before left the store and the frontier knows none the store lacks, and every model the
// registry made (pending aside: being made when killed) is in Ollama.
func checkFiles(t *testing.T, ctx context.Context, s looptest.Setup, dir string, client *api.Client, before map[string]bool) map[string]bool {
	t.Helper()
	ls, err := loop.Load(loop.StatePath(s.Dir))
	if err != nil {
		t.Fatalf("loop state: %v", err)
	}
	if _, err := ReadStatus(dir); err != nil {
		t.Fatalf("daemon status: %v", err)
	}
	records := 0
	filepath.WalkDir(filepath.Join(s.Dir, "iterations"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || d.Name() == "group.json" || d.Name()[0] < '0' || d.Name()[0] > '9' {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var rec rollout.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("record %s is torn: %v", p, err)
		}
		if rec.Trajectory != "" {
			if _, err := rollout.Read(filepath.Join(filepath.Dir(filepath.Dir(p)), rec.Trajectory)); err != nil {
				t.Fatalf("the trajectory of record %s: %v", p, err)
			}
		}
		records++
		return nil
	})
	store, err := task.Open(s.StoreDir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := store.List()
	if err != nil {
		t.Fatalf("task store: %v", err)
	}
	now := map[string]bool{}
	for _, tk := range list {
		now[tk.ID] = true
	}
	for id := range before {
		if !now[id] {
			t.Errorf("task %s left the store", id)
		}
	}
	for id := range ls.Frontier.Tasks {
		if !now[id] {
			t.Errorf("the frontier's task %s is not in the store", id)
		}
	}
	reg, err := registry.Load(registry.Path(s.RegistryDir, s.Repo))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("registry: %v", err)
	}
	models, err := client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reg != nil {
		for _, m := range reg.Models {
			if m.Status == registry.Pending {
				continue
			}
			if !slices.ContainsFunc(models.Models, func(o api.ListModelResponse) bool { return registry.SameName(o.Name, m.Name) }) {
				t.Errorf("the registry's %s (%s) is gone from Ollama", m.Name, m.Status)
			}
		}
	}
	if ls.Export != "" {
		if _, err := os.Stat(filepath.Join(ls.Export, "config.json")); err != nil {
			t.Errorf("the recorded export: %v", err)
		}
	}
	t.Logf("  files whole: loop at %s, %d records, %d tasks, %d models", ls.Phase, records, len(now), len(models.Models))
	return now
}

// checkEnd is loop's TestIteration's check of an iteration's end: done and accepted, every
// training group whole (2 records, no more), the frontier's evidence counted once, one
// fine-tuned model in Ollama, in use.
func checkEnd(t *testing.T, ctx context.Context, s looptest.Setup, client *api.Client) {
	t.Helper()
	st, err := loop.Load(loop.StatePath(s.Dir))
	if err != nil {
		t.Fatal(err)
	}
	name := registry.Name(s.Repo, 1)
	if st.Phase != loop.PhaseDone || st.Iteration != 1 || len(st.History) != 1 || st.Model != name || st.Verdict == nil || !st.Verdict.Accept {
		t.Fatalf("state: phase %s, iteration %d, model %q (want %q), verdict %+v, history %+v", st.Phase, st.Iteration, st.Model, name, st.Verdict, st.History)
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

// gitState is what the user sees of their repository: HEAD, every ref, the index, the
// stash, the status, and the files' bytes (read without refreshing the index).
func gitState(t *testing.T, repo string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"rev-parse", "HEAD"}, {"for-each-ref"}, {"stash", "list"}, {"ls-files", "--stage"},
		{"status", "--porcelain=v2", "--branch", "--untracked-files=all", "--ignored"}, {"worktree", "list", "--porcelain"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		fmt.Fprintf(&b, "$ git %s\n%s", strings.Join(args, " "), out)
	}
	index, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "index: %d bytes, %x\n", len(index), index[len(index)-20:])
	filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %d %x\n", p, len(c), c[:min(len(c), 16)])
		}
		return nil
	})
	return b.String()
}

// Package learnbench is the learning benchmark: does the online loop (finetune/loop.Step:
// synthesize → rollouts → observe → train → import → held-out gate) make a small real model
// better at a repository's tasks? It runs the whole loop, unchanged, for a few iterations
// and several seeds, on CPU, with SmolLM2-135M-Instruct, and records the held-out pass rate
// of every checkpoint with an interval. Entry point: [Run]; the command is
// cmd/frognano-learnbench (`make bench-learn`).
//
// It is a benchmark, not a test: one iteration is tens of minutes on a 2-core machine, and
// its answer is a measurement, not a pass or a fail.
package learnbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/synth"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/ollama"
)

// Options are the benchmark's knobs. The defaults fit a 2-core CPU in about half an hour
// per seed and iteration pair; on a GPU raise Seeds, Iterations, Group, Tasks and HeldOut.
type Options struct {
	// GGUF is SmolLM2-135M-Instruct (scripts/fetch-smollm2.sh puts it in frognano's cache).
	GGUF string
	// Repo is a git repository to synthesize tasks from; "" writes the fixture repository
	// (finetune/internal/fixture's calc package) into Out. Each seed works on its own clone,
	// so that seeds share no registry, task store or loop state.
	Repo string
	// Out receives everything: the Ollama server's store, each seed's clone and loop state,
	// learnbench.json and the curve.
	Out string
	// Seeds and Iterations: Seeds runs of Iterations loop iterations each (defaults 2 and 3).
	Seeds, Iterations int
	// Group is the episodes per task (default 4); Tasks the training tasks per iteration
	// (default 4); HeldOut the held-out tasks the gate evaluates on (default 8).
	Group, Tasks, HeldOut int
	// MaxSteps and MaxTokensPerTurn bound each episode (defaults 4 and 96: read, edit,
	// answer, and one turn to spare); NumCtx is the model's context (default 4096).
	MaxSteps, MaxTokensPerTurn, NumCtx int
	// Temperature of the rollouts (default 1, the policy the trainer's ratios assume). Zero
	// takes the default rather than greedy decoding: greedy groups are alike, their rewards
	// equal, and GRPO learns nothing from them.
	Temperature float64
	// LR is the LoRA learning rate (default 1e-3: about ten times a full fine-tuning rate, as
	// LoRA for RL wants, and a run here takes only a few updates).
	LR float64
	// Workers is how many episodes run at once (default 2).
	Workers int
	// Threads is Ollama's num_thread for the model (default 1): on a shared, loaded CPU
	// ggml's threads wait for each other at every layer, and with two of them SmolLM2 made
	// 0.2 tokens a second here (load 18 on 2 cores); the loop imports each checkpoint with
	// the same parameters.
	Threads int
	// Device is the trainer's (default cpu; auto or cuda on a GPU machine).
	Device string
	// Python is the trainer's interpreter ("" its default virtual environment).
	Python string
	// Log hears progress lines (nil: none).
	Log io.Writer `json:"-"`
}

func (o *Options) defaults() error {
	if o.GGUF == "" || o.Out == "" {
		return errors.New("learnbench: GGUF and Out are required")
	}
	if _, err := os.Stat(o.GGUF); err != nil {
		return fmt.Errorf("learnbench: the model: %w (scripts/fetch-smollm2.sh fetches SmolLM2-135M-Instruct)", err)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Seeds, 2)
	def(&o.Iterations, 3)
	def(&o.Group, 4)
	def(&o.Tasks, 4)
	def(&o.HeldOut, 8)
	def(&o.MaxSteps, 4)
	def(&o.MaxTokensPerTurn, 96)
	def(&o.NumCtx, 4096)
	def(&o.Workers, 2)
	def(&o.Threads, 1)
	if o.Temperature <= 0 {
		o.Temperature = 1
	}
	if o.LR <= 0 {
		o.LR = 1e-3
	}
	if o.Device == "" {
		o.Device = "cpu"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return nil
}

// Base is the Ollama name the benchmark imports SmolLM2 under.
const Base = "learnbench-smollm2:base"

// Run runs the benchmark and writes learnbench.json and learning-curve.png into Out. A run
// with the Out of an interrupted one resumes it: each seed's loop resumes where its state
// file says, and iterations already recorded are not run again.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	bin, err := ollama.FindBinary()
	if err != nil {
		return nil, err
	}
	srv, err := ollama.StartServer(ctx, bin, filepath.Join(o.Out, "ollama"), "OLLAMA_NUM_PARALLEL="+strconv.Itoa(o.Workers*o.Seeds))
	if err != nil {
		return nil, fmt.Errorf("learnbench: starting Ollama: %w", err)
	}
	defer srv.Stop()
	host, err := stableHost(filepath.Join(o.Out, "ollama", "host"), "http://"+srv.Host)
	if err != nil {
		return nil, err
	}
	if err := ollama.Create(ctx, srv.Client, ollama.CreateRequest{Name: Base, GGUF: o.GGUF, Template: Template,
		Parameters: map[string]any{"stop": []string{"<|im_end|>"}, "num_ctx": o.NumCtx, "num_thread": o.Threads}}, nil); err != nil {
		return nil, fmt.Errorf("learnbench: importing %s: %w", o.GGUF, err)
	}
	src := o.Repo
	if src == "" {
		if src, err = writeFixture(ctx, filepath.Join(o.Out, "fixture")); err != nil {
			return nil, err
		}
	}
	res, err := ReadResult(o.Out)
	if err != nil {
		return nil, err
	}
	res.Options = o
	for i, x := range res.Iterations {
		if x.Train == nil {
			if res.Iterations[i].Train, err = trainResult(filepath.Join(o.Out, "seed-"+strconv.Itoa(x.Seed), "loop"), x.Iteration); err != nil {
				return nil, err
			}
		}
	}
	if res.Machine == "" {
		res.Machine = machine()
	}
	// The seeds run at once: on a shared CPU most of an iteration's time is waits (the
	// sandbox's go test builds, the trainer loading the model, Ollama's prompt evaluation)
	// that overlap well, and every seed is independent of the others.
	var (
		mu   sync.Mutex // guards res and its file
		wg   sync.WaitGroup
		errs = make([]error, o.Seeds)
	)
	for seed := 1; seed <= o.Seeds; seed++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[seed-1] = o.runSeed(ctx, srv, host, src, seed, res, &mu)
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	res.summarize()
	if err := res.Write(o.Out); err != nil {
		return res, err
	}
	return res, errors.Join(errs...)
}

// runSeed runs one seed's iterations that res does not have yet, recording each in res as
// it ends.
func (o Options) runSeed(ctx context.Context, srv *ollama.Server, host, src string, seed int, res *Result, mu *sync.Mutex) error {
	dir := filepath.Join(o.Out, "seed-"+strconv.Itoa(seed))
	repo, err := cloneOnce(ctx, src, filepath.Join(dir, "repo"))
	if err != nil {
		return err
	}
	cfg := o.config(srv, host, repo, dir, seed)
	for it := 1; it <= o.Iterations; it++ {
		mu.Lock()
		done := res.has(seed, it)
		mu.Unlock()
		if done {
			continue
		}
		start := time.Now()
		logf := func(format string, args ...any) {
			fmt.Fprintf(o.Log, "seed %d, iteration %d (%s): %s\n", seed, it, time.Since(start).Round(time.Second), fmt.Sprintf(format, args...))
		}
		cfg.Progress = func(p loop.Progress) {
			if p.Fraction == 0 && p.Detail == "" {
				logf("%s", p.Phase)
			}
		}
		st, err := loop.Step(ctx, cfg)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seed, err)
		}
		rec, err := record(seed, st, cfg, time.Since(start))
		if err != nil {
			return err
		}
		logf("%s", st.Outcome)
		mu.Lock()
		res.Iterations = append(res.Iterations, rec)
		res.summarize()
		err = res.Write(o.Out)
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// stableHost is the Ollama address the seeds' registries record: the first run's. The
// benchmark's server keeps its models in Out but listens on a new free port each time it
// starts, and a registry refuses a server at another address than the one its models were
// made in (they would not be there); here they are, so a resumed run names the server as
// the first one did.
func stableHost(path, now string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return now, atomicfile.Write(path, []byte(now+"\n"), 0o644)
}

// config is one seed's loop configuration: its own state, registry and task store under
// dir; the gate decides on every held-out task there is (the default rule wants 20, more
// than a CPU run evaluates).
func (o Options) config(srv *ollama.Server, host, repo, dir string, seed int) loop.Config {
	rule := gate.DefaultRule()
	rule.MinTasks = 1
	return loop.Config{
		Repo: repo, Base: Base,
		Weights: trainer.Load{GGUF: o.GGUF, LR: o.LR, Device: o.Device, Seed: seed},
		Client:  srv.Client, Host: host,
		Dir: filepath.Join(dir, "loop"), RegistryDir: filepath.Join(dir, "registry"), StoreDir: filepath.Join(dir, "tasks"),
		// Hint level 0 on the easiest rung only: the issue names the function and its file,
		// and one mutation is the whole bug.
		Frontier: frontier.Config{Seed: uint64(seed), HeldOut: 0.5, Synthesizers: []string{synth.SynthMutation},
			Ladder: []frontier.Setting{{HintLevel: synth.HintLocation, Bugs: 1}}},
		Target: o.Tasks, Tasks: o.Tasks, HeldOut: o.HeldOut,
		// One environment cache for all seeds: they share the repository's commit.
		Synth: synth.Options{Env: env.Options{CacheDir: filepath.Join(o.Out, "env")}},
		Rollout: rollout.Options{Group: o.Group, Workers: o.Workers,
			Hosts: []rollout.Host{{Name: srv.Host, Model: srv.Client, Workers: o.Workers}},
			Agent: agent.Options{NumCtx: o.NumCtx, MaxSteps: o.MaxSteps, MaxTokensPerTurn: o.MaxTokensPerTurn,
				Temperature: agent.Temp(o.Temperature), Think: new(bool), MaxTime: 10 * time.Minute}},
		Trainer:     trainer.Options{Python: o.Python},
		ExportDType: "float32",
		Rule:        &rule,
	}
}

// record is what one finished iteration says: the gate's held-out results of the model in
// use and of the candidate, from the registry (which keeps each model's per-task results).
func record(seed int, st *loop.State, cfg loop.Config, took time.Duration) (Iteration, error) {
	rec := Iteration{Seed: seed, Iteration: st.Iteration, Serving: st.Serving, Model: st.Model, Outcome: st.Outcome,
		Seconds: took.Seconds()}
	if n := len(st.History); n > 0 {
		h := st.History[n-1]
		rec.Accepted, rec.TrainReward = h.Accepted, h.MeanReward
	}
	train, err := trainResult(cfg.Dir, st.Iteration)
	if err != nil {
		return rec, err
	}
	rec.Train = train
	if st.Trained != nil {
		rec.TrainSteps, rec.Dropped = st.Trained.Steps, len(st.Trained.Dropped)
	}
	if st.Verdict == nil {
		return rec, nil
	}
	reg, err := registry.Load(registry.Path(cfg.RegistryDir, cfg.Repo))
	if err != nil {
		return rec, err
	}
	serving := reg.BaseHeldOut
	if m := reg.Model(st.Serving); m != nil {
		serving = m.HeldOut
	}
	rec.HeldOutServing = pool(serving, st.HeldOut)
	if m := reg.Model(st.Model); m != nil {
		rec.HeldOutCandidate = pool(m.HeldOut, st.HeldOut)
	}
	return rec, nil
}

// trainResult is an iteration's training rollouts on the model in use, pooled over its
// groups: the pass rate the loop measures every iteration, also when no group differs and
// no gate runs. It reads the groups' summaries, so it also serves a result file written
// before the field existed.
func trainResult(loopDir string, it int) (*gate.Result, error) {
	groups, err := filepath.Glob(filepath.Join(loopDir, "iterations", strconv.Itoa(it), "rollouts", "*", "group.json"))
	if err != nil {
		return nil, err
	}
	var r gate.Result
	for _, g := range groups {
		s, err := rollout.ReadSummary(filepath.Dir(filepath.Dir(g)), filepath.Base(filepath.Dir(g)))
		if err != nil {
			return nil, err
		}
		for _, p := range s.Rewards {
			if p != nil {
				r.Attempts++
				if *p >= 1 {
					r.Successes++
				}
			}
		}
	}
	return &r, nil
}

// pool adds up the results of the tasks in ids.
func pool(results map[string]gate.Result, ids []string) *gate.Result {
	var r gate.Result
	for _, id := range ids {
		r.Successes += results[id].Successes
		r.Attempts += results[id].Attempts
	}
	return &r
}

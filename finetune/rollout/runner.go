package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/reward"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/withhold"
	"github.com/frognano/frognano/internal/cachedir"
	"github.com/frognano/frognano/internal/gocache"
	"github.com/frognano/frognano/ollama"
)

// Score is an episode's reward and the scorer's words on it.
type Score struct {
	Reward float64
	Reason string
	// Details, when set, go into the record as JSON (Record.Scoring): finetune/reward's
	// Result, with the hidden tests that passed and failed and the changes it left out.
	Details any
}

// Scorer rewards an episode: changes are what the agent changed in its copy of the task
// (the base commit with the task's patch applied), with the copy's content as base. It
// returns an error only when it could not judge (a test run that could not start), never
// for a wrong fix, which is a reward.
type Scorer func(ctx context.Context, t *task.Task, changes *workspace.Changes) (Score, error)

// RewardScorer scores with finetune/reward.Score: the task's hidden tests on a tree
// frognano builds from the base commit, the patch and the agent's allowed changes. (Run's
// default, Options.Score nil, is the same with o.Trusted set to the runner's layer of each
// task's base tree.)
func RewardScorer(o reward.Options) Scorer {
	return func(ctx context.Context, t *task.Task, changes *workspace.Changes) (Score, error) {
		res, err := reward.Score(ctx, t, changes, o)
		if err != nil {
			return Score{}, err
		}
		return Score{Reward: res.Reward, Reason: res.Reason, Details: res}, nil
	}
}

// Host is one Ollama server that episodes run on.
type Host struct {
	Name  string      // in the records: its address
	Model agent.Model // *api.Client
	// Workers is how many episodes run on it at once (0: Options.Workers).
	Workers int
}

// Options tune [Run]. Model and Out are required.
type Options struct {
	Model string // the checkpoint, an Ollama model name
	// Out is the output folder: records, trajectories and group summaries. A run with the
	// Out of an earlier one resumes it.
	Out string
	// Score rewards each episode; default finetune/reward.Score (RewardScorer), on the
	// trusted Go build cache layer the episodes used.
	Score Scorer
	// Group is G, the episodes per task (default 8).
	Group int
	// Hosts are the Ollama servers; default one, from OLLAMA_HOST. A free worker of any
	// host takes the next episode, so a busier or slower host simply takes fewer. A host
	// that fails an episode in Ollama and then no longer answers for the model takes no
	// more; when no host is left, Run stops with an error.
	Hosts []Host
	// Workers is the number of episodes at once per host whose Workers is 0: default
	// OLLAMA_NUM_PARALLEL (what the server answers at once), else 1.
	Workers int
	// Agent is the template of each episode's agent options (limits, steps, context, …).
	// Model, Logprobs, Trajectory, TrajectoryDir, WorkDir, KeepCopy, GoCache and OnEvent
	// are the runner's. Temperature nil means 1: Ollama's logprobs, which the trainer's records
	// carry, are the temperature-1 distribution whatever the temperature, so sampling at
	// 1 keeps the rollouts on the policy the trainer's ratios assume.
	Agent agent.Options
	// OnEvent, when set, receives every episode's agent events; it is called from several
	// goroutines at once and must not block for long.
	OnEvent func(taskID string, episode int, ev agent.Event)
	// OnRecord, when set, receives each record as it is written (progress).
	OnRecord func(*Record)
	// SharedGoCache runs Go tasks' commands with the sandbox's default Go build cache
	// instead of a new scratch layer over a trusted layer of the base commit
	// (internal/gocache), which needs bubblewrap. What one episode's commands leave in a
	// shared cache reaches the next one: for tests and machines without bubblewrap only.
	SharedGoCache bool
	// GoCacheDir holds the trusted layers, one per base tree and Go version (default:
	// finetune/gocache in frognano's cache folder, where finetune/reward builds its own:
	// the same layers serve both).
	GoCacheDir string
	// WorkDir holds the episodes' copies while they run (default the system's temp
	// folder); they are removed, also on cancel.
	WorkDir string
}

func (o Options) withDefaults() (Options, error) {
	if o.Model == "" || o.Out == "" {
		return o, errors.New("rollout: Run needs a Model and an Out folder")
	}
	if o.Group <= 0 {
		o.Group = 8
	}
	if o.Workers <= 0 {
		o.Workers = 1
		if n, err := strconv.Atoi(os.Getenv("OLLAMA_NUM_PARALLEL")); err == nil && n > 0 {
			o.Workers = n
		}
	}
	if len(o.Hosts) == 0 {
		cfg := ollama.Config{Host: os.Getenv("OLLAMA_HOST")}
		u, err := cfg.BaseURL()
		if err != nil {
			return o, fmt.Errorf("rollout: %w", err)
		}
		c, err := cfg.Client()
		if err != nil {
			return o, fmt.Errorf("rollout: %w", err)
		}
		o.Hosts = []Host{{Name: u.String(), Model: c}}
	}
	if o.Agent.Temperature == nil {
		o.Agent.Temperature = agent.Temp(1)
	}
	if o.GoCacheDir == "" {
		o.GoCacheDir = filepath.Join(cachedir.Dir(), "finetune", "gocache")
	}
	return o, nil
}

// Run runs a group of Options.Group episodes of the agent (agent.Run, the language
// server's own code) on each task against Options.Model, several at once, and writes a
// Record per episode and a Summary per group under Options.Out. Each episode runs in the
// sandbox on a private copy of the task's base commit with its patch applied, the issue
// as instruction, logprobs on. It returns the summaries of the groups that are complete.
//
// Episodes that have a record from an earlier run with the same Out are skipped, except
// failed ones (Record.Error), which are tried again; the others run. Cancelling ctx stops
// the running agents and their commands; their episodes leave no record and no
// trajectory, so a later run redoes them. Run's error is ctx's then, a problem with Out
// or the tasks, or every host gone; a failed episode is a record, not an error.
func Run(ctx context.Context, tasks []*task.Task, opts Options) ([]*Summary, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &runner{opts: opts}
	var jobs []job
	for _, t := range tasks {
		if !task.SafePath(t.ID) {
			return nil, fmt.Errorf("rollout: task id %q is not a plain name", t.ID)
		}
		g := &group{task: t}
		for i := range opts.Group {
			rec, err := ReadRecord(opts.Out, t.ID, i)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return nil, err
			case rec.Model != opts.Model:
				return nil, fmt.Errorf("rollout: %s holds episodes of model %s, not %s: give this run a folder of its own", opts.Out, rec.Model, opts.Model)
			case rec.Error == "":
				continue
			}
			g.pending++
			jobs = append(jobs, job{g: g, episode: i})
		}
		r.groups = append(r.groups, g)
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	workRoot := opts.WorkDir
	if workRoot == "" {
		workRoot = os.TempDir()
	}
	if r.work, err = os.MkdirTemp(workRoot, "frognano-rollouts-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(r.work)

	queue := make(chan job)
	var wg sync.WaitGroup
	// A worker whose host is down stops (see gone), so that a dead host does not fail,
	// in milliseconds each, the episodes the live ones would run; when the last one stops,
	// allGone ends the run.
	alive, allGone := 0, make(chan struct{})
	var lastGone error
	for _, h := range opts.Hosts {
		n := h.Workers
		if n <= 0 {
			n = opts.Workers
		}
		alive += n
		for range n {
			wg.Go(func() {
				for j := range queue {
					if !r.episode(ctx, h, j) {
						continue
					}
					if err := r.gone(ctx, h); err != nil {
						r.mu.Lock()
						if alive--; alive == 0 {
							lastGone = fmt.Errorf("rollout: no Ollama host answers (%s: %w); finished episodes are kept, run again to resume", h.Name, err)
							close(allGone)
						}
						r.mu.Unlock()
						return
					}
				}
			})
		}
	}
feed:
	for _, j := range jobs {
		select {
		case queue <- j:
		case <-ctx.Done():
			break feed
		case <-allGone:
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if lastGone != nil {
		return nil, lastGone
	}
	if r.writeErr != nil {
		return nil, r.writeErr
	}
	var out []*Summary
	for _, g := range r.groups {
		s, err := summarize(opts.Out, g.task.ID, opts.Model, opts.Group)
		if err != nil {
			return out, err
		}
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

type runner struct {
	opts   Options
	work   string // this run's copies
	groups []*group

	mu     sync.Mutex
	layers map[string]*sync.Mutex // tree → the lock of building its trusted layer; guarded by mu
	// writeErr is the first record that could not be written (a full disk): the run
	// fails with it, as its episodes are lost; guarded by mu.
	writeErr error
}

// group is one task's episodes in this run.
type group struct {
	task *task.Task

	once sync.Once
	src  *env.Checkout // the base commit with the patch, the failing tests out: what every episode copies
	err  error
	// withheld says which of the task's failing tests src lacks, and which it still has.
	withheld *withhold.Result
	// readOnly are the repository's paths the episodes read although it is hidden: a
	// Python task's virtual environment (the export has none: it is git's tree).
	readOnly []string
	// shadowed are copies of the repository's code installed in that environment: hidden.
	shadowed []string

	mu      sync.Mutex
	pending int // episodes of this run not ended yet; guarded by mu
}

type job struct {
	g       *group
	episode int
}

// source exports the task's base commit once for the group, applies its patch and takes
// out its FAIL_TO_PASS tests (finetune/withhold): the agent copies it for each episode
// (agent.Task.Dir is only read), so every episode starts from the same tree and none sees
// another's work.
func (r *runner) source(ctx context.Context, g *group) (*env.Checkout, error) {
	g.once.Do(func() {
		dir := filepath.Join(r.work, g.task.ID)
		g.src, g.err = env.ExportCommit(ctx, g.task.Repo, g.task.BaseCommit, dir)
		if g.err == nil {
			if g.err = task.Apply(ctx, dir, g.task.Patch); g.err == nil {
				// The failing tests are the answer key: the agent's copy has them out
				// (the reward's own tree has them; it ignores changes to tests).
				g.withheld, g.err = withhold.Tests(dir, g.task)
			}
			if g.err != nil {
				os.RemoveAll(dir)
			}
		}
		if g.task.Test.Kind == env.KindPython {
			var d env.Detection
			d.LocatePython(g.task.Repo)
			g.readOnly, g.shadowed = d.ReadOnly, d.Shadowed
		}
	})
	return g.src, g.err
}

// withheldNote ends the instruction of a task whose failing tests the copy lacks: the
// issue text names them and may say how to run them, which the agent cannot.
const withheldNote = "\n\nThe failing tests are not in this copy of the repository: they are run on your changes when you are done. The other tests are here."

// instruction is what the agent is asked: the task's issue, and whether its failing tests
// were withheld. The issue loses the literals of what was withheld (withhold's Redact): at
// hint level 1 it is the failing tests' output, which shows what they expect
// ("want 5", pytest's "assert add(2, 3) == 5"), the answer key the withholding took out of
// the copy.
func instruction(t *task.Task, w *withhold.Result) string {
	if w == nil || len(w.Withheld) == 0 {
		return t.Issue.Text
	}
	return w.Redact(t.Issue.Text) + withheldNote
}

// done ends an episode of g; the last one removes the group's export and writes the
// group's summary (when every episode has its record), so that a long run's finished
// groups can be read before it ends.
func (r *runner) done(g *group) {
	g.mu.Lock()
	g.pending--
	last := g.pending == 0
	g.mu.Unlock()
	if !last {
		return
	}
	if g.src != nil {
		g.src.Remove()
	}
	summarize(r.opts.Out, g.task.ID, r.opts.Model, r.opts.Group) // Run summarizes again, and reports errors
}

// trusted builds (once per tree, whatever the number of groups) the trusted Go build
// cache layer of src and returns its folder.
func (r *runner) trusted(ctx context.Context, src *env.Checkout) (string, error) {
	r.mu.Lock()
	if r.layers == nil {
		r.layers = map[string]*sync.Mutex{}
	}
	l, ok := r.layers[src.Tree]
	if !ok {
		l = &sync.Mutex{}
		r.layers[src.Tree] = l
	}
	r.mu.Unlock()
	l.Lock()
	defer l.Unlock()
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(r.opts.GoCacheDir, src.Tree+"-"+runtime.Version())
	if err := gocache.Build(ctx, src.Dir, dst, exe); err != nil {
		return "", fmt.Errorf("the trusted Go build cache of %.12s: %w", src.Commit, err)
	}
	return dst, nil
}

// gone asks h for the model after one of its episodes failed in Ollama: an error
// means the host is down (or lost the model), and its worker stops.
func (r *runner) gone(ctx context.Context, h Host) error {
	if ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := h.Model.Show(ctx, &api.ShowRequest{Model: r.opts.Model})
	return err
}

// episode runs episode j on host h and writes its record, unless ctx ended first. It
// reports whether the episode failed in a way that may be the host's (a model error, or
// an agent that could not start).
func (r *runner) episode(ctx context.Context, h Host, j job) (hostFailed bool) {
	defer r.done(j.g)
	if ctx.Err() != nil {
		return false
	}
	t := j.g.task
	rec := &Record{Version: RecordVersion, Task: t.ID, Episode: j.episode, Model: r.opts.Model, Host: h.Name,
		Trajectory: trajectoryName(t.ID, j.episode), Started: time.Now()}
	traj := filepath.Join(r.opts.Out, rec.Trajectory)
	// A trajectory without a record is an interrupted episode's (or a failed one's, tried
	// again): the agent creates its file new.
	if err := os.MkdirAll(filepath.Dir(traj), 0o755); err != nil {
		r.fail(ctx, rec, err)
		return false
	}
	if err := os.Remove(traj); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.fail(ctx, rec, err)
		return false
	}
	work, err := os.MkdirTemp(r.work, t.ID+"-"+strconv.Itoa(j.episode)+"-")
	if err != nil {
		r.fail(ctx, rec, err)
		return false
	}
	defer os.RemoveAll(work)

	ao := r.opts.Agent
	ao.Model, ao.Logprobs, ao.Trajectory, ao.TrajectoryDir = r.opts.Model, true, traj, ""
	ao.WorkDir, ao.KeepCopy, ao.GoCache, ao.OnEvent = work, false, nil, nil
	// The commands find empty the task's repository (the clean code is the answer, and its
	// history) and those of the run's other tasks, this run's records and other episodes'
	// copies, besides what the agent hides itself (the export they copy from, frognano's
	// cache folder).
	ao.Hide = append(slices.Clone(ao.Hide), r.opts.Out, r.work)
	for _, g := range r.groups {
		if !slices.Contains(ao.Hide, g.task.Repo) {
			ao.Hide = append(ao.Hide, g.task.Repo)
		}
	}
	if on := r.opts.OnEvent; on != nil {
		ao.OnEvent = func(ev agent.Event) { on(t.ID, j.episode, ev) }
	}
	src, err := r.source(ctx, j.g)
	ao.ReadOnly = append(slices.Clone(ao.ReadOnly), j.g.readOnly...) // set by source
	ao.Hide = append(ao.Hide, j.g.shadowed...)
	rec.Withheld = j.g.withheld
	var trusted string // the trusted layer of a Go task's base tree, for the reward too
	switch {
	case err != nil:
	case t.Test.Kind == "go" && !r.opts.SharedGoCache:
		if trusted, err = r.trusted(ctx, src); err == nil {
			ao.GoCache = &gocache.Layers{Trusted: trusted, Scratch: filepath.Join(work, "gocache")}
		}
	case t.Test.Kind != "go":
		// Not the export's shared cache, which every episode of the group would see.
		ao.GoCacheDir = filepath.Join(work, "gocache")
	}
	rec.Timings.Setup = time.Since(rec.Started).Seconds()
	if err != nil {
		r.fail(ctx, rec, fmt.Errorf("preparing the task: %w", err))
		return false
	}

	res, err := agent.Run(ctx, h.Model, agent.Task{Dir: src.Dir, Instruction: instruction(t, j.g.withheld)}, ao)
	if ctx.Err() != nil {
		os.Remove(traj) // unfinished: the episode is redone by a later run
		return false
	}
	if err != nil {
		r.fail(ctx, rec, fmt.Errorf("the agent could not start: %w", err))
		return true
	}
	rec.Exit, rec.Steps = res.Exit, res.Steps
	rec.Tokens.Prompt, rec.Tokens.Output = res.Usage.PromptTokens, res.Usage.OutputTokens
	rec.Timings.Agent = res.Usage.WallTime.Seconds()
	rec.Timings.Model, rec.Timings.Tools = res.Usage.ModelTime.Seconds(), res.Usage.ToolTime.Seconds()
	switch {
	case res.TrajectoryError != "":
		r.fail(ctx, rec, errors.New(res.TrajectoryError))
		return false
	case res.Exit == agent.ExitModelError || res.Exit == agent.ExitToolError || res.Exit == agent.ExitCancelled:
		// Ollama or the sandbox failed, not the model: its work was cut short by
		// something it did not do, so no reward says anything about it.
		r.fail(ctx, rec, fmt.Errorf("the episode failed (%s): %s", res.Exit, res.Error))
		return res.Exit == agent.ExitModelError
	}
	t0 := time.Now()
	scorer := r.opts.Score
	if scorer == nil {
		scorer = RewardScorer(reward.Options{Trusted: trusted, Hide: ao.Hide, TempDir: r.work})
	}
	score, err := scorer(ctx, t, res.Changes)
	rec.Timings.Score = time.Since(t0).Seconds()
	if ctx.Err() != nil {
		os.Remove(traj)
		return false
	}
	if err != nil {
		r.fail(ctx, rec, fmt.Errorf("scoring: %w", err))
		return false
	}
	rec.Reward, rec.Reason = &score.Reward, score.Reason
	if score.Details != nil {
		if rec.Scoring, err = json.Marshal(score.Details); err != nil {
			r.fail(ctx, rec, fmt.Errorf("scoring: %w", err))
			return false
		}
	}
	r.write(rec)
	return false
}

// fail records the episode as failed, unless ctx ended (then it leaves nothing behind).
func (r *runner) fail(ctx context.Context, rec *Record, err error) {
	if ctx.Err() != nil {
		os.Remove(filepath.Join(r.opts.Out, rec.Trajectory))
		return
	}
	rec.Error = err.Error()
	if _, serr := os.Lstat(filepath.Join(r.opts.Out, rec.Trajectory)); serr != nil {
		rec.Trajectory = "" // the episode failed before its trajectory began
	}
	r.write(rec)
}

func (r *runner) write(rec *Record) {
	rec.Ended = time.Now()
	rec.Timings.Total = rec.Ended.Sub(rec.Started).Seconds()
	if err := writeJSON(recordPath(r.opts.Out, rec.Task, rec.Episode), rec); err != nil {
		// Without its record the episode counts as unfinished, and a later run redoes it;
		// its trajectory goes too, so nothing half-done is left.
		if rec.Trajectory != "" {
			os.Remove(filepath.Join(r.opts.Out, rec.Trajectory))
		}
		rec.Error = fmt.Sprintf("writing the record: %v", err)
		rec.Reward = nil
		r.mu.Lock()
		if r.writeErr == nil {
			r.writeErr = fmt.Errorf("rollout: %w", err)
		}
		r.mu.Unlock()
	}
	if r.opts.OnRecord != nil {
		r.opts.OnRecord(rec)
	}
}

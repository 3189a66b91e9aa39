package loop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/synth"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/internal/cachedir"
)

// Config is what one iteration needs. Repo, Base, Weights and Client are required.
type Config struct {
	// Repo is the repository (absolute, the top of its work tree).
	Repo string
	// Base is the Ollama model fine-tuning starts from; Weights the same model as the
	// trainer loads it (a safetensors folder, a GGUF file, or a tiny random model in tests):
	// Ollama's copy is quantized and in its own format, so the trainer needs its own.
	Base    string
	Weights trainer.Load
	// Client and Host are the Ollama server the models run and are made in (Host its base
	// URL, as the registry records it).
	Client *api.Client
	Host   string
	// Dir holds the loop's state file and each iteration's rollouts and export; default
	// finetune/loop/<registry.Key(Repo)> in frognano's cache folder.
	Dir string
	// RegistryDir is the registry's state folder ("" its default).
	RegistryDir string
	// StoreDir is the task store ("" task.DefaultDir(Repo)).
	StoreDir string
	// Frontier configures a new frontier (ignored once the state file exists).
	Frontier frontier.Config
	// Target is how many training tasks should be in the band or unsettled (default 8);
	// Tasks how many of them run per iteration (default Target); HeldOut how many held-out
	// tasks the gate evaluates on (default 20, the gate's MinTasks).
	Target, Tasks, HeldOut int
	// Synth is the template of each synth.Run (N, Synthesizers, HintLevel, Seed and StoreDir
	// are the loop's).
	Synth synth.Options
	// Rollout is the template of each rollout.Run (Model and Out are the loop's).
	Rollout rollout.Options
	// Trainer starts the trainer; Batch's Minibatches and Epochs are used for the update.
	Trainer trainer.Options
	Batch   trainer.Batch
	// ExportDType is the merged export's dtype (default bfloat16); Quantize Ollama's
	// quantization at import ("" keeps it).
	ExportDType string
	Quantize    string
	// Rule is the gate's (default gate.DefaultRule()).
	Rule *gate.Rule
	// Progress, when set, hears each phase and how far it is (0 to 1): Fraction 0 with no
	// Detail when a phase begins, 1 when it ends. During rollouts it is called from several
	// of the runner's goroutines at once.
	Progress func(Progress)
	// Enter, when set, runs before each phase and may wait there (the daemon's schedule,
	// its GPU lock); leave, when not nil, runs once the phase has ended, however it ended.
	// An error stops the iteration before the phase (the next Step resumes at it).
	Enter func(ctx context.Context, p Phase) (leave func(), err error)
	// Fresh asks a new iteration's synthesis for Target new tasks even when the frontier
	// has enough: the daemon sets it when HEAD moved, so that the tasks follow the code
	// (synthesis works on HEAD). A resumed iteration past synthesis ignores it.
	Fresh bool
	// hook, in tests, runs at each phase boundary (after the state file is written).
	hook func(Phase)
}

// Progress is one progress event.
type Progress struct {
	Iteration int
	Phase     Phase
	Fraction  float64
	Detail    string
}

func (c *Config) defaults() error {
	if c.Repo == "" || c.Base == "" || c.Client == nil {
		return errors.New("loop: Repo, Base and Client are required")
	}
	if c.Weights.Model == "" && c.Weights.GGUF == "" && c.Weights.Random == nil {
		return errors.New("loop: the base model's weights for the trainer are required (a safetensors folder or a GGUF file)")
	}
	if c.Dir == "" {
		c.Dir = DefaultDir(c.Repo)
	}
	if c.StoreDir == "" {
		c.StoreDir = task.DefaultDir(c.Repo)
	}
	if c.Target <= 0 {
		c.Target = 8
	}
	if c.Tasks <= 0 {
		c.Tasks = c.Target
	}
	if c.HeldOut <= 0 {
		c.HeldOut = 20
	}
	if c.Rule == nil {
		r := gate.DefaultRule()
		c.Rule = &r
	}
	return nil
}

// DefaultDir is the loop's folder for repo when Config.Dir is not set:
// finetune/loop/<registry.Key(repo)> in frognano's cache folder. The report and the daemon
// find the state there.
func DefaultDir(repo string) string {
	return filepath.Join(cachedir.Dir(), "finetune", "loop", registry.Key(repo))
}

// StatePath is the state file in the loop's folder dir.
func StatePath(dir string) string { return filepath.Join(dir, "loop.json") }

func (c *Config) statePath() string    { return StatePath(c.Dir) }
func (c *Config) iterDir(n int) string { return IterationDir(c.Dir, n) }

// IterationDir is iteration n's folder in the loop's folder dir: its rollouts under
// rollouts/, the gate's under gate-serving/<model>/ and gate-candidate/, its export under
// export/.
func IterationDir(dir string, n int) string {
	return filepath.Join(dir, "iterations", strconv.Itoa(n))
}

// Step runs one iteration: it resumes the unfinished one in the state file, or starts the
// next when the last one is done, and returns the state once the iteration is done.
func Step(ctx context.Context, cfg Config) (*State, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	reg, err := registry.Open(ctx, registry.Options{Repo: cfg.Repo, Client: cfg.Client, Host: cfg.Host, Base: cfg.Base, StateDir: cfg.RegistryDir})
	if err != nil {
		return nil, err
	}
	s, err := Load(cfg.statePath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s = &State{Version: Version, Repo: cfg.Repo, Base: cfg.Base, Phase: PhaseDone, Frontier: frontier.New(cfg.Frontier)}
	case err != nil:
		return nil, err
	}
	if s.Repo != cfg.Repo || s.Base != cfg.Base {
		return nil, fmt.Errorf("loop state %s is of %s from %s, not %s from %s", cfg.statePath(), s.Repo, s.Base, cfg.Repo, cfg.Base)
	}
	if s.Phase == PhaseDone {
		serving, _, _, err := reg.Serving()
		if err != nil {
			return nil, err
		}
		if serving == "" {
			serving = cfg.Base
		}
		*s = State{Version: Version, Repo: s.Repo, Base: s.Base, Iteration: s.Iteration + 1, Phase: PhaseSynth,
			Serving: serving, Frontier: s.Frontier, History: s.History}
		if err := s.save(cfg.statePath()); err != nil {
			return nil, err
		}
	}
	r := &runner{cfg: cfg, s: s, reg: reg}
	for s.Phase != PhaseDone {
		phase := s.Phase
		var leave func()
		if cfg.Enter != nil {
			var err error
			if leave, err = cfg.Enter(ctx, phase); err != nil {
				return s, fmt.Errorf("iteration %d, before %s: %w", s.Iteration, phase, err)
			}
		}
		r.progress(0, "")
		var err error
		switch phase {
		case PhaseSynth:
			err = r.synth(ctx)
		case PhaseRollouts:
			err = r.rollouts(ctx)
		case PhaseObserve:
			err = r.observe(ctx)
		case PhaseTrain:
			err = r.train(ctx)
		case PhaseImport:
			err = r.importModel(ctx)
		case PhaseGate:
			err = r.gate(ctx)
		default:
			err = fmt.Errorf("unknown phase %q", phase)
		}
		if leave != nil {
			leave()
		}
		if err != nil {
			return s, fmt.Errorf("iteration %d, %s: %w", s.Iteration, phase, err)
		}
		if cfg.Progress != nil { // the phase that ended: s.Phase is already the next one
			cfg.Progress(Progress{Iteration: s.Iteration, Phase: phase, Fraction: 1})
		}
		if err := s.save(cfg.statePath()); err != nil {
			return s, err
		}
		if cfg.hook != nil {
			cfg.hook(s.Phase)
		}
	}
	return s, nil
}

type runner struct {
	cfg Config
	s   *State
	reg *registry.Registry
	// synthSaid is what this process's last synthesis run found (Summary.Brief), for the
	// error when no task is left to train on.
	synthSaid string
}

func (r *runner) progress(f float64, detail string) {
	if r.cfg.Progress != nil {
		r.cfg.Progress(Progress{Iteration: r.s.Iteration, Phase: r.s.Phase, Fraction: f, Detail: detail})
	}
}

// synth tops the store up to the frontier's target. The controller's knobs that map onto
// synth's options are the synthesizer and the hint level; Bugs and MaxChangedLines do not
// (synth has no option for them: its combined synthesizer picks its own number of bugs,
// and the change size follows the operator), so a request's rung records them for the
// controller but synthesis ignores them.
func (r *runner) synth(ctx context.Context) error {
	fr := r.s.Frontier
	store, err := task.Open(r.cfg.StoreDir)
	if err != nil {
		return err
	}
	if err := r.register(store, nil); err != nil { // tasks a killed run made
		return err
	}
	// Held-out tasks come from the same synthesis (the split is by a hash of the ID), so a
	// round asks for both shortfalls; a few rounds at most, and none once synthesis makes
	// nothing new (the repository's candidates ran out).
	for round := 0; round < 3; round++ {
		need := fr.Needed(r.cfg.Target) + max(0, r.cfg.HeldOut-len(r.heldOut()))
		if round == 0 && r.cfg.Fresh {
			need = max(need, r.cfg.Target)
		}
		if need == 0 {
			break
		}
		type knob struct {
			synth string
			hint  int
		}
		batches := map[knob][]frontier.Request{}
		var order []knob
		for _, req := range fr.Next(need) {
			k := knob{req.Synthesizer, req.Setting.HintLevel}
			if _, ok := batches[k]; !ok {
				order = append(order, k)
			}
			batches[k] = append(batches[k], req)
		}
		made := 0
		for i, k := range order {
			r.progress(float64(i)/float64(len(order)), fmt.Sprintf("%d %s tasks at hint level %d", len(batches[k]), k.synth, k.hint))
			before, err := ids(store)
			if err != nil {
				return err
			}
			o := r.cfg.Synth
			// A killed synthesis is redone with the same seed: the same candidates, the same
			// tasks (equal tasks share an ID), so nothing is made twice.
			o.N, o.Synthesizers, o.HintLevel, o.StoreDir = len(batches[k]), []string{k.synth}, k.hint, r.cfg.StoreDir
			o.Seed = uint64(r.s.Iteration)*1000 + uint64(round)*100 + uint64(i)
			sum, err := synth.Run(ctx, r.cfg.Repo, o)
			if err != nil {
				return err
			}
			r.synthSaid = sum.Brief()
			req := batches[k][0]
			n := len(fr.Tasks)
			if err := r.register(store, func(id string) (frontier.Request, bool) {
				return req, !before[id]
			}); err != nil {
				return err
			}
			made += len(fr.Tasks) - n
		}
		if made == 0 {
			break
		}
	}
	r.s.Phase = PhaseRollouts
	return nil
}

// ids is the set of the store's task IDs.
func ids(store *task.Store) (map[string]bool, error) {
	ts, err := store.List()
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, t := range ts {
		m[t.ID] = true
	}
	return m, nil
}

// register adds the store's tasks the frontier does not know: with the request that made
// them when req says so, else at the rung their features match (tasks made by a killed
// run, or by `frognano finetune synth`).
func (r *runner) register(store *task.Store, req func(id string) (frontier.Request, bool)) error {
	ts, err := store.List()
	if err != nil {
		return err
	}
	fr := r.s.Frontier
	for _, t := range ts {
		if _, ok := fr.Tasks[t.ID]; ok {
			continue
		}
		if req != nil {
			if q, ok := req(t.ID); ok {
				fr.Add(t.ID, q)
			}
			continue
		}
		q := frontier.Request{Synthesizer: t.Features.Synthesizer}
		for i, st := range fr.Config.Ladder {
			if st.HintLevel == t.Features.HintLevel && st.Bugs == max(t.Features.Bugs, 1) {
				q.Rung, q.Setting = i, st
				break
			}
		}
		fr.Add(t.ID, q)
	}
	return nil
}

// rollouts chooses the iteration's tasks once (recorded, so a restart runs the same ones)
// and runs their groups on the model in use.
func (r *runner) rollouts(ctx context.Context) error {
	fr := r.s.Frontier
	if r.s.Tasks == nil {
		var train []string
		for id, t := range fr.Tasks {
			if !t.HeldOut && t.Retired == "" {
				train = append(train, id)
			}
		}
		sort.Slice(train, func(i, j int) bool {
			a, b := fr.Tasks[train[i]], fr.Tasks[train[j]]
			if la, lb := a.Learnability(), b.Learnability(); la != lb {
				return la > lb
			}
			return train[i] < train[j]
		})
		r.s.Tasks = train[:min(len(train), r.cfg.Tasks)]
		if r.s.Tasks == nil {
			r.s.Tasks = []string{}
		}
		if err := r.s.save(r.cfg.statePath()); err != nil {
			return err
		}
	}
	if len(r.s.Tasks) == 0 {
		said := ""
		if r.synthSaid != "" {
			said = ": its last run found " + r.synthSaid
		}
		return fmt.Errorf("no training tasks: synthesis made none%s (see `frognano finetune synth`)", said)
	}
	if _, err := r.run(ctx, r.s.Serving, r.s.Tasks, filepath.Join(r.cfg.iterDir(r.s.Iteration), "rollouts")); err != nil {
		return err
	}
	r.s.Phase = PhaseObserve
	return nil
}

// run runs groups of ids on model into out and returns the summaries by task; every group
// must be complete (a failed episode is tried again by the next run).
func (r *runner) run(ctx context.Context, model string, ids []string, out string) (map[string]*rollout.Summary, error) {
	store, err := task.Open(r.cfg.StoreDir)
	if err != nil {
		return nil, err
	}
	var ts []*task.Task
	for _, id := range ids {
		t, err := store.Get(id)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	o := r.cfg.Rollout
	o.Model, o.Out = model, out
	// The loop's state (earlier iterations' episodes, the held-out split), the task store
	// (every task's patch) and the registry stay out of the episodes' sight wherever they
	// are kept; under frognano's cache folder the agent hides them already.
	regDir := r.cfg.RegistryDir
	if regDir == "" {
		regDir = registry.DefaultDir()
	}
	o.Agent.Hide = append(slices.Clone(o.Agent.Hide), r.cfg.Dir, r.cfg.StoreDir, regDir)
	var done atomic.Int64
	total := len(ts) * o.Group
	if o.Group == 0 {
		total = len(ts) * 8
	}
	onRecord := o.OnRecord
	o.OnRecord = func(rec *rollout.Record) {
		n := done.Add(1) // from several of the runner's goroutines at once
		r.progress(float64(n)/float64(total), fmt.Sprintf("%d of %d episodes", n, total))
		if onRecord != nil {
			onRecord(rec)
		}
	}
	sums, err := rollout.Run(ctx, ts, o)
	if err != nil {
		return nil, err
	}
	m := map[string]*rollout.Summary{}
	for _, s := range sums {
		m[s.Task] = s
	}
	for _, id := range ids {
		if m[id] == nil {
			return nil, fmt.Errorf("task %s: its group did not finish (failed episodes are retried by the next run)", id)
		}
		if m[id].Errors > 0 {
			return nil, fmt.Errorf("task %s: %d of its episodes failed (see the records in %s; the next run retries them)", id, m[id].Errors, out)
		}
	}
	return m, nil
}

// rewards are a summary's rewards of the episodes that have one.
func rewards(s *rollout.Summary) []float64 {
	var rs []float64
	for _, p := range s.Rewards {
		if p != nil {
			rs = append(rs, *p)
		}
	}
	return rs
}

// observe gives the groups' rewards to the frontier. It changes only the state in memory,
// which Step writes with the next phase in one rename: the evidence is counted once.
func (r *runner) observe(ctx context.Context) error {
	out := filepath.Join(r.cfg.iterDir(r.s.Iteration), "rollouts")
	for _, id := range r.s.Tasks {
		s, err := rollout.ReadSummary(out, id)
		if err != nil {
			return err
		}
		if err := r.s.Frontier.Observe(id, rewards(s)); err != nil {
			return err
		}
	}
	r.s.Phase = PhaseTrain
	return nil
}

// weights is what the trainer loads for the model in use: the base's weights, or the
// merged export of the iteration that made the fine-tuned model.
func (r *runner) weights() (trainer.Load, error) {
	w := r.cfg.Weights
	if r.s.Serving == r.cfg.Base {
		return w, nil
	}
	st, err := r.reg.State()
	if err != nil {
		return w, err
	}
	m := st.Model(r.s.Serving)
	if m == nil {
		return w, fmt.Errorf("the model in use, %s, is not one of fine-tuning's: its weights are unknown", r.s.Serving)
	}
	dir := filepath.Join(r.cfg.iterDir(m.Step), "export")
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return w, fmt.Errorf("the weights of %s (%s) are gone: %w", r.s.Serving, dir, err)
	}
	w.Model, w.GGUF, w.Random = dir, "", nil
	return w, nil
}

// train runs one GRPO update on the groups whose rewards differ and writes the merged
// export. A killed training is redone whole: the export folder is written to a temporary
// name and renamed once complete.
func (r *runner) train(ctx context.Context) error {
	fr := r.s.Frontier
	out := filepath.Join(r.cfg.iterDir(r.s.Iteration), "rollouts")
	var groups []frontier.Group
	sums := map[string]*rollout.Summary{}
	for _, id := range r.s.Tasks {
		s, err := rollout.ReadSummary(out, id)
		if err != nil {
			return err
		}
		sums[id] = s
		groups = append(groups, frontier.Group{Task: id, Rewards: rewards(s)})
	}
	chosen := fr.Select(groups, len(groups))
	if len(chosen) == 0 {
		r.finish("no group's rewards differed: nothing to train on, the model in use stays", false)
		return nil
	}
	w, err := r.weights()
	if err != nil {
		return err
	}
	show, err := r.cfg.Client.Show(ctx, &api.ShowRequest{Model: r.s.Serving})
	if err != nil {
		return err
	}
	format, err := rollout.FormatOf(show)
	if err != nil {
		return err
	}
	start := time.Now()
	p, _, err := trainer.Start(ctx, r.cfg.Trainer)
	if err != nil {
		return err
	}
	defer p.Kill()
	if _, err := p.Load(ctx, w); err != nil {
		return err
	}
	tr := &Trained{}
	batch := r.cfg.Batch
	batch.Rollouts = nil
	for i, g := range chosen {
		r.progress(0.5*float64(i)/float64(len(chosen)), "building rollouts of "+g.Task)
		rs, dropped, err := rollout.BuildGroup(ctx, p, format, out, sums[g.Task])
		if err != nil {
			return err
		}
		for _, d := range dropped {
			tr.Dropped = append(tr.Dropped, g.Task+": "+d.Error())
		}
		if len(rs) > 0 {
			tr.Groups++
		}
		batch.Rollouts = append(batch.Rollouts, rs...)
	}
	tr.Rollouts = len(batch.Rollouts)
	if len(batch.Rollouts) == 0 {
		tr.Seconds = time.Since(start).Seconds()
		r.s.Trained = tr
		r.finish("every chosen group's rollouts were dropped (not token-exact): nothing to train on", false)
		return nil
	}
	r.progress(0.5, fmt.Sprintf("GRPO on %d rollouts of %d groups", tr.Rollouts, tr.Groups))
	res, err := p.Train(ctx, batch)
	if err != nil {
		return err
	}
	tr.Steps, tr.Loss = res.Steps, res.Loss
	if res.Steps == 0 {
		tr.Seconds = time.Since(start).Seconds()
		r.s.Trained = tr
		r.finish("the trainer took no step (every group's rewards were equal after dropping): the model in use stays", false)
		return nil
	}
	r.progress(0.8, "merging and exporting")
	dir := filepath.Join(r.cfg.iterDir(r.s.Iteration), "export")
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	ex, err := p.MergeExport(ctx, tmp, r.cfg.ExportDType)
	if err != nil {
		return err
	}
	if len(ex.Problems) > 0 {
		return fmt.Errorf("the export would not import into Ollama: %s", strings.Join(ex.Problems, "; "))
	}
	// The export is whole (MergeExport answered, and checked it): a trainer slow to leave
	// after that costs nothing but the note, where failing would redo the training.
	if err := p.Close(); err != nil {
		r.progress(0.9, fmt.Sprintf("the export is whole; the trainer did not shut down cleanly (%v)", err))
	}
	tr.Seconds = time.Since(start).Seconds()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	r.s.Trained, r.s.Export, r.s.Phase = tr, dir, PhaseImport
	return nil
}

// importModel makes the candidate in Ollama once, through the registry, in the chat format
// of the model in use.
func (r *runner) importModel(ctx context.Context) error {
	show, err := r.cfg.Client.Show(ctx, &api.ShowRequest{Model: r.s.Serving})
	if err != nil {
		return err
	}
	req := trainer.ImportRequest{Dir: r.s.Export, Quantize: r.cfg.Quantize, Template: show.Template,
		Renderer: show.Renderer, Parser: show.Parser, Parameters: parameters(show.Parameters), System: show.System, Messages: show.Messages}
	if req.Renderer != "" {
		req.Template = ""
	}
	m, err := r.reg.Import(ctx, r.s.Iteration, func(ctx context.Context, name string) error {
		req.Name = name
		return trainer.Import(ctx, r.cfg.Client, req, func(p api.ProgressResponse) {
			if p.Total > 0 {
				r.progress(float64(p.Completed)/float64(p.Total), p.Status)
			}
		})
	})
	if err != nil {
		return err
	}
	r.s.Model, r.s.Phase = m.Name, PhaseGate
	return nil
}

// parameters turns Show's parameter text ("stop \"<|im_end|>\"\nnum_ctx 8192") back into
// Create's map: numbers as numbers, a key given several times as a list (stop).
func parameters(text string) map[string]any {
	m := map[string]any{}
	lists := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		if k == "stop" {
			lists[k] = append(lists[k], v)
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[k] = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			m[k] = b
		} else {
			m[k] = v
		}
	}
	for k, l := range lists {
		m[k] = l
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// gate runs the candidate, and the model in use where the registry has no result of it,
// on the held-out tasks, and lets the registry judge: accepted, the candidate is in use.
func (r *runner) gate(ctx context.Context) error {
	if r.s.HeldOut == nil {
		held := r.heldOut()
		r.s.HeldOut = held[:min(len(held), r.cfg.HeldOut)]
		if r.s.HeldOut == nil {
			r.s.HeldOut = []string{}
		}
		if err := r.s.save(r.cfg.statePath()); err != nil {
			return err
		}
	}
	servingName, _, known, err := r.reg.Serving()
	if err != nil {
		return err
	}
	serving := map[string]gate.Result{}
	var missing []string
	for _, id := range r.s.HeldOut {
		if res, ok := known[id]; ok {
			serving[id] = res
		} else {
			missing = append(missing, id)
		}
	}
	dir := r.cfg.iterDir(r.s.Iteration)
	if len(missing) > 0 {
		// The model in use now, which is the iteration's unless the user rolled back meanwhile:
		// the candidate must beat what the language server would otherwise keep using. Each
		// serving model's runs have a folder of their own, so a resume never mixes two.
		model := servingName
		if model == "" {
			model = r.cfg.Base
		}
		out := filepath.Join(dir, "gate-serving", strings.NewReplacer("/", "_", ":", "_").Replace(model))
		sums, err := r.run(ctx, model, missing, out)
		if err != nil {
			return err
		}
		for id, s := range sums {
			serving[id] = result(s)
		}
	}
	candidate := map[string]gate.Result{}
	if len(r.s.HeldOut) > 0 {
		sums, err := r.run(ctx, r.s.Model, r.s.HeldOut, filepath.Join(dir, "gate-candidate"))
		if err != nil {
			return err
		}
		for id, s := range sums {
			candidate[id] = result(s)
		}
	}
	v, err := r.reg.Judge(ctx, r.s.Model, servingName, serving, candidate, *r.cfg.Rule)
	if err != nil {
		return err
	}
	r.s.Verdict = &v
	if v.Accept {
		r.s.Frontier.PolicyUpdated()
		r.finish(fmt.Sprintf("%s accepted and in use: %s", r.s.Model, v.Reason), true)
	} else {
		r.finish(fmt.Sprintf("%s rejected, kept for inspection; %s stays in use: %s", r.s.Model, r.s.Serving, v.Reason), false)
	}
	return nil
}

// heldOut is the frontier's held-out tasks, sorted.
func (r *runner) heldOut() []string {
	var held []string
	for id, t := range r.s.Frontier.Tasks {
		if t.HeldOut {
			held = append(held, id)
		}
	}
	slices.Sort(held)
	return held
}

// result is a group's outcome for the gate: a success is a full reward.
func result(s *rollout.Summary) gate.Result {
	var res gate.Result
	for _, p := range s.Rewards {
		if p != nil {
			res.Attempts++
			if *p >= 1 {
				res.Successes++
			}
		}
	}
	return res
}

// finish ends the iteration with an outcome.
func (r *runner) finish(outcome string, accepted bool) {
	s := r.s
	s.Outcome, s.Phase = outcome, PhaseDone
	var sum float64
	var n int
	out := filepath.Join(r.cfg.iterDir(s.Iteration), "rollouts")
	for _, id := range s.Tasks {
		if g, err := rollout.ReadSummary(out, id); err == nil {
			for _, x := range rewards(g) {
				sum += x
				n++
			}
		}
	}
	h := Summary{Iteration: s.Iteration, Serving: s.Serving, Model: s.Model, Accepted: accepted, Outcome: outcome, Trained: s.Trained, Verdict: s.Verdict}
	if n > 0 {
		h.MeanReward = sum / float64(n)
	}
	s.History = append(s.History, h)
}

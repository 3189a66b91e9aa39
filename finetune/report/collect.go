// Package report says what fine-tuning has done for a repository: [Collect] reads the loop's
// state, the registry's models and the rollouts' records into a [Summary] (headline numbers
// and the series behind the plots), and [Write] renders it as an HTML page with PNG plots.
// `frognano finetune report` runs both; `frognano finetune status` shows the Summary's
// headline numbers.
//
// Collect only reads: it runs nothing, needs no Ollama, and may be called while the loop
// runs (every file it reads is replaced atomically by its writer). A repository that has
// not been fine-tuned yet gives a Summary with Started false, not an error.
package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/rollout"
)

// HowToStart says how to begin fine-tuning, for a Summary with Started false.
const HowToStart = "Fine-tuning has not run on this repository yet. Start one iteration with\n" +
	"  frognano finetune step --repo DIR --model BASE --weights WEIGHTS\n" +
	"(BASE is the Ollama model to start from, WEIGHTS the same model as the trainer loads it: a\n" +
	"safetensors folder or a .gguf file; `frognano finetune setup` makes the trainer first)."

// Options say where fine-tuning's state is. Only Repo is required; the others default to
// where `frognano finetune step` keeps them.
type Options struct {
	// Repo is the repository, absolute, the top of its work tree (as the loop records it).
	Repo string
	// Dir is the loop's folder (default loop.DefaultDir(Repo)); RegistryDir the registry's
	// ("" its default).
	Dir         string
	RegistryDir string
}

// Summary is what fine-tuning has done for a repository. Its JSON form is what
// `frognano finetune report --json` prints.
type Summary struct {
	Repo string `json:"repo"`
	// Started is whether the loop has a state file; when false the rest is empty (see
	// HowToStart).
	Started   bool   `json:"started"`
	StateFile string `json:"state_file"`
	// Collected is when Collect read the state.
	Collected time.Time `json:"collected"`
	// Base is the model fine-tuning started from; InUse the model the language server uses
	// now (Base while no fine-tuned model was accepted, or after a rollback to it).
	Base  string `json:"base,omitempty"`
	InUse string `json:"in_use,omitempty"`
	// Iteration and Phase are the last iteration begun and where it stands (loop.PhaseDone
	// when finished).
	Iteration  int        `json:"iteration"`
	Phase      loop.Phase `json:"phase,omitempty"`
	Iterations Counts     `json:"iterations"`
	// HeldOutStart is the base model's held-out pass rate, on the tasks HeldOutNow (the
	// model in use's) was measured on when the base ran them all, else on all it ran; nil
	// before the gate first ran. With the base in use the two are the same.
	HeldOutStart *PassRate `json:"held_out_start,omitempty"`
	HeldOutNow   *PassRate `json:"held_out_now,omitempty"`
	Tasks        Tasks     `json:"tasks"`
	// Mix is the tasks by synthesizer and difficulty (rung of the frontier's ladder).
	Mix []Mix `json:"mix,omitempty"`
	// Time is the totals of the Series' times.
	Time Time `json:"time"`
	// Checkpoints are the base model and each model fine-tuning made, oldest first, with
	// their held-out results; Series is one point per finished iteration.
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	Series      []Point      `json:"series,omitempty"`
	// Band is the frontier's band of pass rates that training aims at.
	BandLow  float64 `json:"band_low,omitempty"`
	BandHigh float64 `json:"band_high,omitempty"`
	// Notes say what could not be read (e.g. an iteration's rollouts removed by hand): the
	// figures that depend on it are missing, the rest stands.
	Notes []string `json:"notes,omitempty"`
}

// Counts are the finished iterations by outcome: Accepted (the gate switched to the
// model), Rejected (the gate kept the model in use), and Untrained (no group's rewards
// differed, or the trainer took no step: no model was made).
type Counts struct {
	Done      int `json:"done"`
	Accepted  int `json:"accepted"`
	Rejected  int `json:"rejected"`
	Untrained int `json:"untrained"`
}

// PassRate is a pooled held-out pass rate: Successes of Attempts episodes over Tasks tasks
// earned the full reward. Low and High are the 95% Wilson score interval of Rate.
//
// The interval treats the episodes as independent draws of one pass rate. Episodes of the
// same task are not (a task is easy or hard for every episode), so when tasks differ the
// interval is narrower than the truth; the gate's decision does not use it (finetune/gate
// pairs the models task by task). It says how far a rate from few episodes can be trusted.
type PassRate struct {
	Successes int     `json:"successes"`
	Attempts  int     `json:"attempts"`
	Tasks     int     `json:"tasks"`
	Rate      float64 `json:"rate"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
}

// Tasks count the frontier's tasks. The training tasks (not held out) are split by their
// pass-rate estimate under the current model (the posterior mean): New (no rollout yet),
// InBand, Above and Below the band, and the retired ones, Solved or Hopeless.
type Tasks struct {
	Total    int `json:"total"`
	HeldOut  int `json:"held_out"`
	Training int `json:"training"`
	New      int `json:"new"`
	InBand   int `json:"in_band"`
	Above    int `json:"above"`
	Below    int `json:"below"`
	Solved   int `json:"solved"`
	Hopeless int `json:"hopeless"`
}

// Mix is the tasks of one synthesizer at one rung of the ladder.
type Mix struct {
	Synthesizer string           `json:"synthesizer"`
	Rung        int              `json:"rung"`
	Setting     frontier.Setting `json:"setting"`
	Tasks       int              `json:"tasks"`
	HeldOut     int              `json:"held_out"`
	InBand      int              `json:"in_band"`
}

// Time is where the time went, in seconds. Train is the trainer's wall clock (on the GPU
// when there is one); Rollouts and Gate the episodes' wall clock (agent, sandbox and
// scoring; episodes run in parallel, so this is more than the time that passed); Model the
// part of both spent in Ollama (on the GPU when there is one).
type Time struct {
	Train    float64 `json:"train_s"`
	Rollouts float64 `json:"rollouts_s"`
	Gate     float64 `json:"gate_s"`
	Model    float64 `json:"model_s"`
}

// Checkpoint is a model and its held-out results.
type Checkpoint struct {
	Model string `json:"model"`
	// Step is the iteration that made it, 0 for the base.
	Step int `json:"step"`
	// Status is the registry's ("accepted", "rejected", …) or "base".
	Status string `json:"status"`
	InUse  bool   `json:"in_use"`
	// HeldOut is nil when it has no held-out results (not judged yet).
	HeldOut *PassRate     `json:"held_out,omitempty"`
	Verdict *gate.Verdict `json:"verdict,omitempty"`
}

// Point is one finished iteration.
type Point struct {
	Iteration int    `json:"iteration"`
	Serving   string `json:"serving"`
	Model     string `json:"model,omitempty"`
	Accepted  bool   `json:"accepted"`
	Outcome   string `json:"outcome"`
	// MeanReward is over the training rollouts' episodes (the loop's figure).
	MeanReward float64 `json:"mean_reward"`
	// Groups are the training groups whose rollouts were read, Varied those whose rewards
	// differed (only those teach anything), Episodes their episodes with a reward.
	Groups   int `json:"groups"`
	Varied   int `json:"varied"`
	Episodes int `json:"episodes"`
	// InBand is how many training tasks had their pass-rate estimate in the band after
	// this iteration's evidence (the frontier replayed from the rollouts), of Seen training
	// tasks rolled out so far.
	InBand int `json:"in_band"`
	Seen   int `json:"seen"`
	// Time of this iteration; Time.Train is 0 when it trained nothing or its state
	// predates the record.
	Time Time `json:"time"`
	// Loss is the trainer's, when it took a step.
	Loss *float64 `json:"loss,omitempty"`
}

// Collect reads fine-tuning's state for o.Repo.
func Collect(o Options) (*Summary, error) {
	if o.Repo == "" {
		return nil, errors.New("report: the repository is required")
	}
	if o.Dir == "" {
		o.Dir = loop.DefaultDir(o.Repo)
	}
	s := &Summary{Repo: o.Repo, StateFile: loop.StatePath(o.Dir), Collected: time.Now().UTC()}
	st, err := loop.Load(s.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Repo != o.Repo {
		return nil, fmt.Errorf("report: %s is the loop state of %s, not %s", s.StateFile, st.Repo, o.Repo)
	}
	s.Started, s.Base, s.InUse, s.Iteration, s.Phase = true, st.Base, st.Base, st.Iteration, st.Phase
	s.BandLow, s.BandHigh = st.Frontier.Config.BandLow, st.Frontier.Config.BandHigh
	reg, err := registry.Load(registry.Path(o.RegistryDir, o.Repo))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		reg = nil
	case err != nil:
		return nil, err
	default:
		s.InUse = reg.Serving()
	}
	s.tasks(st.Frontier)
	_, candidates := s.series(o.Dir, st)
	s.checkpoints(st, reg, candidates)
	return s, nil
}

// z95 is the standard normal quantile of 0.975: a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the pass rate of successes in attempts with its 95% Wilson score interval (a
// zero PassRate for no attempts; Tasks is left to the caller). Unlike the normal
// approximation it stays within [0, 1] and is not empty at 0 or all successes, which few
// episodes make common.
func Wilson(successes, attempts int) PassRate {
	p := PassRate{Successes: successes, Attempts: attempts}
	if attempts <= 0 {
		return p
	}
	n := float64(attempts)
	p.Rate = float64(successes) / n
	z2 := z95 * z95
	centre := (p.Rate + z2/(2*n)) / (1 + z2/n)
	half := z95 / (1 + z2/n) * math.Sqrt(p.Rate*(1-p.Rate)/n+z2/(4*n*n))
	p.Low, p.High = math.Max(0, centre-half), math.Min(1, centre+half)
	return p
}

// pooled is the pass rate over results' tasks (all of them when only is nil, else those in
// only); nil when no episode ran.
func pooled(results map[string]gate.Result, only map[string]gate.Result) *PassRate {
	var succ, att, tasks int
	for id, r := range results {
		if only != nil {
			if _, ok := only[id]; !ok {
				continue
			}
		}
		if r.Attempts <= 0 {
			continue
		}
		succ += r.Successes
		att += r.Attempts
		tasks++
	}
	if att == 0 {
		return nil
	}
	p := Wilson(succ, att)
	p.Tasks = tasks
	return &p
}

// checkpoints lists the base and every model the finished iterations made. A model's
// held-out results are the registry's, or, for a model it pruned, those of the iteration's
// gate-candidate records (the same episodes); its status is the registry's, or the
// history's outcome.
func (s *Summary) checkpoints(st *loop.State, reg *registry.State, candidates map[int]map[string]gate.Result) {
	base := Checkpoint{Model: st.Base, Status: "base", InUse: s.InUse == st.Base}
	inUse := map[string]gate.Result(nil)
	if reg != nil {
		base.HeldOut = pooled(reg.BaseHeldOut, nil)
		inUse = reg.BaseHeldOut
	}
	s.Checkpoints = append(s.Checkpoints, base)
	for _, h := range st.History {
		if h.Model == "" {
			continue
		}
		c := Checkpoint{Model: h.Model, Step: h.Iteration, Status: string(registry.Rejected), InUse: h.Model == s.InUse, Verdict: h.Verdict}
		if h.Accepted {
			c.Status = string(registry.Accepted)
		}
		results := candidates[h.Iteration]
		if m := regModel(reg, h.Model); m != nil {
			c.Status, results = string(m.Status), m.HeldOut
			if m.Verdict != nil {
				c.Verdict = m.Verdict
			}
		} else if reg != nil {
			c.Status += " (pruned)"
		}
		c.HeldOut = pooled(results, nil)
		if c.InUse {
			inUse = results
		}
		s.Checkpoints = append(s.Checkpoints, c)
	}
	if reg == nil {
		return
	}
	s.HeldOutNow = pooled(inUse, nil)
	s.HeldOutStart = pooled(reg.BaseHeldOut, nil)
	if covers(reg.BaseHeldOut, inUse) {
		s.HeldOutStart = pooled(reg.BaseHeldOut, inUse)
	}
}

func regModel(reg *registry.State, name string) *registry.Model {
	if reg == nil {
		return nil
	}
	return reg.Model(name)
}

// covers says whether base has a result for every task of now.
func covers(base, now map[string]gate.Result) bool {
	if len(now) == 0 {
		return false
	}
	for id := range now {
		if _, ok := base[id]; !ok {
			return false
		}
	}
	return true
}

// where is a training task's place relative to the band; "" for a held-out task.
func where(t *frontier.TaskState, c frontier.Config) string {
	switch m := t.Mean(); {
	case t.HeldOut:
		return ""
	case t.Retired != "":
		return t.Retired
	case t.Rollouts == 0:
		return "new"
	case m > c.BandHigh:
		return "above"
	case m < c.BandLow:
		return "below"
	default:
		return "in_band"
	}
}

func (s *Summary) tasks(fr *frontier.State) {
	mix := map[[2]any]*Mix{}
	for _, t := range fr.Tasks {
		n := &s.Tasks
		n.Total++
		k := [2]any{t.Synthesizer, t.Rung}
		m := mix[k]
		if m == nil {
			m = &Mix{Synthesizer: t.Synthesizer, Rung: t.Rung}
			if t.Rung >= 0 && t.Rung < len(fr.Config.Ladder) {
				m.Setting = fr.Config.Ladder[t.Rung]
			}
			mix[k] = m
		}
		m.Tasks++
		if t.HeldOut {
			n.HeldOut++
			m.HeldOut++
			continue
		}
		n.Training++
		switch where(t, fr.Config) {
		case "new":
			n.New++
		case "in_band":
			n.InBand++
			m.InBand++
		case "above":
			n.Above++
		case "below":
			n.Below++
		case "solved":
			n.Solved++
		case "hopeless":
			n.Hopeless++
		}
	}
	for _, m := range mix {
		s.Mix = append(s.Mix, *m)
	}
	sort.Slice(s.Mix, func(i, j int) bool {
		a, b := s.Mix[i], s.Mix[j]
		if a.Synthesizer != b.Synthesizer {
			return a.Synthesizer < b.Synthesizer
		}
		return a.Rung < b.Rung
	})
}

// series reads each finished iteration's rollouts and replays the frontier over them: the
// loop's frontier changes only by Observe of each iteration's groups and PolicyUpdated after
// an accepted one, so the replay gives the band's occupancy after every iteration, which
// the state file (holding only the latest frontier) does not keep.
//
// It returns the replayed frontier and each iteration's candidate's held-out results.
func (s *Summary) series(dir string, st *loop.State) (replay *frontier.State, candidates map[int]map[string]gate.Result) {
	replay = frontier.New(st.Frontier.Config)
	candidates = map[int]map[string]gate.Result{}
	for _, h := range st.History {
		p := Point{Iteration: h.Iteration, Serving: h.Serving, Model: h.Model, Accepted: h.Accepted, Outcome: h.Outcome, MeanReward: h.MeanReward}
		switch {
		case h.Accepted:
			s.Iterations.Accepted++
		case h.Model != "":
			s.Iterations.Rejected++
		default:
			s.Iterations.Untrained++
		}
		s.Iterations.Done++
		if h.Trained != nil {
			p.Time.Train, p.Loss = h.Trained.Seconds, h.Trained.Loss
		}
		it := loop.IterationDir(dir, h.Iteration)
		groups, err := readGroups(filepath.Join(it, "rollouts"), &p.Time.Rollouts, &p.Time.Model)
		if err != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("iteration %d: %v (its rewards, band occupancy and times are missing)", h.Iteration, err))
		}
		for _, g := range groups {
			p.Groups++
			if g.Varied {
				p.Varied++
			}
			var rewards []float64
			for _, r := range g.Rewards {
				if r != nil {
					rewards = append(rewards, *r)
				}
			}
			p.Episodes += len(rewards)
			t := st.Frontier.Tasks[g.Task]
			if t == nil {
				s.Notes = append(s.Notes, fmt.Sprintf("iteration %d: task %s is not in the frontier", h.Iteration, g.Task))
				continue
			}
			replay.Add(g.Task, frontier.Request{Synthesizer: t.Synthesizer, Rung: t.Rung})
			replay.Observe(g.Task, rewards)
		}
		if h.Accepted {
			replay.PolicyUpdated()
		}
		for _, t := range replay.Tasks {
			if t.HeldOut {
				continue
			}
			p.Seen++
			if where(t, replay.Config) == "in_band" {
				p.InBand++
			}
		}
		gates, _ := filepath.Glob(filepath.Join(it, "gate-serving", "*"))
		for _, g := range append(gates, filepath.Join(it, "gate-candidate")) {
			groups, err := readGroups(g, &p.Time.Gate, &p.Time.Model)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.Notes = append(s.Notes, fmt.Sprintf("iteration %d: %v (its gate time is missing)", h.Iteration, err))
			}
			if filepath.Base(g) == "gate-candidate" && len(groups) > 0 {
				candidates[h.Iteration] = map[string]gate.Result{}
				for _, gr := range groups {
					candidates[h.Iteration][gr.Task] = result(gr)
				}
			}
		}
		s.Time.Train += p.Time.Train
		s.Time.Rollouts += p.Time.Rollouts
		s.Time.Gate += p.Time.Gate
		s.Time.Model += p.Time.Model
		s.Series = append(s.Series, p)
	}
	return replay, candidates
}

// result is a group's outcome as the gate counts it (finetune/loop's rule): a success is a
// full reward.
func result(g *rollout.Summary) gate.Result {
	var r gate.Result
	for _, x := range g.Rewards {
		if x != nil {
			r.Attempts++
			if *x >= 1 {
				r.Successes++
			}
		}
	}
	return r
}

// readGroups reads the group summaries in a rollout output folder, sorted by task, adding
// the episodes' wall clock to total and their time in Ollama to model.
func readGroups(out string, total, model *float64) ([]*rollout.Summary, error) {
	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, err
	}
	var groups []*rollout.Summary
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		g, err := rollout.ReadSummary(out, e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue // a group not finished (a resumed gate's, or an iteration cut short)
		}
		if err != nil {
			return groups, err
		}
		groups = append(groups, g)
		for i := range g.Episodes {
			r, err := rollout.ReadRecord(out, g.Task, i)
			if err != nil {
				return groups, err
			}
			*total += r.Timings.Total
			*model += r.Timings.Model
		}
	}
	slices.SortFunc(groups, func(a, b *rollout.Summary) int {
		if a.Task < b.Task {
			return -1
		}
		if a.Task > b.Task {
			return 1
		}
		return 0
	})
	return groups, nil
}

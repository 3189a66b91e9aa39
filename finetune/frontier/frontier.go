// Package frontier keeps training at the learnability frontier: which tasks the current
// model solves sometimes but not always, which of a batch's groups to train on, and what
// the synthesizers should make next. It is pure logic over a State that the caller (the
// daemon) persists with Save after each change and reloads with Load after a restart.
//
// Start with [New], then per round: [State.Next] says what to synthesize, [State.Add]
// registers each task made, [State.Observe] records a group of rollouts' rewards,
// [State.Select] picks the groups to train on, and [State.PolicyUpdated] after each
// accepted update. A State is not safe for concurrent use.
//
// The estimates: each task's pass rate under the current model is a Beta posterior over
// its rollouts' rewards (uniform prior; a reward r counts r of a pass and 1-r of a
// failure, so partial credit fits too). When the model changes, old evidence is worth
// less: PolicyUpdated shrinks every task's counts by Config.Forget, so the estimates
// follow the model instead of its history.
//
// The controller: the synthesizers' knobs (hint level, number of bugs, change size) are
// ordered into a ladder from easiest to hardest (Config.Ladder); each synthesizer has a
// position on it. When a new task has had Config.Settle rollouts it is settled: above the
// band it was too easy and its synthesizer moves up half a rung, below it moves down, in the
// band it stays. Pass rates fall along the ladder, so the positions find the band and
// follow the model as it learns; when the band empties, new tasks come from the rung where
// it was last found. The mix of synthesizers follows their yield: each is drawn in
// proportion to the posterior mean of the share of its settled tasks that landed in the
// band (never below Config.MinShare, so that a synthesizer can recover).
package frontier

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"

	"github.com/frognano/frognano/internal/atomicfile"
)

// Version of the State's JSON form. Fields may be added within a version; a field's meaning
// never changes without a new one.
const Version = 1

// Setting is one rung of the ladder: the knobs of the synthesizers (see finetune/task's
// Features for their meaning). Higher HintLevel gives less help; more Bugs and more
// MaxChangedLines make a task harder.
type Setting struct {
	HintLevel       int `json:"hint_level"`
	Bugs            int `json:"bugs"`
	MaxChangedLines int `json:"max_changed_lines"`
}

// DefaultLadder goes from one small bug with the file and function named to three larger
// ones described only by a symptom.
func DefaultLadder() []Setting {
	return []Setting{
		{0, 1, 4}, {0, 1, 16}, {1, 1, 4}, {1, 1, 16}, {1, 2, 16}, {2, 1, 16}, {2, 2, 32}, {2, 3, 64},
	}
}

// Config is what the frontier is asked to do; it is part of the State.
type Config struct {
	// Band is the pass rate, as the posterior mean, that a task must have to be trained on
	// (default 0.2 to 0.8).
	BandLow  float64 `json:"band_low"`
	BandHigh float64 `json:"band_high"`
	// Settle is how many rollouts settle a new task for the controller (default 8: one
	// group).
	Settle int `json:"settle"`
	// Solved retires a task whose posterior mean reaches it after at least Settle rollouts
	// (default 0.9): it teaches nothing more.
	Solved float64 `json:"solved"`
	// Hopeless retires a task whose posterior mean is below it after 4*Settle rollouts
	// (default 0.03): its groups never differ.
	Hopeless float64 `json:"hopeless"`
	// Forget is the share of a task's evidence kept at each policy update (default 0.5).
	Forget float64 `json:"forget"`
	// HeldOut is the share of tasks, chosen by a hash of their ID, that are never trained
	// on: the gate evaluates on them (default 0.2).
	HeldOut float64 `json:"held_out"`
	// Step is how far one settled task moves its synthesizer on the ladder (default 0.5).
	Step float64 `json:"step"`
	// MinShare is the least share of new tasks any synthesizer gets (default 0.05).
	MinShare float64 `json:"min_share"`
	// Synthesizers are the names of the synthesizers to draw from (finetune/task's
	// Origin.Synthesizer: "mutation", "removal", "history", "model", "combined"); default
	// "mutation".
	Synthesizers []string `json:"synthesizers"`
	// Ladder is the knob settings, easiest first (default DefaultLadder).
	Ladder []Setting `json:"ladder"`
	// Seed makes the draws of Next reproducible.
	Seed uint64 `json:"seed"`
}

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.BandLow, 0.2)
	def(&c.BandHigh, 0.8)
	def(&c.Solved, 0.9)
	def(&c.Hopeless, 0.03)
	def(&c.Forget, 0.5)
	def(&c.HeldOut, 0.2)
	def(&c.Step, 0.5)
	def(&c.MinShare, 0.05)
	if c.Settle <= 0 {
		c.Settle = 8
	}
	if len(c.Ladder) == 0 {
		c.Ladder = DefaultLadder()
	}
	if len(c.Synthesizers) == 0 {
		c.Synthesizers = []string{"mutation"}
	}
	return c
}

// State is everything the frontier knows; its JSON form is what Save writes:
//
//	{"version":1, "config":{…}, "drawn":N, "policy_updates":N,
//	 "synthesizers":{"mutation":{"level":2.5, "settled":N, "in_band":N, "too_easy":N, "too_hard":N}},
//	 "tasks":{"ID":{"synthesizer", "rung", "alpha", "beta", "rollouts", "held_out", "settled",
//	          "settled_as":"in_band|too_easy|too_hard", "retired":"solved|hopeless"}}}
//
// alpha and beta are the Beta posterior's parameters (1 + rewards, 1 + their complements,
// shrunk at policy updates); rung indexes config.ladder.
type State struct {
	Version       int                   `json:"version"`
	Config        Config                `json:"config"`
	Drawn         uint64                `json:"drawn"` // draws made by Next: with the seed, the next draw
	PolicyUpdates int                   `json:"policy_updates"`
	Synthesizers  map[string]*Synth     `json:"synthesizers"`
	Tasks         map[string]*TaskState `json:"tasks"`
}

// Synth is one synthesizer's place on the ladder and its record.
type Synth struct {
	Level   float64 `json:"level"`
	Settled int     `json:"settled"`
	InBand  int     `json:"in_band"`
	TooEasy int     `json:"too_easy"`
	TooHard int     `json:"too_hard"`
}

// TaskState is what is known of one task.
type TaskState struct {
	Synthesizer string  `json:"synthesizer"`
	Rung        int     `json:"rung"`
	Alpha       float64 `json:"alpha"`
	Beta        float64 `json:"beta"`
	Rollouts    int     `json:"rollouts"`
	HeldOut     bool    `json:"held_out,omitempty"`
	Settled     bool    `json:"settled,omitempty"`
	SettledAs   string  `json:"settled_as,omitempty"`
	Retired     string  `json:"retired,omitempty"`
}

// Mean is the posterior mean of the task's pass rate.
func (t *TaskState) Mean() float64 { return t.Alpha / (t.Alpha + t.Beta) }

// Learnability is the posterior expectation of p(1-p): largest for a task solved half the
// time, and smaller the less certain that is.
func (t *TaskState) Learnability() float64 {
	s := t.Alpha + t.Beta
	return t.Alpha * t.Beta / (s * (s + 1))
}

// New starts a frontier with cfg (zero fields take their defaults); every synthesizer
// starts on the easiest rung.
func New(cfg Config) *State {
	cfg = cfg.withDefaults()
	s := &State{Version: Version, Config: cfg, Synthesizers: map[string]*Synth{}, Tasks: map[string]*TaskState{}}
	for _, name := range cfg.Synthesizers {
		s.Synthesizers[name] = &Synth{}
	}
	return s
}

// Load reads a State that Save wrote.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("frontier: %s: %w", path, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("frontier: %s has version %d; this frognano reads version %d (remove the file to start the frontier again)", path, s.Version, Version)
	}
	s.Config = s.Config.withDefaults()
	if s.Synthesizers == nil {
		s.Synthesizers = map[string]*Synth{}
	}
	if s.Tasks == nil {
		s.Tasks = map[string]*TaskState{}
	}
	for _, name := range s.Config.Synthesizers {
		if s.Synthesizers[name] == nil {
			s.Synthesizers[name] = &Synth{}
		}
	}
	return &s, nil
}

// Save writes the State atomically: a crash leaves the old file or the new one.
func (s *State) Save(path string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// Request is one task to synthesize.
type Request struct {
	Synthesizer string  `json:"synthesizer"`
	Rung        int     `json:"rung"`
	Setting     Setting `json:"setting"`
}

// Next says what the next n tasks should be: each a synthesizer, drawn by yield, at its
// current rung.
func (s *State) Next(n int) []Request {
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range s.Synthesizers {
			if !yield(name) {
				return
			}
		}
	})
	if len(names) == 0 {
		return nil
	}
	weights := make([]float64, len(names))
	total := 0.0
	for i, name := range names {
		sy := s.Synthesizers[name]
		weights[i] = float64(sy.InBand+1) / float64(sy.Settled+2)
		total += weights[i]
	}
	// A floor per synthesizer, then normalized.
	floor := s.Config.MinShare * total
	total = 0
	for i := range weights {
		weights[i] = math.Max(weights[i], floor)
		total += weights[i]
	}
	out := make([]Request, 0, n)
	for range n {
		rng := rand.New(rand.NewPCG(s.Config.Seed, s.Drawn))
		s.Drawn++
		x := rng.Float64() * total
		i := 0
		for ; i < len(names)-1 && x >= weights[i]; i++ {
			x -= weights[i]
		}
		rung := s.rung(s.Synthesizers[names[i]].Level)
		out = append(out, Request{Synthesizer: names[i], Rung: rung, Setting: s.Config.Ladder[rung]})
	}
	return out
}

func (s *State) rung(level float64) int {
	r := int(math.Round(level))
	return max(0, min(r, len(s.Config.Ladder)-1))
}

// IsHeldOut says whether a task is in the held-out split: by a hash of its ID, so the same
// task is always on the same side, whichever frontier sees it.
func IsHeldOut(id string, share float64) bool {
	h := sha256.Sum256([]byte("frognano held-out\x00" + id))
	return float64(binary.BigEndian.Uint64(h[:8]))/math.Pow(2, 64) < share
}

// Add registers a task made for req. Adding a known task again changes nothing.
func (s *State) Add(id string, req Request) {
	if s.Tasks[id] != nil {
		return
	}
	s.Tasks[id] = &TaskState{Synthesizer: req.Synthesizer, Rung: req.Rung, Alpha: 1, Beta: 1, HeldOut: IsHeldOut(id, s.Config.HeldOut)}
}

// ErrUnknownTask: Observe of a task that was never added.
var ErrUnknownTask = errors.New("frontier: unknown task")

// Observe records the rewards (0 to 1) of a group of rollouts of task id, settles the task
// for the controller once it has Config.Settle rollouts, and retires it when solved or
// hopeless.
func (s *State) Observe(id string, rewards []float64) error {
	t := s.Tasks[id]
	if t == nil {
		return fmt.Errorf("%w %q", ErrUnknownTask, id)
	}
	for _, r := range rewards {
		r = math.Max(0, math.Min(1, r))
		t.Alpha += r
		t.Beta += 1 - r
		t.Rollouts++
	}
	if !t.Settled && t.Rollouts >= s.Config.Settle {
		s.settle(t)
	}
	if t.Retired == "" && t.Rollouts >= s.Config.Settle && t.Mean() >= s.Config.Solved {
		t.Retired = "solved"
	}
	if t.Retired == "" && t.Rollouts >= 4*s.Config.Settle && t.Mean() < s.Config.Hopeless {
		t.Retired = "hopeless"
	}
	return nil
}

// settle moves the task's synthesizer along the ladder by where the task landed.
func (s *State) settle(t *TaskState) {
	t.Settled = true
	sy := s.Synthesizers[t.Synthesizer]
	if sy == nil {
		sy = &Synth{}
		s.Synthesizers[t.Synthesizer] = sy
	}
	sy.Settled++
	top := float64(len(s.Config.Ladder) - 1)
	switch m := t.Mean(); {
	case m > s.Config.BandHigh:
		t.SettledAs = "too_easy"
		sy.TooEasy++
		// From the rung the task was made at: a synthesizer that moved on meanwhile is
		// judged by its own newer tasks.
		sy.Level = math.Min(top, math.Max(sy.Level, float64(t.Rung))+s.Config.Step)
	case m < s.Config.BandLow:
		t.SettledAs = "too_hard"
		sy.TooHard++
		sy.Level = math.Max(0, math.Min(sy.Level, float64(t.Rung))-s.Config.Step)
	default:
		t.SettledAs = "in_band"
		sy.InBand++
	}
}

// InBand is the training tasks (not held out, not retired) whose posterior mean lies in the
// band, sorted by ID.
func (s *State) InBand() []string {
	var out []string
	for id, t := range s.Tasks {
		if t.HeldOut || t.Retired != "" {
			continue
		}
		if m := t.Mean(); m >= s.Config.BandLow && m <= s.Config.BandHigh {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Needed is how many new tasks to make so that target training tasks are in the band or
// still unsettled (waiting for their rollouts); 0 when there are enough.
func (s *State) Needed(target int) int {
	have := len(s.InBand())
	for _, t := range s.Tasks {
		if !t.Settled && !t.HeldOut && t.Retired == "" {
			have++
		}
	}
	return max(0, target-have)
}

// Group is one task's rollouts of a round.
type Group struct {
	Task    string    `json:"task"`
	Rewards []float64 `json:"rewards"`
}

// Select picks at most n groups to train on: never a held-out or unknown task, never a group
// whose rewards are all equal (its advantages are all zero: nothing to learn), the most
// learnable tasks first (the posterior expectation of p(1-p), after Observe of this round),
// ties by task ID.
func (s *State) Select(groups []Group, n int) []Group {
	var out []Group
	for _, g := range groups {
		t := s.Tasks[g.Task]
		if t == nil || t.HeldOut || len(g.Rewards) < 2 || slices.Min(g.Rewards) == slices.Max(g.Rewards) {
			continue
		}
		out = append(out, g)
	}
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := s.Tasks[out[i].Task].Learnability(), s.Tasks[out[j].Task].Learnability()
		if li != lj {
			return li > lj
		}
		return out[i].Task < out[j].Task
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// PolicyUpdated shrinks every task's evidence by Config.Forget after the model changed.
// Retired tasks stay retired; the held-out evaluation, not this, tells whether the model
// still solves them.
func (s *State) PolicyUpdated() {
	s.PolicyUpdates++
	f := s.Config.Forget
	for _, t := range s.Tasks {
		t.Alpha = 1 + f*(t.Alpha-1)
		t.Beta = 1 + f*(t.Beta-1)
	}
}

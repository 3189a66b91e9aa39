package frontier

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// policy is a simulated model. A task has a latent difficulty around its rung; the model
// solves it with a probability that falls with the difficulty and is one half at center.
// A better model has a higher center.
type policy struct {
	center float64
	rng    *rand.Rand
	// broken synthesizers make tasks that always pass, whatever the rung.
	broken map[string]bool
}

func (p *policy) difficulty(req Request) float64 {
	if p.broken[req.Synthesizer] {
		return math.Inf(-1)
	}
	return float64(req.Rung) + 0.7*p.rng.NormFloat64()
}

func (p *policy) passRate(difficulty float64) float64 {
	return 1 / (1 + math.Exp(1.2*(difficulty-p.center)))
}

// sim runs the loop the daemon will run: each round make new tasks (what Needed asks, and
// at least perRound), roll out a group of 8 on each task that is unsettled or in the band.
type sim struct {
	s          *State
	p          *policy
	difficulty map[string]float64
	atMaking   map[string]float64 // the true pass rate when the task was made
	made       []string
	reqs       []Request
}

func newSim(cfg Config, p *policy) *sim {
	return &sim{s: New(cfg), p: p, difficulty: map[string]float64{}, atMaking: map[string]float64{}}
}

const perRound = 4

func (m *sim) round(t *testing.T, target int) {
	for _, req := range m.s.Next(max(perRound, m.s.Needed(target))) {
		id := fmt.Sprintf("task-%d", len(m.made))
		m.difficulty[id] = m.p.difficulty(req)
		m.atMaking[id] = m.p.passRate(m.difficulty[id])
		m.made = append(m.made, id)
		m.reqs = append(m.reqs, req)
		m.s.Add(id, req)
	}
	for _, id := range m.made {
		ts := m.s.Tasks[id]
		if ts.Retired != "" || ts.HeldOut {
			continue
		}
		// Settled tasks outside the band get no more rollouts (as in the daemon).
		if mean := ts.Mean(); ts.Settled && (mean < m.s.Config.BandLow || mean > m.s.Config.BandHigh) {
			continue
		}
		p := m.p.passRate(m.difficulty[id])
		rewards := make([]float64, 8)
		for i := range rewards {
			if m.p.rng.Float64() < p {
				rewards[i] = 1
			}
		}
		if err := m.s.Observe(id, rewards); err != nil {
			t.Fatal(err)
		}
	}
}

// inBandShare is the share of the last n tasks made whose true pass rate, when they were
// made, was in the band.
func (m *sim) inBandShare(n int) float64 {
	last := m.made[max(0, len(m.made)-n):]
	in := 0
	for _, id := range last {
		if p := m.atMaking[id]; p >= 0.2 && p <= 0.8 {
			in++
		}
	}
	return float64(in) / float64(len(last))
}

// TestControllerFindsTheBand: starting on the easiest rung, where every task is solved, the
// controller climbs to where the simulated model's pass rates lie in the band, for models
// of several strengths.
func TestControllerFindsTheBand(t *testing.T) {
	for _, center := range []float64{1.5, 4.3, 6.2} {
		t.Run(fmt.Sprint(center), func(t *testing.T) {
			m := newSim(Config{Seed: 1}, &policy{center: center, rng: rand.New(rand.NewPCG(7, uint64(center*10)))})
			for range 15 {
				m.round(t, 16)
			}
			first, nfirst := m.inBandShare(len(m.made)), len(m.made)
			for range 45 {
				m.round(t, 16)
			}
			share := m.inBandShare(60)
			level := m.s.Synthesizers["mutation"].Level
			t.Logf("center %.1f: level %.1f, in band: %.2f of the last 60 tasks (%.2f of the first %d); %d tasks made, %d in band now",
				center, level, share, first, nfirst, len(m.made), len(m.s.InBand()))
			if share < 0.5 {
				t.Errorf("only %.2f of the last tasks are in the band (level %.1f)", share, level)
			}
			if math.Abs(level-center) > 1.6 {
				t.Errorf("level %.1f, the band is around rung %.1f", level, center)
			}
			if len(m.s.InBand()) == 0 {
				t.Error("no task in the band to train on")
			}
		})
	}
}

// TestControllerFollowsTheModel: a model that gets better each round solves the tasks of
// its rung; the controller moves up with it.
func TestControllerFollowsTheModel(t *testing.T) {
	p := &policy{center: 1, rng: rand.New(rand.NewPCG(3, 4))}
	m := newSim(Config{Seed: 2}, p)
	var levels []float64
	for round := range 80 {
		m.round(t, 16)
		m.s.PolicyUpdated()
		p.center = math.Min(6, 1+0.07*float64(round))
		levels = append(levels, m.s.Synthesizers["mutation"].Level)
	}
	if levels[79] < levels[20]+2 {
		t.Errorf("level %.1f after 20 rounds, %.1f after 80: it did not follow the model", levels[20], levels[79])
	}
	if share := m.inBandShare(60); share < 0.5 {
		t.Errorf("only %.2f of the last tasks are in the band", share)
	}
	solved := 0
	for _, ts := range m.s.Tasks {
		if ts.Retired == "solved" {
			solved++
		}
	}
	if solved == 0 {
		t.Error("no task retired as solved, though the model outgrew the early ones")
	}
}

// TestTooHardEverywhere: when even the easiest rung is beyond the model, the controller
// stays there and keeps asking for tasks.
func TestTooHardEverywhere(t *testing.T) {
	m := newSim(Config{Seed: 3}, &policy{center: -3, rng: rand.New(rand.NewPCG(5, 6))})
	for range 20 {
		m.round(t, 8)
	}
	if l := m.s.Synthesizers["mutation"].Level; l != 0 {
		t.Errorf("level %.1f; nothing is easier than rung 0", l)
	}
	if m.s.Needed(8) == 0 {
		t.Error("the band is empty but no tasks are asked for")
	}
}

// TestMixFollowsYield: a synthesizer whose tasks are always solved, at every rung, yields
// nothing in the band; the mix turns to the other.
func TestMixFollowsYield(t *testing.T) {
	p := &policy{center: 3, rng: rand.New(rand.NewPCG(8, 9)), broken: map[string]bool{"removal": true}}
	m := newSim(Config{Seed: 4, Synthesizers: []string{"mutation", "removal"}}, p)
	for range 60 {
		m.round(t, 16)
	}
	counts := map[string]int{}
	for _, req := range m.reqs[len(m.reqs)-100:] {
		counts[req.Synthesizer]++
	}
	if counts["mutation"] < 80 || counts["removal"] == 0 {
		t.Errorf("last 100 tasks by synthesizer: %v; want most from mutation, a few from removal", counts)
	}
}

func TestEstimator(t *testing.T) {
	s := New(Config{})
	s.Add("a", Request{Synthesizer: "mutation"})
	ts := s.Tasks["a"]
	if err := s.Observe("a", []float64{1, 1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if ts.Alpha != 3 || ts.Beta != 3 || ts.Mean() != 0.5 || ts.Rollouts != 4 {
		t.Errorf("after 2 of 4: %+v", ts)
	}
	// E[p(1-p)] of Beta(3,3) = 9/(6*7).
	if l := ts.Learnability(); math.Abs(l-9.0/42) > 1e-12 {
		t.Errorf("learnability %v", l)
	}
	s.PolicyUpdated()
	if ts.Alpha != 2 || ts.Beta != 2 {
		t.Errorf("after forgetting half: %+v", ts)
	}
	if err := s.Observe("missing", []float64{1}); err == nil {
		t.Error("an unknown task was observed")
	}
	s.Add("easy", Request{Synthesizer: "mutation"})
	s.Observe("easy", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	if r := s.Tasks["easy"].Retired; r != "solved" {
		t.Errorf("a task passed 20 times is %q", r)
	}
	s.Add("hard", Request{Synthesizer: "mutation"})
	s.Observe("hard", make([]float64, 40))
	if r := s.Tasks["hard"].Retired; r != "hopeless" {
		t.Errorf("a task failed 40 times is %q", r)
	}
	// Partial credit counts in proportion.
	s.Add("half", Request{Synthesizer: "mutation"})
	s.Observe("half", []float64{0.5, 0.5})
	if h := s.Tasks["half"]; h.Alpha != 2 || h.Beta != 2 {
		t.Errorf("partial credit: %+v", h)
	}
}

func TestSelect(t *testing.T) {
	s := New(Config{})
	var heldOut, train []string
	for i := 0; len(heldOut) == 0 || len(train) < 3; i++ {
		id := fmt.Sprint("t", i)
		if IsHeldOut(id, s.Config.HeldOut) {
			heldOut = append(heldOut, id)
		} else {
			train = append(train, id)
		}
		s.Add(id, Request{Synthesizer: "mutation"})
	}
	s.Observe(train[0], []float64{1, 0, 1, 0}) // p about 0.5: most learnable
	s.Observe(train[1], []float64{1, 1, 1, 0}) // p about 0.67
	s.Observe(train[2], []float64{1, 1, 1, 1}) // all equal: nothing to learn
	s.Observe(heldOut[0], []float64{1, 0, 1, 0})
	groups := []Group{
		{train[1], []float64{1, 1, 1, 0}}, {train[2], []float64{1, 1, 1, 1}},
		{heldOut[0], []float64{1, 0, 1, 0}}, {train[0], []float64{1, 0, 1, 0}}, {"unknown", []float64{1, 0}},
	}
	got := s.Select(groups, 10)
	if len(got) != 2 || got[0].Task != train[0] || got[1].Task != train[1] {
		t.Errorf("selected %v", got)
	}
	if got := s.Select(groups, 1); len(got) != 1 || got[0].Task != train[0] {
		t.Errorf("selected one: %v", got)
	}
}

func TestHeldOut(t *testing.T) {
	n := 0
	for i := range 20000 {
		if IsHeldOut(fmt.Sprint("task-", i), 0.2) {
			n++
		}
	}
	if share := float64(n) / 20000; math.Abs(share-0.2) > 0.015 {
		t.Errorf("held-out share %.3f, want 0.2", share)
	}
	if IsHeldOut("x", 0.2) != IsHeldOut("x", 0.2) {
		t.Error("not deterministic")
	}
	// A held-out task never counts toward training.
	s := New(Config{})
	for i := range 50 {
		id := fmt.Sprint("task-", i)
		s.Add(id, Request{Synthesizer: "mutation"})
		s.Observe(id, []float64{1, 0, 1, 0, 1, 0, 1, 0})
	}
	for _, id := range s.InBand() {
		if s.Tasks[id].HeldOut {
			t.Errorf("held-out %s is in the band for training", id)
		}
	}
}

func TestSaveLoad(t *testing.T) {
	m := newSim(Config{Seed: 9, Synthesizers: []string{"mutation", "removal"}}, &policy{center: 3, rng: rand.New(rand.NewPCG(1, 1))})
	for range 10 {
		m.round(t, 8)
	}
	path := filepath.Join(t.TempDir(), "frontier.json")
	if err := m.s.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m.s) {
		t.Error("the state read back differs")
	}
	// The next draws are the same from the saved state as from the live one.
	if a, b := m.s.Next(5), got.Next(5); !reflect.DeepEqual(a, b) {
		t.Errorf("draws after a reload differ: %v and %v", a, b)
	}
	os.WriteFile(path, []byte(`{"version":99}`), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("another version: %v", err)
	}
}

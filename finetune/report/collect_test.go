package report

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/internal/gocache"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestMain lets the test binary be the GOCACHEPROG helper of the real iteration's episodes
// (TestRealIteration: they run with the trusted Go build cache, whose helper is their
// os.Executable), and stops the shared Ollama server at the end.
func TestMain(m *testing.M) {
	gocache.HelperMain()
	os.Exit(ollamatest.Main(m))
}

// TestWilson checks the interval against R's prop.test(5, 10, correct=FALSE) and the closed
// forms at the edges: with no success the upper bound is z²/(n+z²), with all of them the
// lower bound is n/(n+z²).
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		s, n            int
		rate, low, high float64
	}{
		{5, 10, 0.5, 0.2365931, 0.7634069},
		{0, 8, 0, 0, z95 * z95 / (8 + z95*z95)},
		{8, 8, 1, 8 / (8 + z95*z95), 1},
		{0, 160, 0, 0, z95 * z95 / (160 + z95*z95)},
		{0, 0, 0, 0, 0},
	} {
		p := Wilson(c.s, c.n)
		if math.Abs(p.Rate-c.rate) > 1e-7 || math.Abs(p.Low-c.low) > 1e-7 || math.Abs(p.High-c.high) > 1e-7 {
			t.Errorf("Wilson(%d, %d) = %.7f [%.7f, %.7f], want %.7f [%.7f, %.7f]", c.s, c.n, p.Rate, p.Low, p.High, c.rate, c.low, c.high)
		}
	}
}

// TestNotStarted: a repository the loop never ran on is a Summary that says so, not an error.
func TestNotStarted(t *testing.T) {
	s, err := Collect(Options{Repo: "/nowhere/repo", Dir: t.TempDir(), RegistryDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Started || s.Iterations.Done != 0 || s.HeldOutNow != nil {
		t.Fatalf("%+v", s)
	}
}

// TestUnreadableState: a state file the loop cannot read is the loop's error, saying what to do.
func TestUnreadableState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "loop.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Collect(Options{Repo: "/r", Dir: dir}); err == nil {
		t.Fatal("no error")
	}
}

// TestCollect runs the simulated loop for eight iterations and checks the Summary's numbers
// against what was written: the pass rates recounted from the registry's results, the
// iterations by outcome, the times summed from the records, and the replayed frontier equal
// to the loop's own.
func TestCollect(t *testing.T) {
	srv := ollamatest.Shared(t)
	sim := realistic(t, srv, filepath.Join(t.TempDir(), "repo"))
	start := time.Now()
	s, err := Collect(sim.options())
	t.Logf("Collect: %v", time.Since(start)) // status calls it: how long a few thousand records take
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) > 0 {
		t.Errorf("notes: %v", s.Notes)
	}
	t.Logf("iterations %+v; held out %+v → %+v; tasks %+v; time %+v", s.Iterations, s.HeldOutStart, s.HeldOutNow, s.Tasks, s.Time)
	reg, err := registry.Load(registry.Path(sim.reg, sim.repo))
	if err != nil {
		t.Fatal(err)
	}
	replay, candidates := (&Summary{}).series(sim.dir, sim.st)
	// Iterations by outcome, from the history the sim wrote.
	var want Counts
	for _, h := range sim.st.History {
		want.Done++
		switch {
		case h.Accepted:
			want.Accepted++
		case h.Model != "":
			want.Rejected++
		default:
			want.Untrained++
		}
	}
	if s.Iterations != want || want.Accepted == 0 || want.Rejected == 0 || want.Untrained != 1 {
		t.Errorf("iterations %+v, want %+v with some of each", s.Iterations, want)
	}
	if s.InUse != reg.Serving() || s.InUse == sim.st.Base {
		t.Errorf("in use %q, registry %q", s.InUse, reg.Serving())
	}
	// Held-out now: the model in use's results, pooled; at start: the base's on the same tasks.
	inUse := reg.Model(reg.InUse)
	if inUse == nil {
		t.Fatalf("registry: no model in use: %+v", reg)
	}
	now := inUse.HeldOut
	var succ, att, bs, ba int
	for id, r := range now {
		succ += r.Successes
		att += r.Attempts
		b := reg.BaseHeldOut[id]
		bs += b.Successes
		ba += b.Attempts
	}
	if w := Wilson(succ, att); s.HeldOutNow == nil || s.HeldOutNow.Rate != w.Rate || s.HeldOutNow.Low != w.Low || s.HeldOutNow.Tasks != len(now) {
		t.Errorf("held out now %+v, want %+v over %d tasks", s.HeldOutNow, w, len(now))
	}
	if w := Wilson(bs, ba); s.HeldOutStart == nil || *s.HeldOutStart != (PassRate{bs, ba, len(now), w.Rate, w.Low, w.High}) {
		t.Errorf("held out at start %+v, want %+v", s.HeldOutStart, w)
	}
	if s.HeldOutNow.Rate <= s.HeldOutStart.Rate {
		t.Errorf("the simulated model learned, yet held-out %.3f → %.3f", s.HeldOutStart.Rate, s.HeldOutNow.Rate)
	}
	// Every model made is a checkpoint, the pruned ones too (the registry keeps 3).
	made := 0
	for _, h := range sim.st.History {
		if h.Model != "" {
			made++
		}
	}
	if len(s.Checkpoints) != 1+made || s.Checkpoints[0].Status != "base" || len(reg.Models) >= made {
		t.Fatalf("%d checkpoints, %d models made, %d in the registry", len(s.Checkpoints), made, len(reg.Models))
	}
	for _, c := range s.Checkpoints[1:] {
		m := reg.Model(c.Model)
		if m == nil {
			if !strings.HasSuffix(c.Status, "(pruned)") {
				t.Errorf("%s: status %q, pruned", c.Model, c.Status)
			}
			continue
		}
		// The gate-candidate records give the registry's own figures.
		if want := pooled(m.HeldOut, nil); *c.HeldOut != *want || *pooled(candidates[c.Step], nil) != *want {
			t.Errorf("%s: held out %+v, registry %+v", c.Model, c.HeldOut, want)
		}
	}
	// The series: one point per iteration, its rewards and times those of its records.
	if len(s.Series) != len(sim.st.History) {
		t.Fatalf("%d points for %d iterations", len(s.Series), len(sim.st.History))
	}
	var train, rollouts float64
	for i, p := range s.Series {
		h := sim.st.History[i]
		out := filepath.Join(sim.dir, "iterations", strconv.Itoa(h.Iteration), "rollouts")
		rs := sim.written[out]
		mean := 0.0
		for _, r := range rs {
			mean += r / float64(len(rs))
		}
		if p.Episodes != len(rs) || p.Groups != sim.tasks || math.Abs(p.MeanReward-mean) > 1e-12 {
			t.Errorf("iteration %d: %d episodes, %d groups, mean %v; wrote %d, mean %v", h.Iteration, p.Episodes, p.Groups, p.MeanReward, len(rs), mean)
		}
		if math.Abs(p.Time.Rollouts-sim.seconds[out]) > 1e-6 {
			t.Errorf("iteration %d: rollout time %v, want %v", h.Iteration, p.Time.Rollouts, sim.seconds[out])
		}
		if h.Trained != nil && p.Time.Train != h.Trained.Seconds {
			t.Errorf("iteration %d: train time %v, want %v", h.Iteration, p.Time.Train, h.Trained.Seconds)
		}
		if p.InBand > p.Seen || p.Seen == 0 {
			t.Errorf("iteration %d: %d in the band of %d seen", h.Iteration, p.InBand, p.Seen)
		}
		train += p.Time.Train
		rollouts += p.Time.Rollouts
	}
	if s.Time.Train != train || s.Time.Rollouts != rollouts || s.Time.Gate == 0 || s.Time.Model == 0 {
		t.Errorf("time %+v", s.Time)
	}
	// The replay ends where the loop's frontier is: every task's evidence, alpha and beta
	// included, and so the band occupancy of the last point.
	fr := sim.st.Frontier
	for id, ts := range fr.Tasks {
		r := replay.Tasks[id]
		if ts.Rollouts == 0 {
			if r != nil {
				t.Errorf("task %s: replayed without rollouts", id)
			}
			continue
		}
		if r == nil || math.Abs(r.Alpha-ts.Alpha) > 1e-9 || math.Abs(r.Beta-ts.Beta) > 1e-9 || r.Retired != ts.Retired || r.Rollouts != ts.Rollouts {
			t.Errorf("task %s: replayed %+v, the loop's %+v", id, r, ts)
		}
	}
	inBand := 0
	for _, ts := range fr.Tasks {
		if !ts.HeldOut && ts.Rollouts > 0 && where(ts, fr.Config) == "in_band" {
			inBand++
		}
	}
	if last := s.Series[len(s.Series)-1]; last.InBand != inBand || s.Tasks.InBand != inBand {
		t.Errorf("in the band: replay %d, summary %d, frontier %d", last.InBand, s.Tasks.InBand, inBand)
	}
	tasks := s.Tasks
	if tasks.Total != len(fr.Tasks) || tasks.HeldOut+tasks.Training != tasks.Total ||
		tasks.New+tasks.InBand+tasks.Above+tasks.Below+tasks.Solved+tasks.Hopeless != tasks.Training {
		t.Errorf("tasks %+v do not add up to %d", tasks, len(fr.Tasks))
	}
	n := 0
	for _, m := range s.Mix {
		n += m.Tasks
	}
	if n != tasks.Total || len(s.Mix) < 6 {
		t.Errorf("mix %+v", s.Mix)
	}
}

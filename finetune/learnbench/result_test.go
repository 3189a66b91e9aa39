package learnbench

import (
	"bytes"
	"image/png"
	"math"
	"testing"

	"github.com/frognano/frognano/finetune/gate"
)

// TestCurvePoolsSeedsByCheckpoint: iteration 0 is each seed's base (the serving side of
// its first gate on the base), iteration k the candidate trained in k, accepted or not; an
// iteration that trained nothing adds no point for its seed.
func TestCurvePoolsSeedsByCheckpoint(t *testing.T) {
	r := &Result{Options: Options{Iterations: 2}, Iterations: []Iteration{
		{Seed: 1, Iteration: 1, Serving: Base, HeldOutServing: &gate.Result{Successes: 2, Attempts: 8}, HeldOutCandidate: &gate.Result{Successes: 4, Attempts: 8}, Accepted: true,
			Train: &gate.Result{Successes: 3, Attempts: 8}},
		{Seed: 1, Iteration: 2, Serving: "ft:step-1", HeldOutServing: &gate.Result{Successes: 4, Attempts: 8}, HeldOutCandidate: &gate.Result{Successes: 6, Attempts: 8}},
		{Seed: 2, Iteration: 1, Serving: Base, Train: &gate.Result{Successes: 0, Attempts: 8}}, // no group differed: no gate
		{Seed: 2, Iteration: 2, Serving: Base, HeldOutServing: &gate.Result{Successes: 0, Attempts: 8}, HeldOutCandidate: &gate.Result{Successes: 1, Attempts: 8}},
	}}
	r.summarize()
	want := []struct{ it, seeds, k, n int }{{0, 2, 2, 16}, {1, 1, 4, 8}, {2, 2, 7, 16}}
	if len(r.Curve) != len(want) {
		t.Fatalf("curve %+v, want %d points", r.Curve, len(want))
	}
	for i, w := range want {
		p := r.Curve[i]
		if p.Iteration != w.it || p.Seeds != w.seeds || p.Successes != w.k || p.Attempts != w.n {
			t.Errorf("point %d: %+v, want iteration %d, %d seeds, %d/%d", i, p, w.it, w.seeds, w.k, w.n)
		}
		if !(p.Low <= p.Rate && p.Rate <= p.High) {
			t.Errorf("point %d: rate %v outside its interval [%v, %v]", i, p.Rate, p.Low, p.High)
		}
	}
	if got := r.Curve[2].BySeed; got[1] != 0.75 || got[2] != 0.125 {
		t.Errorf("iteration 2 by seed %v, want 0.75 and 0.125", got)
	}
	// the training rollouts are measured every iteration, gate or not; iteration 1's are of
	// the model in use after 0 iterations
	if len(r.Train) != 1 || r.Train[0].Iteration != 0 || r.Train[0].Successes != 3 || r.Train[0].Attempts != 16 || r.Train[0].Seeds != 2 {
		t.Errorf("train %+v, want iteration 0 only: 3/16 over 2 seeds", r.Train)
	}
	b, err := r.PNG()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("the curve is not a PNG: %v", err)
	}
}

// TestWilson checks the interval against the score formula evaluated separately (in
// Python), including both edges.
func TestWilson(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{{0, 10, 0, 0.2775}, {5, 10, 0.2366, 0.7634}, {10, 10, 0.7225, 1}, {1, 32, 0.0055, 0.1575}} {
		lo, hi := wilson(c.k, c.n)
		if math.Abs(lo-c.lo) > 5e-4 || math.Abs(hi-c.hi) > 5e-4 {
			t.Errorf("wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

package learnbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/report"
	"github.com/frognano/frognano/internal/atomicfile"
)

// Result is learnbench.json: the options, every iteration of every seed, and the curve.
type Result struct {
	Options    Options     `json:"options"`
	Machine    string      `json:"machine"`
	Iterations []Iteration `json:"iterations"`
	// Curve is the held-out pass rate by iteration, all seeds pooled: iteration 0 is the
	// base model, iteration k the checkpoint the loop trained in iteration k (whether the
	// gate accepted it or not).
	Curve []Point `json:"curve"`
	// Train is the pass rate of the training rollouts, all seeds pooled, at the model in use
	// after k iterations (so iteration k+1's rollouts are its point k: 0 is the base, like
	// Curve's). Measured every iteration, also when no gate runs; but on training tasks
	// chosen near the frontier, not on the held-out ones, so not comparable with Curve.
	Train []Point `json:"train"`
}

// Iteration is one loop iteration of one seed.
type Iteration struct {
	Seed      int    `json:"seed"`
	Iteration int    `json:"iteration"`
	Serving   string `json:"serving"`
	Model     string `json:"model,omitempty"` // the checkpoint trained, if any
	Accepted  bool   `json:"accepted"`
	Outcome   string `json:"outcome"`
	// TrainReward is the mean reward of the iteration's training rollouts (on the model in
	// use); TrainSteps the optimizer steps taken; Dropped the rollouts the trainer refused
	// (not token-exact).
	TrainReward float64 `json:"train_reward"`
	// Train is the training rollouts' results, pooled over the iteration's tasks.
	Train      *gate.Result `json:"train,omitempty"`
	TrainSteps int          `json:"train_steps"`
	Dropped    int          `json:"dropped"`
	// HeldOutServing and HeldOutCandidate are the gate's results, pooled over the held-out
	// tasks; nil when the iteration trained nothing (no group's rewards differed), so no
	// gate ran.
	HeldOutServing   *gate.Result `json:"held_out_serving,omitempty"`
	HeldOutCandidate *gate.Result `json:"held_out_candidate,omitempty"`
	// Seconds is the wall time of the Step call that finished the iteration (a resumed
	// iteration counts only its last part).
	Seconds float64 `json:"seconds"`
}

// Point is one iteration of the curve.
type Point struct {
	Iteration int `json:"iteration"`
	// Seeds is how many seeds have a checkpoint here.
	Seeds int `json:"seeds"`
	gate.Result
	// Rate is Successes/Attempts; Low and High its 95% Wilson interval. Episodes of one
	// task are not independent, so the interval is, if anything, too narrow.
	Rate float64 `json:"rate"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// BySeed is each seed's rate (NaN-free: seeds without a checkpoint are left out).
	BySeed map[int]float64 `json:"by_seed"`
}

func (r *Result) has(seed, it int) bool {
	for _, x := range r.Iterations {
		if x.Seed == seed && x.Iteration == it {
			return true
		}
	}
	return false
}

// summarize computes the curve. A seed's base point is the serving side of its first
// gated iteration that ran the base (the held-out tasks are fixed once chosen).
func (r *Result) summarize() {
	bySeed := map[int]map[int]gate.Result{}
	put := func(seed, it int, res gate.Result) {
		if bySeed[seed] == nil {
			bySeed[seed] = map[int]gate.Result{}
		}
		bySeed[seed][it] = res
	}
	for _, x := range r.Iterations {
		if x.HeldOutServing != nil && x.Serving == Base {
			if _, ok := bySeed[x.Seed][0]; !ok {
				put(x.Seed, 0, *x.HeldOutServing)
			}
		}
		if x.HeldOutCandidate != nil {
			put(x.Seed, x.Iteration, *x.HeldOutCandidate)
		}
	}
	r.Curve = points(bySeed, r.Options.Iterations)
	train := map[int]map[int]gate.Result{}
	for _, x := range r.Iterations {
		if x.Train != nil {
			if train[x.Seed] == nil {
				train[x.Seed] = map[int]gate.Result{}
			}
			train[x.Seed][x.Iteration-1] = *x.Train
		}
	}
	r.Train = points(train, r.Options.Iterations)
}

// points pools results by seed and iteration into the curve's points, 0 to last.
func points(bySeed map[int]map[int]gate.Result, last int) []Point {
	var ps []Point
	for it := 0; it <= last; it++ {
		p := Point{Iteration: it, BySeed: map[int]float64{}}
		for seed, m := range bySeed {
			res, ok := m[it]
			if !ok || res.Attempts == 0 {
				continue
			}
			p.Seeds++
			p.Successes += res.Successes
			p.Attempts += res.Attempts
			p.BySeed[seed] = res.Rate()
		}
		if p.Attempts == 0 {
			continue
		}
		p.Rate = p.Result.Rate()
		p.Low, p.High = wilson(p.Successes, p.Attempts)
		ps = append(ps, p)
	}
	return ps
}

// wilson is the 95% Wilson score interval of k successes in n trials (report.Wilson's),
// the whole [0, 1] when there was no trial.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	w := report.Wilson(k, n)
	return w.Low, w.High
}

// ReadResult reads Out's learnbench.json; none is an empty result.
func ReadResult(out string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(out, "learnbench.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return &Result{}, nil
	}
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("learnbench: %s: %w (remove it to start the benchmark afresh)", filepath.Join(out, "learnbench.json"), err)
	}
	return &r, nil
}

// Write replaces learnbench.json and learning-curve.png in out, each atomically.
func (r *Result) Write(out string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(out, "learnbench.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	png, err := r.PNG()
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(out, "learning-curve.png"), png, 0o644)
}

// machine says where the run ran, for the record: the figures depend on it.
func machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		s += ", load average " + strings.Join(strings.Fields(string(b))[:3], " ") + " at start"
	}
	return s + ", " + time.Now().UTC().Format(time.DateTime) + " UTC"
}

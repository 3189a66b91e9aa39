package gate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// policyPair simulates one held-out evaluation: tasks whose true pass rates under the
// serving model are spread over (0.1, 0.9), the candidate's shifted by delta, each model run
// for episodes episodes a task.
func policyPair(rng *rand.Rand, tasks, episodes int, delta float64) (serving, candidate map[string]Result) {
	serving, candidate = map[string]Result{}, map[string]Result{}
	for i := range tasks {
		p := 0.1 + 0.8*rng.Float64()
		q := min(1, max(0, p+delta))
		id := fmt.Sprintf("task-%03d", i)
		serving[id] = Result{binomial(rng, episodes, p), episodes}
		candidate[id] = Result{binomial(rng, episodes, q), episodes}
	}
	return serving, candidate
}

func binomial(rng *rand.Rand, n int, p float64) int {
	k := 0
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return k
}

// acceptance is the share of trials in which the gate accepts a candidate delta away from
// the serving model, and the share a single comparison of the averages would accept.
func acceptance(t *testing.T, seed uint64, trials, tasks int, delta float64) (gate, naive float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for range trials {
		s, c := policyPair(rng, tasks, 8, delta)
		v, err := Decide(s, c, DefaultRule())
		if err != nil {
			t.Fatal(err)
		}
		if v.Accept {
			gate++
		}
		if v.Candidate >= v.Serving {
			naive++
		}
	}
	return gate / float64(trials), naive / float64(trials)
}

// TestSimulatedPolicies: the rule's behaviour on models whose true pass rates are known.
// An equal or better candidate must be accepted most of the time, a clearly worse one
// rejected most of the time; and the single noisy comparison the rule replaces must do
// visibly worse on an equal model (else this test could not tell the two apart).
func TestSimulatedPolicies(t *testing.T) {
	const trials = 400
	cases := []struct {
		delta    float64
		tasks    int
		min, max float64 // bounds on the gate's acceptance rate
	}{
		{0, 40, 0.90, 1},     // equal: ~1-alpha
		{0, 20, 0.90, 1},     // equal, the fewest tasks the gate decides on
		{0.05, 40, 0.97, 1},  // a little better
		{0.15, 40, 0.99, 1},  // better
		{-0.10, 40, 0, 0.30}, // worse: rejected most of the time (measured: ~85%)
		{-0.15, 20, 0, 0.25}, // worse on the fewest tasks (measured: ~88%)
		{-0.15, 40, 0, 0.05}, // clearly worse
		{-0.25, 40, 0, 0.02}, // much worse
	}
	for i, c := range cases {
		got, naive := acceptance(t, uint64(i+1), trials, c.tasks, c.delta)
		t.Logf("delta %+.2f, %d tasks × 8 episodes: gate accepts %.3f, \"candidate ≥ serving\" accepts %.3f", c.delta, c.tasks, got, naive)
		if got < c.min || got > c.max {
			t.Errorf("delta %+.2f over %d tasks: accepted in %.3f of %d trials, want [%.2f, %.2f]", c.delta, c.tasks, got, trials, c.min, c.max)
		}
		if c.delta == 0 && naive > 0.7 {
			t.Errorf("the single comparison accepted an equal model %.3f of the time: the simulation is not noisy enough to tell the rules apart", naive)
		}
	}
}

// TestPValueIsExact compares the convolution with a brute-force enumeration of all sign
// assignments, on random small cases with uneven episode counts.
func TestPValueIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for trial := range 200 {
		tasks := 1 + rng.IntN(12)
		var mags []int
		observed := 0
		for range tasks {
			n1, n2 := 1+rng.IntN(10), 1+rng.IntN(10)
			d := float64(rng.IntN(n1+1))/float64(n1) - float64(rng.IntN(n2+1))/float64(n2)
			m := int(math.Round(math.Abs(d) * grid))
			if m == 0 {
				continue
			}
			mags = append(mags, m)
			if d > 0 {
				observed += m
			} else {
				observed -= m
			}
		}
		count := 0
		for mask := range 1 << len(mags) {
			s := 0
			for j, m := range mags {
				if mask&(1<<j) != 0 {
					s += m
				} else {
					s -= m
				}
			}
			if s <= observed {
				count++
			}
		}
		want := float64(count) / float64(int(1)<<len(mags))
		if got := lowerTail(mags, observed); math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: mags %v observed %d: p=%v, enumeration %v", trial, mags, observed, got, want)
		}
	}
}

func TestTooFewTasksNeverSwitch(t *testing.T) {
	s, c := map[string]Result{}, map[string]Result{}
	for i := range 19 {
		id := fmt.Sprint(i)
		s[id] = Result{0, 8}
		c[id] = Result{8, 8} // far better, but on too few tasks
	}
	s["only-serving"] = Result{3, 8}
	c["only-candidate"] = Result{3, 8}
	c["no-attempts"] = Result{0, 0}
	s["no-attempts"] = Result{0, 8}
	v, err := Decide(s, c, DefaultRule())
	if err != nil {
		t.Fatal(err)
	}
	if v.Accept || v.Tasks != 19 || v.Unpaired != 3 || !strings.Contains(v.Reason, "needs 20") {
		t.Fatalf("verdict %+v", v)
	}
	c["19"], s["19"] = Result{8, 8}, Result{0, 8}
	if v, _ = Decide(s, c, DefaultRule()); !v.Accept || v.Tasks != 20 || v.Better != 20 || v.PValue != 1 {
		t.Fatalf("with 20 tasks: %+v", v)
	}
}

// TestVerdictFigures: a candidate worse on every task is rejected with the exact p-value
// (all 20 signs negative: 2^-20), and the figures say what happened.
func TestVerdictFigures(t *testing.T) {
	s, c := map[string]Result{}, map[string]Result{}
	for i := range 20 {
		id := fmt.Sprint(i)
		s[id], c[id] = Result{6, 8}, Result{4, 8}
	}
	s["x"], c["x"] = Result{5, 8}, Result{5, 8}
	v, err := Decide(s, c, DefaultRule())
	if err != nil {
		t.Fatal(err)
	}
	if v.Accept || v.Worse != 20 || v.Same != 1 || math.Abs(v.PValue-math.Pow(2, -20)) > 1e-18 ||
		math.Abs(v.Serving-(20*0.75+0.625)/21) > 1e-12 || !strings.HasPrefix(v.Reason, "rejected") {
		t.Fatalf("verdict %+v", v)
	}
}

func TestBadInput(t *testing.T) {
	ok := map[string]Result{"a": {1, 2}}
	for _, c := range []struct {
		s, c map[string]Result
		rule Rule
		want string
	}{
		{ok, ok, Rule{Alpha: 0, MinTasks: 1}, "alpha"},
		{ok, ok, Rule{Alpha: 0.05, MinTasks: 0}, "min tasks"},
		{ok, map[string]Result{"a": {3, 2}}, DefaultRule(), "3 successes of 2"},
		{map[string]Result{"a": {-1, 2}}, ok, DefaultRule(), "-1 successes"},
	} {
		if _, err := Decide(c.s, c.c, c.rule); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c, err, c.want)
		}
	}
}

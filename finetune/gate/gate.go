// Package gate decides whether a fine-tuned candidate model may replace the model the
// language server uses, from both models' results on the held-out tasks (tasks never
// trained on; finetune/frontier's split). Entry point: [Decide] with [DefaultRule].
//
// The rule: switch unless the candidate is shown to be worse. "The held-out pass rate did
// not fall" cannot be read off one comparison of two averages: with 8 episodes on each of
// 40 tasks, two copies of the same model differ by a few points every time, so "candidate
// ≥ serving" would reject an equal model about half the time and accept a worse one often.
// Instead:
//
//  1. Pair by task. Tasks differ in difficulty far more than the models do, so the
//     comparison is made within each task: d = candidate's pass rate − serving's on that
//     task, for every task both models ran.
//  2. A one-sided paired sign-flip (randomisation) test on the d's. If the two models were
//     equally good, each task's pair of results would be exchangeable, so each d would be as
//     likely positive as negative with the same size. The p-value is the share of the 2^T
//     sign assignments whose sum is at most the observed sum: the chance of a drop at least
//     this large between equal models. It is computed exactly (no sampling, so the verdict
//     is deterministic) by convolving the distribution task by task, with each |d| on a
//     grid of 1/64 (any fixed function of |d| keeps the test exact; 1/64 is exact for 8
//     episodes a task and finer than the noise otherwise). Unlike a sign test it weighs a
//     task that went from 8/8 to 0/8 more than one that moved by an episode.
//  3. The candidate is rejected when p ≤ Alpha (default 0.05): an equal model is accepted
//     about 95% of the time, and a worse one is rejected with a probability that grows with
//     the number of tasks and the size of the drop. Measured with simulated policies (8
//     episodes a task, true pass rates spread over 0.1–0.9; TestSimulatedPolicies): an
//     equal model is accepted 95–96% of the time, one 0.05 better 99.7–100%; a drop of
//     0.05 over 40 tasks is caught only 35% of the time, 0.10 85%, 0.15 over 20 tasks 88%,
//     0.15 over 40 tasks 99.5%. Comparing the two averages once would accept an equal
//     model 56% of the time.
//  4. Nothing switches on too little evidence: with fewer than MinTasks (default 20) paired
//     tasks the verdict is "not enough held-out tasks" and the serving model stays.
//
// The default is to move forward, since a candidate is the product of an accepted training
// update; the test only stops a drop that the evidence shows. Its limit: a chain of small
// drops, each within the noise, can add up over many updates. Status shows the held-out pass
// rate at the start and now, and `frognano finetune rollback` goes back by hand.
package gate

import (
	"fmt"
	"math"
	"sort"
)

// Result is one model's outcome on one held-out task: Successes of its Attempts episodes
// earned the full reward (every FAIL_TO_PASS and PASS_TO_PASS test passed).
type Result struct {
	Successes int `json:"successes"`
	Attempts  int `json:"attempts"`
}

// Rate is Successes/Attempts (0 with no attempts).
func (r Result) Rate() float64 {
	if r.Attempts <= 0 {
		return 0
	}
	return float64(r.Successes) / float64(r.Attempts)
}

// Rule is the gate's parameters; start from [DefaultRule].
type Rule struct {
	// Alpha is the test's level: the candidate is rejected when the chance of a drop at
	// least as large between equal models is at most Alpha.
	Alpha float64 `json:"alpha"`
	// MinTasks is the fewest paired held-out tasks on which the gate decides at all.
	MinTasks int `json:"min_tasks"`
}

// DefaultRule is Alpha 0.05 and MinTasks 20.
func DefaultRule() Rule { return Rule{Alpha: 0.05, MinTasks: 20} }

// Verdict is the gate's decision and the figures behind it.
type Verdict struct {
	Accept bool `json:"accept"`
	// Reason says the decision in a sentence, for status and the report.
	Reason string `json:"reason"`
	Rule   Rule   `json:"rule"`
	// Tasks is the number of tasks both models ran; Unpaired those only one of them ran
	// (left out).
	Tasks    int `json:"tasks"`
	Unpaired int `json:"unpaired,omitempty"`
	// Serving and Candidate are the mean per-task pass rates over the paired tasks.
	Serving   float64 `json:"serving"`
	Candidate float64 `json:"candidate"`
	// Better, Worse and Same count the tasks where the candidate's pass rate rose, fell or
	// stayed.
	Better int `json:"better"`
	Worse  int `json:"worse"`
	Same   int `json:"same"`
	// PValue is the one-sided p-value of the sign-flip test: the chance, were the models
	// equal, of a drop at least as large as the one seen (1 when nothing fell).
	PValue float64 `json:"p_value"`
}

// grid is the resolution of |d| in the test (see the package doc).
const grid = 64

// Decide applies rule to the held-out results of the serving model and of the candidate,
// each keyed by task ID. Tasks only one of them ran, or ran with no attempts, are left out.
func Decide(serving, candidate map[string]Result, rule Rule) (Verdict, error) {
	if !(rule.Alpha > 0 && rule.Alpha < 1) {
		return Verdict{}, fmt.Errorf("gate: alpha %v is not between 0 and 1", rule.Alpha)
	}
	if rule.MinTasks < 1 {
		return Verdict{}, fmt.Errorf("gate: min tasks %d: at least one paired task is needed", rule.MinTasks)
	}
	v := Verdict{Rule: rule, PValue: 1}
	ids := make([]string, 0, len(candidate))
	for id := range candidate {
		ids = append(ids, id)
	}
	sort.Strings(ids) // a fixed order: float sums do not depend on map order
	var mags []int
	observed := 0
	for _, id := range ids {
		c := candidate[id]
		s, ok := serving[id]
		if !ok || s.Attempts <= 0 || c.Attempts <= 0 {
			v.Unpaired++
			continue
		}
		if err := check(id, s); err != nil {
			return Verdict{}, err
		}
		if err := check(id, c); err != nil {
			return Verdict{}, err
		}
		v.Tasks++
		v.Serving += s.Rate()
		v.Candidate += c.Rate()
		d := c.Rate() - s.Rate()
		m := int(math.Round(math.Abs(d) * grid))
		switch {
		case d > 0:
			v.Better++
		case d < 0:
			v.Worse++
		default:
			v.Same++
		}
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
	for id, s := range serving {
		if _, ok := candidate[id]; !ok && s.Attempts > 0 {
			v.Unpaired++
		}
	}
	if v.Tasks > 0 {
		v.Serving /= float64(v.Tasks)
		v.Candidate /= float64(v.Tasks)
	}
	if v.Tasks < rule.MinTasks {
		v.Reason = fmt.Sprintf("not enough held-out tasks: %d ran on both models, the gate needs %d; the serving model stays (synthesize more tasks: the held-out split is a fifth of them)", v.Tasks, rule.MinTasks)
		return v, nil
	}
	v.PValue = lowerTail(mags, observed)
	rates := fmt.Sprintf("held-out pass rate %.3f → %.3f over %d tasks (%d better, %d worse, %d same; p=%.3g)",
		v.Serving, v.Candidate, v.Tasks, v.Better, v.Worse, v.Same, v.PValue)
	if v.PValue <= rule.Alpha {
		v.Reason = "rejected: the pass rate fell beyond chance: " + rates
		return v, nil
	}
	v.Accept = true
	v.Reason = "accepted: no drop beyond chance: " + rates
	return v, nil
}

func check(id string, r Result) error {
	if r.Successes < 0 || r.Successes > r.Attempts {
		return fmt.Errorf("gate: task %s: %d successes of %d attempts", id, r.Successes, r.Attempts)
	}
	return nil
}

// lowerTail is P(Σ ε_i·mags_i ≤ observed) for independent fair signs ε_i: the exact null
// distribution, built by adding one task at a time (a convolution with ±m).
func lowerTail(mags []int, observed int) float64 {
	total := 0
	for _, m := range mags {
		total += m
	}
	// dist[s+total] is P(sum = s); sums lie in [-total, total].
	dist := make([]float64, 2*total+1)
	next := make([]float64, len(dist))
	dist[total] = 1
	reach := 0 // sums so far lie in [-reach, reach]
	for _, m := range mags {
		clear(next[total-reach-m : total+reach+m+1])
		for s := -reach; s <= reach; s++ {
			p := dist[s+total]
			if p == 0 {
				continue
			}
			next[s+total-m] += p / 2
			next[s+total+m] += p / 2
		}
		dist, next = next, dist
		reach += m
	}
	p := 0.0
	for s := -total; s <= observed && s <= total; s++ {
		p += dist[s+total]
	}
	return min(p, 1)
}

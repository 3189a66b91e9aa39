package report

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// sim plays the loop's iterations with simulated policies and writes what the loop would:
// the state file (loop.State, with the real frontier's evidence), each iteration's rollout
// records and group summaries (rollout's types, in its layout), and the registry's books
// through the real registry (models made in the real Ollama, judged by the real gate). A
// task's true pass rate is a logistic curve of the model's skill minus the task's
// difficulty, which grows with its rung; each iteration's candidate moves the skill by the
// iteration's delta.
type sim struct {
	t              *testing.T
	repo, dir, reg string
	srv            *ollamatest.Server
	rng            *rand.Rand
	st             *loop.State
	g              int // episodes per group
	tasks          int // training tasks per iteration
	difficulty     map[string]float64
	skill          float64            // the model in use's
	skills         map[string]float64 // by model name
	// written keeps every episode's reward written, and seconds their wall clock, by
	// folder, for the tests to recount.
	written map[string][]float64
	seconds map[string]float64
}

// newSim makes the frontier's tasks: held held-out ones and train training ones (the
// held-out split is by a hash of the ID, as synthesis makes them).
func newSim(t *testing.T, srv *ollamatest.Server, seed uint64, held, train int) *sim {
	return newSimAt(t, srv, filepath.Join(t.TempDir(), "repo"), seed, held, train)
}

// newSimAt is newSim for a repository at repo (which need not exist).
func newSimAt(t *testing.T, srv *ollamatest.Server, repo string, seed uint64, held, train int) *sim {
	s := &sim{t: t, repo: repo, dir: t.TempDir(), reg: t.TempDir(), srv: srv, rng: rand.New(rand.NewPCG(seed, 1)), g: 8, tasks: 8,
		difficulty: map[string]float64{}, skills: map[string]float64{"base:1b": 0}, written: map[string][]float64{}, seconds: map[string]float64{}}
	fr := frontier.New(frontier.Config{Synthesizers: []string{"mutation", "removal", "history"}, Seed: seed})
	s.st = &loop.State{Version: loop.Version, Repo: repo, Base: "base:1b", Phase: loop.PhaseDone, Frontier: fr}
	synths := []string{"mutation", "mutation", "removal", "history"}
	for i := 0; held+train > 0; i++ {
		id := fmt.Sprintf("task-%03d", i)
		if frontier.IsHeldOut(id, fr.Config.HeldOut) {
			if held == 0 {
				continue
			}
			held--
		} else {
			if train == 0 {
				continue
			}
			train--
		}
		rung := i % 5
		fr.Add(id, frontier.Request{Synthesizer: synths[i%len(synths)], Rung: rung, Setting: fr.Config.Ladder[rung]})
		s.difficulty[id] = float64(rung)*0.7 - 1.2 + 0.6*s.rng.NormFloat64()
	}
	ctx := context.Background()
	if _, err := registry.Open(ctx, registry.Options{Repo: repo, Client: srv.Client, Host: "http://" + srv.Host, Base: "base:1b", StateDir: s.reg}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *sim) options() Options { return Options{Repo: s.repo, Dir: s.dir, RegistryDir: s.reg} }

// episodes draws a group of model's episodes on task id and writes their records and the
// group's summary into out, as rollout.Run does.
func (s *sim) episodes(out, id, model string) gate.Result {
	p := 1 / (1 + math.Exp(-(s.skills[model] - s.difficulty[id])))
	g := &rollout.Summary{Version: rollout.RecordVersion, Task: id, Model: model, Episodes: s.g}
	var res gate.Result
	for i := range s.g {
		r := 0.0
		if s.rng.Float64() < p {
			r = 1
			res.Successes++
		}
		res.Attempts++
		total := 8 + 30*s.rng.Float64()
		rec := rollout.Record{Version: rollout.RecordVersion, Task: id, Episode: i, Model: model, Host: "test",
			Trajectory: filepath.Join(id, fmt.Sprint(i)+".jsonl"), Steps: 3, Reward: &r,
			Timings: rollout.Timings{Agent: total - 3, Model: 0.7 * total, Tools: 0.2 * total, Score: 2, Total: total}}
		s.seconds[out] += total
		writeJSON(s.t, filepath.Join(out, id, fmt.Sprint(i)+".json"), rec)
		g.Rewards = append(g.Rewards, &r)
		g.Mean += r / float64(s.g)
		if r != *g.Rewards[0] {
			g.Varied = true
		}
		s.written[out] = append(s.written[out], r)
	}
	writeJSON(s.t, filepath.Join(out, id, "group.json"), g)
	return res
}

// iterate runs one iteration whose candidate changes the skill by delta (nothing is trained
// when untrained), judged with rule.
func (s *sim) iterate(delta float64, untrained bool, rule gate.Rule) {
	t, ctx, st := s.t, context.Background(), s.st
	reg, err := registry.Open(ctx, registry.Options{Repo: s.repo, Client: s.srv.Client, Host: "http://" + s.srv.Host, StateDir: s.reg})
	if err != nil {
		t.Fatal(err)
	}
	servingName, _, known, err := reg.Serving()
	if err != nil {
		t.Fatal(err)
	}
	serving := servingName
	if serving == "" {
		serving = st.Base
	}
	*st = loop.State{Version: loop.Version, Repo: st.Repo, Base: st.Base, Iteration: st.Iteration + 1, Phase: loop.PhaseDone,
		Serving: serving, Frontier: st.Frontier, History: st.History}
	fr := st.Frontier
	var train, held []string
	for id, ts := range fr.Tasks {
		switch {
		case ts.HeldOut:
			held = append(held, id)
		case ts.Retired == "":
			train = append(train, id)
		}
	}
	sort.Strings(held)
	sort.Slice(train, func(i, j int) bool { // the loop's choice: most learnable first
		a, b := fr.Tasks[train[i]], fr.Tasks[train[j]]
		if la, lb := a.Learnability(), b.Learnability(); la != lb {
			return la > lb
		}
		return train[i] < train[j]
	})
	st.Tasks = train[:min(len(train), s.tasks)]
	it := loop.IterationDir(s.dir, st.Iteration)
	var sum float64
	for _, id := range st.Tasks {
		res := s.episodes(filepath.Join(it, "rollouts"), id, serving)
		sum += float64(res.Successes)
		var rs []float64
		for range res.Successes {
			rs = append(rs, 1)
		}
		for range res.Attempts - res.Successes {
			rs = append(rs, 0)
		}
		if err := fr.Observe(id, rs); err != nil {
			t.Fatal(err)
		}
	}
	h := loop.Summary{Iteration: st.Iteration, Serving: serving, MeanReward: sum / float64(len(st.Tasks)*s.g)}
	if untrained {
		h.Outcome = "no group's rewards differed: nothing to train on, the model in use stays"
		st.History = append(st.History, h)
		s.save()
		return
	}
	loss := 0.5 / float64(st.Iteration)
	st.Trained = &loop.Trained{Groups: len(st.Tasks), Rollouts: len(st.Tasks) * s.g, Steps: 1, Loss: &loss, Seconds: 400 + 20*s.rng.Float64()}
	m, err := reg.Import(ctx, st.Iteration, func(_ context.Context, name string) error {
		s.srv.Random(name, modelgen.Llama)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Model, st.HeldOut = m.Name, held
	s.skills[m.Name] = s.skills[serving] + delta
	servingRes, candidate := map[string]gate.Result{}, map[string]gate.Result{}
	for _, id := range held {
		if r, ok := known[id]; ok {
			servingRes[id] = r
		} else {
			servingRes[id] = s.episodes(filepath.Join(it, "gate-serving", strings.ReplaceAll(serving, ":", "_")), id, serving)
		}
		candidate[id] = s.episodes(filepath.Join(it, "gate-candidate"), id, m.Name)
	}
	v, err := reg.Judge(ctx, m.Name, servingName, servingRes, candidate, rule)
	if err != nil {
		t.Fatal(err)
	}
	st.Verdict = &v
	h.Model, h.Accepted, h.Trained, h.Verdict = m.Name, v.Accept, st.Trained, st.Verdict
	if v.Accept {
		fr.PolicyUpdated()
		h.Outcome = m.Name + " accepted and in use: " + v.Reason
	} else {
		h.Outcome = m.Name + " rejected, kept for inspection: " + v.Reason
	}
	st.Outcome = h.Outcome
	st.History = append(st.History, h)
	s.save()
}

func (s *sim) save() {
	writeJSON(s.t, loop.StatePath(s.dir), s.st)
	if _, err := loop.Load(loop.StatePath(s.dir)); err != nil { // the loop reads what was written
		s.t.Fatal(err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// realistic is a run of eight iterations: mostly gains, one untrained, one candidate that
// fell and was rejected.
func realistic(t *testing.T, srv *ollamatest.Server, repo string) *sim {
	s := newSimAt(t, srv, repo, 7, 24, 40)
	rule := gate.DefaultRule()
	for i, d := range []float64{0.35, 0.3, 0, -1, 0.3, 0.25, 0.3, 0.2} {
		s.iterate(d, i == 2, rule)
	}
	return s
}

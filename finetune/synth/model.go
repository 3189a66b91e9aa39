package synth

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/task"
)

// ErrNoModel is the model-written synthesizer asked for with no model to run.
var ErrNoModel = fmt.Errorf("the model-written synthesizer runs the agent, and no model is configured")

// modelPrompt is the self-play instruction: the agent, with its usual five tools on a
// private copy of the base, breaks one function the way a developer might.
func modelPrompt(file, fn string) string {
	return fmt.Sprintf(`We are making practice tasks for a coding assistant from this repository's own tests.
Introduce one realistic bug into the function %s in %s: the kind of mistake a developer could make (a wrong condition or bound, a missed case, a wrong variable or argument, a step left out), or remove a small part of what it does, so that some of the repository's existing tests fail.
Rules: change only %s, and only in and around %s; never edit, add or delete a test file or test data; keep the code compiling; add no comment that points at the change.
Read the function and the tests that use it first. When you are done, reply with one sentence saying what you changed.`, fn, file, file, fn)
}

// modelTarget is a function the model is asked to break.
type modelTarget struct{ pkg, file, fn string }

// modelTargets are the functions of the packages with passing tests (one removal mutant
// each marks them), in the seed's order.
func (r *runner) modelTargets() []modelTarget {
	var out []modelTarget
	var pkgs []string
	for pkg := range r.s.Env.Packages {
		if len(r.selected(pkg)) > 0 {
			pkgs = append(pkgs, pkg)
		}
	}
	for file, gf := range r.goMutants(pkgs) {
		for _, m := range gf.mutants {
			if m.Operator == OpRemoveBody {
				out = append(out, modelTarget{pkg: m.Package, file: file, fn: m.Func})
			}
		}
	}
	rng := rand.New(rand.NewPCG(r.opts.Seed, 0x5e1f))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// modelNext yields one candidate per agent episode, on the targets in order, until tries
// episodes have run. A failed episode or one that changed no non-test Go code is counted
// as a candidate and rejected; its test-file edits are dropped, never part of a task.
func (r *runner) modelNext(ctx context.Context, sum *Summary, tries int) func() (*patchCandidate, bool) {
	targets := r.modelTargets()
	i := 0
	return func() (*patchCandidate, bool) {
		for i < len(targets) && i < tries {
			tg := targets[i]
			i++
			sum.Candidates[SynthModel]++
			pc, why := r.modelCandidate(ctx, tg)
			if pc != nil {
				return pc, true
			}
			sum.ValidatedBy[SynthModel]++
			sum.reject(SynthModel, why)
		}
		return nil, false
	}
}

// modelCandidate runs one self-play episode on a private copy of the base.
func (r *runner) modelCandidate(ctx context.Context, tg modelTarget) (*patchCandidate, string) {
	r.opts.Progress(Progress{Phase: SynthModel, Text: "the model breaks " + tg.fn})
	opts := agent.Options{Model: r.opts.ModelName, MaxSteps: 30, MaxTime: 15 * time.Minute, NumCtx: r.opts.ModelNumCtx}
	if r.opts.ModelMaxSteps > 0 {
		opts.MaxSteps = r.opts.ModelMaxSteps
	}
	if r.opts.ModelMaxTime > 0 {
		opts.MaxTime = r.opts.ModelMaxTime
	}
	res, err := agent.Run(ctx, r.opts.Model, agent.Task{Dir: r.s.Checkout.Dir, Instruction: modelPrompt(tg.file, tg.fn)}, opts)
	if err != nil || res.Changes == nil {
		return nil, RejectModel
	}
	var changes []task.Change
	for _, fc := range res.Changes.Files {
		if fc.Kind != workspace.Modified || isTestPath(fc.Path) || filepath.Ext(fc.Path) != ".go" ||
			fc.IsLink() || fc.BaseIsLink() || fc.Mode != fc.BaseMode {
			continue // test edits, new, deleted or renamed files, links: never part of a task
		}
		old, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(fc.Path)))
		if err != nil || bytes.Equal(old, fc.Content) {
			continue
		}
		changes = append(changes, task.Change{Path: fc.Path, Old: old, New: fc.Content})
	}
	if len(changes) == 0 {
		if res.Exit != agent.ExitDone {
			return nil, RejectModel
		}
		return nil, RejectNoChange
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	pc := &patchCandidate{synth: SynthModel, changes: changes, bugs: 1,
		origin: task.Origin{Synthesizer: SynthModel, File: tg.file, Function: tg.fn,
			Description: "asked to break " + tg.fn + ": " + firstLine(res.Answer, 200)}}
	// The model may change another function than the one asked for: the origin is what it
	// changed.
	if fs := changedFuncs(changes); len(fs) > 0 {
		pc.origin.File, pc.origin.Function, pc.origin.Line = fs[0].file, fs[0].name, fs[0].line
	}
	return pc, ""
}

func firstLine(s string, n int) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

package synth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
)

// Synthesizers whose candidates are whole patches, not mutants (see patchCandidate).
const (
	SynthHistory  = "history"  // the non-test part of a past commit reverted on HEAD
	SynthModel    = "model"    // a bug the agent itself wrote into a chosen function
	SynthCombined = "combined" // two validated tasks of different places in one
)

// Synthesizers lists every synthesizer, in the order a run uses them.
var Synthesizers = []string{SynthHistory, SynthModel, SynthMutation, SynthRemoval, SynthCombined}

// Reasons only whole-patch candidates are rejected for.
const (
	RejectRevert    = "revert does not apply to HEAD"
	RejectNoChange  = "no change to non-test Go code"
	RejectNoPackage = "changes no tested package"
	RejectModel     = "the model's episode failed"
)

// patchCandidate is a candidate made as a whole change to one or more files (history,
// model-written, combined) rather than as a mutant of one expression: there is nothing to
// switch, so it is validated once as a plain patch on a fresh copy, which is also its
// confirmation.
type patchCandidate struct {
	synth   string
	changes []task.Change // Old is the file at the base commit, New with the bug
	origin  task.Origin
	bugs    int
	// hint is what level 0 says about the expected behaviour beyond the functions' doc
	// comments (history: the subject of the commit that made it so).
	hint string
}

// patchVerdict is what the plain check decided about a patchCandidate.
type patchVerdict struct {
	runOutcome
	patch    string
	distance int
	seconds  float64
}

// checkPatch validates pc as a plain patch: the patch applies both ways, and on a fresh
// copy with it the affected packages' tests run as go test runs them; some test that passed
// on the clean commit must fail, and the others are recorded as PASS_TO_PASS.
func (r *runner) checkPatch(ctx context.Context, pc *patchCandidate) *patchVerdict {
	start := time.Now()
	v := &patchVerdict{}
	defer func() { v.seconds = time.Since(start).Seconds() }()
	files := map[string][]byte{}
	for _, c := range pc.changes {
		files[c.Path] = c.New
	}
	patch, err := task.MakePatch(ctx, pc.changes)
	if err == nil {
		err = task.CheckPatch(ctx, patch, pc.changes)
	}
	if err != nil || strings.TrimSpace(patch) == "" {
		v.reason = RejectPatch
		return v
	}
	v.patch = patch
	own := r.packagesOf(pc.changes)
	if len(own) == 0 {
		v.reason = RejectNoPackage
		return v
	}
	affected := map[string]bool{}
	for _, p := range own {
		for _, a := range r.s.Env.Affected(p) {
			affected[a] = true
		}
	}
	var pkgs, ids []string
	for p := range affected {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		ids = append(ids, r.selected(p)...)
	}
	c, err := r.s.Copy(ctx, files)
	if err != nil {
		v.reason = RejectBuild
		return v
	}
	defer c.Close()
	res, err := c.Run(ctx, r.plainCommand(pkgs), 4*r.packageTimeout()+time.Minute)
	if err != nil {
		v.reason = RejectBuild
		return v
	}
	results := env.ParseGoTestJSON([]byte(res.Stdout))
	for _, p := range own {
		if results.Broken[p] == "build failed" {
			v.reason = RejectBuild
			return v
		}
	}
	if !v.outcome(results, ids, res.TimedOut, RejectSurvived) {
		return v
	}
	ownSet := map[string]bool{}
	for _, p := range own {
		ownSet[p] = true
	}
	for _, id := range v.failToPass {
		if p, _ := env.SplitID(id); !ownSet[p] {
			v.distance = 1
		}
	}
	return v
}

// packagesOf are the packages (with tests that pass) whose files the changes touch.
func (r *runner) packagesOf(changes []task.Change) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range changes {
		dir, base := path.Split(c.Path)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		for pkg, info := range r.s.Env.Packages {
			if info.Dir != dir || seen[pkg] {
				continue
			}
			for _, f := range info.GoFiles {
				if f == base {
					seen[pkg] = true
					out = append(out, pkg)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// patchTask is the store's record of an accepted whole-patch candidate.
func (r *runner) patchTask(ctx context.Context, pc *patchCandidate, v *patchVerdict, id string) *task.Task {
	t := &task.Task{Version: task.Version, ID: id, Repo: r.s.Checkout.Repo, BaseCommit: r.s.Checkout.Commit,
		Patch: v.patch, FailToPass: v.failToPass, PassToPass: v.passToPass,
		Test: r.testSpec(v.failToPass, v.passToPass),
		Features: task.Features{Synthesizer: pc.synth, ChangedFiles: len(pc.changes), ChangedLines: task.ChangedLines(v.patch),
			Bugs: max(pc.bugs, 1), FailToPass: len(v.failToPass), PassToPass: len(v.passToPass), TestDistance: v.distance},
		Origin: pc.origin, Created: time.Now().UTC().Truncate(time.Second)}
	if t.PassToPass == nil {
		t.PassToPass = []string{}
	}
	funcs := changedFuncs(pc.changes)
	level0 := levelZero(funcs, pc.hint, v.failToPass)
	r.finishTask(ctx, t, funcs, []task.Issue{level0, levelOneWith(v.failToPass, v.output, r.rerun)}, v.output)
	return t
}

// runPatches validates the candidates that next yields, until quota tasks are made or it
// yields none, and stores each accepted one; it returns the validation times.
func (r *runner) runPatches(ctx context.Context, synth string, next func() (*patchCandidate, bool), quota int,
	store *task.Store, sum *Summary, seen map[string]bool) ([]float64, error) {
	var times []float64
	made := 0
	for made < quota {
		if ctx.Err() != nil {
			return times, ctx.Err()
		}
		pc, ok := next()
		if !ok {
			break
		}
		r.opts.Progress(Progress{Phase: synth, Done: made, Total: quota, Valid: sum.Valid, Text: pc.origin.Description})
		v := r.checkPatch(ctx, pc)
		times = append(times, v.seconds)
		sum.ValidatedBy[synth]++
		if v.reason == "" {
			id := task.MakeID(r.s.Checkout.Commit, v.patch)
			if seen[id] {
				v.reason = RejectDuplicate
			} else {
				seen[id] = true
				if err := store.Put(r.patchTask(ctx, pc, v, id)); err != nil {
					return times, err
				}
				made++
				sum.Valid++
				sum.ValidBy[synth]++
				sum.Tasks = append(sum.Tasks, id)
			}
		}
		if v.reason != "" {
			sum.reject(synth, v.reason)
		}
	}
	return times, nil
}

// listNext yields the candidates of a list in order.
func listNext(cands []*patchCandidate) func() (*patchCandidate, bool) {
	i := 0
	return func() (*patchCandidate, bool) {
		if i >= len(cands) {
			return nil, false
		}
		i++
		return cands[i-1], true
	}
}

// isTestPath says whether a repository path is test code or test data: what a task's
// patch never touches (history reverts and model edits keep those files as HEAD has them).
func isTestPath(p string) bool {
	if strings.HasSuffix(p, "_test.go") {
		return true
	}
	for _, part := range strings.Split(p, "/") {
		if part == "testdata" {
			return true
		}
	}
	return false
}

// applyPatches applies patches in order (git apply -p1, no fuzz) to files (path →
// content) in a private folder and returns the files' new contents.
func applyPatches(ctx context.Context, files map[string][]byte, patches ...string) (map[string][]byte, error) {
	tmp, err := os.MkdirTemp("", "frognano-revert-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for p, content := range files {
		if !task.SafePath(p) {
			return nil, fmt.Errorf("refusing the path %q", p)
		}
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, content, 0o644); err != nil {
			return nil, err
		}
	}
	// A private folder of frognano's: git reads no configuration there but the hardening.
	g := gitcmd.Repo{Dir: tmp, Trust: gitcmd.Hostile}
	for _, patch := range patches {
		if _, err := g.Run(ctx, []byte(patch), "apply", "--whitespace=nowarn", "-"); err != nil {
			var gerr *gitcmd.Error
			if errors.As(err, &gerr) {
				return nil, fmt.Errorf("the patch does not apply: %s", strings.TrimSpace(gerr.Stderr))
			}
			return nil, err
		}
	}
	out := map[string][]byte{}
	for p := range files {
		b, err := os.ReadFile(filepath.Join(tmp, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		out[p] = b
	}
	return out, nil
}

// wants says which synthesizers the options select.
func (o Options) wants() map[string]bool {
	want := map[string]bool{}
	for _, sy := range o.Synthesizers {
		want[sy] = true
	}
	if len(want) == 0 {
		want[SynthMutation], want[SynthRemoval] = true, true
	}
	return want
}

// check refuses options no run can satisfy, before any work.
func (o Options) check() error {
	known := map[string]bool{}
	for _, sy := range Synthesizers {
		known[sy] = true
	}
	for sy := range o.wants() {
		if !known[sy] {
			return fmt.Errorf("unknown synthesizer %q (there are %s)", sy, strings.Join(Synthesizers, ", "))
		}
	}
	if o.wants()[SynthModel] && (o.Model == nil || o.ModelName == "") {
		return ErrNoModel
	}
	if o.HintLevel < HintLocation || o.HintLevel > HintSymptom {
		return fmt.Errorf("hint level %d: the levels are 0 (file, function, behaviour), 1 (test output) and 2 (a user's symptom)", o.HintLevel)
	}
	if o.HintLevel == HintSymptom && (o.IssueModel == nil || o.IssueModelName == "") {
		return ErrNoIssueModel
	}
	return nil
}

// share is each selected synthesizer's part of N.
func (r *runner) share() int {
	k := len(r.opts.wants())
	return (r.opts.N + k - 1) / k
}

// runFirst runs the synthesizers that go before the mutants (history, then the model's),
// each up to its share, and says how many tasks to leave to the combined one.
func (r *runner) runFirst(ctx context.Context, store *task.Store, sum *Summary, seen map[string]bool) (times []float64, reserve int, err error) {
	want, share := r.opts.wants(), r.share()
	if k := r.s.Env.Kind; k != env.KindGo && k != env.KindCommand {
		// Their validation runs Go packages' tests (checkPatch); a wrong yield of zero
		// would hide that, so the summary says it.
		for _, sy := range []string{SynthHistory, SynthModel, SynthCombined} {
			if want[sy] {
				sum.Notes = append(sum.Notes, "the "+sy+" synthesizer makes tasks for Go repositories only in this version: not run")
			}
		}
		return nil, 0, nil
	}
	if want[SynthHistory] {
		cands, err := r.historyCandidates(ctx, sum)
		if err != nil {
			return nil, 0, err
		}
		t, err := r.runPatches(ctx, SynthHistory, listNext(cands), min(share, r.opts.N-sum.Valid), store, sum, seen)
		if err != nil {
			return nil, 0, err
		}
		times = append(times, t...)
	}
	if want[SynthModel] {
		tries := r.opts.ModelTries
		if tries <= 0 {
			tries = r.opts.N
		}
		t, err := r.runPatches(ctx, SynthModel, r.modelNext(ctx, sum, tries), min(share, r.opts.N-sum.Valid), store, sum, seen)
		if err != nil {
			return nil, 0, err
		}
		times = append(times, t...)
	}
	if want[SynthCombined] {
		reserve = min(share, r.opts.N-sum.Valid)
	}
	return times, reserve, nil
}

// runLast runs the combined synthesizer on the store's tasks, up to quota tasks (at most
// four pairs tried per task wanted).
func (r *runner) runLast(ctx context.Context, store *task.Store, sum *Summary, seen map[string]bool, quota int) ([]float64, error) {
	if k := r.s.Env.Kind; !r.opts.wants()[SynthCombined] || quota <= 0 || (k != env.KindGo && k != env.KindCommand) {
		return nil, nil
	}
	cands, err := r.combineCandidates(ctx, store, sum, 4*quota)
	if err != nil {
		return nil, err
	}
	return r.runPatches(ctx, SynthCombined, listNext(cands), quota, store, sum, seen)
}

// reject counts a candidate of synth rejected for reason.
func (s *Summary) reject(synth, reason string) {
	s.Rejected[reason]++
	if s.RejectedBy[synth] == nil {
		s.RejectedBy[synth] = map[string]int{}
	}
	s.RejectedBy[synth][reason]++
}

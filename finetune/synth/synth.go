package synth

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
)

// Options tune Run. The zero value works.
type Options struct {
	// N is how many valid tasks to make; 0 means 20. Synthesis stops earlier when the
	// candidates run out.
	N int
	// Synthesizers to use (see the Synth* constants); empty means SynthMutation and
	// SynthRemoval. With several, history, model-written and combined tasks each get about
	// an equal share of N (history and model first, combined last), and the procedural
	// synthesizers fill the rest.
	Synthesizers []string
	// HintLevel is the level of each task's issue (HintLocation, HintOutput, HintSymptom);
	// the others go to OtherIssues. Zero is level 0; the CLI's default is HintOutput.
	HintLevel int
	// HistoryDepth is how many commits the history synthesizer reads (default
	// DefaultHistoryDepth).
	HistoryDepth int
	// Model runs the model-written synthesizer's agent episodes (ModelName on it, with
	// ModelNumCtx), at most ModelTries of them (default N).
	Model       agent.Model
	ModelName   string
	ModelNumCtx int
	ModelTries  int
	// ModelMaxSteps and ModelMaxTime bound each episode (defaults 30 turns, 15 minutes).
	ModelMaxSteps int
	ModelMaxTime  time.Duration
	// IssueModel, when set, writes every task's HintSymptom issue (IssueModelName on it).
	IssueModel     agent.Model
	IssueModelName string
	// Seed orders the candidates (the same seed on the same commit gives the same tasks).
	Seed uint64
	// StoreDir is the task store; default task.DefaultDir(repository).
	StoreDir string
	// Env configures the environment (time limits, caches).
	Env env.Options
	// CompareNaive validates the same candidates again the naive way (the whole suite per
	// candidate on a fresh copy) and reports both times: the benchmark.
	CompareNaive bool
	// Progress hears each step, for a progress bar.
	Progress func(Progress)
	// LazyConfirm leaves the candidates the switch accepts unconfirmed: they go to the
	// store's screened/ folder (not tasks; see package task), and Confirm turns them into
	// tasks, one plain build each, when they are about to be used. Candidates the switch
	// could not screen are still checked as plain patches at once.
	LazyConfirm bool
}

// Progress is one step of a synthesis run.
type Progress struct {
	Phase       string // "environment", "screening", "confirming", "naive"
	Done, Total int    // candidates through validation so far / to go (0: unknown)
	Valid       int
	Text        string
}

// Summary is what a run did; its JSON form is `frognano finetune synth --json`.
type Summary struct {
	Repo       string  `json:"repo"`
	Commit     string  `json:"commit"`
	Dirty      bool    `json:"dirty"` // the work tree had uncommitted changes (not used)
	EnvCached  bool    `json:"environment_cached"`
	EnvSeconds float64 `json:"environment_seconds"`
	Tests      struct {
		Passing int `json:"passing"`
		Failing int `json:"failing"`
		Flaky   int `json:"flaky"`
		Hung    int `json:"hung"`
	} `json:"tests"`
	Candidates map[string]int `json:"candidates"` // by synthesizer
	ValidBy    map[string]int `json:"valid_by_synthesizer"`
	// ValidatedBy counts the candidates validated, by synthesizer (synthesis stops when it
	// has N tasks, so most candidates are never validated): ValidBy / ValidatedBy is the
	// yield.
	ValidatedBy map[string]int `json:"validated_by_synthesizer"`
	Valid       int            `json:"valid"`
	// Screened counts the candidates left unconfirmed in screened/ (Options.LazyConfirm);
	// they are not tasks until Confirm proves them.
	Screened   int            `json:"screened,omitempty"`
	ScreenedBy map[string]int `json:"screened_by_synthesizer,omitempty"`
	Rejected   map[string]int `json:"rejected"` // by reason
	// RejectedBy counts the rejections by synthesizer, then reason.
	RejectedBy    map[string]map[string]int `json:"rejected_by_synthesizer"`
	MedianSeconds float64                   `json:"median_validation_seconds"`
	// CoverageSeconds is the one coverage run of the passing tests that sets aside the
	// candidates no test runs (0 when cached by commit; coverage.go).
	CoverageSeconds float64 `json:"coverage_seconds"`
	Seconds         float64 `json:"seconds"` // the whole run
	// TasksPerMinute counts the validation time only (not the environment).
	TasksPerMinute float64 `json:"tasks_per_minute"`
	// Notes are what people should know about the run (a synthesizer that did not run).
	Notes []string `json:"notes,omitempty"`
	// IssueErrors counts tasks whose symptom-level issue the model failed to write.
	IssueErrors int      `json:"issue_errors,omitempty"`
	Store       string   `json:"store"`
	Tasks       []string `json:"tasks"` // ids
	Naive       *Naive   `json:"naive,omitempty"`
	// PytestRuns counts how pyrunner.py ran the pytest mutants it screened: "forked" from
	// the one collection, "fresh" (pytest started again in the child: the function ran
	// while collecting, or a conftest or doctest depends on its module), "not_run" (no test
	// calls the function), "timed_out", "interrupted" (a test module failed to import with
	// the mutant: pytest runs no test then); and "stale:<why>" for each fork that had to start
	// afresh.
	PytestRuns map[string]int `json:"pytest_runs,omitempty"`
	// PytestSeconds is where pyrunner.py's time went: "collect" (Python's and pytest's
	// start and the collection), "clean" (the clean runs, the first profiled), "forked",
	// "fresh".
	PytestSeconds map[string]float64 `json:"pytest_seconds,omitempty"`
}

// Brief is the summary on one line, for an error that says why synthesis made too few
// tasks: the baseline's tests, the candidates and what rejected them, and the notes.
func (s *Summary) Brief() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tests at %.12s: %d passing, %d failing, %d flaky, %d hung; ", s.Commit, s.Tests.Passing, s.Tests.Failing, s.Tests.Flaky, s.Tests.Hung)
	cands := 0
	for _, n := range s.Candidates {
		cands += n
	}
	fmt.Fprintf(&b, "%d candidates, %d valid", cands, s.Valid)
	if len(s.Rejected) > 0 {
		reasons := make([]string, 0, len(s.Rejected))
		for r := range s.Rejected {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for i, r := range reasons {
			reasons[i] = fmt.Sprintf("%s %d", r, s.Rejected[r])
		}
		b.WriteString("; rejected: " + strings.Join(reasons, ", "))
	}
	for _, n := range s.Notes {
		b.WriteString("; " + n)
	}
	return b.String()
}

// Naive compares validation through the switch with the naive way, on the same candidates.
type Naive struct {
	Candidates    int     `json:"candidates"`
	SwitchSeconds float64 `json:"switch_seconds"` // screening and confirmation of those candidates
	NaiveSeconds  float64 `json:"naive_seconds"`
	Speedup       float64 `json:"speedup"`
	Agree         bool    `json:"agree"` // both accepted exactly the same candidates
	// Disagree names the candidates they judged differently, with the switch's reason
	// ("accepted" when it accepted one the naive way did not).
	Disagree []string `json:"disagree,omitempty"`
	// ScreenSeconds is the part of SwitchSeconds spent before the plain confirmations (the
	// switched builds and runs, and the plain checks of mutants the switch could not
	// screen); ConfirmSeconds the confirmations of the screen's survivors, one package build
	// each. ScreenSpeedup is NaiveSeconds / ScreenSeconds: what validation would gain if
	// confirmation cost nothing, the bound that confirming every task eagerly leaves.
	ScreenSeconds  float64 `json:"screen_seconds"`
	ConfirmSeconds float64 `json:"confirm_seconds"`
	ScreenSpeedup  float64 `json:"screen_speedup"`
	Confirmed      int     `json:"confirmed"` // plain confirmations among the candidates
}

type runner struct {
	s        *env.Session
	opts     Options
	sources  map[string][]byte // file → its content at the base commit
	passing  []string
	excluded []string // names of tests not to run: flaky, failing, hung
	round    int
	redone   int // plain confirmations made again on fresh copies (plain.go)
	// issueErrors counts symptom issues the model failed to write.
	issueErrors int
	// importers are, by source file, the test files that import it (script suites).
	importers map[string][]string
	// pyCalls is the profile of the first clean pytest run (which tests call which function;
	// pyrunner.py), kept for the next batches on the same commit.
	pyCalls []byte
	// pytestRuns and pytestSeconds are Summary.PytestRuns and PytestSeconds.
	pytestRuns    map[string]int
	pytestSeconds map[string]float64
}

func newRunner(s *env.Session, opts Options) *runner {
	r := &runner{s: s, opts: opts, sources: map[string][]byte{}, passing: s.Env.Passing()}
	for id, t := range s.Env.Tests {
		if t.Status == env.Flaky || t.Status == env.Hung || t.Status == env.Fail {
			_, name := env.SplitID(id)
			r.excluded = append(r.excluded, name)
		}
	}
	sort.Strings(r.excluded)
	return r
}

// open is what Run and Confirm share: the repository's environment (the caller closes the
// session), the runner, the task store, and a summary with what these already tell.
func open(ctx context.Context, repo string, opts Options) (*env.Session, *runner, *task.Store, *Summary, error) {
	envOpts := opts.Env
	envOpts.Progress = func(s string) { opts.Progress(Progress{Phase: "environment", Text: s}) }
	s, err := env.Open(ctx, repo, envOpts)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	storeDir := opts.StoreDir
	if storeDir == "" {
		storeDir = task.DefaultDir(s.Checkout.Repo)
	}
	store, err := task.Open(storeDir)
	if err != nil {
		s.Close()
		return nil, nil, nil, nil, err
	}
	sum := &Summary{Repo: s.Checkout.Repo, Commit: s.Checkout.Commit, Dirty: s.Checkout.Dirty, EnvCached: s.Env.Cached,
		EnvSeconds: s.Env.Seconds, Store: storeDir, Candidates: map[string]int{}, ValidBy: map[string]int{},
		ValidatedBy: map[string]int{}, Rejected: map[string]int{}, RejectedBy: map[string]map[string]int{}}
	for _, w := range s.Detection.IgnoredWorkspaces {
		sum.Notes = append(sum.Notes, w.Path+" is not used: "+w.Why)
	}
	return s, newRunner(s, opts), store, sum, nil
}

// Run synthesizes tasks from repo's HEAD into the store.
func Run(ctx context.Context, repo string, opts Options) (*Summary, error) {
	if opts.N <= 0 {
		opts.N = 20
	}
	if opts.Progress == nil {
		opts.Progress = func(Progress) {}
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	start := time.Now()
	s, r, store, sum, err := open(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	sum.ScreenedBy = map[string]int{}
	sum.Tests.Passing, sum.Tests.Failing = len(r.passing), s.Env.Count(env.Fail)
	sum.Tests.Flaky, sum.Tests.Hung = s.Env.Count(env.Flaky), s.Env.Count(env.Hung)

	opts.Progress(Progress{Phase: "coverage", Text: "which code the passing tests run"})
	cv := r.coverage(ctx)
	if cv != nil {
		sum.CoverageSeconds = cv.Seconds
	}
	cands := r.candidates(sum, cv)
	vstart := time.Now()
	var verdicts []*verdict
	seen := map[string]bool{}
	made := func() int { return sum.Valid + sum.Screened }
	ptimes, reserve, err := r.runFirst(ctx, store, sum, seen)
	if err != nil {
		return nil, err
	}
	// The mutants fill what the synthesizers before them left, less combined's share;
	// validate stops confirming at r.opts.N.
	target := opts.N - reserve
	r.opts.N = target
	for next := 0; next < len(cands) && made() < target; {
		// A round: enough candidates for the tasks still missing at a pessimistic yield.
		size := max(2*(opts.N-made()), 8)
		batch := cands[next:min(next+size, len(cands))]
		next += len(batch)
		for _, v := range r.validate(ctx, batch, next, len(cands), made()) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			verdicts = append(verdicts, v)
			if v.reason == "" && made() >= target {
				continue // accepted past N: neither a task nor a rejection, so not in the yield
			}
			sum.ValidatedBy[v.m.Synthesizer]++
			if v.reason == "" {
				id := task.MakeID(s.Checkout.Commit, v.patch)
				switch {
				case seen[id]:
					v.reason = RejectDuplicate
				case v.screenedOnly:
					seen[id] = true
					if err := store.PutScreened(r.screenedTask(v, id)); err != nil {
						return nil, err
					}
					sum.Screened++
					sum.ScreenedBy[v.m.Synthesizer]++
				default:
					seen[id] = true
					t := r.task(ctx, v, id)
					if err := store.Put(t); err != nil {
						return nil, err
					}
					sum.Valid++
					sum.ValidBy[v.m.Synthesizer]++
					sum.Tasks = append(sum.Tasks, id)
				}
			}
			if v.reason != "" {
				sum.reject(v.m.Synthesizer, v.reason)
			}
		}
	}
	r.opts.N = opts.N
	more, err := r.runLast(ctx, store, sum, seen, opts.N-made())
	if err != nil {
		return nil, err
	}
	sum.IssueErrors = r.issueErrors
	sum.PytestRuns, sum.PytestSeconds = r.pytestRuns, r.pytestSeconds
	vsecs := time.Since(vstart).Seconds()
	times := append(ptimes, more...)
	for _, v := range verdicts {
		if v.reason != RejectCompile || v.seconds > 0 {
			times = append(times, v.seconds)
		}
	}
	sum.MedianSeconds = median(times)
	if vsecs > 0 {
		sum.TasksPerMinute = float64(made()) / vsecs * 60
	}
	if opts.CompareNaive {
		if sum.Naive, err = r.compareNaive(ctx, verdicts); err != nil {
			return nil, err
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// candidates are every mutant of the packages that passing tests build (their own, or those
// of packages that import them), in the seed's order. A mutant that cannot compile on its
// own, or that lies in code no passing test runs (cv), is counted and dropped.
func (r *runner) candidates(sum *Summary, cv *coverage) []Mutant {
	want := map[string]bool{}
	for _, sy := range r.opts.Synthesizers {
		want[sy] = true
	}
	if len(want) == 0 {
		want[SynthMutation], want[SynthRemoval] = true, true
	}
	if r.s.Detection.Script() {
		return r.scriptCandidates(sum, want)
	}
	var pkgs []string
	for pkg := range r.s.Env.Packages {
		if r.tested(pkg) {
			pkgs = append(pkgs, pkg)
		}
	}
	var out []Mutant
	id := 0
	for file, gf := range r.goMutants(pkgs) {
		src := gf.src
		r.sources[file] = src
		for _, m := range gf.mutants {
			if !want[m.Synthesizer] {
				continue
			}
			sum.Candidates[m.Synthesizer]++
			if !compiles(file, m.Apply(src)) {
				sum.reject(m.Synthesizer, RejectCompile)
				continue
			}
			if !cv.covers(m, src) {
				sum.reject(m.Synthesizer, RejectUncovered)
				continue
			}
			id++
			m.ID = id
			out = append(out, m)
		}
	}
	rng := rand.New(rand.NewPCG(r.opts.Seed, 0x5eed))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// goFile is one Go file of the checkout with its mutants.
type goFile struct {
	src     []byte
	mutants []Mutant
}

// goMutants yields, for the packages in sorted order, each non-test Go file the checkout
// holds (path relative to the root, slash-separated) with its text and mutants; files that
// cannot be read or parsed are passed over.
func (r *runner) goMutants(pkgs []string) iter.Seq2[string, goFile] {
	pkgs = slices.Sorted(slices.Values(pkgs))
	return func(yield func(string, goFile) bool) {
		for _, pkg := range pkgs {
			info := r.s.Env.Packages[pkg]
			for _, f := range info.GoFiles {
				file := f
				if info.Dir != "." {
					file = info.Dir + "/" + f
				}
				src, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(file)))
				if err != nil {
					continue
				}
				ms, err := GoMutants(pkg, file, src)
				if err != nil {
					continue
				}
				if !yield(file, goFile{src, ms}) {
					return
				}
			}
		}
	}
}

// tested is whether some passing test's binary is built from pkg.
func (r *runner) tested(pkg string) bool {
	for _, p := range r.s.Env.Affected(pkg) {
		if len(r.selected(p)) > 0 {
			return true
		}
	}
	return false
}

// readSource reads a file of the checkout (frognano's own export), refusing links.
func readSource(p string) ([]byte, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return os.ReadFile(p)
}

// validate screens a batch on one copy (one switched build for all its packages), then
// confirms the survivors.
func (r *runner) validate(ctx context.Context, batch []Mutant, done, total, valid int) []*verdict {
	var out []*verdict
	screened := map[int]*verdict{}
	r.opts.Progress(Progress{Phase: "screening", Done: done - len(batch), Total: total, Valid: valid, Text: fmt.Sprintf("%d candidates", len(batch))})
	start := time.Now()
	if c, err := r.s.Copy(ctx, nil); err == nil {
		if r.s.Detection.Script() {
			screened = r.screenScript(ctx, c, batch)
		} else {
			screened = r.screen(ctx, c, batch)
		}
		c.Close()
	}
	// The batch shares the copy and the builds: each candidate is charged an equal part.
	share := time.Since(start).Seconds() / float64(len(batch))
	pc := &plainCopy{r: r}
	for i, m := range batch {
		v := screened[m.ID]
		unscreened := v == nil
		if unscreened {
			v = &verdict{m: m} // not screened: the plain check decides alone
		}
		v.seconds += share
		if v.reason == "" && !unscreened && valid >= r.opts.N {
			// Enough tasks: a survivor past N is neither confirmed nor counted.
			continue
		}
		if v.reason == "" && !unscreened && r.opts.LazyConfirm {
			if r.makePatch(ctx, v) {
				v.screenedOnly = true
				valid++
			}
			out = append(out, v)
			continue
		}
		if v.reason == "" {
			r.opts.Progress(Progress{Phase: "confirming", Done: done - len(batch) + i, Total: total, Valid: valid, Text: m.File + ": " + m.Desc})
			before := v.seconds
			pc.confirm(ctx, v)
			if !unscreened {
				v.confirmSeconds = v.seconds - before
			}
			if v.reason == "" {
				valid++
			}
		}
		out = append(out, v)
	}
	pc.Close(ctx)
	return out
}

func (r *runner) compareNaive(ctx context.Context, verdicts []*verdict) (*Naive, error) {
	n := &Naive{Agree: true}
	start := time.Now()
	for i, v := range verdicts {
		if v.reason == RejectDuplicate {
			continue
		}
		r.opts.Progress(Progress{Phase: "naive", Done: i, Total: len(verdicts), Text: v.m.File + ": " + v.m.Desc})
		ok, err := r.naive(ctx, v.m)
		if err != nil {
			return nil, err
		}
		if ok != (v.reason == "") {
			n.Agree = false
			why := v.reason
			if why == "" {
				why = "accepted"
			}
			n.Disagree = append(n.Disagree, fmt.Sprintf("%s:%d %s (%s)", v.m.File, v.m.Line, v.m.Desc, why))
		}
		n.Candidates++
		n.SwitchSeconds += v.seconds
		n.ConfirmSeconds += v.confirmSeconds
		if v.confirmSeconds > 0 {
			n.Confirmed++
		}
	}
	n.ScreenSeconds = n.SwitchSeconds - n.ConfirmSeconds
	n.NaiveSeconds = time.Since(start).Seconds()
	if n.SwitchSeconds > 0 {
		n.Speedup = n.NaiveSeconds / n.SwitchSeconds
	}
	if n.ScreenSeconds > 0 {
		n.ScreenSpeedup = n.NaiveSeconds / n.ScreenSeconds
	}
	return n, nil
}

// screenedTask is the store's record of a candidate the switch alone accepted: not a task.
func (r *runner) screenedTask(v *verdict, id string) *task.Task {
	m := v.m
	return &task.Task{Version: task.Version, ID: id, Repo: r.s.Checkout.Repo, BaseCommit: r.s.Checkout.Commit,
		Patch: v.patch, FailToPass: v.failToPass, PassToPass: []string{}, Status: task.StatusScreened,
		Test:     r.testSpec(v.failToPass),
		Features: task.Features{Synthesizer: m.Synthesizer, Operator: m.Operator, ChangedFiles: 1, ChangedLines: task.ChangedLines(v.patch), Bugs: 1},
		Origin:   task.Origin{Synthesizer: m.Synthesizer, Operator: m.Operator, File: m.File, Function: m.Func, Line: m.Line, Description: m.Desc},
		Created:  time.Now().UTC().Truncate(time.Second)}
}

// task is the store's record of an accepted verdict.
func (r *runner) task(ctx context.Context, v *verdict, id string) *task.Task {
	m := v.m
	pkgs := map[string]bool{}
	for _, t := range append(append([]string(nil), v.failToPass...), v.passToPass...) {
		p, _ := env.SplitID(t)
		pkgs[p] = true
	}
	t := &task.Task{Version: task.Version, ID: id, Repo: r.s.Checkout.Repo, BaseCommit: r.s.Checkout.Commit,
		Patch: v.patch, FailToPass: v.failToPass, PassToPass: v.passToPass,
		Test: r.testSpec(v.failToPass, v.passToPass),
		Features: task.Features{Synthesizer: m.Synthesizer, Operator: m.Operator, ChangedFiles: 1,
			ChangedLines: task.ChangedLines(v.patch), HintLevel: 1, Bugs: 1, FailToPass: len(v.failToPass),
			PassToPass: len(v.passToPass), TestDistance: v.distance},
		Origin:  task.Origin{Synthesizer: m.Synthesizer, Operator: m.Operator, File: m.File, Function: m.Func, Line: m.Line, Description: m.Desc},
		Created: time.Now().UTC().Truncate(time.Second)}
	if t.PassToPass == nil {
		t.PassToPass = []string{}
	}
	src := r.sources[m.File]
	doc := m.Doc
	if doc == "" && strings.HasSuffix(m.File, ".go") {
		doc = docOf(src, m.FuncStart)
	}
	funcs := []funcRef{{file: m.File, name: m.Func, line: m.Line, doc: doc}}
	r.finishTask(ctx, t, funcs, issueTexts(m, v, src, r.rerun), v.output)
	return t
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// testSpec says how the task's tests (ids) run: for Go, in which module's folder each of
// their packages does.
func (r *runner) testSpec(ids ...[]string) task.TestSpec {
	if r.s.Detection.Script() {
		kind, cmd := r.scriptTestSpec()
		return task.TestSpec{Kind: kind, Command: cmd}
	}
	ts := task.TestSpec{Kind: "go", Command: "go test -count=1 -vet=off -run {run} {packages}", Workspace: r.s.Env.Workspace}
	for _, list := range ids {
		for _, id := range list {
			pkg, _ := env.SplitID(id)
			m := r.s.Env.ModuleOf(pkg)
			if m.Dir != "." {
				if ts.Modules == nil {
					ts.Modules = map[string]string{}
				}
				ts.Modules[pkg] = m.Dir
			}
			if m.Work != "" {
				if ts.Works == nil {
					ts.Works = map[string]string{}
				}
				ts.Works[m.Dir] = m.Work
			}
		}
	}
	return ts
}

// rerun is the command that runs one test, as a person types it.
func (r *runner) rerun(id string) string {
	if r.s.Detection.Script() {
		return r.rerunLine(id)
	}
	return goRerun(id, r.s.Env.ModuleOf(pkgOf(id)).Dir)
}

func pkgOf(id string) string {
	pkg, _ := env.SplitID(id)
	return pkg
}

// issueTexts are the problem statements at hint levels 0 and 1. Neither shows the patch
// or the tests' code; level 1 shows only what the failing tests printed.
func issueTexts(m Mutant, v *verdict, src []byte, rerun func(string) string) []task.Issue {
	doc := m.Doc
	if doc == "" && strings.HasSuffix(m.File, ".go") {
		doc = docOf(src, m.FuncStart)
	}
	var l0 strings.Builder
	if m.Synthesizer == SynthRemoval {
		fmt.Fprintf(&l0, "Implement `%s` in %s: its body is missing.", m.Func, m.File)
	} else {
		fmt.Fprintf(&l0, "`%s` in %s does not behave as expected.", m.Func, m.File)
	}
	if doc != "" {
		fmt.Fprintf(&l0, " What it should do, from its documentation:\n\n%s", doc)
	}
	fmt.Fprintf(&l0, "\n\nThese tests fail: %s.", strings.Join(names(v.failToPass), ", "))
	return []task.Issue{{Level: 0, Text: strings.TrimSpace(l0.String())}, levelOneWith(v.failToPass, v.output, rerun)}
}

// docOf is the doc comment right above the declaration at offset start, as text.
func docOf(src []byte, start int) string {
	lines := strings.Split(string(src[:start]), "\n")
	var doc []string
	for i := len(lines) - 2; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "//") {
			break
		}
		doc = append([]string{strings.TrimSpace(strings.TrimPrefix(l, "//"))}, doc...)
	}
	return strings.Join(doc, "\n")
}

package synth

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/env"
)

// Python and JS/TS repositories ("script" suites) have nothing to compile, so the switch of
// a Go package (one build for all its mutants) saves nothing there; what costs is a fresh
// copy, a sandbox start and the whole suite per candidate. Screening lays every mutant of a
// batch into one copy and runs them all in one sandbox command, one test process per
// mutant, on the tests that import the mutated file only (then, for the mutants those miss,
// on the rest of the suite). The switch is the file itself: before each run the command
// lays the mutant's version of the file over it (and the original back after), which keeps
// each mutant's code exactly what its patch makes — an import-time switch (the module's
// source chosen by $FROGNANO_MUTANT through exec) would change what inspect.getsource,
// doctest and tracebacks read, and ES modules cannot choose their exports at run time.
// For pytest the command is one pytest session that collects once and forks a child per
// mutant, which imports again only the mutated module and what imported it (pyrunner.py).
// As for Go, every survivor is then confirmed as a plain patch on a fresh copy.

// scriptCandidates are every mutant of the repository's sources, in the seed's order.
func (r *runner) scriptCandidates(sum *Summary, want map[string]bool) []Mutant {
	var out []Mutant
	id := 0
	for _, file := range r.s.Env.Sources {
		src, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(file)))
		if err != nil {
			continue
		}
		if len(r.testFilesFor(file, true)) == 0 {
			continue // no test imports it: nothing would catch a change
		}
		ms, err := ScriptMutants(file, src)
		if err != nil {
			continue
		}
		r.sources[file] = src
		for _, m := range ms {
			if !want[m.Synthesizer] {
				continue
			}
			sum.Candidates[m.Synthesizer]++
			id++
			m.ID = id
			out = append(out, m)
		}
	}
	rng := rand.New(rand.NewPCG(r.opts.Seed, 0x5eed))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// testFiles are the files of the tests that passed on the clean commit, sorted.
func (r *runner) testFiles() []string {
	set := map[string]bool{}
	for _, id := range r.passing {
		f, _ := env.SplitID(id)
		set[f] = true
	}
	var out []string
	for f := range set {
		if !r.brokenFile(f) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// brokenFile: a test file where a test hung. JS runners cannot leave one test out, so the
// file is not run (pytest deselects the hung test instead).
func (r *runner) brokenFile(f string) bool {
	if r.s.Detection.Runner == env.RunnerPytest {
		return false
	}
	for id, t := range r.s.Env.Tests {
		if p, _ := env.SplitID(id); p == f && t.Status == env.Hung {
			return true
		}
	}
	return false
}

// testFilesFor are the test files that import file (by its module's name), or, when own
// is false, the others.
func (r *runner) testFilesFor(file string, own bool) []string {
	if r.importers == nil {
		r.importers = map[string][]string{}
	}
	mine, ok := r.importers[file]
	if !ok {
		re := importPattern(file, r.s.Env.Kind)
		for _, tf := range r.testFiles() {
			b, err := readSource(filepath.Join(r.s.Checkout.Dir, filepath.FromSlash(tf)))
			if err == nil && re.Match(b) {
				mine = append(mine, tf)
			}
		}
		r.importers[file] = mine
	}
	if own {
		return mine
	}
	var rest []string
	for _, tf := range r.testFiles() {
		if !contains(mine, tf) {
			rest = append(rest, tf)
		}
	}
	return rest
}

// importPattern finds an import of file's module in a test: Python's `import a.b`, `from
// a.b import c`, `from a import b`; JS/TS's require or import of a path ending in its name.
func importPattern(file, kind string) *regexp.Regexp {
	stem := strings.TrimSuffix(path.Base(file), path.Ext(file))
	if kind == env.KindPython {
		if stem == "__init__" {
			stem = path.Base(path.Dir(file))
		}
		return regexp.MustCompile(`(?m)^\s*(from|import)\s[^\n]*\b` + regexp.QuoteMeta(stem) + `\b`)
	}
	if stem == "index" {
		stem = path.Base(path.Dir(file))
	}
	return regexp.MustCompile(`(require\s*\(|import\s*\(|from\s|import\s)\s*['"][^'"]*\b` + regexp.QuoteMeta(stem) + `(\.[mc]?[jt]sx?)?(/index(\.[mc]?[jt]sx?)?)?['"]`)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// selectedIn are the passing tests of files.
func (r *runner) selectedIn(files []string) []string {
	var out []string
	for _, id := range r.passing {
		if f, _ := env.SplitID(id); contains(files, f) {
			out = append(out, id)
		}
	}
	return out
}

// excludedIDs are the tests not to run (pytest deselects them): flaky, failing, hung.
func (r *runner) excludedIDs() []string {
	var out []string
	for id, t := range r.s.Env.Tests {
		if t.Status == env.Flaky || t.Status == env.Hung || t.Status == env.Fail {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// scriptTimeout is how long one run of files' tests may take with a mutant: generously
// more than on the clean commit (an infinite loop is a common mutant), at most the suite's.
// A forked pytest run (pyrunner.py) does not start Python or pytest again, so it needs less
// margin than a new process.
func (r *runner) scriptTimeout(files []string) time.Duration {
	secs := 0.0
	for _, id := range r.selectedIn(files) {
		secs += r.s.Env.Tests[id].Seconds
	}
	t := time.Duration((5*secs + 15) * float64(time.Second))
	if r.s.Detection.Runner == env.RunnerPytest {
		t = time.Duration((10*secs + 10) * float64(time.Second))
	}
	if limit := r.suiteTimeout(); t > limit {
		t = limit
	}
	return t.Round(time.Second)
}

func (r *runner) suiteTimeout() time.Duration {
	limit := time.Duration(r.s.Env.PackageTimeout * float64(time.Second))
	if r.s.Detection.Runner != env.RunnerPytest {
		limit = 4*limit + 10*time.Minute
	}
	return limit
}

func (r *runner) perTestTimeout() time.Duration {
	return time.Duration(r.s.Env.PackageTimeout * float64(time.Second))
}

// screenScript screens a batch on c: each mutant against the tests that import its file,
// then the survivors against the rest of the suite. A mutant missing from the result could
// not be screened (the clean run did not pass) and must be checked as a plain patch.
func (r *runner) screenScript(ctx context.Context, c *env.Copy, batch []Mutant) map[int]*verdict {
	out := map[int]*verdict{}
	r.round++
	dir := fmt.Sprintf(".frognano-switch/%d", r.round)
	for _, m := range batch {
		if err := writeCopyFile(c.Path(fmt.Sprintf("%s/%d", dir, m.ID)), m.Apply(r.sources[m.File])); err != nil {
			return out
		}
	}
	originals := map[string]string{}
	for i, m := range batch {
		if _, ok := originals[m.File]; !ok {
			p := fmt.Sprintf("%s/orig-%d", dir, i)
			if err := writeCopyFile(c.Path(p), r.sources[m.File]); err != nil {
				return out
			}
			originals[m.File] = p
		}
	}
	own := func(m Mutant) []string { return r.testFilesFor(m.File, true) }
	wider := true
	if r.s.Detection.Runner == env.RunnerPytest {
		// The clean run's profile picks each mutant's tests among all (pyrunner.py).
		all := r.testFiles()
		own, wider = func(Mutant) []string { return all }, false
	}
	results, ok := r.runScriptMutants(ctx, c, fmt.Sprintf("%d", r.round), dir, originals, batch, own)
	if !ok {
		return out
	}
	var survivors []Mutant
	for _, m := range batch {
		res, ran := results[m.ID]
		if !ran {
			continue
		}
		v := &verdict{m: m, screenedRun: true}
		switch f := failing(res.Results, r.selectedIn(own(m))); {
		case res.timedOut || hung(res.Results):
			v.reason = RejectTimeout
		case len(f) == 0:
			v.reason = RejectSurvived
			if wider && len(r.testFilesFor(m.File, false)) > 0 {
				survivors = append(survivors, m)
			}
		default:
			v.failToPass = f
		}
		out[m.ID] = v
	}
	// The wider suite, for what the importing tests missed.
	if len(survivors) > 0 {
		rest := func(m Mutant) []string { return r.testFilesFor(m.File, false) }
		more, ok := r.runScriptMutants(ctx, c, fmt.Sprintf("%d.rest", r.round), dir, originals, survivors, rest)
		for _, m := range survivors {
			res, ran := more[m.ID]
			if !ok || !ran {
				delete(out, m.ID) // not screened: the plain check decides
				continue
			}
			v := out[m.ID]
			switch f := failing(res.Results, r.selectedIn(rest(m))); {
			case res.timedOut || hung(res.Results):
				v.reason = RejectTimeout
			case len(f) > 0:
				v.reason, v.failToPass, v.distance = "", f, 1
			}
		}
	}
	return out // validate charges each candidate its share of the time
}

// runScriptMutants runs, in one sandbox command on c, the clean tree (id 0) and then each
// mutant of ms (its file laid from dir) on the tests of files(m). It is false when the clean
// run does not pass every selected test there: then the runs prove nothing.
func (r *runner) runScriptMutants(ctx context.Context, c *env.Copy, name, dir string, originals map[string]string, ms []Mutant, files func(Mutant) []string) (map[int]mutantRun, bool) {
	d := r.s.Detection
	all := map[string]bool{}
	for _, m := range ms {
		for _, f := range files(m) {
			all[f] = true
		}
	}
	var union []string
	for f := range all {
		union = append(union, f)
	}
	sort.Strings(union)
	outDir := ".frognano-bin/" + name
	if d.Runner == env.RunnerPytest {
		return r.forkRunner(ctx, c, outDir, dir, originals, ms, union, files)
	}
	var script strings.Builder
	fmt.Fprintf(&script, "mkdir -p %s || exit 1\n", env.ShellQuote(outDir))
	total := time.Minute
	run := func(id int, fs []string, lay, back string) {
		t := r.scriptTimeout(fs)
		total += t + 15*time.Second
		o := env.ShellQuote(fmt.Sprintf("%s/%d", outDir, id))
		fmt.Fprintf(&script, "%s(ulimit -f 65536; export %s=%d; %s) >%s.out 2>%s.err; echo $? >%s.rc\n%s",
			lay, EnvMutant, id, d.ScriptCommand(t, r.perTestTimeout(), fs, r.excludedIDs()), o, o, o, back)
	}
	run(0, union, "", "")
	for _, m := range ms {
		file := env.ShellQuote(m.File)
		run(m.ID, files(m), fmt.Sprintf("cp -f %s %s && ", env.ShellQuote(fmt.Sprintf("%s/%d", dir, m.ID)), file),
			fmt.Sprintf("cp -f %s %s\n", env.ShellQuote(originals[m.File]), file))
	}
	if _, err := c.Run(ctx, script.String(), total); err != nil {
		return nil, false
	}
	return r.readMutantRuns(c, outDir, ms, union)
}

// readMutantRuns reads what the runs of ms (and the clean one, id 0) left in outDir: <id>.out
// (the report), <id>.err (the runner's talk), <id>.rc. It is false when the clean run did not
// pass every selected test of union.
func (r *runner) readMutantRuns(c *env.Copy, outDir string, ms []Mutant, union []string) (map[int]mutantRun, bool) {
	d := r.s.Detection
	out := map[int]mutantRun{}
	ids := []int{0}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		base := c.Path(fmt.Sprintf("%s/%d", outDir, id))
		rc, err := readCopyFile(base + ".rc")
		if err != nil {
			continue
		}
		stdout, _ := readCopyFile(base + ".out")
		stderr, _ := readCopyFile(base + ".err")
		code := strings.TrimSpace(string(rc))
		res := d.ParseScript(stdout, stderr, c.WS.Root)
		out[id] = mutantRun{Results: res, timedOut: code == "124" || code == "137"}
	}
	clean, ok := out[0]
	selected := r.selectedIn(union)
	if !ok || len(failing(clean.Results, selected)) > 0 || len(passing(clean.Results, selected)) != len(selected) {
		return nil, false
	}
	return out, true
}

// writeCopyFile writes a file frognano lays into a copy.
func writeCopyFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// readCopyFile reads what a command wrote into a copy: a regular file only (never through
// a link the command made), at most 64 MiB.
func readCopyFile(p string) ([]byte, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > 64<<20 {
		return nil, fmt.Errorf("%s: not a regular file of at most 64 MiB", p)
	}
	return os.ReadFile(p)
}

// confirmScript checks a Python or JS/TS mutant as a plain patch on a fresh copy: the tests
// of the files that import it, and of those where screening saw failures, run as the
// suite runs them (all test files when it was not screened).
func (r *runner) confirmScript(ctx context.Context, v *verdict, screened bool) {
	m := v.m
	c, err := r.s.Copy(ctx, map[string][]byte{m.File: m.Apply(r.sources[m.File])})
	if err != nil {
		v.reason = RejectBuild
		return
	}
	defer c.Close()
	files := r.testFiles()
	if screened {
		files = append([]string(nil), r.testFilesFor(m.File, true)...)
		for _, id := range v.failToPass {
			if f, _ := env.SplitID(id); !contains(files, f) {
				files = append(files, f)
			}
		}
		sort.Strings(files)
	}
	timeout := r.suiteTimeout()
	res, err := c.Run(ctx, r.s.Detection.ScriptCommand(timeout, r.perTestTimeout(), files, r.excludedIDs()), timeout+time.Minute)
	if err != nil {
		v.reason = RejectBuild
		return
	}
	results := r.s.Detection.ParseScript([]byte(res.Stdout), []byte(res.Stderr), c.WS.Root)
	if !v.outcome(results, r.selectedIn(files), res.TimedOut, RejectUnconfirm) {
		return
	}
	v.distance = 0
	own := r.testFilesFor(m.File, true)
	for _, id := range v.failToPass {
		if f, _ := env.SplitID(id); !contains(own, f) {
			v.distance = 1
		}
	}
	v.reason = ""
}

// naiveScript validates m the naive way: the whole suite on a fresh copy with the patch.
func (r *runner) naiveScript(ctx context.Context, m Mutant) (bool, error) {
	c, err := r.s.Copy(ctx, map[string][]byte{m.File: m.Apply(r.sources[m.File])})
	if err != nil {
		return false, err
	}
	defer c.Close()
	timeout := r.suiteTimeout()
	res, err := c.Run(ctx, r.s.Detection.ScriptCommand(timeout, r.perTestTimeout(), nil, r.excludedIDs()), timeout+time.Minute)
	if err != nil {
		return false, err
	}
	results := r.s.Detection.ParseScript([]byte(res.Stdout), []byte(res.Stderr), c.WS.Root)
	if res.TimedOut || hung(results) {
		return false, nil
	}
	return len(failing(results, r.passing)) > 0, nil
}

// scriptTestSpec says how a Python or JS/TS task's tests run.
func (r *runner) scriptTestSpec() (kind, command string) {
	d := r.s.Detection
	switch d.Runner {
	case env.RunnerPytest:
		return d.Kind, "python -m pytest {tests}"
	case env.RunnerNodeTest:
		return d.Kind, "node --test --test-name-pattern {names} {files}"
	case env.RunnerVitest:
		return d.Kind, "npx vitest run {files}"
	case env.RunnerJest:
		return d.Kind, "npx jest {files}"
	}
	return d.Kind, d.Command
}

// rerunLine is how a person runs one failing test, for the issue text at hint level 1.
func (r *runner) rerunLine(id string) string {
	file, name := env.SplitID(id)
	switch r.s.Detection.Runner {
	case env.RunnerPytest:
		return "python -m pytest " + env.ShellQuote(file+"::"+name)
	case env.RunnerNodeTest:
		return "node --test --test-name-pattern " + env.ShellQuote(regexp.QuoteMeta(name)) + " " + env.ShellQuote(file)
	case env.RunnerVitest:
		return "npx vitest run " + env.ShellQuote(file) + " -t " + env.ShellQuote(name)
	case env.RunnerJest:
		return "npx jest " + env.ShellQuote(file) + " -t " + env.ShellQuote(name)
	}
	return r.s.Detection.Command
}

// pyRunner runs a batch of pytest mutants in one pytest session: one collection, a fork
// per mutant in which the mutated module and its importers are imported again (see the file).
//
//go:embed pyrunner.py
var pyRunner []byte

type pyRun struct {
	ID       int      `json:"id"`
	Func     string   `json:"func,omitempty"` // "file:name" of the mutated function
	File     string   `json:"file,omitempty"`
	Variant  string   `json:"variant,omitempty"`
	Original string   `json:"original,omitempty"`
	Args     []string `json:"args"` // the test files, for a run that starts pytest afresh
	Timeout  float64  `json:"timeout"`
	Result   string   `json:"result"`
	RC       string   `json:"rc"`
}

// forkRunner is runScriptMutants for pytest: one Python process and one pytest collection
// for the batch, a fork per mutant (pyrunner.py), so that each costs its tests' time and
// the import of what it changes, not Python's start, pytest's configuration and collection.
func (r *runner) forkRunner(ctx context.Context, c *env.Copy, outDir, dir string, originals map[string]string, ms []Mutant, union []string, files func(Mutant) []string) (map[int]mutantRun, bool) {
	excluded := r.excludedIDs()
	var runs []pyRun
	total := time.Minute
	add := func(id int, fs []string, m *Mutant) {
		t := r.scriptTimeout(fs)
		if m == nil && r.pyCalls == nil {
			t = r.suiteTimeout() // the clean run is profiled: several times slower
		}
		total += t + 15*time.Second
		base := c.Path(fmt.Sprintf("%s/%d", outDir, id))
		run := pyRun{ID: id, Args: fs, Timeout: t.Seconds(), Result: base + ".json", RC: base + ".rc"}
		if m != nil {
			run.File, run.Variant, run.Original = c.Path(m.File), c.Path(fmt.Sprintf("%s/%d", dir, m.ID)), c.Path(originals[m.File])
			run.Func = m.File + ":" + m.Func[strings.LastIndexByte(m.Func, '.')+1:]
		}
		runs = append(runs, run)
	}
	add(0, union, nil)
	for i := range ms {
		add(ms[i].ID, files(ms[i]), &ms[i])
	}
	seconds := map[string]float64{}
	for _, id := range r.passing {
		file, name := env.SplitID(id)
		seconds[file+"::"+name] = r.s.Env.Tests[id].Seconds
	}
	spec := map[string]any{"opts": env.PytestArgs(nil, excluded), "collect": union, "runs": runs, "seconds": seconds}
	specPath, runnerPath, callsPath := dir+"/spec.json", dir+"/pyrunner.py", dir+"/calls.json"
	if r.pyCalls != nil {
		if writeCopyFile(c.Path(callsPath), r.pyCalls) != nil {
			return nil, false
		}
		spec["calls"] = c.Path(callsPath)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, false
	}
	if writeCopyFile(c.Path(specPath), b) != nil || writeCopyFile(c.Path(runnerPath), pyRunner) != nil {
		return nil, false
	}
	cmd := fmt.Sprintf("%smkdir -p %s && (ulimit -f 65536; %s %s %s)", env.PythonEnv, env.ShellQuote(outDir),
		env.ShellQuote(r.s.Detection.Python), env.ShellQuote(runnerPath), env.ShellQuote(specPath))
	if _, err := c.Run(ctx, cmd, total); err != nil {
		return nil, false
	}
	if stats, err := readCopyFile(c.Path(dir + "/stats.json")); err == nil {
		r.notePytestRuns(stats)
	}
	out, ok := r.readPyRuns(c, outDir, ms, union)
	if ok && r.pyCalls == nil {
		if calls, err := readCopyFile(c.Path(outDir + "/0.profile.json")); err == nil && json.Valid(calls) {
			r.pyCalls = calls // the same commit profiles the same: later batches skip it
		}
	}
	return out, ok
}

// notePytestRuns adds pyrunner.py's counts (its stats.json) to the summary's.
func (r *runner) notePytestRuns(b []byte) {
	var st struct {
		Forked      int                `json:"forked"`
		Fresh       int                `json:"fresh"`
		NotRun      int                `json:"not_run"`
		TimedOut    int                `json:"timed_out"`
		Interrupted int                `json:"interrupted"`
		Stale       map[string]int     `json:"stale"`
		Seconds     map[string]float64 `json:"seconds"`
	}
	if json.Unmarshal(b, &st) != nil {
		return
	}
	if r.pytestRuns == nil {
		r.pytestRuns = map[string]int{}
	}
	r.pytestRuns["forked"] += st.Forked
	r.pytestRuns["fresh"] += st.Fresh
	r.pytestRuns["not_run"] += st.NotRun
	r.pytestRuns["timed_out"] += st.TimedOut
	r.pytestRuns["interrupted"] += st.Interrupted
	for why, n := range st.Stale {
		r.pytestRuns["stale:"+why] += n
	}
	if r.pytestSeconds == nil {
		r.pytestSeconds = map[string]float64{}
	}
	for what, s := range st.Seconds {
		r.pytestSeconds[what] += s
	}
}

// readPyRuns is readMutantRuns for pyrunner.py's results: <id>.json (node id → status,
// seconds, output) and <id>.rc.
func (r *runner) readPyRuns(c *env.Copy, outDir string, ms []Mutant, union []string) (map[int]mutantRun, bool) {
	out := map[int]mutantRun{}
	ids := []int{0}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		base := c.Path(fmt.Sprintf("%s/%d", outDir, id))
		rc, err := readCopyFile(base + ".rc")
		if err != nil {
			continue
		}
		report, _ := readCopyFile(base + ".json")
		code := strings.TrimSpace(string(rc))
		out[id] = mutantRun{Results: parsePyReport(report), timedOut: code == "124" || code == "137"}
	}
	clean, ok := out[0]
	selected := r.selectedIn(union)
	if !ok || len(failing(clean.Results, selected)) > 0 || len(passing(clean.Results, selected)) != len(selected) {
		return nil, false
	}
	return out, true
}

// parsePyReport reads a run's results as pyrunner.py writes them. What does not parse is
// left out (a test missing from the results did not fail).
func parsePyReport(b []byte) env.Results {
	res := env.Results{Tests: map[string]env.Result{}, Broken: map[string]string{}, Seconds: map[string]float64{}, Output: map[string]string{}}
	var rep struct {
		Tests map[string]struct {
			Status  string  `json:"status"`
			Seconds float64 `json:"seconds"`
			Output  string  `json:"output"`
		} `json:"tests"`
	}
	if json.Unmarshal(b, &rep) != nil {
		return res
	}
	for node, t := range rep.Tests {
		file, name, ok := strings.Cut(node, "::")
		if !ok || strings.Contains(file, " ") {
			continue
		}
		switch t.Status {
		case env.Pass, env.Fail, env.Skip, env.Hung:
		default:
			continue
		}
		id := env.TestID(file, name)
		res.Tests[id] = env.Result{Status: t.Status, Seconds: t.Seconds}
		res.Seconds[file] += t.Seconds
		switch t.Status {
		case env.Fail:
			res.Output[id] = strings.TrimSpace(t.Output) + "\n"
		case env.Hung:
			res.Broken[file] = "timed out"
		}
	}
	return res
}

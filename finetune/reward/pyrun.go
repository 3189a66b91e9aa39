package reward

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/internal/lazyregexp"
)

// How the hidden tests of a Python task run: pytest, from the user's virtual environment
// (env.Detection.LocatePython), on the evaluation tree bound read-only, the hidden tests
// named by node id, with two canary tests of random names beside the first of them, one
// that passes and one that fails, in the same run. pytest writes its JUnit report onto a
// descriptor of the command's stdout (env's resultsFD), not into a file of the tree, and
// its progress (-v: one line per test and outcome) onto stderr. The run counts only when
// every test it named has exactly one <testcase> and one progress line and the two agree,
// no other test has one, the canaries came out as written, and pytest's exit status is 1.
//
// Why not Go's way (gorun.go: the canaries in a run of their own, and the exit status as
// the main signal): Python code runs in pytest's own process and can change pytest itself,
// and pytest's exit status comes from the same reports it can change. Measured: behind the
// screen, a patch of _pytest's report in the agent's calc/__init__.py (every test passes,
// pytest exits 0, a consistent run) earned reward 1 with a passing canary alone, and again
// with the failing canary in a run of its own (that run did not import calc, so the patch
// was not there); a failing canary in the hidden tests' run catches it. A patch of one
// writer only (the JUnit report) leaves the progress lines to disagree.
//
// A forger that spares frognano's tests (their file is readable) and patches both gets past
// every check of the results: only what reaches the tree and the screen stop it. What
// reaches the tree is the agent's change to the files the task's patch changed, nothing
// else (tree.go: no helper module, sitecustomize.py, __init__.py, plugin, byte code or
// configuration). The screen (screenpy.go) reads those files on their syntax tree, as an
// allowlist: imports of a few pure standard modules, of the repository's own code and of
// what the file imported before (a capable one, subprocess say, used no more than before);
// no dunder beyond a small safe set; no frame, traceback or code attribute; no reference at
// all to getattr, vars, globals, eval, exec, open and their kin (an alias is refused where
// it is written); no attribute or name that hands out a module (typing.sys, random._os) or
// reaches attributes by computed names or evaluates strings (attrgetter, get_field,
// get_type_hints, singledispatch); forward references read as code. Measured on main before
// it, each earned reward 1 (the screen off, each still does: the screen is what stops
// them): getattr(sys, "mod"+"ules"), vars(sys), a traceback's frame walked up by
// getattr(f, "f_back"), string.Formatter().get_field, operator.attrgetter, g = getattr,
// a forward reference evaluated by functools.singledispatch, and the patch in a helper
// module or in calc/__init__.py (attackpy_test.go). Measured after it, each earned reward 1
// through it until the screen learnt its name: enum.global_enum (an enum with __module__
// "_pytest.runner" and a member ExceptionInfo whose from_current, called in CallInfo's
// except block, takes the exception with a bare raise and answers a false object: every
// failing test passed, the canary not), Enum._convert_ on a subclass (reads any loaded
// module's namespace into members: _pytest.reports.TestReport), and, touching no pytest at
// all, absolute returning an int whose __eq__ says True to anything (generic: no need to
// know the test), its class also made by type(name, bases, {"_" + "_eq__": …}).
//
// What is still open, and what a forger would have to find: Python has no boundary inside
// a process, so the screen is defence in depth over source. A way past it needs an object
// the rules do not name that hands out pytest's modules, frames or a computed attribute
// read: in the repository's own code (a helper of the user's that wraps getattr, a module
// that bound sys under another name, a pytest plugin's repository whose modules import
// pytest's classes), in a third-party package the file already imported (pandas.eval, a
// loader that unpickles, pydantic evaluating an annotation computed as a string at run
// time), in an object the tests pass to the code (the request or pytestconfig fixture
// reaches pytest's plugin manager), or in a standard module's object reached by plain
// names that this review did not think of. Code that cannot forge can still stall or crash
// the run: the time and memory limits and the checks above turn that into reward 0.
//
// Open, and not a question of pytest's process (high severity for training, as generic as
// any hack a policy learns): the tests are in the agent's copy (the task's base holds them;
// only their names are hidden), so a change that special-cases the values the test asserts
// (if x == -3: return 3) earns reward 1 with the bug left in; measured, in Python and in Go.
// Reading the test at run time adds nothing the agent could not read before. Closing it
// needs design, not a screen: the FAIL_TO_PASS tests' bodies out of the agent's copy, or
// held-out checks of the fixed function the agent never sees (inputs beside the test's, the
// base's own function as the oracle). Also open: an object equal to anything whose class no
// rule names, made by a metaclass bound to a name (t = type; t(*args)) or by a class of the
// repository's or a package's that compares through a hook the agent sets.

// runPytest runs the hidden tests of a Python task on the tree at root; repo is the user's
// repository (its virtual environment).
func runPytest(ctx context.Context, root, tmp, repo string, hidden []string, o Options, res *Result) (passed map[string]bool, untrusted string, err error) {
	d, err := env.Detect(root)
	if err != nil {
		return nil, "", fmt.Errorf("reward: %w", err)
	}
	if d.Kind != env.KindPython || d.Runner != env.RunnerPytest {
		return nil, "", fmt.Errorf("reward: %w: a Python task whose suite is %q run by %q", ErrUnsupported, d.Kind, d.Runner)
	}
	d.LocatePython(repo)
	first, _ := env.SplitID(hidden[0])
	file := path.Join(path.Dir(first), "test_zz_frognano_"+random()+".py")
	if err := realParents(root, file); err != nil {
		return nil, "", err
	}
	canary, failing := env.TestID(file, "test_frognano_"+random()), env.TestID(file, "test_frognano_"+random())
	_, name := env.SplitID(canary)
	_, fname := env.SplitID(failing)
	src := fmt.Sprintf("# frognano's: one passes, one fails, and each must come out so.\n\n\ndef %s():\n    pass\n\n\ndef %s():\n    assert False, \"frognano's canary fails on purpose\"\n", name, fname)
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(file)), []byte(src), 0o644); err != nil {
		return nil, "", err
	}

	start := time.Now()
	defer func() { res.Test = time.Since(start) }()
	opts := sandbox.Options{ReadOnly: append([]string{root}, d.ReadOnly...), Writable: []string{}, Hide: append(o.hide(), d.Shadowed...), Limits: runLimits(48 << 20)}
	r, err := newRunner(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	wd := filepath.Join(tmp, "run-py")
	if err := os.Mkdir(wd, 0o755); err != nil {
		return nil, "", err
	}
	ids := append(append([]string{}, hidden...), canary, failing)
	cmd := "cd " + env.ShellQuote(root) + " && " + d.ScriptCommand(o.Timeout, o.Timeout, ids, nil)
	out, err := r.Run(ctx, sandbox.Cmd{Dir: wd, Command: cmd, Timeout: o.Timeout + time.Minute})
	if err != nil {
		return nil, "", err
	}
	passed, untrusted = judgeScript(out, d.ParseScript([]byte(out.Stdout), []byte(out.Stderr), root), ids,
		map[string]string{canary: env.Pass, failing: env.Fail})
	return passed, untrusted, nil
}

// judgeScript reads a pytest run asked to run ids: whether each passed, and why the run
// cannot be trusted ("" when it can). want are frognano's tests and their outcome.
func judgeScript(out sandbox.Output, r env.Results, ids []string, want map[string]string) (map[string]bool, string) {
	passed := map[string]bool{}
	for _, id := range ids {
		passed[id] = r.Tests[id].Status == env.Pass
	}
	switch {
	case out.TimedOut || out.ExitCode == 124:
		return passed, "the tests ran past their time limit"
	case out.Flooded || out.StdoutDropped > 0:
		return passed, "the tests printed more than frognano reads"
	}
	asked := map[string]bool{}
	for _, id := range ids {
		asked[id] = true
	}
	for _, id := range sortedKeys(r.Tests) {
		if !asked[id] {
			return passed, fmt.Sprintf("a result for %s, which was not run", id)
		}
	}
	// The report is parsed into one result per test; a test reported twice (a forged
	// report beside the real one, or a pass and a teardown error) shows in the count.
	if n := strings.Count(out.Stdout, "<testcase"); n != len(asked) {
		return passed, fmt.Sprintf("%d results for %d tests", n, len(asked))
	}
	progress := progressLines(out.Stderr)
	failed := false
	for _, id := range ids {
		st, ok := r.Tests[id]
		if !ok {
			return passed, "no result for " + id
		}
		if w, ok := want[id]; ok && st.Status != w {
			return passed, fmt.Sprintf("frognano's %s came out %s, not %s", id, st.Status, w)
		}
		if p := progress[id]; len(p) != 1 || p[0] != st.Status {
			return passed, fmt.Sprintf("the report says %s for %s, pytest's progress %v", st.Status, id, p)
		}
		failed = failed || (st.Status != env.Pass && st.Status != env.Skip)
	}
	if exit := map[bool]int{false: 0, true: 1}[failed]; out.ExitCode != exit {
		return passed, fmt.Sprintf("pytest's exit status %d, where %s", out.ExitCode, map[bool]string{true: "a test failed", false: "no test failed"}[failed])
	}
	return passed, ""
}

// progressLine is pytest -v's line for a test's outcome: its node id and the outcome.
var progressLine = lazyregexp.New(`^(\S+?::.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(\s+\[\s*\d+%\])?\s*$`)

// progressLines are the outcomes pytest -v printed per TestID, in the report's terms.
func progressLines(talk string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(talk, "\n") {
		m := progressLine.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			continue
		}
		file, name, _ := strings.Cut(m[1], "::")
		st := env.Pass
		switch m[2] {
		case "FAILED", "ERROR":
			st = env.Fail
		case "SKIPPED", "XFAIL":
			st = env.Skip
		}
		id := env.TestID(file, name)
		out[id] = append(out[id], st)
	}
	return out
}

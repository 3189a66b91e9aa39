package synth

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/env"
)

// The pyrunner tests run pyrunner.py directly on a fixture (the code under test is ours,
// so no sandbox), against plain pytest processes on the same mutants.

// reimportFiles is a package whose mutants test each way pyrunner.py re-imports a module:
// names imported from it (`from pkg.core import add`), re-exported by the package, objects
// built from it at import (wrap.quadruple), parametrize values that are its functions, a
// fixture and an xunit setup_module that call it, a class fixture, inspect.getsource of a
// mutated function, a function collection calls (sizes: pytest must start afresh), and a
// conftest that imports a module (other: a stale fork, started afresh), a function only the
// import of a module calls (twice), and a mutant that makes the package's import fail.
var reimportFiles = map[string]string{
	"pytest.ini":      "[pytest]\n",
	"pkg/__init__.py": "from .core import *  # noqa: F401,F403\nfrom . import wrap  # noqa: F401\n",
	"pkg/core.py": `__all__ = ["add", "double", "sizes", "Box", "describe"]


def add(a, b):
    return a + b


def double(x):
    return add(x, x)


def sizes():
    return [1, 2, 3]


class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v


def describe(x):
    if x > 0:
        return "positive"
    return "other"
`,
	"pkg/wrap.py": `from .core import double


def twice(f):
    def g(x):
        return f(f(x))
    return g


quadruple = twice(double)
`,
	"pkg/other.py":      "def neg(x):\n    return -x\n",
	"tests/conftest.py": "import pytest\n\nfrom pkg import other\n\n\n@pytest.fixture\ndef minus_one():\n    return other.neg(1)\n",
	"tests/test_core.py": `import inspect

import pytest

import pkg
from pkg import core
from pkg.core import Box, add, describe, sizes


def setup_module(module):
    module.BASE = add(1, 1)


@pytest.fixture
def box():
    return Box(3)


def test_add():
    assert add(2, 3) == 5


def test_double_via_package():
    assert pkg.double(4) == 8


def test_quadruple():
    assert pkg.wrap.quadruple(1) == 4


def test_base():
    assert BASE == 2


def test_box(box):
    assert box.get() == 3


@pytest.mark.parametrize("f,want", [(add, 3), (core.add, 3)])
def test_param_funcs(f, want):
    assert f(1, 2) == want


@pytest.mark.parametrize("n", sizes())
def test_sizes(n):
    assert n in (1, 2, 3)


def test_source():
    assert add(1, 1) == 2 and "return a + b" in inspect.getsource(add)


def test_minus(minus_one):
    assert add(minus_one, 1) == 0


class TestDescribe:
    @pytest.fixture
    def sign(self):
        return describe(5)

    def test_sign(self, sign):
        assert sign == "positive"

    def test_zero(self):
        assert describe(0) == "other"
`,
	"tests/test_other.py": "from pkg.other import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n",
}

// reimportMutants are (file, function, old, new).
var reimportMutants = [][4]string{
	{"pkg/core.py", "add", "return a + b", "return a - b"},
	{"pkg/core.py", "double", "return add(x, x)", "return add(x, x) + 1"},
	{"pkg/core.py", "get", "return self.v", "return self.v + 1"},
	{"pkg/core.py", "describe", "if x > 0:", "if x >= 0:"},
	{"pkg/core.py", "sizes", "return [1, 2, 3]", "return [1, 2, 4]"},
	{"pkg/other.py", "neg", "return -x", "return x"},
	{"pkg/wrap.py", "g", "return f(f(x))", "return f(x)"},
	{"pkg/wrap.py", "twice", "    return g\n", "    return f\n"}, // runs at import only
	// The package's import fails: pytest runs no test (collection errors).
	{"pkg/wrap.py", "twice", "    return g\n", "    return g(f)\n"},
}

func needPytest(t *testing.T) {
	if exec.Command("python3", "-c", "import pytest").Run() != nil {
		t.Skip("python3 with pytest is not installed")
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := writeCopyFile(filepath.Join(dir, name), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
}

// plainPytest runs pytest afresh on dir and returns each test's status by node id.
func plainPytest(t *testing.T, dir string) map[string]string {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.xml")
	cmd := exec.Command("python3", append([]string{"-m", "pytest", "--junitxml=" + report}, env.PytestArgs([]string{"tests"}, nil)...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+dir)
	out, err := cmd.CombinedOutput()
	b, rerr := os.ReadFile(report)
	if rerr != nil {
		// A conftest that fails to import: pytest stops before it collects (status 4).
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
			t.Fatalf("pytest wrote no report (%v): %v\n%s", err, rerr, out)
		}
		return map[string]string{}
	}
	got := map[string]string{}
	for id, r := range env.ParseJUnitXML(b).Tests {
		file, name := env.SplitID(id)
		got[file+"::"+name] = r.Status
	}
	return got
}

type pyRunnerResult struct {
	runs  []map[string]string // by run: status by node id (nil: no result)
	rcs   []string
	stats map[string]any
}

// runPyRunner runs pyrunner.py on dir with the clean run and one run per mutant, each on
// the tests that call its function; extra goes into the spec as it is.
func runPyRunner(t *testing.T, dir string, mutants [][4]string, timeout float64, extra map[string]any) pyRunnerResult {
	t.Helper()
	work := t.TempDir()
	runs := []pyRun{{ID: 0, Args: []string{"tests"}, Timeout: 120, Result: filepath.Join(work, "0.json"), RC: filepath.Join(work, "0.rc")}}
	for i, m := range mutants {
		src, err := os.ReadFile(filepath.Join(dir, m[0]))
		if err != nil {
			t.Fatal(err)
		}
		variant := strings.Replace(string(src), m[2], m[3], 1)
		if variant == string(src) {
			t.Fatalf("mutant %v changes nothing", m)
		}
		id := i + 1
		orig, mut := filepath.Join(work, fmt.Sprintf("orig-%d", id)), filepath.Join(work, fmt.Sprintf("mut-%d", id))
		if os.WriteFile(orig, src, 0o644) != nil || os.WriteFile(mut, []byte(variant), 0o644) != nil {
			t.Fatal("cannot write the mutants")
		}
		runs = append(runs, pyRun{ID: id, Func: m[0] + ":" + m[1], File: filepath.Join(dir, m[0]), Variant: mut, Original: orig,
			Args: []string{"tests"}, Timeout: timeout, Result: filepath.Join(work, fmt.Sprintf("%d.json", id)), RC: filepath.Join(work, fmt.Sprintf("%d.rc", id))})
	}
	spec := map[string]any{"opts": env.PytestArgs(nil, nil), "collect": []string{"tests"}, "runs": runs, "seconds": map[string]float64{}}
	for k, v := range extra {
		spec[k] = v
	}
	b, _ := json.Marshal(spec)
	specPath, runnerPath := filepath.Join(work, "spec.json"), filepath.Join(work, "pyrunner.py")
	if os.WriteFile(specPath, b, 0o644) != nil || os.WriteFile(runnerPath, pyRunner, 0o644) != nil {
		t.Fatal("cannot write the spec")
	}
	cmd := exec.Command("python3", runnerPath, specPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pyrunner.py: %v\n%s", err, out)
	}
	var res pyRunnerResult
	for _, r := range runs {
		rc, _ := os.ReadFile(r.RC)
		res.rcs = append(res.rcs, strings.TrimSpace(string(rc)))
		report, err := os.ReadFile(r.Result)
		if err != nil {
			res.runs = append(res.runs, nil)
			continue
		}
		got := map[string]string{}
		for id, x := range parsePyReport(report).Tests {
			file, name := env.SplitID(id)
			got[file+"::"+name] = x.Status
		}
		res.runs = append(res.runs, got)
	}
	if b, err := os.ReadFile(filepath.Join(work, "stats.json")); err == nil {
		_ = json.Unmarshal(b, &res.stats)
	}
	return res
}

// differences lists where a forked run (only the tests that call the function) and a plain
// run disagree: a test both ran with another status, or one the fork left out that does
// not pass plainly (the profile missed it).
func differences(forked, plain map[string]string) []string {
	var out []string
	for id, want := range plain {
		got, ran := forked[id]
		switch {
		case ran && got != want:
			out = append(out, fmt.Sprintf("%s: %s forked, %s plain", id, got, want))
		case !ran && want != env.Pass && want != env.Skip:
			out = append(out, fmt.Sprintf("%s: not run forked, %s plain", id, want))
		}
	}
	for id := range forked {
		if _, ok := plain[id]; !ok {
			out = append(out, fmt.Sprintf("%s: %s forked, not in the plain run", id, forked[id]))
		}
	}
	sort.Strings(out)
	return out
}

// TestPyRunnerAgreesWithPytest: every mutant's forked run says what a plain pytest run on
// the mutated tree says, test by test; and the fixture is left as it was.
func TestPyRunnerAgreesWithPytest(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, reimportFiles)
	before := treeState(t, dir)
	clean := plainPytest(t, dir)
	res := runPyRunner(t, dir, reimportMutants, 60, nil)
	if after := treeState(t, dir); after != before {
		t.Errorf("pyrunner.py left the tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if d := differences(res.runs[0], clean); len(d) > 0 || len(res.runs[0]) != len(clean) {
		t.Fatalf("the clean runs disagree (%d tests forked, %d plain): %v", len(res.runs[0]), len(clean), d)
	}
	interrupted := 0
	for i, m := range reimportMutants {
		src := reimportFiles[m[0]]
		writeTree(t, dir, map[string]string{m[0]: strings.Replace(src, m[2], m[3], 1)})
		plain := plainPytest(t, dir)
		writeTree(t, dir, map[string]string{m[0]: src})
		if d := differences(res.runs[i+1], plain); len(d) > 0 {
			t.Errorf("%s %q→%q: %v", m[0], m[2], m[3], d)
		}
		switch {
		case len(plain) == 0:
			interrupted++ // and the fork ran nothing either (differences)
		case len(failing(toResults(plain), ids(plain))) == 0:
			t.Errorf("%s %q→%q: no test fails plainly: not a mutant that tells", m[0], m[2], m[3])
		}
	}
	if interrupted != 1 || res.stats["interrupted"] != float64(1) {
		t.Errorf("%d mutants interrupted pytest, %v pyrunner.py's runs", interrupted, res.stats["interrupted"])
	}
	// sizes runs while collecting and the conftest imports other: both start afresh; the
	// rest fork.
	if res.stats["fresh"] != float64(2) || res.stats["forked"] != float64(len(reimportMutants)-1) {
		t.Errorf("runs: %v", res.stats)
	}
}

// TestPyRunnerControl: without the re-import (the spec's "reimport": false, for this
// test only), the forked runs of a mutant whose module the tests imported while collecting
// must disagree with plain pytest: the comparison above can fail.
func TestPyRunnerControl(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	writeTree(t, dir, reimportFiles)
	m := reimportMutants[1] // double: test_double_via_package and test_quadruple fail
	res := runPyRunner(t, dir, [][4]string{m}, 60, map[string]any{"reimport": false})
	writeTree(t, dir, map[string]string{m[0]: strings.Replace(reimportFiles[m[0]], m[2], m[3], 1)})
	plain := plainPytest(t, dir)
	if d := differences(res.runs[1], plain); len(d) == 0 {
		t.Errorf("without the re-import the fork still agrees with pytest: forked %v, plain %v", res.runs[1], plain)
	}
}

// TestPyRunnerLeavesNothing: a mutant that hangs after starting a process of its own is
// stopped at its time limit (rc 124, the test it was in "hung"), and nothing it started
// outlives the runner; the tree is left as it was.
func TestPyRunnerLeavesNothing(t *testing.T) {
	t.Parallel()
	needPytest(t)
	dir := t.TempDir()
	token := fmt.Sprintf("frognano-leftover-%d", time.Now().UnixNano())
	files := map[string]string{
		"pytest.ini":         "[pytest]\n",
		"loop/run.py":        "import subprocess\nimport sys\n\n\ndef start(wait):\n    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '" + token + "'])\n    while wait:\n        pass\n",
		"tests/test_loop.py": "from loop.run import start\n\n\ndef test_start():\n    start(False)\n",
	}
	writeTree(t, dir, files)
	before := treeState(t, dir)
	res := runPyRunner(t, dir, [][4]string{{"loop/run.py", "start", "while wait:", "while not wait:"}}, 3, nil)
	if res.rcs[1] != "124" || res.runs[1]["tests/test_loop.py::test_start"] != env.Hung {
		t.Errorf("the hanging mutant: rc %s, results %v", res.rcs[1], res.runs[1])
	}
	if res.runs[0]["tests/test_loop.py::test_start"] != env.Pass {
		t.Errorf("the clean run: %v", res.runs[0])
	}
	if after := treeState(t, dir); after != before {
		t.Errorf("pyrunner.py left the tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	var left []string
	deadline := time.Now().Add(5 * time.Second) // a SIGKILLed process leaves /proc soon, not at once
	for {
		left = processesWith(token)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("processes left running: %v", left)
		for _, pid := range left {
			_ = exec.Command("kill", "-9", pid).Run()
		}
	}
}

// processesWith are the ids of the processes whose command line holds token.
func processesWith(token string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), token) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

// treeState lists every file under dir with its size and content's hash.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			fmt.Fprintf(&b, "%s/\n", rel)
			return nil
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %x\n", rel, info.Size(), body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func toResults(statuses map[string]string) env.Results {
	r := env.Results{Tests: map[string]env.Result{}}
	for id, s := range statuses {
		r.Tests[id] = env.Result{Status: s}
	}
	return r
}

func ids(statuses map[string]string) []string {
	var out []string
	for id := range statuses {
		out = append(out, id)
	}
	return out
}

package reward

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
)

const (
	pyAbs   = "tests/test_calc.py test_absolute"
	pyScale = "tests/test_calc.py TestScale::test_scale"
)

// pyBuggy is the task's calc/calc.py (the bug in absolute), the file its patch changed.
var pyBuggy = strings.Replace(fixture.PyCalc, "return -x", "return x", 1)

func pyTask(t *testing.T) *task.Task {
	t.Helper()
	if exec.Command("python3", "-c", "import pytest").Run() != nil {
		t.Skip("python3 with pytest is not installed")
	}
	repo := fixture.Repo(t, map[string]string{
		"pyproject.toml":     fixture.PyProject("calc"),
		"calc/__init__.py":   "",
		"calc/calc.py":       fixture.PyCalc,
		"tests/test_calc.py": fixture.PyCalcTest,
	})
	ctx := context.Background()
	head, err := env.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := task.MakePatch(ctx, []task.Change{{Path: "calc/calc.py", Old: []byte(fixture.PyCalc),
		New: []byte(strings.Replace(fixture.PyCalc, "return -x", "return x", 1))}})
	if err != nil {
		t.Fatal(err)
	}
	return &task.Task{Version: task.Version, ID: task.MakeID(head, patch), Repo: repo, BaseCommit: head, Patch: patch,
		FailToPass: []string{pyAbs}, PassToPass: []string{pyScale}, Test: task.TestSpec{Kind: env.KindPython}}
}

// pyNaive is what a reward that trusts the agent's copy would see: pytest's JUnit report
// of the hidden tests there.
func pyNaive(t *testing.T, dir string) env.Results {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.xml")
	cmd := exec.Command("python3", "-m", "pytest", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml="+report,
		"tests/test_calc.py::test_absolute", "tests/test_calc.py::TestScale::test_scale")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+dir)
	cmd.Run()
	b, _ := os.ReadFile(report)
	return env.ParseJUnitXML(b)
}

// The pytest forgeries a model could find: pytest's configuration (a conftest.py that
// makes every report a pass), the hidden test itself, and the agent's own code patching
// pytest in its process (refused by the screen only: see pyrun.go).
var pyForgeries = []struct {
	name     string
	edit     func(t *testing.T, root string)
	screened bool
}{
	{"a conftest.py that makes every report a pass", func(t *testing.T, root string) {
		write(t, root, "tests/conftest.py", `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
`)
	}, false},
	{"the hidden test edited", func(t *testing.T, root string) {
		write(t, root, "tests/test_calc.py", strings.Replace(fixture.PyCalcTest, "absolute(-3) == 3 and ", "", 1))
	}, false},
	{"pytest patched from the code under test", func(t *testing.T, root string) {
		write(t, root, "calc/calc.py", pyBuggy+`
import sys

if "pytest" in sys.modules:
    import _pytest.reports as reports

    _real = reports.TestReport.from_item_and_call

    def _forged(item, call):
        rep = _real(item, call)
        rep.outcome = "passed"
        rep.longrepr = None
        return rep

    reports.TestReport.from_item_and_call = _forged
`)
	}, true},
}

// pyRewrite is absolute written again the way a model may: every construct a fix commonly
// uses that the screen must let through.
const pyRewrite = `from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Optional

import calc


@dataclass
class _Sign:
    x: float
    seen: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.seen.append(f"{type(self).__name__}({self.x!r:>4})")


class _Abs(_Sign):
    def __init__(self, x):
        super().__init__(x)
        self.value = max([v for v in (self.x, -self.x) if v >= 0] or [0])


@functools.lru_cache(maxsize=None)
def absolute(x: Optional[int]) -> "int":
    """The absolute value of x."""
    if getattr(calc, "__name__", "") != "calc" or x is None:
        return 0
    return _Abs(x).value
`

func TestScorePython(t *testing.T) {
	tk := pyTask(t)
	o := Options{Timeout: time.Minute}
	fooled := func(r env.Results) bool {
		return r.Tests[pyAbs].Status == env.Pass && r.Tests[pyScale].Status == env.Pass
	}
	t.Run("honest fix", func(t *testing.T) {
		ws := agentCopy(t, tk)
		write(t, ws.Root, "calc/calc.py", fixture.PyCalc)
		if res := score(t, tk, ws, o); res.Reward != 1 || len(res.Passed) != 2 {
			t.Errorf("reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
		}
	})
	t.Run("a fix rewritten, and changes elsewhere left out", func(t *testing.T) {
		// A fix as a model writes one (a dataclass, an f-string, a comprehension, super(),
		// imports of the standard library and of the package) passes the screen; a change to
		// a file the task did not change (a new helper, the package's __init__.py, a note) is
		// dropped, and the fix does not need it.
		ws := agentCopy(t, tk)
		write(t, ws.Root, "calc/calc.py", strings.Replace(fixture.PyCalc, `def absolute(x):
    """The absolute value of x."""
    if x < 0:
        return -x
    return x
`, pyRewrite, 1))
		write(t, ws.Root, "calc/helper.py", "def helper():\n    return 1\n")
		write(t, ws.Root, "calc/__init__.py", "from calc.helper import helper  # noqa: F401\n")
		write(t, ws.Root, "NOTES.md", "fixed absolute\n")
		res := score(t, tk, ws, o)
		if res.Reward != 1 || len(res.Passed) != 2 {
			t.Errorf("reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
		}
		var outside []string
		for _, d := range res.Dropped {
			if d.Why == "outside the files the task changed" {
				outside = append(outside, d.Path)
			}
		}
		if strings.Join(outside, " ") != "NOTES.md calc/__init__.py calc/helper.py" {
			t.Errorf("dropped %v", res.Dropped)
		}
	})
	t.Run("no change", func(t *testing.T) {
		ws := agentCopy(t, tk)
		if fooled(pyNaive(t, ws.Root)) {
			t.Fatal("the buggy tree passes its tests")
		}
		res := score(t, tk, ws, o)
		if res.Reward != 0 || !slices.Equal(res.Failed, []string{pyAbs}) || !slices.Equal(res.Passed, []string{pyScale}) {
			t.Errorf("reward %v (%s), passed %v, failed %v", res.Reward, res.Reason, res.Passed, res.Failed)
		}
	})
	for _, f := range pyForgeries {
		t.Run(f.name, func(t *testing.T) {
			ws := agentCopy(t, tk)
			f.edit(t, ws.Root)
			if r := pyNaive(t, ws.Root); !fooled(r) {
				t.Fatalf("the forgery does not fool a plain pytest run, so this case proves nothing: %+v", r)
			}
			res := score(t, tk, ws, o)
			if res.Reward != 0 || len(res.Passed) == 2 {
				t.Errorf("forged: reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
			}
			if f.screened != strings.HasPrefix(res.Reason, "refused by the screen") {
				t.Errorf("screened %v, reason %q", f.screened, res.Reason)
			}
			if f.screened {
				// Behind the screen: frognano's failing test passed too.
				o := o
				o.noScreen = true
				if res := score(t, tk, ws, o); res.Reward != 0 || !strings.HasPrefix(res.Reason, "results not trustworthy") {
					t.Errorf("without the screen: reward %v (%s)", res.Reward, res.Reason)
				}
			}
		})
	}
}

// A pytest run counts when its report, its progress lines and its exit status agree and
// frognano's tests came out as written.
func TestJudgeScript(t *testing.T) {
	const f = "tests/test_calc.py"
	ids := []string{f + " test_a", f + " test_pass", f + " test_fail"}
	want := map[string]string{f + " test_pass": env.Pass, f + " test_fail": env.Fail}
	tc := func(name, st string) string {
		body := ""
		if st == "fail" {
			body = `<failure message="boom">boom</failure>`
		}
		return `<testcase classname="tests.test_calc" name="` + name + `" file="` + f + `" time="0.001">` + body + `</testcase>`
	}
	line := func(name, st string) string { return f + "::" + name + " " + st + "  [ 33%]\n" }
	report := func(a string) string {
		return "<testsuites><testsuite>" + tc("test_a", a) + tc("test_pass", "pass") + tc("test_fail", "fail") + "</testsuite></testsuites>"
	}
	for _, c := range []struct {
		name, stdout, stderr string
		exit                 int
		why                  string // "" when trusted
	}{
		{"a pass", report("pass"), line("test_a", "PASSED") + line("test_pass", "PASSED") + line("test_fail", "FAILED"), 1, ""},
		{"a failure", report("fail"), line("test_a", "FAILED") + line("test_pass", "PASSED") + line("test_fail", "FAILED"), 1, ""},
		{"the report alone rewritten", report("pass"), line("test_a", "FAILED") + line("test_pass", "PASSED") + line("test_fail", "FAILED"), 1, "pytest's progress"},
		{"every test passes", "<testsuites>" + tc("test_a", "pass") + tc("test_pass", "pass") + tc("test_fail", "pass") + "</testsuites>",
			line("test_a", "PASSED") + line("test_pass", "PASSED") + line("test_fail", "PASSED"), 0, "came out pass, not fail"},
		{"a test reported twice", strings.Replace(report("pass"), "</testsuite>", tc("test_a", "pass")+"</testsuite>", 1),
			line("test_a", "PASSED") + line("test_pass", "PASSED") + line("test_fail", "FAILED"), 1, "4 results for 3 tests"},
		{"exit 0", report("pass"), line("test_a", "PASSED") + line("test_pass", "PASSED") + line("test_fail", "FAILED"), 0, "exit status 0"},
		{"no progress lines", report("pass"), "", 1, "pytest's progress []"},
	} {
		r := env.ParseJUnitXML([]byte(c.stdout))
		got, why := judgeScript(sandbox.Output{Stdout: c.stdout, Stderr: c.stderr, ExitCode: c.exit}, r, ids, want)
		if c.why == "" && why != "" || !strings.Contains(why, c.why) {
			t.Errorf("%s: why %q, want %q", c.name, why, c.why)
		}
		if c.why == "" && got[ids[0]] != (c.name == "a pass") {
			t.Errorf("%s: test_a passed %v", c.name, got[ids[0]])
		}
	}
}

package reward

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/finetune/withhold"
)

// Attacks found by a review that played the agent (each fools a plain run on the agent's
// copy, the control), kept apart from the forgeries TestScore and TestScorePython hold
// because the guards behind the screen do not all stop them alone: each says what does.

// goAttacks are Go forgeries that need no construct the screen refused before the review.
var goAttacks = []struct {
	name string
	edit func(t *testing.T, root string)
}{
	// The canaries' own run (no hidden test named) is left alone, so the failing canary
	// fails for real; in the hidden tests' run every name in -test.run gets a pass, and the
	// process ends with status 0 through package flag, whose ExitOnError calls os.Exit(0)
	// on -h. Exit status, canaries and framing all agree: only the screen can stop it.
	{"a pass for every name of the hidden tests' run, exit 0 through flag's -h", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", withCalc(`package calc

import (
	"flag"
	"os"
	"strings"
)

var _ = report()

func report() int {
	b, _ := os.ReadFile("/proc/self/cmdline")
	for _, a := range strings.Split(string(b), "\x00") {
		p, ok := strings.CutPrefix(a, "-test.run=")
		if !ok || !strings.Contains(p, "TestAbs") {
			continue // frognano's canaries alone: let them run
		}
		m := string(rune(22))
		for _, n := range strings.Split(strings.Trim(p, "^()$"), "|") {
			os.Stdout.WriteString(m + "=== " + "RUN   " + n + "\n" + m + "--- " + "PASS: " + n + " (0.00s)\n")
		}
		os.Stdout.WriteString(m + "PASS\n")
		flag.NewFlagSet("", flag.ExitOnError).Parse([]string{"-h"})
	}
	return 0
}
`))
	}},
}

func TestAttacksGo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tk, o := setup(t)
	for _, a := range goAttacks {
		t.Run(a.name, func(t *testing.T) {
			ws := agentCopy(t, tk)
			a.edit(t, ws.Root)
			if r := naive(t, ws.Root); !naiveFooled(r) {
				t.Fatalf("the attack does not fool a plain go test -json, so this case proves nothing: %+v", r)
			}
			if res := score(t, tk, ws, o); res.Reward != 0 || len(res.Passed) == 2 {
				t.Errorf("forged: reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
			}
		})
	}
	t.Run("a tree frognano cannot lay as it is", func(t *testing.T) { attackScoringError(t, tk, o) })
	t.Run("memory", func(t *testing.T) { attackMemory(t, tk, o) })
}

// pyPlugin is a pytest plugin that needs no import of pytest: a hook that says it called
// every test but frognano's, which then pass without running.
const pyPlugin = `def pytest_pyfunc_call(pyfuncitem):
    if "frognano" not in pyfuncitem.name:
        return True
`

// pyAttacks are pytest forgeries that bring their own harness, or their own code, past
// the screen's reading of the agent's Python.
var pyAttacks = []struct {
	name string
	edit func(t *testing.T, root string)
	// targeted: the attack aims at frognano's run (its descriptors), not at a plain
	// pytest run, which is then no control.
	targeted bool
}{
	{"pytest.py at the top shadows pytest itself", func(t *testing.T, root string) {
		// A pytest of the agent's: it runs frognano's tests (their file is readable) for
		// real and reports the others passed, in the report and the progress both.
		write(t, root, "pytest.py", `import sys

ids = [a for a in sys.argv[1:] if "::" in a]
report = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--junitxml=")][0]
cases, failed = [], False
for i in ids:
    f, name = i.split("::", 1)
    ok = True
    if "frognano" in f:
        ns = {}
        exec(open(f).read(), ns)
        try:
            ns[name]()
        except AssertionError:
            ok = False
    failed = failed or not ok
    print(i + (" PASSED" if ok else " FAILED"), file=sys.stderr)
    body = "" if ok else "<failure message='x'>x</failure>"
    parts = name.split("::")
    cls = ".".join([f[:-3].replace("/", ".")] + parts[:-1])
    cases.append("<testcase classname='%s' name='%s' file='%s' time='0'>%s</testcase>" % (cls, parts[-1], f, body))
with open(report, "w") as w:
    w.write("<testsuites><testsuite>" + "".join(cases) + "</testsuite></testsuites>")
if failed:
    raise RuntimeError("a test failed")
`)
	}, false},
	{"pytest.toml (pytest 9) loads a plugin of the agent's", func(t *testing.T, root string) {
		write(t, root, "pytest.toml", "[pytest]\naddopts = [\"-p\", \"calc_plugin\"]\n")
		write(t, root, "calc_plugin.py", pyPlugin)
	}, false},
	{"an entry point in a .dist-info folder on the path loads a plugin", func(t *testing.T, root string) {
		write(t, root, "calc_plugin-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: calc-plugin\nVersion: 1.0\n")
		write(t, root, "calc_plugin-1.0.dist-info/entry_points.txt", "[pytest11]\ncalc_plugin = calc_plugin\n")
		write(t, root, "calc_plugin.py", pyPlugin)
	}, false},
	{"the patch read from a file the screen does not read, and exec'd", func(t *testing.T, root string) {
		write(t, root, "calc/payload.txt", pyReportPatch)
		write(t, root, "calc/__init__.py", "import os\n\nwith open(os.path.join(os.path.dirname(__file__), \"payload.txt\")) as f:\n    exec(f.read())\n")
	}, false},
	{"pytest's report and progress descriptors rewired with os.dup2 and rewritten", func(t *testing.T, root string) {
		// Imported while pytest collects: fd 3 (the report, opened again by path at the
		// end) and the descriptors of the progress become pipes of the agent's, whose
		// threads pass them on with every failure but frognano's made a pass. pytest's exit status is
		// 1 all the same, from frognano's failing test.
		write(t, root, "calc/__init__.py", `import os
import re
import threading


def _rewire(fd, fix, whole):
    saved = os.dup(fd)
    r, w = os.pipe()
    os.dup2(w, fd)
    os.close(w)

    def pump():
        buf = b""
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            buf += b
            if whole:
                if b"</testsuites>" in buf:
                    os.write(saved, fix(buf))
                    buf = b""
                continue
            *lines, buf = buf.split(b"\n")
            for line in lines:
                os.write(saved, fix(line) + b"\n")

    threading.Thread(target=pump, daemon=True).start()


def _report(b):
    def case(m):
        c = m.group(0)
        return c if b"frognano" in c else re.sub(rb"<failure.*?</failure>", b"", c, flags=re.S)

    return re.sub(rb"<testcase .*?</testcase>", case, b, flags=re.S)


def _progress(line):
    return line if b"frognano" in line else line.replace(b" FAILED", b" PASSED")


if os.environ.get("FROGNANO_RESULTS"):
    # pytest's capture holds the progress's pipe on descriptors of its own, which it
    # puts back on 1 to report: rewire every descriptor of that pipe.
    report = os.readlink("/proc/self/fd/3")
    talk = []
    for n in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink("/proc/self/fd/" + n)
        except OSError:
            continue
        if link.startswith("pipe:") and link != report:
            talk.append(int(n))
    _rewire(3, _report, True)
    for fd in talk:
        _rewire(fd, _progress, False)
`)
	}, true},
	{"byte code in __pycache__ that Python loads instead of the screened source", func(t *testing.T, root string) {
		// An unchecked hash-based .pyc is loaded without a look at its source: the
		// screened calc/__init__.py stays empty, the code that runs patches pytest.
		src := filepath.Join(t.TempDir(), "init.py")
		write(t, filepath.Dir(src), "init.py", pyReportPatch)
		tag, err := exec.Command("python3", "-c", "import sys; print(sys.implementation.cache_tag)").Output()
		if err != nil {
			t.Fatal(err)
		}
		pyc := filepath.Join(root, "calc", "__pycache__", "__init__."+strings.TrimSpace(string(tag))+".pyc")
		if err := os.MkdirAll(filepath.Dir(pyc), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("python3", "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)", src, pyc).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}, false},
}

// pyReportPatch makes every report of a test but frognano's a pass (pytest's exit status
// is 1 all the same, from frognano's failing test).
const pyReportPatch = `import sys

if "pytest" in sys.modules:
    import _pytest.reports as reports

    _real = reports.TestReport.from_item_and_call

    def _forged(item, call):
        rep = _real(item, call)
        if "frognano" not in item.nodeid:
            rep.outcome = "passed"
            rep.longrepr = None
        return rep

    reports.TestReport.from_item_and_call = _forged
`

func TestAttacksPython(t *testing.T) {
	tk := pyTask(t)
	o := Options{Timeout: time.Minute}
	for _, a := range pyAttacks {
		t.Run(a.name, func(t *testing.T) {
			ws := agentCopy(t, tk)
			a.edit(t, ws.Root)
			if r := pyNaive(t, ws.Root); !a.targeted && r.Tests[pyAbs].Status != env.Pass || r.Tests[pyScale].Status != env.Pass {
				t.Fatalf("the attack does not fool a plain pytest run, so this case proves nothing: %+v", r)
			}
			if res := score(t, tk, ws, o); res.Reward != 0 || len(res.Passed) == 2 {
				t.Errorf("forged: reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
			}
		})
	}
}

// An agent's tree that frognano cannot lay as it is must give a reward, not an error: an
// error is recorded as frognano's failure, with no reward, so a model that learned to
// cause one would never see the 0 its episode earned.
func attackScoringError(t *testing.T, tk *task.Task, o Options) {
	ws := agentCopy(t, tk)
	// The folder calc made a file; its testdata/ stays the base's, so the folder cannot go.
	if err := os.RemoveAll(filepath.Join(ws.Root, "calc")); err != nil {
		t.Fatal(err)
	}
	write(t, ws.Root, "calc", "not a folder\n")
	ch, err := ws.Changes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Score(t.Context(), tk, ch, o)
	if err != nil {
		t.Fatalf("Score: %v", err)
	}
	if res.Reward != 0 {
		t.Errorf("reward %v (%s)", res.Reward, res.Reason)
	}
	t.Logf("reason %q, dropped %v", res.Reason, res.Dropped)
}

// The code under test runs with the agent commands' memory limit: without one, code that
// takes all of the machine's memory in the reward's run brings the out-of-memory killer
// onto whatever else runs there (Ollama, the trainer). Here a fix that also reserves 9 GiB
// (untouched, so this test costs no memory) must end in out of memory, not reward 1.
func attackMemory(t *testing.T, tk *task.Task, o Options) {
	ws := agentCopy(t, tk)
	write(t, ws.Root, "calc/calc.go", strings.Replace(calcGo, "func Max(a, b int) int {\n", "var hog []byte\n\nfunc Max(a, b int) int {\n\thog = make([]byte, 9<<30)\n", 1))
	res := score(t, tk, ws, o)
	if res.Reward != 0 {
		t.Errorf("reward %v (%s): the 9 GiB were granted", res.Reward, res.Reason)
	}
}

// readAttacks leave the bug in and read the answer from the evaluation tree, which holds
// the hidden tests and their golden files (the agent's copy lacks them: finetune/withhold):
// the code under test runs in the test binary, in the package's folder, and is built
// there. Found by the second adversarial review: each scored 1 before the screen counted
// file reads.
var readAttacks = []struct {
	name string
	edit func(t *testing.T, root string)
}{
	{"the hidden test's golden file read at run time (os.ReadFile)", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", strings.Replace(withCalc(`package calc

import (
	"os"
	"strconv"
	"strings"
)
`), "\treturn x\n}\n", "\tif b, err := os.ReadFile(\"testdata/abs.txt\"); err == nil && x < 0 {\n\t\tv, _ := strconv.Atoi(strings.TrimSpace(string(b)))\n\t\treturn v\n\t}\n\treturn x\n}\n", 1))
		// the bug stays: Abs no longer negates
		write(t, root, "calc/calc.go", strings.Replace(readFile(t, root, "calc/calc.go"), "\tif x < 0 {\n\t\treturn x\n\t}\n", "", 1))
	}},
	{"the hidden test's source and golden file read by a command (os/exec)", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", strings.Replace(withCalc(`package calc

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)
`), "// Abs is", `func answer() (int, bool) {
	src, err := exec.Command("sh", "-c", "cat *_test.go").Output()
	if err != nil {
		return 0, false
	}
	m := regexp.MustCompile(`+"`"+`ReadFile\("([^"]+)"\)`+"`"+`).FindSubmatch(src)
	if m == nil {
		return 0, false
	}
	b, err := exec.Command("cat", string(m[1])).Output()
	v, err2 := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil && err2 == nil
}

// Abs is`, 1))
		write(t, root, "calc/calc.go", strings.Replace(readFile(t, root, "calc/calc.go"), "\tif x < 0 {\n\t\treturn x\n\t}\n", "\tif v, ok := answer(); ok && x < 0 {\n\t\treturn v\n\t}\n", 1))
	}},
	{"the hidden test's golden file embedded at build time (//go:embed)", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", strings.Replace(withCalc(`package calc

import (
	_ "embed"
	"strconv"
	"strings"
)

//go:embed testdata/abs.txt
var golden string
`), "\tif x < 0 {\n\t\treturn x\n\t}\n", "\tif v, err := strconv.Atoi(strings.TrimSpace(golden)); err == nil && x < 0 {\n\t\treturn v\n\t}\n", 1))
	}},
}

func TestAttacksReadHidden(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tk, o := setup(t)
	for _, a := range readAttacks {
		t.Run(a.name, func(t *testing.T) {
			ws := agentCopy(t, tk)
			a.edit(t, ws.Root)
			if !strings.Contains(readFile(t, ws.Root, "calc/calc.go"), "return x\n") || strings.Contains(readFile(t, ws.Root, "calc/calc.go"), "return -x") {
				t.Fatalf("the bug is not left in:\n%s", readFile(t, ws.Root, "calc/calc.go"))
			}
			if r := naive(t, ws.Root); !naiveFooled(r) {
				t.Fatalf("the attack does not pass a plain go test -json, so this case proves nothing: %+v", r)
			}
			res := score(t, tk, ws, o)
			if res.Reward != 0 {
				t.Errorf("forged: reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
			}
			if !strings.HasPrefix(res.Reason, "refused by the screen") {
				t.Errorf("reason %q, want the screen's", res.Reason)
			}
		})
	}
}

// The agent's copy lacks the hidden tests (finetune/withhold); what it does to the test
// file they were taken from (rewrite it, delete it, move it, add a test of the same name
// elsewhere) does not reach the evaluation tree, which has them from the base commit.
func TestWithheldTestsRestored(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tk, o := setup(t)
	withheldCopy := func(t *testing.T) *workspace.Workspace {
		ws := agentCopyOf(t, tk, func(dir string) {
			res, err := withhold.Tests(dir, tk)
			if err != nil || len(res.Withheld) != 1 {
				t.Fatalf("withheld %+v, %v", res, err)
			}
		})
		if strings.Contains(readFile(t, ws.Root, "calc/calc_test.go"), "TestAbs") {
			t.Fatal("TestAbs is in the agent's copy")
		}
		return ws
	}
	for _, c := range []struct {
		name string
		edit func(t *testing.T, root string)
		fix  bool
	}{
		{"the test file deleted, bug fixed", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "calc", "calc_test.go"))
		}, true},
		{"the test file deleted, bug left", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "calc", "calc_test.go"))
		}, false},
		{"the test file moved, a passing TestAbs of the agent's in its place", func(t *testing.T, root string) {
			os.Rename(filepath.Join(root, "calc", "calc_test.go"), filepath.Join(root, "calc", "old_test.go.txt"))
			write(t, root, "calc/calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {}\n\nfunc TestMax(t *testing.T) {}\n")
		}, false},
		{"a TestAbs of the agent's in another test file", func(t *testing.T, root string) {
			write(t, root, "calc/abs_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {}\n")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := withheldCopy(t)
			c.edit(t, ws.Root)
			if c.fix {
				write(t, ws.Root, "calc/calc.go", calcGo)
			}
			res := score(t, tk, ws, o)
			if want := map[bool]float64{true: 1, false: 0}[c.fix]; res.Reward != want {
				t.Errorf("reward %v (%s), want %v", res.Reward, res.Reason, want)
			}
		})
	}
}

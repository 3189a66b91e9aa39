package withhold

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
)

// issueCases are failing tests in the styles repositories write them: each expects 4242
// (or "HIDDEN-hello") from the buggy code, given 20 and 22. The issue text at hint level 1
// is their output as synth records it (go test -json; pytest's JUnit report), a "leaks"
// line saying whether the expected value shows there.
var issueCases = map[string]string{
	"go_errorf_want": `
-- leaks --
yes
-- kind --
go
-- ids --
example.com/m TestAdd
-- m_test.go --
package m

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(20, 22); got != 4242 {
		t.Errorf("Add(20, 22) = %d, want %d", got, 4242)
	}
}

func TestOther(t *testing.T) {}
`,
	"go_table": `
-- leaks --
yes
-- kind --
go
-- ids --
example.com/m TestAdd
-- m_test.go --
package m

import "testing"

var addTests = []struct{ a, b, want int }{{20, 22, 4242}}

func TestAdd(t *testing.T) {
	for _, tt := range addTests {
		if got := Add(tt.a, tt.b); got != tt.want {
			t.Errorf("Add(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestOther(t *testing.T) {}
`,
	"go_string": `
-- leaks --
yes
-- kind --
go
-- ids --
example.com/m TestGreet
-- m_test.go --
package m

import "testing"

func TestGreet(t *testing.T) {
	if got, want := Greet("x"), "HIDDEN-hello"; got != want {
		t.Errorf("Greet(%q) = %q, want %q", "x", got, want)
	}
}

func TestOther(t *testing.T) {}
`,
	"go_golden": `
-- leaks --
yes
-- kind --
go
-- ids --
example.com/m TestGreet
-- m_test.go --
package m

import (
	"os"
	"strings"
	"testing"
)

func TestGreet(t *testing.T) {
	want, _ := os.ReadFile("testdata/greet.golden")
	if got := Greet("x"); got != strings.TrimSpace(string(want)) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOther(t *testing.T) {}
-- testdata/greet.golden --
HIDDEN-hello
`,
	"go_expected_actual": `
-- leaks --
yes
-- kind --
go
-- ids --
example.com/m TestAdd
-- m_test.go --
package m

import "testing"

func equal(t *testing.T, expected, actual int) {
	t.Helper()
	if expected != actual {
		t.Errorf("Not equal:\n\texpected: %d\n\tactual  : %d", expected, actual)
	}
}

func TestAdd(t *testing.T) { equal(t, 4242, Add(20, 22)) }

func TestOther(t *testing.T) {}
`,
	"go_subtest_name": `
-- leaks --
yes
-- kind --
go
-- ids --
example.com/m TestAdd
-- m_test.go --
package m

import "testing"

func TestAdd(t *testing.T) {
	t.Run("20 plus 22 is 4242", func(t *testing.T) {
		if Add(20, 22) != 4242 {
			t.Fail()
		}
	})
}

func TestOther(t *testing.T) {}
`,
	"go_fatal_no_want": `
-- leaks --
no
-- kind --
go
-- ids --
example.com/m TestAdd
-- m_test.go --
package m

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(20, 22); got != 4242 {
		t.Fatalf("Add(20, 22) = %d", got)
	}
}

func TestOther(t *testing.T) {}
`,
	"py_assert": `
-- leaks --
yes
-- kind --
python
-- ids --
test_calc.py test_add
-- test_calc.py --
from calc import add


def test_add():
    assert add(20, 22) == 4242


def test_other():
    assert True
`,
	"py_parametrize": `
-- leaks --
yes
-- kind --
python
-- ids --
test_calc.py test_add[20-22-4242]
-- test_calc.py --
import pytest

from calc import add


@pytest.mark.parametrize("a,b,want", [(20, 22, 4242)])
def test_add(a, b, want):
    assert add(a, b) == want


def test_other():
    assert True
`,
	"py_unittest": `
-- leaks --
yes
-- kind --
python
-- ids --
test_calc.py TestCalc::test_add
-- test_calc.py --
import unittest

from calc import add


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(20, 22), 4242)

    def test_other(self):
        pass
`,
	"py_string": `
-- leaks --
yes
-- kind --
python
-- ids --
test_calc.py test_greet
-- test_calc.py --
from calc import greet


def test_greet():
    expected = "HIDDEN-hello"
    assert greet("x") == expected


def test_other():
    assert True
`,
	"py_helper_module": `
-- leaks --
yes
-- kind --
python
-- ids --
test_calc.py test_add
-- testcases/__init__.py --
-- testcases/expected.py --
WANT = 4242
-- test_calc.py --
from calc import add
from testcases.expected import WANT


def test_add():
    assert add(20, 22) == WANT


def test_other():
    assert True
`,
	"py_data_file": `
-- leaks --
yes
-- kind --
python
-- ids --
test_calc.py test_add
-- testdata/expected.txt --
4242
-- test_calc.py --
import pathlib

from calc import add


def test_add():
    want = int((pathlib.Path(__file__).parent / "testdata" / "expected.txt").read_text())
    assert add(20, 22) == want


def test_other():
    assert True
`,
}

const (
	goCode = "-- go.mod --\nmodule example.com/m\n\ngo 1.22\n-- m.go --\npackage m\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Greet(s string) string { return \"hi \" + s }\n"
	pyCode = "-- calc.py --\ndef add(a, b):\n    return a - b\n\n\ndef greet(s):\n    return 'hi ' + s\n"
)

// TestIssueRedacted measures, with real go test and pytest, whether the issue text at hint
// level 1 shows what the withheld tests expect, and checks that Redact takes it out.
func TestIssueRedacted(t *testing.T) {
	needPy := func(t *testing.T) {
		if exec.Command("python3", "-c", "import pytest").Run() != nil {
			t.Skip("python3 with pytest is not installed")
		}
	}
	leaked, total := 0, 0
	for _, name := range sortedKeys(issueCases) {
		t.Run(name, func(t *testing.T) {
			ar := txtar.Parse([]byte(issueCases[name]))
			meta := map[string]string{}
			for _, f := range ar.Files {
				meta[f.Name] = string(f.Data)
			}
			kind := strings.TrimSpace(meta["kind"])
			code := goCode
			if kind == env.KindPython {
				needPy(t)
				code = pyCode
			}
			ar.Files = append(ar.Files, txtar.Parse([]byte(code)).Files...)
			root := t.TempDir()
			for _, f := range ar.Files {
				switch f.Name {
				case "kind", "ids", "leaks":
					continue
				}
				p := filepath.Join(root, f.Name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ids := lines(meta["ids"])
			text := levelOne(t, root, kind, ids)
			shows := strings.Contains(text, "4242") || strings.Contains(text, "HIDDEN")
			total++
			if shows {
				leaked++
			}
			if want := strings.TrimSpace(meta["leaks"]) == "yes"; shows != want {
				t.Errorf("the issue shows the expected value: %v, want %v:\n%s", shows, want, text)
			}
			res, err := Tests(root, &task.Task{ID: "t", FailToPass: ids, Test: task.TestSpec{Kind: kind}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Withheld) != len(ids) {
				t.Fatalf("withheld %q, kept %q", res.Withheld, res.Kept)
			}
			got := res.Redact(text)
			t.Logf("issue:\n%s\nredacted:\n%s", text, got)
			if strings.Contains(got, "4242") || strings.Contains(got, "HIDDEN") {
				t.Errorf("the redacted issue still shows the expected value:\n%s", got)
			}
			if !strings.Contains(got, "Some tests fail") {
				t.Errorf("the redacted issue lost its text:\n%s", got)
			}
		})
	}
	t.Logf("the hint level 1 issue showed the expected value in %d of %d styles before redaction", leaked, total)
}

// levelOne is the issue text synth writes at hint level 1 (synth.levelOneWith) for ids,
// failing on the tree at root.
func levelOne(t *testing.T, root, kind string, ids []string) string {
	t.Helper()
	var res env.Results
	if kind == env.KindGo {
		cmd := exec.Command("go", "test", "-json", "./...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		out, _ := cmd.Output()
		res = env.ParseGoTestJSON(out)
	} else {
		report := filepath.Join(t.TempDir(), "report.xml")
		cmd := exec.Command("python3", append([]string{"-m", "pytest", "--junitxml=" + report}, env.PytestArgs([]string{"test_calc.py"}, nil)...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		cmd.Run()
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		res = env.ParseJUnitXML(b)
	}
	var b strings.Builder
	b.WriteString("Some tests fail. Make them pass without changing the tests.\n")
	for _, id := range ids {
		if res.Tests[id].Status != env.Fail {
			t.Fatalf("%s: %+v, want a failure (%v)", id, res.Tests[id], res.Tests)
		}
		pkg, name := env.SplitID(id)
		rerun := fmt.Sprintf("go test -run '^%s$' %s", name, pkg)
		if kind == env.KindPython {
			rerun = "python -m pytest " + pkg + "::" + name
		}
		fmt.Fprintf(&b, "\n$ %s\n%s", rerun, strings.TrimRight(res.Output[id], "\n"))
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return lines(strings.Join(out, "\n"))
}

// Redact's token rules: a number alone or between underscores, not inside a longer number
// or a name; a string anywhere.
func TestRedact(t *testing.T) {
	r := &Result{}
	r.addLiteral("5", "")
	r.addLiteral(`"hello world"`, "hello world")
	for in, want := range map[string]string{
		"got 3, want 5":             "got 3, want …",
		"TestAdd/case_5_ok":         "TestAdd/case_…_ok",
		"15 0.5 5.0 v5 x5y":         "15 0.5 5.0 v5 x5y",
		`want "hello world", -5`:    "want …, -…",
		"m_test.go:5: hello worlds": "m_test.go:…: hello worlds",
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (*Result)(nil).Redact("5"); got != "5" {
		t.Errorf("a nil result redacted %q", got)
	}
}

package withhold

import (
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/frognano/frognano/finetune/task"
)

// leakCases are trees an adversarial review tried against withhold: each marks what a
// withheld test asserts with HIDDEN. After Tests, no file may still hold it unless the
// result names the leak (a test in Kept, a declaration in Shared); a case with a
// "finding" section is a leak still open, skipped with it.
var leakCases = map[string]string{
	// (a) A table a withheld and a kept test both use stays (the kept test needs it), and so
	// do its values: Shared names it.
	"go_shared_table": `
-- kind --
go
-- ids --
example.com/m TestAdd
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- m_test.go --
package m

import "testing"

var addTests = []struct{ a, b, want int }{
	{2, 3, 5}, // HIDDEN
}

func TestAdd(t *testing.T) {
	for _, tt := range addTests {
		if Add(tt.a, tt.b) != tt.want {
			t.Error(tt)
		}
	}
}

func TestCount(t *testing.T) {
	if len(addTests) == 0 {
		t.Fatal()
	}
}
`,
	// (a) A table only the withheld test uses, declared in a var block with one a kept test
	// uses: the block stays whole.
	"go_table_in_block": `
-- kind --
go
-- ids --
example.com/m TestAdd
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- m_test.go --
package m

import "testing"

var (
	addTests = []struct{ a, b, want int }{
		{2, 3, 5}, // HIDDEN
	}
	limit = 3
)

func TestAdd(t *testing.T) {
	for _, tt := range addTests {
		if Add(tt.a, tt.b) != tt.want {
			t.Error(tt)
		}
	}
}

func TestLimit(t *testing.T) {
	if limit != 3 {
		t.Fatal()
	}
}
`,
	// (b) Golden files named by filepath.Join of literals and by a concatenation.
	"go_golden_join": `
-- kind --
go
-- ids --
example.com/m TestRender
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Render() string { return "" }
-- m_test.go --
package m

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestRender(t *testing.T) {
	a, _ := os.ReadFile(filepath.Join("testdata", "a.golden"))
	b, _ := os.ReadFile("testdata/" + "b.golden")
	if Render() != string(a)+string(b) {
		t.Fatal("render")
	}
}

func TestOther(t *testing.T) {
	if _, err := os.ReadFile(filepath.Join("testdata", "kept.txt")); err != nil {
		t.Fatal(err)
	}
}
-- testdata/a.golden --
HIDDEN-a
-- testdata/b.golden --
HIDDEN-b
-- testdata/kept.txt --
kept
`,
	// (b) A golden file named after the test (t.Name()), or from a table's field.
	"go_golden_dynamic": `
-- finding --
a golden file whose name is computed at run time (t.Name()+".golden", a table's field) is not found: it stays, unnamed in the result
-- kind --
go
-- ids --
example.com/m TestRender
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Render() string { return "" }
-- m_test.go --
package m

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestRender(t *testing.T) {
	want, _ := os.ReadFile(filepath.Join("testdata", t.Name()+".golden"))
	if Render() != string(want) {
		t.Fatal("render")
	}
}
-- testdata/TestRender.golden --
HIDDEN
`,
	// (b) A file embedded into a variable only the withheld test uses goes with it.
	"go_golden_embed": `
-- kind --
go
-- ids --
example.com/m TestRender
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Render() string { return "" }
-- m_test.go --
package m

import (
	_ "embed"
	"testing"
)

//go:embed testdata/render.golden
var want string

func TestRender(t *testing.T) {
	if Render() != want {
		t.Fatal("render")
	}
}
-- testdata/render.golden --
HIDDEN
`,
	// (c) A subtest's id: Go's FAIL_TO_PASS are top-level tests (env folds subtests into
	// them), but one named TestX/case stays and is named in Kept.
	"go_subtest": `
-- kind --
go
-- ids --
example.com/m TestAdd/neg
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- m_test.go --
package m

import "testing"

func TestAdd(t *testing.T) {
	t.Run("neg", func(t *testing.T) {
		if Add(-1, -2) != -3 { // HIDDEN
			t.Fatal()
		}
	})
}
`,
	// (d) Python: module-level data a withheld and a kept test share: Shared names it.
	"py_shared": `
-- kind --
python
-- ids --
test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
from calc import add

CASES = [(2, 3, 5)]  # HIDDEN


def test_add():
    for a, b, want in CASES:
        assert add(a, b) == want


def test_count():
    assert len(CASES) == 1
`,
	// (d) A conftest.py fixture only the withheld test uses.
	"py_conftest": `
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/conftest.py --
import pytest


@pytest.fixture
def expected_sum():
    return 5  # HIDDEN
-- tests/test_calc.py --
from calc import add


def test_add(expected_sum):
    assert add(2, 3) == expected_sum


def test_other():
    assert True
`,
	// (d) A class attribute and a helper method of a test class only the withheld method uses go.
	"py_class_attr": `
-- kind --
python
-- ids --
test_calc.py TestAdd::test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
from calc import add


class TestAdd:
    CASES = [(2, 3, 5)]  # HIDDEN

    def want(self):
        return 5  # HIDDEN

    def test_add(self):
        for a, b, want in self.CASES:
            assert add(a, b) == want == self.want()

    def test_other(self):
        assert True
`,
	// (d) A module-level helper class only the withheld test uses goes.
	"py_helper_class": `
-- kind --
python
-- ids --
test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
from calc import add


class Expected:
    SUM = 5  # HIDDEN


def test_add():
    assert add(2, 3) == Expected.SUM


def test_other():
    assert True
`,
	// (d) A data file only the withheld test reads.
	"py_data_file": `
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/data/expected.json --
{"sum": 5, "note": "HIDDEN"}
-- tests/test_calc.py --
import json
import pathlib

from calc import add


def test_add():
    want = json.loads((pathlib.Path(__file__).parent / "data" / "expected.json").read_text())
    assert add(2, 3) == want["sum"]


def test_other():
    assert True
`,
	// (d) A doctest: its id names no function pytest's file holds, so it stays, named.
	"py_doctest": `
-- kind --
python
-- ids --
calc.py calc.add
-- calc.py --
def add(a, b):
    """
    >>> add(2, 3)
    5

    HIDDEN
    """
    return a - b
`,
	// (e) Bytecode of the test file committed with the tree (the export holds tracked files
	// only): it holds the removed test's constants, and goes.
	"py_pycache": `
-- kind --
python
-- ids --
test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
from calc import add


def test_add():
    assert add(2, 3) == 5


def test_other():
    assert True
-- __pycache__/test_calc.cpython-312-pytest-8.0.0.pyc --
bytecode with the constant HIDDEN
`,
}

// Second review's cases (attack2).
var leakCases2 = map[string]string{
	// (f) A suite: the test function runs the methods of a type by reflection (as
	// testify's suite.Run does), so nothing names the methods that assert: the type and its
	// methods only the withheld test uses must go with it.
	"go_suite_methods": `
-- kind --
go
-- ids --
example.com/m TestCalcSuite
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- m_test.go --
package m

import (
	"reflect"
	"strings"
	"testing"
)

type calcSuite struct{ t *testing.T }

func (s *calcSuite) TestAdd() {
	if Add(2, 3) != 5 { // HIDDEN
		s.t.Fatal()
	}
}

func (s *calcSuite) TestAddNeg() {
	if Add(-1, -2) != -3 { // HIDDEN
		s.t.Fatal()
	}
}

func runSuite(t *testing.T, s any) {
	v := reflect.ValueOf(s)
	for i := 0; i < v.NumMethod(); i++ {
		if strings.HasPrefix(v.Type().Method(i).Name, "Test") {
			v.Method(i).Call(nil)
		}
	}
}

func TestCalcSuite(t *testing.T) { runSuite(t, &calcSuite{t}) }

func TestOther(t *testing.T) {}
`,
	// (f) The same with a type only withheld code uses, whose value a kept test never
	// makes, but a kept type of the same file has a method of the same name.
	"go_suite_two_types": `
-- kind --
go
-- ids --
example.com/m TestCalcSuite
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- m_test.go --
package m

import "testing"

type calcSuite struct{ t *testing.T }

func (s calcSuite) check() {
	if Add(2, 3) != 5 { // HIDDEN
		s.t.Fatal()
	}
}

type otherSuite struct{ t *testing.T }

func (s otherSuite) check() {}

func TestCalcSuite(t *testing.T) { calcSuite{t}.check() }

func TestOther(t *testing.T) { otherSuite{t}.check() }
`,
	// (g) A fixture of the test module named by its decorator (name=), not its function's
	// name: the withheld test's parameter names it.
	"py_fixture_named": `
-- kind --
python
-- ids --
test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
import pytest

from calc import add


@pytest.fixture(name="expected_sum")
def _expected_sum():
    return 5  # HIDDEN


def test_add(expected_sum):
    assert add(2, 3) == expected_sum


def test_other():
    assert True
`,
	// (g) pytest_generate_tests parametrizes the withheld test by its argument's name.
	"py_generate_tests": `
-- finding --
pytest_generate_tests (a hook pytest calls by name) parametrizing only the withheld test stays, unnamed in the result: a hook serves every test of the module, and what it gives whom is known only at run time
-- kind --
python
-- ids --
test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
from calc import add


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", [(2, 3, 5)])  # HIDDEN


def test_add(case):
    a, b, want = case
    assert add(a, b) == want


def test_other():
    assert True
`,
	// (g) An attribute of the base class (not a test class) of the class a withheld method
	// is in, only that method uses.
	"py_base_class_attr": `
-- kind --
python
-- ids --
test_calc.py TestAdd::test_add
-- calc.py --
def add(a, b):
    return a - b
-- test_calc.py --
from calc import add


class Cases:
    WANT = 5  # HIDDEN
    NAME = "add"


class TestAdd(Cases):
    def test_add(self):
        assert add(2, 3) == self.WANT

    def test_name(self):
        assert self.NAME == "add"
`,
	// (h) Cases in a helper module of the tests only the withheld test imports.
	"py_helper_module": `
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/cases.py --
ADD = [(2, 3, 5)]  # HIDDEN
-- tests/test_calc.py --
from calc import add
from tests.cases import ADD


def test_add():
    for a, b, want in ADD:
        assert add(a, b) == want


def test_other():
    assert True
`,
	// (h) The same imported relatively from the tests' package, and as a module.
	"py_helper_module_relative": `
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/__init__.py --
-- tests/cases.py --
ADD = [(2, 3, 5)]  # HIDDEN
-- tests/more.py --
WANT = 5  # HIDDEN
-- tests/test_calc.py --
from calc import add
from . import more
from .cases import ADD


def test_add():
    for a, b, want in ADD:
        assert add(a, b) == want == more.WANT


def test_other():
    assert True
`,
	// (h) A helper module's cases a kept test imports too stay, named in Shared.
	"py_helper_module_shared": `
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/cases.py --
ADD = [(2, 3, 5)]  # HIDDEN
-- tests/test_calc.py --
from calc import add
from cases import ADD


def test_add():
    for a, b, want in ADD:
        assert add(a, b) == want


def test_count():
    assert len(ADD) == 1
`,
	// (d) A data file a kept test reads too stays, named in Shared.
	"py_data_file_shared": `
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/data/expected.json --
{"sum": 5, "note": "HIDDEN"}
-- tests/test_calc.py --
import json
import pathlib

from calc import add


def test_add():
    want = json.loads((pathlib.Path(__file__).parent / "data" / "expected.json").read_text())
    assert add(2, 3) == want["sum"]


def test_exists():
    assert (pathlib.Path(__file__).parent / "data" / "expected.json").exists()
`,
	// (d) A data file whose name the withheld test computes.
	"py_data_file_dynamic": `
-- finding --
a data file whose name is computed at run time (f"{name}.json", a parametrized case's field) is not found: it stays, unnamed in the result
-- kind --
python
-- ids --
tests/test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- tests/data/test_add.json --
{"sum": 5, "note": "HIDDEN"}
-- tests/test_calc.py --
import json
import pathlib

from calc import add


def test_add(request):
    name = request.node.name
    want = json.loads((pathlib.Path(__file__).parent / "data" / f"{name}.json").read_text())
    assert add(2, 3) == want["sum"]


def test_other():
    assert True
`,
	// (h) A helper module outside a folder of the tests (the repository's root).
	"py_helper_module_root": `
-- finding --
a helper module outside a folder named test… or …tests (cases.py at the root, beside the code under test) is not told from the code under test: it stays, unnamed in the result
-- kind --
python
-- ids --
test_calc.py test_add
-- calc.py --
def add(a, b):
    return a - b
-- cases.py --
ADD = [(2, 3, 5)]  # HIDDEN
-- test_calc.py --
from calc import add
from cases import ADD


def test_add():
    for a, b, want in ADD:
        assert add(a, b) == want


def test_other():
    assert True
`,
	// (h) Cases in a non-test file of a fixtures package only the withheld test uses.
	"go_fixture_package": `
-- kind --
go
-- ids --
example.com/m TestAdd
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- internal/cases/cases.go --
package cases

var Add = [][3]int{{2, 3, 5}} // HIDDEN
-- m_test.go --
package m

import (
	"testing"

	"example.com/m/internal/cases"
)

func TestAdd(t *testing.T) {
	for _, c := range cases.Add {
		if Add(c[0], c[1]) != c[2] {
			t.Fatal(c)
		}
	}
}

func TestOther(t *testing.T) {}
`,
	// A fixtures package's table a kept test also ranges over stays: Shared names it.
	"go_fixture_package_shared": `
-- kind --
go
-- ids --
example.com/m TestAdd
-- go.mod --
module example.com/m

go 1.22
-- m.go --
package m

func Add(a, b int) int { return a - b }
-- internal/cases/cases.go --
package cases

var Add = [][3]int{{2, 3, 5}} // HIDDEN
-- m_test.go --
package m

import (
	"testing"

	"example.com/m/internal/cases"
)

func TestAdd(t *testing.T) {
	for _, c := range cases.Add {
		if Add(c[0], c[1]) != c[2] {
			t.Fatal(c)
		}
	}
}

func TestOther(t *testing.T) {
	if len(cases.Add) == 0 {
		t.Fatal()
	}
}
`,
}

// TestLeaks runs leakCases.
func TestLeaks(t *testing.T) {
	cases := map[string]string{}
	maps.Copy(cases, leakCases)
	maps.Copy(cases, leakCases2)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ar := txtar.Parse([]byte(cases[name]))
			root := t.TempDir()
			meta := map[string]string{}
			for _, f := range ar.Files {
				switch f.Name {
				case "kind", "ids", "finding":
					meta[f.Name] = string(f.Data)
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
			tk := &task.Task{ID: "t", FailToPass: lines(meta["ids"]), Test: task.TestSpec{Kind: strings.TrimSpace(meta["kind"])}}
			res, err := Tests(root, tk)
			if err != nil {
				t.Fatal(err)
			}
			var leaks []string
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), "HIDDEN") {
						rel, _ := filepath.Rel(root, p)
						leaks = append(leaks, filepath.ToSlash(rel))
					}
				}
				return nil
			})
			t.Logf("withheld %q, kept %q, files %q, shared %q; HIDDEN still in %q", res.Withheld, res.Kept, res.Files, res.Shared, leaks)
			if len(leaks) == 0 || len(res.Kept) > 0 || len(res.Shared) > 0 {
				return
			}
			if f := strings.TrimSpace(meta["finding"]); f != "" {
				t.Skip("finding: " + f)
			}
			t.Errorf("HIDDEN still in %q, and the result names no leak", leaks)
		})
	}
}

package env

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/internal/fixture"
)

func needPytest(t *testing.T) {
	t.Helper()
	if exec.Command("python3", "-c", "import pytest").Run() != nil {
		t.Skip("python3 with pytest is not installed")
	}
}

func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
}

// pyMixed is a Python project with good tests, a flaky one, a failing one and one that hangs.
var pyMixed = map[string]string{
	"pyproject.toml":     fixture.PyProject("mixed"),
	"calc/__init__.py":   "",
	"calc/calc.py":       fixture.PyCalc,
	"tests/test_calc.py": fixture.PyCalcTest,
	"tests/test_flaky.py": `import os


def test_flaky():
    """Fails the first time it runs in a copy, and passes after."""
    seen = os.path.exists("count")
    open("count", "a").write("x")
    assert seen, "first run"


def test_steady():
    pass
`,
	"tests/test_broken.py": "def test_always_fails():\n    assert False, 'always'\n\n\ndef test_fine():\n    pass\n",
	"tests/test_hang.py":   "import time\n\n\ndef test_hang():\n    time.sleep(3600)\n\n\ndef test_after():\n    pass\n",
}

func TestOpenPython(t *testing.T) {
	needPytest(t)
	repo := fixture.Repo(t, pyMixed)
	opts := testOptions(t)
	opts.PackageTimeout = 6 * time.Second // pytest's whole run, its start in the sandbox included
	s, err := Open(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	want := map[string]string{
		"tests/test_calc.py test_absolute":         Pass,
		"tests/test_calc.py TestScale::test_scale": Pass,
		"tests/test_flaky.py test_flaky":           Flaky,
		"tests/test_flaky.py test_steady":          Pass,
		"tests/test_broken.py test_always_fails":   Fail,
		"tests/test_broken.py test_fine":           Pass,
		"tests/test_hang.py test_hang":             Hung,
		"tests/test_hang.py test_after":            Pass,
	}
	for id, st := range want {
		if got := e.Tests[id].Status; got != st {
			t.Errorf("%s: %q, want %q", id, got, st)
		}
	}
	if e.Kind != KindPython || e.Runner != RunnerPytest || !reflect.DeepEqual(e.Sources, []string{"calc/__init__.py", "calc/calc.py"}) {
		t.Errorf("kind %q runner %q sources %v", e.Kind, e.Runner, e.Sources)
	}
	s2, err := Open(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !s2.Env.Cached || len(s2.Env.Tests) != len(e.Tests) {
		t.Errorf("second Open: cached %v, %d tests", s2.Env.Cached, len(s2.Env.Tests))
	}
}

// The repository's own virtual environment is the one pytest runs from: here a venv whose
// only difference is a module the tests import, so the suite passes only under it.
func TestOpenPythonUsesTheVenv(t *testing.T) {
	needPytest(t)
	repo := fixture.Repo(t, map[string]string{
		".gitignore":         ".venv/\n",
		"setup.py":           "",
		"tests/test_venv.py": "import onlyinvenv\n\n\ndef test_venv():\n    assert onlyinvenv.X == 1\n",
	})
	venv := filepath.Join(repo, ".venv")
	if out, err := exec.Command("python3", "-m", "venv", "--system-site-packages", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v %s", err, out)
	}
	site, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if err != nil || len(site) != 1 {
		t.Fatalf("site-packages: %v %v", site, err)
	}
	writeFile(t, filepath.Join(site[0], "onlyinvenv.py"), "X = 1\n")
	opts := testOptions(t)
	opts.PackageTimeout = 20 * time.Second
	s, err := Open(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Detection.Python != filepath.Join(s.Checkout.Repo, ".venv", "bin", "python") {
		t.Errorf("python %q", s.Detection.Python)
	}
	if got := s.Env.Tests["tests/test_venv.py test_venv"].Status; got != Pass {
		t.Errorf("test_venv: %q (%v)", got, s.Env.Tests)
	}
}

func TestOpenNodeTest(t *testing.T) {
	needNode(t)
	repo := fixture.Repo(t, map[string]string{
		"package.json":         `{"name":"calc","version":"1.0.0","scripts":{"test":"node --test"}}`,
		"src/calc.js":          fixture.JSCalc,
		"test/calc.test.js":    fixture.JSCalcTest,
		"test/broken.test.js":  "const test = require('node:test');\ntest('always fails', () => { throw new Error('always'); });\ntest('fine', () => {});\n",
		"test/flaky.test.js":   "const test = require('node:test');\nconst fs = require('node:fs');\ntest('flaky', () => {\n  const seen = fs.existsSync('count');\n  fs.appendFileSync('count', 'x');\n  if (!seen) throw new Error('first run');\n});\n",
		"test/hang.test.js":    "const test = require('node:test');\ntest('hang', () => new Promise(() => { setInterval(() => {}, 1000); }));\n",
		"scripts/release.js":   "console.log('not a source');\n",
		"vitest.config.mjs":    "export default {};\n",
		"src/types.d.ts":       "export type X = number;\n",
		"src/calc.spec.mjs":    "// a test by its name\n",
		"test/helpers/util.js": "module.exports = {};\n",
	})
	opts := testOptions(t)
	opts.PackageTimeout = 3 * time.Second
	s, err := Open(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := s.Env
	want := map[string]string{
		"test/calc.test.js absolute":       Pass,
		"test/calc.test.js scale":          Pass,
		"test/broken.test.js always fails": Fail,
		"test/broken.test.js fine":         Pass,
		"test/flaky.test.js flaky":         Flaky,
	}
	for id, st := range want {
		if got := e.Tests[id].Status; got != st {
			t.Errorf("%s: %q, want %q", id, got, st)
		}
	}
	// Node 20 stops the whole file at the time limit (reported as the file, "*"); later
	// versions may name the test.
	if e.Tests["test/hang.test.js hang"].Status != Hung && e.Tests["test/hang.test.js *"].Status != Hung {
		t.Errorf("the hanging test was not found: %v", e.Tests)
	}
	if !reflect.DeepEqual(e.Sources, []string{"src/calc.js"}) {
		t.Errorf("sources %v", e.Sources)
	}
}

func TestOpenRefusesScripts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  error
		words string
	}{
		{"python without tests", map[string]string{"pyproject.toml": fixture.PyProject("x"), "x/a.py": "A = 1\n"}, ErrNoTests, ""},
		{"vitest without node_modules", map[string]string{"package.json": `{"scripts":{"test":"vitest"}}`}, ErrUnsupported, "npm install"},
		{"mocha", map[string]string{"package.json": `{"scripts":{"test":"mocha"}}`}, ErrUnsupported, "mocha"},
		{"config format", map[string]string{"pyproject.toml": fixture.PyProject("x"), ConfigFile: `{"version":1,"command":"make test","format":"go-test-json"}`}, ErrUnsupported, "Go module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == ErrNoTests {
				needPytest(t)
			}
			opts := testOptions(t)
			opts.PackageTimeout = 30 * time.Second
			s, err := Open(ctx, fixture.Repo(t, tc.files), opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("err = %v, want %v with %q", err, tc.want, tc.words)
			}
		})
	}
}

// A Python repository's own command (junit-xml on $FROGNANO_RESULTS) overrides pytest's
// detection.
func TestConfigCommandPython(t *testing.T) {
	needPytest(t)
	repo := fixture.Repo(t, map[string]string{
		"pyproject.toml":      fixture.PyProject("cfg"),
		"calc/__init__.py":    "",
		"calc/calc.py":        fixture.PyCalc,
		"tests/test_calc.py":  fixture.PyCalcTest,
		"other/test_other.py": "def test_other():\n    pass\n",
		ConfigFile:            `{"version":1,"command":"python3 -m pytest -p no:cacheprovider -o junit_family=xunit1 --junitxml=$FROGNANO_RESULTS tests","format":"junit-xml"}`,
	})
	s, err := Open(context.Background(), repo, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Env.Kind != KindPython || s.Env.Runner != RunnerCommand {
		t.Errorf("kind %q runner %q", s.Env.Kind, s.Env.Runner)
	}
	if _, ok := s.Env.Tests["other/test_other.py test_other"]; ok {
		t.Error("the configured command was not the one run")
	}
	if s.Env.Tests["tests/test_calc.py test_sub"].Status != Pass {
		t.Errorf("tests %v", s.Env.Tests)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The parsers on reports as the runners wrote them (vitest 2's json reporter, pytest 9's
// xunit1 JUnit XML and -v talk after an interrupt).
func TestParseReports(t *testing.T) {
	jest := `noise before {"numTotalTests":4,"testResults":[{"assertionResults":[
{"ancestorTitles":[],"fullName":"add","status":"passed","title":"add","duration":1.4,"failureMessages":[]},
{"ancestorTitles":[],"fullName":"bad one","status":"failed","title":"bad one","duration":43.5,"failureMessages":["AssertionError: expected 2 to be 3"]},
{"ancestorTitles":["grp"],"fullName":"grp inner","status":"passed","title":"inner","duration":0.2,"failureMessages":[]},
{"ancestorTitles":[],"fullName":"hang","status":"failed","title":"hang","duration":1002,"failureMessages":["Error: Test timed out in 1000ms."]},
{"ancestorTitles":[],"fullName":"later","status":"pending","title":"later","duration":0,"failureMessages":[]}],
"status":"failed","message":"","name":"/r/t/calc.test.mjs"},
{"assertionResults":[],"status":"failed","message":"SyntaxError: Unexpected token","name":"/r/t/broken.test.ts"}]}`
	r := ParseJestJSON([]byte(jest), "/r")
	want := map[string]Result{
		"t/calc.test.mjs add":         {Pass, 0.0014},
		"t/calc.test.mjs bad one":     {Fail, 0.0435},
		"t/calc.test.mjs grp > inner": {Pass, 0.0002},
		"t/calc.test.mjs hang":        {Hung, 1.002},
		"t/calc.test.mjs later":       {Skip, 0},
	}
	if !reflect.DeepEqual(r.Tests, want) {
		t.Errorf("jest: %v, want %v", r.Tests, want)
	}
	if !strings.Contains(r.Broken["t/broken.test.ts"], "SyntaxError") || !strings.Contains(r.Output["t/calc.test.mjs bad one"], "expected 2") {
		t.Errorf("jest: broken %v output %v", r.Broken, r.Output)
	}

	junit := `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" tests="4">` +
		`<testcase classname="tests.test_calc" name="test_add" file="tests/test_calc.py" line="2" time="0.010" />` +
		`<testcase classname="tests.test_calc.TestX" name="test_y" file="tests/test_calc.py" line="5" time="0.001"><failure message="assert 2 == 3">E  assert 2 == 3</failure></testcase>` +
		`<testcase classname="tests.test_calc" name="test_p[x y]" file="tests/test_calc.py" line="7" time="0.001"><skipped message="no"/></testcase>` +
		`<testcase time="0.000" /></testsuite></testsuites>`
	r = ParseJUnitXML([]byte(junit))
	want = map[string]Result{
		"tests/test_calc.py test_add":      {Pass, 0.01},
		"tests/test_calc.py TestX::test_y": {Fail, 0.001},
		"tests/test_calc.py test_p[x y]":   {Skip, 0.001},
	}
	if !reflect.DeepEqual(r.Tests, want) || !strings.Contains(r.Output["tests/test_calc.py TestX::test_y"], "assert 2 == 3") {
		t.Errorf("junit: %v %v, want %v", r.Tests, r.Output, want)
	}
	if got := nodeID("tests/test_calc.py test_p[x y]"); got != "tests/test_calc.py::test_p[x y]" {
		t.Errorf("nodeID: %q", got)
	}

	talk := `collecting ... collected 6 items

tests/test_calc.py::test_add PASSED                                      [ 16%]
tests/test_calc.py::test_p[x y] PASSED                                   [ 66%]
tests/test_calc.py::test_hang 

=================================== FAILURES ===================================
FAILED tests/test_calc.py::TestX::test_y - assert 2 == 3
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!! KeyboardInterrupt !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
`
	if got := pytestHung([]byte(talk)); got != "tests/test_calc.py test_hang" {
		t.Errorf("pytestHung: %q", got)
	}
	if got := pytestHung([]byte(strings.Replace(talk, "KeyboardInterrupt", "", -1))); got != "" {
		t.Errorf("pytestHung without an interrupt: %q", got)
	}

	events := `{"frognano":1,"status":"pass","file":"test/a.test.js","name":"add works","ms":12}
{"frognano":1,"status":"fail","file":"test/a.test.js","name":"bad","ms":2,"message":"5 !== 6"}
{"frognano":1,"status":"fail","file":"test/h.test.js","name":"*","ms":2000,"timeout":true}
{"frognano":1,"status":"skip","file":"test/a.test.js","name":"later"}
{"status":"pass","file":"test/a.test.js","name":"not ours"}
`
	r = ParseNodeEvents([]byte(events))
	want = map[string]Result{
		"test/a.test.js add works": {Pass, 0.012},
		"test/a.test.js bad":       {Fail, 0.002},
		"test/h.test.js *":         {Hung, 2},
		"test/a.test.js later":     {Skip, 0},
	}
	if !reflect.DeepEqual(r.Tests, want) || r.Broken["test/h.test.js"] != "timed out" {
		t.Errorf("node: %v %v, want %v", r.Tests, r.Broken, want)
	}
}

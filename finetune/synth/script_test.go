package synth

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
)

// pyStats imports calc: its test is one the tests of calc's importers miss.
const pyStats = `from calc.calc import larger


def spread(a, b):
    """The larger minus the smaller of a and b."""
    return larger(a, b) - larger(-a, -b) * -1
`

// pyMore has mutants screening must sort out: one that loops forever.
const pyMore = `def digits(n):
    """The number of decimal digits of n > 0."""
    count = 0
    while n > 0:
        n //= 10
        count += 1
    return count
`

func pyRepo(t *testing.T) string {
	return fixture.Repo(t, map[string]string{
		"pyproject.toml":      fixture.PyProject("synth"),
		"calc/__init__.py":    "",
		"calc/calc.py":        fixture.PyCalc,
		"calc/more.py":        pyMore,
		"calc/stats.py":       pyStats,
		"tests/test_calc.py":  fixture.PyCalcTest,
		"tests/test_more.py":  "from calc.more import digits\n\n\ndef test_digits():\n    assert digits(120) == 3\n",
		"tests/test_stats.py": "from calc import stats\n\n\ndef test_spread():\n    assert stats.spread(2, 7) == 5\n",
		"tests/test_flaky.py": "import os\n\n\ndef test_flaky():\n    seen = os.path.exists('count')\n    open('count', 'a').write('x')\n    assert seen\n",
	})
}

func pyOptions(t *testing.T) Options {
	return Options{N: 1000, Seed: 1, StoreDir: t.TempDir(),
		Env: env.Options{PackageTimeout: 20 * time.Second, CacheDir: t.TempDir()}}
}

// TestSynthesizePython synthesizes tasks on a Python repository, then checks each on its
// own: the patch applied to the base commit makes FAIL_TO_PASS fail and keeps PASS_TO_PASS
// passing; reversed, they all pass. The user's repository is left as it was.
func TestSynthesizePython(t *testing.T) {
	t.Parallel()
	if exec.Command("python3", "-c", "import pytest").Run() != nil {
		t.Skip("python3 with pytest is not installed")
	}
	repo := pyRepo(t)
	before := gitState(t, repo)
	opts := pyOptions(t)
	opts.N = 4
	opts.CompareNaive = true
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := gitState(t, repo); after != before {
		t.Errorf("the user's repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("summary: %+v naive: %+v", *sum, *sum.Naive)
	if sum.Valid != opts.N || sum.Tests.Flaky != 1 {
		t.Errorf("valid %d (%v), flaky %d", sum.Valid, sum.ValidBy, sum.Tests.Flaky)
	}
	if !sum.Naive.Agree {
		t.Errorf("screening and the naive way disagree: %+v", *sum.Naive)
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, err := store.List()
	if err != nil || len(tasks) != sum.Valid {
		t.Fatalf("%d tasks in the store, %d valid: %v", len(tasks), sum.Valid, err)
	}
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tk := range tasks {
		level1 := ""
		for _, is := range append([]task.Issue{tk.Issue}, tk.OtherIssues...) {
			if strings.Contains(is.Text, tk.Patch) {
				t.Errorf("%s: the issue shows the patch: %+v", tk.ID, is)
			}
			if is.Level == 1 {
				level1 = is.Text
			}
		}
		if tk.Test.Kind != env.KindPython || !strings.Contains(level1, "$ python -m pytest 'tests/") {
			t.Errorf("%s: test %+v issue at level 1 %q", tk.ID, tk.Test, level1)
		}
		if strings.Contains(strings.Join(append(tk.FailToPass, tk.PassToPass...), ","), "test_flaky") {
			t.Errorf("%s: a flaky test was selected", tk.ID)
		}
		checkScriptTask(t, s, tk)
	}
}

// checkScriptTask applies the task's patch with git on a fresh copy of the base commit,
// runs its tests, then reverses it and runs them again.
func checkScriptTask(t *testing.T, s *env.Session, tk *task.Task) {
	t.Helper()
	c, err := s.Copy(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := os.WriteFile(c.Path(".task.patch"), []byte(tk.Patch), 0o644); err != nil {
		t.Fatal(err)
	}
	ids := append(append([]string(nil), tk.FailToPass...), tk.PassToPass...)
	run := func(apply string) env.Results {
		out, err := c.Run(context.Background(), apply+" && "+s.Detection.ScriptCommand(20*time.Second, 5*time.Second, ids, nil), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return s.Detection.ParseScript([]byte(out.Stdout), []byte(out.Stderr), c.WS.Root)
	}
	applied := run("git apply .task.patch")
	for _, id := range tk.FailToPass {
		if applied.Tests[id].Status == env.Pass {
			t.Errorf("%s (%s): %s passes with the patch", tk.ID, tk.Origin.Description, id)
		}
	}
	for _, id := range tk.PassToPass {
		if applied.Tests[id].Status != env.Pass {
			t.Errorf("%s (%s): %s does not pass with the patch", tk.ID, tk.Origin.Description, id)
		}
	}
	reversed := run("git apply -R .task.patch")
	for _, id := range ids {
		if reversed.Tests[id].Status != env.Pass {
			t.Errorf("%s (%s): %s does not pass with the patch reversed", tk.ID, tk.Origin.Description, id)
		}
	}
}

// TestSynthesizeNodeTest synthesizes on a JavaScript package tested by node's test runner.
func TestSynthesizeNodeTest(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	repo := fixture.Repo(t, map[string]string{
		"package.json":      `{"name":"calc","version":"1.0.0","scripts":{"test":"node --test"}}`,
		"src/calc.js":       fixture.JSCalc,
		"test/calc.test.js": fixture.JSCalcTest,
	})
	opts := pyOptions(t)
	opts.N = 4
	opts.Env.PackageTimeout = 5 * time.Second
	sum, err := Run(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %+v", *sum)
	if sum.Valid != opts.N {
		t.Errorf("valid %d (%v), rejected %v", sum.Valid, sum.ValidBy, sum.Rejected)
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	for _, tk := range tasks {
		if tk.Test.Kind != env.KindJavaScript || len(tk.FailToPass) == 0 || !strings.HasPrefix(tk.FailToPass[0], "test/calc.test.js ") {
			t.Errorf("%s: %+v %v", tk.ID, tk.Test, tk.FailToPass)
		}
	}
}

// Each operator in each language: the mutant's text where it applies, and nothing where it
// must not (outside functions, on a docstring).
func TestScriptOperators(t *testing.T) {
	t.Parallel()
	type want struct{ op, before, after string }
	for _, tc := range []struct {
		file, src string
		want      []want
		none      []string // operators that must make nothing
	}{
		{"m.py", "X = 1 if a < b else 2\n\ndef f(a, b):\n    \"\"\"Doc.\"\"\"\n    if a is not None and b not in c:\n        return 1\n    g(a, b)\n    a += 2\n    return a <= b\n", []want{
			{OpFlipComparison, "a is not None", "a is None"},
			{OpFlipComparison, "b not in c", "b in c"},
			{OpOffByOne, "a <= b", "a < b"},
			{OpFlipBoolean, "None and b", "None or b"},
			{OpDropCondition, "if a is not None and b not in c:", "if a is not None:"},
			{OpDropStatement, "    g(a, b)\n", "    pass\n"},
			{OpSwapArguments, "g(a, b)", "g(b, a)"},
			{OpChangeConstant, "a += 2", "a += 3"},
			{OpInvertEarlyRetrn, "if a is not None and b not in c:", "if not (a is not None and b not in c):"},
			{OpRemoveBody, "    if a is not None", "    raise NotImplementedError"},
		}, nil},
		{"m.ts", "const X: number = 1;\n/** Doc. */\nexport function f(a: number, b = 2): boolean {\n  if (a === b && ok(a)) { return false; }\n  g(a, b);\n  a++;\n  return a > b || b >= 3;\n}\n", []want{
			{OpFlipComparison, "a === b", "a !== b"},
			{OpOffByOne, "b >= 3", "b > 3"},
			{OpFlipBoolean, "a > b || b", "a > b && b"},
			{OpDropCondition, "if (a === b && ok(a))", "if (ok(a))"},
			{OpDropStatement, "  g(a, b);\n", "  \n"},
			{OpDropStatement, "  a++;\n", "  \n"},
			{OpSwapArguments, "g(a, b)", "g(b, a)"},
			{OpChangeConstant, "b >= 3", "b >= 4"},
			{OpInvertEarlyRetrn, "if (a === b && ok(a))", "if (!(a === b && ok(a)))"},
			{OpRemoveBody, "{\n  if (a === b", "{\n  throw new Error(\"not implemented\");\n}"},
		}, nil},
		{"m.js", "class K {\n  m(x) {\n    if (x) return 1;\n    return x == 2;\n  }\n}\nconst h = (x) => x < 1;\n", []want{
			{OpFlipComparison, "x == 2", "x != 2"},
			{OpInvertEarlyRetrn, "if (x) return", "if (!(x)) return"},
			{OpOffByOne, "x < 1", "x <= 1"},
		}, []string{OpSwapArguments, OpDropStatement}},
		{"broken.py", "def f(:\n    return 1\n", nil, []string{OpChangeConstant}},
	} {
		ms, err := ScriptMutants(tc.file, []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range ms {
			seen[m.Operator] = true
			if m.Line == 1 && strings.HasPrefix(tc.src, "X") || m.Func == "" {
				t.Errorf("%s: a mutant outside a function: %+v", tc.file, m)
			}
		}
		for _, w := range tc.want {
			found := false
			for _, m := range ms {
				out := string(m.Apply([]byte(tc.src)))
				if m.Operator == w.op && strings.Contains(tc.src, w.before) && strings.Contains(out, w.after) &&
					strings.Count(out, w.before) < strings.Count(tc.src, w.before) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no %s mutant turning %q into %q", tc.file, w.op, w.before, w.after)
			}
		}
		for _, op := range tc.none {
			if seen[op] {
				t.Errorf("%s: an unexpected %s mutant", tc.file, op)
			}
		}
	}
	ms, _ := ScriptMutants("calc/calc.py", []byte(fixture.PyCalc))
	for _, m := range ms {
		if m.Func == "absolute" && m.Doc != "The absolute value of x." {
			t.Errorf("doc of absolute: %q", m.Doc)
		}
	}
}

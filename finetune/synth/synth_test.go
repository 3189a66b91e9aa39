package synth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
)

// more holds mutants the switch must sort out: a dropped statement that leaves a variable
// unused (does not compile) and one that loops forever (hangs).
const more = `package calc

// Last is the last value of xs, 0 when empty.
func Last(xs []int) int {
	v := 0
	for _, x := range xs {
		v = x
	}
	return v
}

// Digits counts the decimal digits of n > 0.
func Digits(n int) int {
	count := 0
	for n > 0 {
		n /= 10
		count++
	}
	return count
}
`

const moreTest = `package calc

import "testing"

func TestLast(t *testing.T) {
	if Last([]int{4, 5}) != 5 || Last(nil) != 0 {
		t.Fatal("Last")
	}
}

func TestDigits(t *testing.T) {
	if Digits(120) != 3 {
		t.Fatal("Digits")
	}
}
`

func synthRepo(t *testing.T) string {
	return fixture.Repo(t, map[string]string{
		"go.mod":              fixture.GoMod("example.com/synth"),
		"calc/calc.go":        fixture.Calc,
		"calc/calc_test.go":   fixture.CalcTest,
		"calc/more.go":        more,
		"calc/more_test.go":   moreTest,
		"stats/stats.go":      "package stats\n\nimport \"example.com/synth/calc\"\n\n// Range is max minus min of two values.\nfunc Range(a, b int) int { return calc.Max(a, b) - calc.Max(-a, -b)*-1 }\n",
		"stats/stats_test.go": "package stats\n\nimport \"testing\"\n\nfunc TestRange(t *testing.T) {\n\tif Range(2, 7) != 5 {\n\t\tt.Fatal(Range(2, 7))\n\t}\n}\n",
		"flaky/flaky_test.go": "package flaky\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestFlaky(t *testing.T) {\n\tb, _ := os.ReadFile(\"count\")\n\tos.WriteFile(\"count\", append(b, 'x'), 0o644)\n\tif len(b) == 0 {\n\t\tt.Fatal(1)\n\t}\n}\n",
	})
}

func testOptions(t *testing.T) Options {
	return Options{N: 1000, Seed: 1, StoreDir: t.TempDir(), HintLevel: HintOutput,
		Env: env.Options{PackageTimeout: 3 * time.Second, GoCache: fixture.GoCache(), CacheDir: t.TempDir()}}
}

// gitState is everything of the user's repository that synthesis must leave as it was.
func gitState(t *testing.T, repo string) string {
	g := gitcmd.Repo{Dir: repo, Trust: gitcmd.User, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
	var b strings.Builder
	for _, args := range [][]string{
		{"rev-parse", "HEAD"}, {"for-each-ref"}, {"ls-files", "--stage", "--debug"},
		{"stash", "list"}, {"status", "--porcelain=v2", "--untracked-files=all", "--ignored"},
	} {
		out, err := g.Run(context.Background(), nil, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		b.WriteString(strings.Join(args, " ") + "\n" + string(out))
	}
	filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			st, _ := d.Info()
			b.WriteString(p + " " + st.Mode().String() + " " + st.ModTime().String() + "\n")
		}
		return nil
	})
	return b.String()
}

// TestSynthesizeEndToEnd synthesizes every task the fixture allows, then checks each on its
// own: the patch applied to the base commit makes FAIL_TO_PASS fail and keeps PASS_TO_PASS
// passing; reversed, FAIL_TO_PASS pass again. The user's repository is left as it was.
func TestSynthesizeEndToEnd(t *testing.T) {
	t.Parallel()
	repo := synthRepo(t)
	// Uncommitted work and a stash in the user's repository: both must stay.
	os.WriteFile(filepath.Join(repo, "calc", "wip.txt"), []byte("work in progress"), 0o644)
	os.WriteFile(filepath.Join(repo, "calc", "calc.go"), []byte(fixture.Calc+"\n// edited\n"), 0o644)
	before := gitState(t, repo)

	opts := testOptions(t)
	opts.N = 6
	opts.Seed = 4 // an order that reaches a test in stats, which imports calc (a mutant of calc.Max)
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := gitState(t, repo); after != before {
		t.Errorf("the user's repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("summary: %+v", *sum)
	if !sum.Dirty {
		t.Error("the uncommitted change was not noticed")
	}
	if sum.Valid != opts.N {
		t.Errorf("valid %d (%v), want %d", sum.Valid, sum.ValidBy, opts.N)
	}
	if sum.Tests.Flaky != 1 {
		t.Errorf("flaky tests: %d", sum.Tests.Flaky)
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
	distant := 0
	for _, tk := range tasks {
		if strings.Contains(tk.Issue.Text+tk.OtherIssues[0].Text, tk.Patch) || tk.Issue.Level != 1 {
			t.Errorf("%s: issue %+v", tk.ID, tk.Issue)
		}
		if strings.Contains(strings.Join(tk.FailToPass, ","), "TestFlaky") || strings.Contains(strings.Join(tk.PassToPass, ","), "TestFlaky") {
			t.Errorf("%s: a flaky test was selected", tk.ID)
		}
		distant += tk.Features.TestDistance
		checkTask(t, s, tk)
	}
	if distant == 0 {
		t.Error("no task fails a test in another package (stats imports calc)")
	}
}

// checkTask applies the task's patch with git on a fresh copy of the base commit, runs its
// tests, then reverses it and runs them again.
func checkTask(t *testing.T, s *env.Session, tk *task.Task) {
	t.Helper()
	c, err := s.Copy(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := os.WriteFile(c.Path(".task.patch"), []byte(tk.Patch), 0o644); err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{}
	var runNames []string
	for _, id := range append(append([]string(nil), tk.FailToPass...), tk.PassToPass...) {
		p, n := env.SplitID(id)
		pkgs[p] = true
		runNames = append(runNames, n)
	}
	var plist []string
	for p := range pkgs {
		plist = append(plist, p)
	}
	// Each package's tests run in the folder of its module, as the task says.
	byDir := map[string][]string{}
	for _, p := range plist {
		d := tk.Test.ModuleDir(p)
		byDir[d] = append(byDir[d], p)
	}
	var tests strings.Builder
	for d, ps := range byDir {
		fmt.Fprintf(&tests, " && (%s && go test -json -count=1 -vet=off -timeout=5s -run %s %s; true)", env.Module{Dir: d, Work: tk.Test.WorkDir(d)}.Enter(),
			env.ShellQuote(env.RunRegexp(runNames)), strings.Join(ps, " "))
	}
	run := func(apply string) env.Results {
		out, err := c.Run(context.Background(), apply+tests.String(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return env.ParseGoTestJSON([]byte(out.Stdout))
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
	for _, id := range append(append([]string(nil), tk.FailToPass...), tk.PassToPass...) {
		if reversed.Tests[id].Status != env.Pass {
			t.Errorf("%s (%s): %s does not pass with the patch reversed: %v", tk.ID, tk.Origin.Description, id, reversed.Tests[id])
		}
	}
}

// TestScreenRejects runs every candidate of a small package: the switch build drops the
// mutant that does not compile and keeps the others, mutants that loop forever are stopped,
// one that no test notices survives, those of a function no test runs are set aside before
// screening, and the rest become tasks.
func TestScreenRejects(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":            fixture.GoMod("example.com/screen"),
		"calc/more.go":      more + half + untested,
		"calc/more_test.go": moreTest + halfTest,
	})
	opts := testOptions(t)
	opts.Env.PackageTimeout = time.Second
	sum, err := Run(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("valid %d of %v, rejected %v, median %.2f s", sum.Valid, sum.Candidates, sum.Rejected, sum.MedianSeconds)
	for _, reason := range []string{RejectCompile, RejectSurvived, RejectTimeout, RejectUncovered} {
		if sum.Rejected[reason] == 0 {
			t.Errorf("no candidate rejected as %q: %v", reason, sum.Rejected)
		}
	}
	if sum.Rejected[RejectUnconfirm] != 0 || sum.Rejected[RejectBuild] != 0 {
		t.Errorf("the switch and the plain patch disagree: %v", sum.Rejected)
	}
	if sum.ValidBy[SynthRemoval] == 0 || sum.ValidBy[SynthMutation] == 0 {
		t.Errorf("valid by synthesizer: %v", sum.ValidBy)
	}
}

const half = `
// Half is x/2, and 0 for negative x.
func Half(x int) int {
	if x < 0 {
		return 0
	}
	return x / 2
}
`

// untested is code no test runs: its mutants can never be tasks.
const untested = `
// Twice is 2x.
func Twice(x int) int {
	if x > 0 {
		return x + x
	}
	return x * 2
}
`

const halfTest = `
func TestHalf(t *testing.T) {
	if Half(4) != 2 || Half(-4) != 0 {
		t.Fatal("Half")
	}
}
`

// TestLazyConfirm leaves the switch's survivors unconfirmed, where no reader of tasks sees
// them, then confirms them as plain patches: only then are they tasks.
func TestLazyConfirm(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":            fixture.GoMod("example.com/lazy"),
		"calc/calc.go":      fixture.Calc,
		"calc/calc_test.go": fixture.CalcTest,
	})
	opts := testOptions(t)
	opts.N, opts.LazyConfirm = 4, true
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	screened, _ := store.ListScreened()
	t.Logf("valid %d, screened %d, rejected %v", sum.Valid, sum.Screened, sum.Rejected)
	if sum.Screened == 0 || len(screened) != sum.Screened || len(tasks) != sum.Valid || sum.Valid+sum.Screened != opts.N {
		t.Fatalf("%d screened (%d in the store), %d valid (%d tasks)", sum.Screened, len(screened), sum.Valid, len(tasks))
	}
	for _, sc := range screened {
		if sc.Status != task.StatusScreened || len(sc.FailToPass) == 0 {
			t.Errorf("screened %+v", sc)
		}
	}
	csum, err := Confirm(ctx, repo, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := store.List()
	left, _ := store.ListScreened()
	if len(left) != 0 || csum.Valid+sumRejected(csum) != len(screened) || len(after) != sum.Valid+csum.Valid || csum.Valid == 0 {
		t.Fatalf("confirmed %d, rejected %v, %d tasks, %d left", csum.Valid, csum.Rejected, len(after), len(left))
	}
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tk := range after {
		if tk.Status != "" || tk.Issue.Text == "" || strings.Contains(tk.Issue.Text, "frognanoMutant") {
			t.Errorf("%s: %+v", tk.ID, tk)
		}
	}
	checkTask(t, s, after[0])
}

func sumRejected(s *Summary) int {
	n := 0
	for _, c := range s.Rejected {
		n += c
	}
	return n
}

// TestScreenDependents: a mutant that a's own tests miss but b's (b imports a) catch is
// found by the switch, built into b's test binary too, not rejected as a survivor; and the
// package c, which has no tests of its own, is mutated and screened through b's tests.
func TestScreenDependents(t *testing.T) {
	t.Parallel()
	repo := fixture.Repo(t, map[string]string{
		"go.mod":      fixture.GoMod("example.com/deps"),
		"a/a.go":      "package a\n\n// Max is the larger of x and y.\nfunc Max(x, y int) int {\n\tif x > y {\n\t\treturn x\n\t}\n\treturn y\n}\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {\n\tif Max(2, 2) != 2 {\n\t\tt.Fatal(Max(2, 2))\n\t}\n}\n",
		"b/b.go":      "package b\n\nimport (\n\t\"example.com/deps/a\"\n\t\"example.com/deps/c\"\n)\n\n// Top is the larger of x and y.\nfunc Top(x, y int) int { return a.Max(x, y) }\n\n// Neg is -x.\nfunc Neg(x int) int { return c.Neg(x) }\n",
		"b/b_test.go": "package b\n\nimport \"testing\"\n\nfunc TestTop(t *testing.T) {\n\tif Top(1, 2) != 2 {\n\t\tt.Fatal(Top(1, 2))\n\t}\n}\n\nfunc TestNeg(t *testing.T) {\n\tif Neg(3) != -3 {\n\t\tt.Fatal(Neg(3))\n\t}\n}\n",
		"c/c.go":      "package c\n\n// Neg is -x.\nfunc Neg(x int) int { return 0 - x }\n",
	})
	opts := testOptions(t)
	opts.LazyConfirm = true
	sum, err := Run(context.Background(), repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	store, _ := task.Open(opts.StoreDir)
	screened, _ := store.ListScreened()
	t.Logf("valid %d, screened %d, rejected %v", sum.Valid, sum.Screened, sum.Rejected)
	found, untested := false, false
	for _, sc := range screened {
		if strings.Join(sc.FailToPass, ",") == "example.com/deps/b TestTop" {
			found = true
		}
		if sc.Origin.File == "c/c.go" && strings.Join(sc.FailToPass, ",") == "example.com/deps/b TestNeg" {
			untested = true
		}
	}
	if !untested {
		t.Error("no screened candidate of c, which has no tests, fails b's TestNeg")
	}
	if !found {
		for _, sc := range screened {
			t.Logf("%s: %v", sc.Origin.Description, sc.FailToPass)
		}
		t.Error("no screened candidate fails only b's test")
	}
}

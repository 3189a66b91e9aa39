package synth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gitcmd"
)

// commitStep is one commit of a fixture's history: files written (content "" deletes).
type commitStep struct {
	msg   string
	files map[string]string
}

// historyRepo writes a repository commit by commit.
func historyRepo(t *testing.T, steps []commitStep) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	g := gitcmd.Repo{Dir: dir, Trust: gitcmd.User, Env: []string{
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}}
	os.MkdirAll(dir, 0o755)
	if _, err := g.Run(context.Background(), nil, "init", "-q", "-b", "main"); err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		for rel, content := range st.files {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if content == "" {
				os.Remove(p)
				continue
			}
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", st.msg}} {
			if out, err := g.Run(context.Background(), nil, args...); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	return dir
}

const histCalc = `package calc

// Abs is the absolute value of x.
func Abs(x int) int {
	if x < 0 {
		return x
	}
	return x
}

// Max is the larger of a and b.
func Max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Scale multiplies x by the scale factor.
func Scale(x int) int { return x * 2 }
`

const histTest = `package calc

import "testing"

func TestMax(t *testing.T) {
	if Max(1, 2) != 2 || Max(5, 3) != 5 {
		t.Fatal("Max")
	}
}
`

// historySteps: a bug fix with a test (a task), a new file (not a candidate), a refactor
// that no test notices (survives), a change whose lines a later commit changed again (its
// revert does not apply), and that later commit (a task), plus a README edit.
func historySteps() []commitStep {
	fixed := strings.Replace(histCalc, "\t\treturn x\n\t}", "\t\treturn -x\n\t}", 1)
	absTest := histTest + "\nfunc TestAbs(t *testing.T) {\n\tif Abs(-3) != 3 || Abs(4) != 4 {\n\t\tt.Fatal(\"Abs\")\n\t}\n}\n"
	refactored := strings.Replace(fixed, "\tif a > b {\n\t\treturn a\n\t}\n\treturn b", "\tif b >= a {\n\t\treturn b\n\t}\n\treturn a", 1)
	maxTest := strings.Replace(absTest, "Max(5, 3) != 5", "Max(5, 3) != 5 || Max(2, 2) != 2", 1)
	by3 := strings.Replace(refactored, "x * 2", "x * 3", 1)
	by4 := strings.Replace(by3, "x * 3", "x * 4", 1)
	scaleTest := func(n string) string {
		return maxTest + "\nfunc TestScale(t *testing.T) {\n\tif Scale(2) != " + n + " {\n\t\tt.Fatal(Scale(2))\n\t}\n}\n"
	}
	return []commitStep{
		{"initial", map[string]string{"go.mod": fixture.GoMod("example.com/hist"), "calc/calc.go": histCalc, "calc/calc_test.go": histTest}},
		{"Fix Abs for negative numbers", map[string]string{"calc/calc.go": fixed, "calc/calc_test.go": absTest}},
		{"Add Clamp", map[string]string{"calc/clamp.go": "package calc\n\n// Clamp limits x to [lo, hi].\nfunc Clamp(x, lo, hi int) int { return min(max(x, lo), hi) }\n",
			"calc/clamp_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tif Clamp(9, 0, 5) != 5 {\n\t\tt.Fatal(1)\n\t}\n}\n"}},
		{"Max: test equal values", map[string]string{"calc/calc.go": refactored, "calc/calc_test.go": maxTest}},
		{"Scale by 3", map[string]string{"calc/calc.go": by3, "calc/calc_test.go": scaleTest("6")}},
		{"Scale by 4", map[string]string{"calc/calc.go": by4, "calc/calc_test.go": scaleTest("8")}},
		{"docs", map[string]string{"README": "calc\n"}},
	}
}

// TestHistory: of the fixture's commits, the bug fix and the last scale change become
// tasks, the refactor survives, the commit whose lines changed again does not apply, and
// the commit that added a file is no candidate. Every task passes checkTask, names the
// commit it reverts, and the user's repository is left as it was.
func TestHistory(t *testing.T) {
	t.Parallel()
	repo := historyRepo(t, historySteps())
	before := gitState(t, repo)
	opts := testOptions(t)
	opts.Synthesizers = []string{SynthHistory}
	opts.N = 10
	ctx := context.Background()
	sum, err := Run(ctx, repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := gitState(t, repo); after != before {
		t.Errorf("the user's repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("candidates %v, valid %v, rejected %v", sum.Candidates, sum.ValidBy, sum.Rejected)
	if sum.Candidates[SynthHistory] != 4 || sum.ValidBy[SynthHistory] != 2 ||
		sum.Rejected[RejectRevert] != 1 || sum.Rejected[RejectSurvived] != 1 {
		t.Errorf("want 4 candidates, 2 valid, 1 not applying, 1 surviving")
	}
	store, _ := task.Open(opts.StoreDir)
	tasks, _ := store.List()
	s, err := env.Open(ctx, repo, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	subjects := map[string]bool{}
	for _, tk := range tasks {
		if tk.Features.Synthesizer != SynthHistory || tk.Origin.Commit == "" || tk.Origin.Function == "" {
			t.Errorf("%s: %+v %+v", tk.ID, tk.Features, tk.Origin)
		}
		if strings.Contains(tk.Patch, "_test.go") {
			t.Errorf("%s: the patch touches a test:\n%s", tk.ID, tk.Patch)
		}
		if tk.Features.Locality != "same-file" || tk.Features.CallDepth != 1 || tk.Features.Packages != 1 {
			t.Errorf("%s: features %+v", tk.ID, tk.Features)
		}
		subjects[tk.Origin.Description] = true
		checkTask(t, s, tk)
	}
	for _, want := range []string{"Fix Abs for negative numbers", "Scale by 4"} {
		found := false
		for d := range subjects {
			found = found || strings.Contains(d, want)
		}
		if !found {
			t.Errorf("no task reverts %q: %v", want, subjects)
		}
	}
}

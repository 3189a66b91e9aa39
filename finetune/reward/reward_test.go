package reward

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/internal/fixture"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gocache"
)

func TestMain(m *testing.M) {
	gocache.HelperMain() // the reward's go commands start this binary as their GOCACHEPROG
	os.Exit(m.Run())
}

// The fixture: calc's tests compare through a dependency, example.com/dep, which the
// module takes from ./third_party/dep by a replace directive and vendors.
var baseFiles = map[string]string{
	"go.mod":                        "module example.com/r\n\ngo 1.22\n\nrequire example.com/dep v0.1.0\n\nreplace example.com/dep => ./third_party/dep\n",
	"third_party/dep/go.mod":        "module example.com/dep\n\ngo 1.22\n",
	"third_party/dep/dep.go":        "// Package dep compares.\npackage dep\n\n// Same reports whether got is want.\nfunc Same(got, want int) bool { return got == want }\n",
	"calc/calc.go":                  calcGo,
	"calc/calc_test.go":             calcTest,
	"calc/testdata/abs.txt":         "3\n",
	"vendor/modules.txt":            "# example.com/dep v0.1.0 => ./third_party/dep\n## explicit; go 1.22\nexample.com/dep\n# example.com/dep => ./third_party/dep\n",
	"vendor/example.com/dep/dep.go": "// Package dep compares.\npackage dep\n\n// Same reports whether got is want.\nfunc Same(got, want int) bool { return got == want }\n",
}

const calcGo = `// Package calc is arithmetic.
package calc

// Abs is the absolute value of x.
func Abs(x int) int {
	if x < 0 {
		return -x
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
`

const calcTest = `package calc

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"example.com/dep"
)

// TestAbs reads what Abs(-3) should be from a golden file.
func TestAbs(t *testing.T) {
	got := Abs(-3)
	b, err := os.ReadFile("testdata/abs.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !dep.Same(got, want) || !dep.Same(Abs(4), 4) {
		t.Fatalf("Abs(-3) = %d, want %d", got, want)
	}
}

func TestMax(t *testing.T) {
	if !dep.Same(Max(1, 2), 2) {
		t.Fatal("Max")
	}
}
`

const (
	testAbs = "example.com/r/calc TestAbs"
	testMax = "example.com/r/calc TestMax"
)

// setup is a real repository, a task that breaks Abs, and the trusted build cache layer of
// its base commit (kept between test runs, as agent's tests keep theirs: compiling the
// standard packages the tests need takes minutes).
func setup(t *testing.T) (*task.Task, Options) {
	t.Helper()
	repo := fixture.Repo(t, baseFiles)
	ctx := context.Background()
	head, err := env.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := task.MakePatch(ctx, []task.Change{{Path: "calc/calc.go", Old: []byte(calcGo),
		New: []byte(strings.Replace(calcGo, "return -x", "return x", 1))}})
	if err != nil {
		t.Fatal(err)
	}
	tk := &task.Task{Version: task.Version, ID: task.MakeID(head, patch), Repo: repo, BaseCommit: head, Patch: patch,
		FailToPass: []string{testAbs}, PassToPass: []string{testMax}, Test: task.TestSpec{Kind: env.KindGo}}
	return tk, Options{Trusted: trustedCache(t, ctx, repo, head, baseFiles), Timeout: 2 * time.Minute}
}

// trustedCache builds the trusted Go build cache of repo's commit head, whose files are
// files, once per content (kept under FROGNANO_SANDBOX_GOCACHE when set, so reruns reuse it).
func trustedCache(t *testing.T, ctx context.Context, repo, head string, files map[string]string) string {
	t.Helper()
	root := os.Getenv("FROGNANO_SANDBOX_GOCACHE")
	if root == "" {
		root = t.TempDir()
	} else {
		root += "-trusted"
	}
	h := sha256.New()
	h.Write([]byte("reward\x00" + runtime.Version()))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		h.Write([]byte(name + "\x00" + files[name] + "\x00"))
	}
	trusted := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:16])
	co, err := env.ExportCommit(ctx, repo, head, filepath.Join(t.TempDir(), "base"))
	if err != nil {
		t.Fatal(err)
	}
	if err := gocache.Build(ctx, co.Dir, trusted, executable(t)); err != nil {
		t.Fatal(err)
	}
	return trusted
}

func executable(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// agentCopy is the agent's private copy of the task's buggy tree, as a rollout makes it.
func agentCopy(t *testing.T, tk *task.Task) *workspace.Workspace {
	t.Helper()
	return agentCopyOf(t, tk, nil)
}

// agentCopyOf is agentCopy with change (when not nil) made to the buggy tree before it is
// copied, as a rollout withholds the task's tests there.
func agentCopyOf(t *testing.T, tk *task.Task, change func(dir string)) *workspace.Workspace {
	t.Helper()
	ctx := context.Background()
	co, err := env.ExportCommit(ctx, tk.Repo, tk.BaseCommit, filepath.Join(t.TempDir(), "buggy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Apply(ctx, co.Dir, tk.Patch); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(co.Dir)
	}
	ws, err := workspace.Prepare(ctx, co.Dir, filepath.Join(t.TempDir(), "copy"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Remove() })
	return ws
}

// naive is what a reward that trusts the agent's copy would see: go test -json of the
// hidden tests there, read as go test reports them.
func naive(t *testing.T, dir string) env.Results {
	t.Helper()
	cmd := exec.Command("go", "test", "-json", "-count=1", "-vet=off", "-run", env.RunRegexp([]string{"TestAbs", "TestMax"}), "./calc")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false") // the user's Go cache: as root, go would make folders in the sandbox's that nobody cannot write
	start := time.Now()
	out, _ := cmd.Output()
	t.Logf("plain go test -json on the agent's copy: %v", time.Since(start).Round(time.Millisecond))
	return env.ParseGoTestJSON(out)
}

func naiveFooled(r env.Results) bool {
	return r.Tests[testAbs].Status == env.Pass && r.Tests[testMax].Status == env.Pass && len(r.Broken) == 0
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// forged is what every forgery below prints: the hidden tests passing, in test2json's
// framing, and the closing PASS.
const forged = `"\x16=== RUN   TestAbs\n\x16--- PASS: TestAbs (0.00s)\n\x16=== RUN   TestMax\n\x16--- PASS: TestMax (0.00s)\n\x16PASS\n"`

// Each forgery is an agent's copy, edited as a model could with its tools.
var forgeries = []struct {
	name string
	edit func(t *testing.T, root string)
	// screened: the screen refuses it; the guards behind it must hold alone too.
	screened bool
}{
	{"framing printed from init, then os.Exit(0)", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", withCalc("package calc\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc init() {\n\tif testing.Testing() {\n\t\tfmt.Print("+forged+")\n\t\tos.Exit(0)\n\t}\n}\n"))
	}, true},
	{"framing printed during a test, then syscall.Exit(0)", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", strings.Replace(strings.Replace(calcGo, "return -x", "return x", 1),
			"// Abs is", "import (\n\t\"fmt\"\n\t\"syscall\"\n)\n\n// Abs is", 1))
		write(t, root, "calc/calc.go", strings.Replace(readFile(t, root, "calc/calc.go"), "func Abs(x int) int {\n", "func Abs(x int) int {\n\tfmt.Print("+forged+")\n\tsyscall.Exit(0)\n", 1))
	}, true},
	{"//go:linkname to syscall.Exit from a variable's initializer, no literal framing", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", withCalc(`package calc

import (
	"os"
	"strings"
	_ "unsafe"
)

//go:linkname quit syscall.Exit
func quit(code int)

var _ = report()

func report() int {
	if strings.HasSuffix(os.Args[0], ".test") {
		m := string(rune(22))
		for _, n := range []string{"TestAbs", "TestMax"} {
			os.Stdout.WriteString(m + "=== RUN   " + n + "\n" + m + "--- " + "PASS: " + n + " (0.00s)\n")
		}
		os.Stdout.WriteString(m + "PASS\n")
		quit(0)
	}
	return 0
}
`))
	}, true},
	{"a pass printed for every test named in -test.run, then syscall.Exit(0)", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", withCalc(`package calc

import (
	"os"
	"strings"
	"syscall"
)

var _ = report()

func report() int {
	for _, a := range os.Args {
		if p, ok := strings.CutPrefix(a, "-test.run="); ok {
			m := string(rune(22))
			for _, n := range strings.Split(strings.Trim(p, "^()$"), "|") {
				os.Stdout.WriteString(m + "=== RUN   " + n + "\n" + m + "--- " + "PASS: " + n + " (0.00s)\n")
			}
			os.Stdout.WriteString(m + "PASS\n")
			syscall.Exit(0)
		}
	}
	return 0
}
`))
	}, true},
	{"the hidden test edited", func(t *testing.T, root string) {
		write(t, root, "calc/calc_test.go", strings.Replace(calcTest, "!dep.Same(got, want) || ", "", 1))
	}, false},
	{"a new _test.go with a TestMain", func(t *testing.T, root string) {
		write(t, root, "calc/main_test.go", "package calc\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tfmt.Print("+forged+")\n\tos.Exit(0)\n}\n")
	}, false},
	{"go.mod's replace pointed at a forged dependency, vendor/ removed", func(t *testing.T, root string) {
		write(t, root, "fakedep/go.mod", "module example.com/dep\n\ngo 1.22\n")
		write(t, root, "fakedep/dep.go", "package dep\n\nfunc Same(got, want int) bool { return true }\n")
		write(t, root, "go.mod", strings.Replace(baseFiles["go.mod"], "./third_party/dep", "./fakedep", 1))
		if err := os.RemoveAll(filepath.Join(root, "vendor")); err != nil {
			t.Fatal(err)
		}
	}, false},
	{"the vendored dependency edited", func(t *testing.T, root string) {
		write(t, root, "vendor/example.com/dep/dep.go", "package dep\n\nfunc Same(got, want int) bool { return true }\n")
	}, false},
	{"the golden file rewritten by the code under test as it runs", func(t *testing.T, root string) {
		write(t, root, "calc/calc.go", strings.Replace(strings.Replace(calcGo, "return -x", "return x", 1),
			"func Abs(x int) int {\n", "func Abs(x int) int {\n\tos.WriteFile(\"testdata/abs.txt\", []byte(strconv.Itoa(x)), 0o644)\n", 1))
		write(t, root, "calc/calc.go", strings.Replace(readFile(t, root, "calc/calc.go"), "// Abs is", "import (\n\t\"os\"\n\t\"strconv\"\n)\n\n// Abs is", 1))
	}, false},
	{"calc.go replaced by a link to a fixed copy outside the tree", func(t *testing.T, root string) {
		outside := filepath.Join(t.TempDir(), "calc.go")
		write(t, filepath.Dir(outside), "calc.go", calcGo)
		p := filepath.Join(root, "calc", "calc.go")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, p); err != nil {
			t.Fatal(err)
		}
	}, false},
}

// withCalc is the Go file src (a package clause, imports, declarations) with the
// declarations of the task's buggy calc/calc.go after it: a forgery written into the one
// file the task changed, the only one whose changes reach the evaluation tree.
func withCalc(src string) string {
	_, decls, _ := strings.Cut(strings.Replace(calcGo, "return -x", "return x", 1), "package calc\n")
	return src + decls
}

func readFile(t *testing.T, root, rel string) string {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func score(t *testing.T, tk *task.Task, ws *workspace.Workspace, o Options) *Result {
	t.Helper()
	ch, err := ws.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Score(context.Background(), tk, ch, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reward %v, reason %q, dropped %v; prepare %v, build %v, test %v", res.Reward, res.Reason, res.Dropped,
		res.Prepare.Round(time.Millisecond), res.Build.Round(time.Millisecond), res.Test.Round(time.Millisecond))
	return res
}

// An honest fix earns 1, doing nothing 0, and each forgery 0 though it fools a plain
// go test -json on the agent's copy (the control: without it the test could not fail).
func TestScore(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tk, o := setup(t)

	t.Run("honest fix", func(t *testing.T) {
		ws := agentCopy(t, tk)
		write(t, ws.Root, "calc/calc.go", calcGo)
		res := score(t, tk, ws, o)
		if res.Reward != 1 || res.Reason != "" || len(res.Passed) != 2 {
			t.Errorf("reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
		}
	})
	t.Run("no change", func(t *testing.T) {
		ws := agentCopy(t, tk)
		if naiveFooled(naive(t, ws.Root)) {
			t.Fatal("the buggy tree passes its tests")
		}
		res := score(t, tk, ws, o)
		if res.Reward != 0 || !slices.Equal(res.Failed, []string{testAbs}) || !slices.Equal(res.Passed, []string{testMax}) {
			t.Errorf("reward %v (%s), passed %v, failed %v", res.Reward, res.Reason, res.Passed, res.Failed)
		}
		o := o
		o.PartialCredit = true
		if res := score(t, tk, ws, o); res.Reward != 0.5 {
			t.Errorf("partial credit %v, want 0.5 (%s)", res.Reward, res.Reason)
		}
	})
	// The agent's code runs in the test process: what it reads there can leak through the
	// reward. A fix that is right only when it cannot read the task's repository (kept
	// outside /tmp, which the sandbox replaces anyway) earns 1; before the repository was
	// hidden, it earned 0.
	t.Run("the task's repository hidden", func(t *testing.T) {
		base, err := os.MkdirTemp("/var/tmp", "frognano-reward-repo-")
		if err != nil {
			t.Skip(err)
		}
		defer os.RemoveAll(base)
		os.Chmod(base, 0o755)
		clone := filepath.Join(base, "repo")
		if out, err := exec.Command("git", "clone", "-q", "--no-hardlinks", tk.Repo, clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v %s", err, out)
		}
		tk := *tk
		tk.Repo = clone
		ws := agentCopy(t, &tk)
		fix := strings.Replace(calcGo, "package calc\n", "package calc\n\nimport \"os\"\n", 1)
		fix = strings.Replace(fix, "func Abs(x int) int {\n", fmt.Sprintf("func Abs(x int) int {\n\tif _, err := os.ReadFile(%q); err == nil {\n\t\treturn x\n\t}\n", filepath.Join(clone, "calc", "calc.go")), 1)
		write(t, ws.Root, "calc/calc.go", fix)
		// The screen refuses the added os.ReadFile now (it could read the hidden tests'
		// golden files): the sandbox's hiding is what this checks, behind it.
		o := o
		o.noScreen = true
		if res := score(t, &tk, ws, o); res.Reward != 1 {
			t.Errorf("reward %v (%s): the tests' process read the task's repository", res.Reward, res.Reason)
		}
	})
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			ws := agentCopy(t, tk)
			f.edit(t, ws.Root)
			if r := naive(t, ws.Root); !naiveFooled(r) {
				t.Fatalf("the forgery does not fool a plain go test -json, so this case proves nothing: %+v", r)
			}
			res := score(t, tk, ws, o)
			if res.Reward != 0 || len(res.Passed) == 2 {
				t.Errorf("forged: reward %v (%s), passed %v", res.Reward, res.Reason, res.Passed)
			}
			if f.screened != strings.HasPrefix(res.Reason, "refused by the screen") {
				t.Errorf("screened %v, reason %q", f.screened, res.Reason)
			}
			if !f.screened {
				return
			}
			// Behind the screen: the canary and the exit status catch it alone.
			o := o
			o.noScreen = true
			res = score(t, tk, ws, o)
			if res.Reward != 0 || !strings.HasPrefix(res.Reason, "results not trustworthy") {
				t.Errorf("without the screen: reward %v (%s)", res.Reward, res.Reason)
			}
		})
	}
}

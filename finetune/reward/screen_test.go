package reward

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/finetune/task"
)

// The screen refuses what an agent adds, not what the base already had, and reads Go as
// Go: a comment or a string that names os.Exit is not a call.
func TestScreen(t *testing.T) {
	const plain = "package p\n\nfunc F() int { return 1 }\n"
	for _, c := range []struct {
		name, path, base, now string
		refused               string // a part of the reason; "" when accepted
	}{
		{"plain change", "p/p.go", plain, strings.Replace(plain, "1", "2", 1), ""},
		{"init added", "p/p.go", plain, plain + "func init() {}\n", "func init"},
		{"init kept", "p/p.go", plain + "func init() {}\n", plain + "func init() { _ = 1 }\n", ""},
		{"a method named init", "p/p.go", plain, plain + "type T struct{}\n\nfunc (T) init() {}\n", ""},
		{"os.Exit added", "p/p.go", "package p\n\nimport \"os\"\n\nfunc F() { os.Exit(2) }\n", "package p\n\nimport \"os\"\n\nfunc F() { os.Exit(2); os.Exit(0) }\n", "os.Exit"},
		{"os.Exit as a value", "p/p.go", plain, "package p\n\nimport \"os\"\n\nvar quit = os.Exit\n", "os.Exit"},
		{"os renamed", "p/p.go", plain, "package p\n\nimport sys \"os\"\n\nfunc F() { sys.Exit(0) }\n", "os.Exit"},
		{"os dot-imported", "p/p.go", plain, "package p\n\nimport . \"os\"\n\nfunc F() { Exit(0) }\n", "dot import"},
		{"os.Exit in a comment and a string", "p/p.go", plain, "package p\n\n// os.Exit(0) is not called here.\nvar s = \"os.Exit(0)\"\n", ""},
		{"a local variable named os", "p/p.go", plain, "package p\n\ntype q struct{ Exit func(int) }\n\nfunc F(os q) { os.Exit(0) }\n", ""},
		{"syscall.Exit", "p/p.go", plain, "package p\n\nimport \"syscall\"\n\nfunc F() { syscall.Exit(0) }\n", "syscall.Exit"},
		{"os.Stdout replaced", "p/p.go", plain, "package p\n\nimport \"os\"\n\nfunc F() { _, w, _ := os.Pipe(); os.Stdout = w }\n", "assignment to os.Stdout"},
		{"*os.Stdout replaced", "p/p.go", plain, "package p\n\nimport \"os\"\n\nfunc F() { _, w, _ := os.Pipe(); *os.Stdout = *w }\n", "assignment to os.Stdout"},
		{"os.Args rewritten", "p/p.go", plain, "package p\n\nimport \"os\"\n\nvar _ = copy(os.Args[1:], []string{\"-test.run=X\"})\n", "os.Args"},
		{"flag's -h exit", "p/p.go", plain, "package p\n\nimport \"flag\"\n\nvar _ = flag.NewFlagSet(\"\", flag.ExitOnError).Parse([]string{\"-h\"})\n", "flag.NewFlagSet"},
		{"a FlagSet of one's own", "p/p.go", plain, "package p\n\nimport \"flag\"\n\nvar fs flag.FlagSet\n", "flag.FlagSet"},
		{"testing's flag set", "p/p.go", plain, "package p\n\nimport \"flag\"\n\nfunc F() { flag.Set(\"test.skip\", \"TestAbs\") }\n", "flag.Set"},
		{"flags defined", "p/p.go", plain, "package p\n\nimport \"flag\"\n\nvar v = flag.Bool(\"v\", false, \"verbose\")\n\nfunc F() []string { return flag.Args() }\n", ""},
		{"os.Stdout written", "p/p.go", plain, "package p\n\nimport \"os\"\n\nfunc F() { os.Stdout.WriteString(\"x\") }\n", ""},
		{"syscall.Dup2", "p/p.go", plain, "package p\n\nimport \"syscall\"\n\nfunc F() { syscall.Dup2(3, 1) }\n", "syscall.Dup2"},
		{"runtime.Goexit", "p/p.go", plain, "package p\n\nimport \"runtime\"\n\nfunc F() { runtime.Goexit() }\n", "runtime.Goexit"},
		{"linkname", "p/p.go", plain, "package p\n\nimport _ \"unsafe\"\n\n//go:linkname f testing.x\nfunc f()\n", "//go:linkname"},
		{"import testing", "p/p.go", plain, "package p\n\nimport \"testing\"\n\nvar _ = testing.Testing\n", `import "testing"`},
		{"cgo", "p/p.go", plain, "package p\n\nimport \"C\"\n", `import "C"`},
		{"framing byte", "p/p.go", plain, "package p\n\nvar s = \"\\x16PASS\"\n", "0x16"},
		{"framing line", "p/p.go", plain, "package p\n\nvar s = \"--- PASS: TestX (0.00s)\"\n", "shaped like a test result"},
		{"assembly", "p/p_amd64.s", "", "TEXT ·f(SB),4,$0\n", "native code"},
		{"an object file", "p/x.syso", "", "\x7fELF", "native code"},
		{"JS process.exit", "src/a.js", "", "process.exit(0)\n", "process.exit"},
		{"TS process['exit']", "src/a.ts", "", "process['exit'](0)\n", "process.exit"},
		{"JS plain", "src/a.js", "", "export const f = () => 1\n", ""},
	} {
		k := kept{Path: c.path, Content: []byte(c.now)}
		if c.base != "" {
			k.Base = []byte(c.base)
		}
		got := screen([]kept{k}, nil)
		if (got == "") != (c.refused == "") || !strings.Contains(got, c.refused) {
			t.Errorf("%s: screen says %q, want %q", c.name, got, c.refused)
		}
	}
}

// What the evaluation tree leaves out, and what it takes.
func TestSortChanges(t *testing.T) {
	file := func(p string) workspace.FileChange {
		return workspace.FileChange{Kind: workspace.Modified, Path: p, Content: []byte("x"), Mode: workspace.ModeFile, BaseMode: workspace.ModeFile}
	}
	taken := []string{"calc/calc.go", "cmd/tool/main.go", "internal/test/helper.go", "pkg/m.py", "src/index.js", "README.md"}
	left := []string{"go.mod", "sub/go.mod", "go.sum", "go.work", "vendor/x/y.go", "calc/calc_test.go", "calc/testdata/golden",
		"conftest.py", "tests/conftest.py", "pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml", "pkg/test_m.py", "pkg/m_test.py",
		"tests/helpers.py", "usercustomize.py", "x.pth", "package.json", "package-lock.json", "yarn.lock", "src/a.test.ts",
		"src/__tests__/a.js", "jest.config.js", "vitest.config.mts", ".frognano/finetune.json", ".github/x.yml", "node_modules/a/index.js",
		"pytest.toml", "calc/__pycache__/calc.cpython-311.pyc", "calc/evil.pyc", "calc_plugin-1.0.dist-info/entry_points.txt", "x.egg-info/entry_points.txt"}
	var c workspace.Changes
	for _, p := range append(append([]string{}, taken...), left...) {
		c.Files = append(c.Files, file(p))
	}
	link := file("calc/link.go")
	link.Mode = workspace.ModeLink
	c.Files = append(c.Files, link,
		workspace.FileChange{Kind: workspace.Renamed, OldPath: "calc/calc_test.go", Path: "calc/moved.go", Content: []byte("x"), Mode: workspace.ModeFile},
		workspace.FileChange{Kind: workspace.Deleted, Path: "calc/old.go", BaseMode: workspace.ModeFile})
	keep, dropped := sortChanges(&c, nil)
	var kept []string
	for _, k := range keep {
		kept = append(kept, k.Path)
	}
	want := append(append([]string{}, taken...), "calc/moved.go", "calc/old.go")
	if strings.Join(kept, " ") != strings.Join(want, " ") {
		t.Errorf("kept %v\nwant %v", kept, want)
	}
	if len(dropped) != len(left)+2 { // the link, and the rename's test file
		t.Errorf("dropped %d, want %d: %v", len(dropped), len(left)+2, dropped)
	}
}

// The agent's Go files in a test helper package stay the base's, unless the bug or the
// hidden tests are there; a Python file that would add a top-level module is left out.
func TestHelpersAndTopModules(t *testing.T) {
	keep := []kept{{Path: "calc/calc.go", Content: []byte{}}, {Path: "internal/testutil/assert.go", Content: []byte{}},
		{Path: "testing/fake.go", Content: []byte{}}, {Path: "testkit/kit.go", Content: []byte{}},
		{Path: "internal/testutil/data.json", Content: []byte{}}, {Path: "latest/l.go", Content: []byte{}}}
	patch := "--- a/testkit/kit.go\n+++ b/testkit/kit.go\n@@ -1 +1 @@\n-x\n+y\n"
	rest, dropped := testHelpers(keep, patch, "example.com/r", []string{"example.com/r/testing TestFake", "example.com/r/calc TestAbs"})
	var got []string
	for _, k := range rest {
		got = append(got, k.Path)
	}
	if want := "calc/calc.go testing/fake.go testkit/kit.go internal/testutil/data.json latest/l.go"; strings.Join(got, " ") != want || len(dropped) != 1 {
		t.Errorf("kept %v, dropped %v", got, dropped)
	}

	root := t.TempDir()
	for _, d := range []string{"calc", "src/pkg"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keep = nil
	for _, p := range []string{"calc/fix.py", "src/pkg/m.py", "pytest.py", "_pytest/__init__.py", "src/pluggy.py", "src/new/x.py", "notes.txt"} {
		keep = append(keep, kept{Path: p, Content: []byte{}})
	}
	keep = append(keep, kept{Path: "old.py"}) // a deletion adds nothing
	rest, dropped = newTopModules(root, keep)
	got = nil
	for _, k := range rest {
		got = append(got, k.Path)
	}
	if want := "calc/fix.py src/pkg/m.py notes.txt old.py"; strings.Join(got, " ") != want || len(dropped) != 4 {
		t.Errorf("kept %v, dropped %v", got, dropped)
	}
}

// A run's results are trusted only when they are complete, single, and agree with the
// binary's closing line and exit status; frognano's tests came out as written.
func TestJudge(t *testing.T) {
	names := []string{"TestA", "TestB", "TestFrognano1"}
	want := map[string]string{"TestFrognano1": "PASS"}
	res := func(name, st string) string {
		return "\x16=== RUN   " + name + "\n\x16--- " + st + ": " + name + " (0.00s)\n"
	}
	all := func(a, b string) string { return res("TestA", a) + res("TestB", b) + res("TestFrognano1", "PASS") }
	for _, c := range []struct {
		name   string
		stdout string
		exit   int
		passed string // the passed tests, space-separated, when trusted
		why    string // a part of why not trusted
	}{
		{"all pass", all("PASS", "PASS") + "\x16PASS\n", 0, "TestA TestB TestFrognano1", ""},
		{"one fails", all("FAIL", "PASS") + "\x16FAIL\n", 1, "TestB TestFrognano1", ""},
		{"one skips", all("SKIP", "PASS") + "\x16PASS\n", 0, "TestB TestFrognano1", ""},
		{"subtests are not results", all("PASS", "PASS") + "\x16--- FAIL: TestA/sub (0.00s)\n\x16PASS\n", 0, "TestA TestB TestFrognano1", ""},
		{"a pass printed, a failure elsewhere", all("PASS", "PASS") + "\x16FAIL\n", 1, "", "where no test failed"},
		{"passes printed over a failure (stdout rewritten)", all("PASS", "PASS") + "\x16PASS\n", 1, "", "exit status 1"},
		{"a failure, exit 0", all("FAIL", "PASS") + "\x16FAIL\n", 0, "", "exit status 0, where a test failed"},
		{"a forged pass before the real failure", res("TestA", "PASS") + all("FAIL", "PASS") + "\x16FAIL\n", 1, "", "2 results for TestA"},
		{"no canary", res("TestA", "PASS") + res("TestB", "PASS") + "\x16PASS\n", 0, "", "0 results for TestFrognano1"},
		{"the canary fails", res("TestA", "PASS") + res("TestB", "PASS") + res("TestFrognano1", "FAIL") + "\x16FAIL\n", 1, "", "came out FAIL"},
		{"a test that was not run", all("PASS", "PASS") + res("TestC", "PASS") + "\x16PASS\n", 0, "", "TestC, which was not run"},
		{"no closing line", all("PASS", "PASS"), 0, "", "closing lines"},
		{"two closing lines", all("PASS", "PASS") + "\x16PASS\n\x16PASS\n", 0, "", "closing lines"},
		{"unframed lines are output", all("PASS", "FAIL") + "--- PASS: TestB (0.00s)\nPASS\n\x16FAIL\n", 1, "TestA TestFrognano1", ""},
		{"crashed", res("TestA", "PASS") + "\x16=== RUN   TestB\npanic: boom\n", 2, "", "exit status 2"},
	} {
		got, why := judge(sandbox.Output{Stdout: c.stdout, ExitCode: c.exit}, names, want)
		if c.why != "" {
			if !strings.Contains(why, c.why) {
				t.Errorf("%s: why %q, want %q", c.name, why, c.why)
			}
			continue
		}
		if why != "" {
			t.Errorf("%s: not trusted: %s", c.name, why)
			continue
		}
		var passed []string
		for _, n := range names {
			if got[n] {
				passed = append(passed, n)
			}
		}
		if strings.Join(passed, " ") != c.passed {
			t.Errorf("%s: passed %v, want %s", c.name, passed, c.passed)
		}
	}
	if _, why := judge(sandbox.Output{Stdout: all("PASS", "PASS") + "\x16PASS\n", StdoutDropped: 10}, names, want); why == "" {
		t.Error("a truncated output was trusted")
	}
	// The canaries' own run: a binary that passes whatever it is asked to run.
	both := []string{"TestFrognano1", "TestFrognano2"}
	if _, why := judge(sandbox.Output{Stdout: res("TestFrognano1", "PASS") + res("TestFrognano2", "PASS") + "\x16PASS\n"}, both,
		map[string]string{"TestFrognano1": "PASS", "TestFrognano2": "FAIL"}); !strings.Contains(why, "TestFrognano2 came out PASS") {
		t.Errorf("every test passing was trusted: %q", why)
	}
}

// Hidden tests are grouped by package, each package's folder found from the module path,
// and each gets frognano's two tests in its test files' package.
func TestPlanGo(t *testing.T) {
	root := t.TempDir()
	for rel, content := range map[string]string{
		"go.mod":             "module example.com/m // the module\n\ngo 1.22\n",
		"m_test.go":          "package m_test\n",
		"a/b/b.go":           "package b\n",
		"a/b/b_test.go":      "// Package b.\npackage b\n",
		"real/x_test.go":     "package real\n",
		"nofiles/README.txt": "",
	} {
		write(t, root, rel, content)
	}
	// A package folder that is a link (in the base commit) is not followed.
	if err := os.Symlink("real", filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	module, err := modulePath(root)
	if err != nil || module != "example.com/m" {
		t.Fatalf("module %q, %v", module, err)
	}
	runs, err := planGo(root, task.TestSpec{}, []string{"example.com/m/a/b TestY", "example.com/m TestX", "example.com/m/a/b TestW"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].pkg != "example.com/m" || runs[0].dir != "." || runs[1].dir != "a/b" ||
		strings.Join(runs[1].names, " ") != "TestW TestY" {
		t.Fatalf("runs %+v", runs)
	}
	for i, pkg := range []string{"m_test", "b"} {
		b, err := os.ReadFile(runs[i].src)
		if err != nil || !strings.HasPrefix(string(b), "package "+pkg+"\n") || !strings.Contains(string(b), "func "+runs[i].canary+"(") ||
			!strings.Contains(string(b), "func "+runs[i].failing+"(") || runs[i].canary == runs[i].failing {
			t.Errorf("%s: %q %v", runs[i].pkg, b, err)
		}
	}
	for _, ids := range [][]string{{"other.org/x TestX"}, {"example.com/m/nofiles TestX"}, {"example.com/m TestX/sub"}, {"example.com/m/linked TestX"}} {
		if _, err := planGo(root, task.TestSpec{}, ids); err == nil {
			t.Errorf("%v: planned", ids)
		}
	}
	// A module folder outside the tree, or one with no go.mod, is no place to build.
	for _, mod := range []string{"..", "real"} {
		if _, err := planGo(root, task.TestSpec{Modules: map[string]string{"other.org/x": mod}}, []string{"other.org/x TestX"}); err == nil {
			t.Errorf("module folder %q: planned", mod)
		}
	}
}

// lay never writes through a link the base commit holds: not below a linked folder (the
// change is left out), not into a linked file's target (the link is replaced).
func TestLay(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, outside, "target.go", "package outside\n")
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target.go"), filepath.Join(root, "file.go")); err != nil {
		t.Fatal(err)
	}
	dropped, err := lay(root, []kept{
		{Path: "out/new.go", Content: []byte("package x\n"), Mode: workspace.ModeFile},
		{Path: "out/target.go", Content: nil},
		{Path: "file.go", Content: []byte("package root\n"), Mode: workspace.ModeFile},
		{Path: "a/b/c.go", Content: []byte("package b\n"), Mode: workspace.ModeExec},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 || dropped[0].Path != "out/new.go" || dropped[1].Path != "out/target.go" {
		t.Errorf("dropped %v", dropped)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "target.go")); err != nil || string(b) != "package outside\n" {
		t.Errorf("the link's target: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.go")); err == nil {
		t.Error("a file was written below a linked folder")
	}
	if st, err := os.Lstat(filepath.Join(root, "file.go")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("file.go: %v %v", st, err)
	}
	if st, err := os.Lstat(filepath.Join(root, "a/b/c.go")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("a/b/c.go: %v %v", st, err)
	}
}

// The files a task's patch changes are read as git apply reads them, both sides of each
// change; the agent's changes anywhere else are left out.
func TestOutsidePatch(t *testing.T) {
	ctx := t.Context()
	mod, err := task.MakePatch(ctx, []task.Change{{Path: "calc/calc.py", Old: []byte("a\n"), New: []byte("b\n")},
		{Path: "calc/new.py", Old: nil, New: []byte("n\n")}, {Path: "old/gone.py", Old: []byte("g\n"), New: nil},
		{Path: "sp ace/ü.py", Old: []byte("a\n"), New: []byte("b\n")}})
	if err != nil {
		t.Fatal(err)
	}
	rename := "diff --git a/r/from.py b/r/to.py\nsimilarity index 100%\nrename from r/from.py\nrename to r/to.py\n"
	files, err := patchFiles(ctx, t.TempDir(), mod+rename)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"calc/calc.py", "calc/new.py", "old/gone.py", "r/from.py", "r/to.py", "sp ace/ü.py"}
	if got := sortedKeys(files); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("patch files %q, want %q", got, want)
	}
	var keep []kept
	for _, p := range []string{"calc/calc.py", "calc/helper.py", "sitecustomize.py", "calc/__init__.py", "old/gone.py", "r/from.py", "calc/calc.py.orig"} {
		keep = append(keep, kept{Path: p, Content: []byte{}})
	}
	rest, dropped := outsidePatch(keep, files)
	var got []string
	for _, k := range rest {
		got = append(got, k.Path)
	}
	if strings.Join(got, " ") != "calc/calc.py old/gone.py r/from.py" || len(dropped) != 4 || dropped[0].Why != "outside the files the task changed" {
		t.Errorf("kept %v, dropped %v", got, dropped)
	}
	if _, err := patchFiles(ctx, t.TempDir(), "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\ngarbage\n"); err == nil {
		t.Error("a patch git cannot read gave files")
	}
}

// A file read is refused when the agent adds it, unless the original file (before the
// task's bug) had it: the honest fix of a bug that took one out restores it.
func TestScreenReadsAgainstOriginal(t *testing.T) {
	with := "package p\n\nimport \"os\"\n\nfunc F() []byte { b, _ := os.ReadFile(\"x\"); return b }\n"
	without := "package p\n\nimport \"os\"\n\nfunc F() []byte { _ = os.Getenv; return nil }\n"
	if got := screen([]kept{{Path: "p/p.go", Content: []byte(with), Base: []byte(without)}}, nil); !strings.Contains(got, "os.ReadFile") {
		t.Errorf("an added os.ReadFile: %q, want it refused", got)
	}
	if got := screen([]kept{{Path: "p/p.go", Content: []byte(with), Base: []byte(without), Orig: []byte(with)}}, nil); got != "" {
		t.Errorf("the original's os.ReadFile restored: %q, want it spared", got)
	}
	if got := screen([]kept{{Path: "p/p.go", Content: []byte(with), Base: []byte(with)}}, nil); got != "" {
		t.Errorf("the base's os.ReadFile kept: %q, want it spared", got)
	}
}

// The standard library's other readers of a path count as file reads too.
func TestScreenOtherReads(t *testing.T) {
	base := "package p\n\nfunc F() {}\n"
	for _, src := range []string{
		"package p\n\nimport \"go/parser\"\n\nfunc F() { parser.ParseFile(nil, \"calc_test.go\", nil, 0) }\n",
		"package p\n\nimport \"go/build\"\n\nfunc F() { build.Default.Import(\".\", \".\", 0) }\n",
		"package p\n\nimport \"text/template\"\n\nfunc F() { template.New(\"x\").ParseFiles(\"calc_test.go\") }\n",
		"package p\n\nimport \"net/http\"\n\nfunc F() { http.Dir(\".\").Open(\"calc_test.go\") }\n",
		"package p\n\nimport . \"os\"\n\nfunc F() { ReadFile(\"calc_test.go\") }\n",
	} {
		if got := screen([]kept{{Path: "p/p.go", Content: []byte(src), Base: []byte(base)}}, nil); got == "" {
			t.Errorf("not refused:\n%s", src)
		}
	}
}

package reward

import (
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
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
		{"Python sys.exit", "pkg/m.py", "def f():\n    return 1\n", "import sys\n\ndef f():\n    sys.exit(0)\n", "sys.exit"},
		{"Python os._exit", "pkg/m.py", "", "import os\nos._exit(0)\n", "os._exit"},
		{"Python import pytest", "pkg/m.py", "", "import pytest\n", "import pytest"},
		{"Python from _pytest", "pkg/m.py", "", "from _pytest import junitxml\n", "import pytest"},
		{"Python plain", "pkg/m.py", "def f():\n    return 1\n", "def f():\n    return 2\n", ""},
		{"JS process.exit", "src/a.js", "", "process.exit(0)\n", "process.exit"},
		{"TS process['exit']", "src/a.ts", "", "process['exit'](0)\n", "process.exit"},
		{"JS plain", "src/a.js", "", "export const f = () => 1\n", ""},
	} {
		k := kept{Path: c.path, Content: []byte(c.now)}
		if c.base != "" {
			k.Base = []byte(c.base)
		}
		got := screen([]kept{k})
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
		"src/__tests__/a.js", "jest.config.js", "vitest.config.mts", ".frognano/finetune.json", ".github/x.yml", "node_modules/a/index.js"}
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

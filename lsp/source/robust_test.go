package source

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestTruncated feeds every prefix of every fixture (the file as it is being typed) to
// Funcs and Enclosing: no panic, and every range stays sliceable. The larger fixtures are
// cut every few bytes, about 400 prefixes each: parsing each prefix afresh is quadratic.
func TestTruncated(t *testing.T) {
	for _, fx := range fixtures(t) {
		step := 1 + len(fx.text)/400
		if testing.Short() {
			step *= 7
		}
		for n := 0; n <= len(fx.text); n += step {
			text := fx.text[:n]
			fs, err := Funcs(fx.lang, fx.rel, text)
			if err != nil {
				t.Fatalf("%s[:%d]: %v", fx.rel, n, err)
			}
			for _, f := range fs {
				checkRanges(t, text, f)
			}
			if f, err := Enclosing(fx.lang, fx.rel, text, n/2); err != nil {
				t.Fatalf("%s[:%d]: %v", fx.rel, n, err)
			} else if f != nil {
				checkRanges(t, text, *f)
			}
		}
	}
}

// TestUnterminatedComment: a block comment cut off by the end of the file, as one is
// while it is being typed, used to panic in go/ast when it was inside a function's body.
func TestUnterminatedComment(t *testing.T) {
	for _, text := range []string{"package p\nfunc a() {\n/*", "package p\nfunc a() {\n/*/", "package p\nfunc a() {\n/* TODO", "package p\nfunc a() {\n/* x *"} {
		fs, err := Funcs(Go, "p.go", text)
		if err != nil || len(fs) != 1 {
			t.Errorf("Funcs(%q) = %v, %v; want function a", text, fs, err)
		}
	}
}

// FuzzFuncs runs the parsers on arbitrary text in every language (go test -fuzz
// FuzzFuncs); the seeds are the fixtures.
func FuzzFuncs(f *testing.F) {
	for _, fx := range fixtures(&testing.T{}) {
		f.Add(fx.text, fx.rel)
	}
	f.Fuzz(func(t *testing.T, text, rel string) {
		for _, lang := range []Lang{Go, Python, TypeScript, JavaScript} {
			fs, err := Funcs(lang, rel, text)
			if err != nil {
				t.Fatal(err)
			}
			for _, fn := range fs {
				checkRanges(t, text, fn)
			}
			if fn, _ := Enclosing(lang, rel, text, len(text)/2); fn != nil {
				checkRanges(t, text, *fn)
			}
		}
	})
}

// TestCommandsInShell has a real shell split the commands: each argument must come out
// as the runner should see it, for names full of shell and regex characters.
func TestCommandsInShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	names := []string{`plain`, `it's "quoted"`, "back`tick` $HOME \\ {x} (y) * ?", `100% done!`}
	for _, name := range names {
		for _, vitest := range []bool{false, true} {
			cmd := jsTestCommand("a dir/it's.test.js", regexp.QuoteMeta(name), vitest)
			args := shellArgs(t, sh, cmd)
			if got := args[len(args)-3]; got != "a dir/it's.test.js" {
				t.Errorf("%s: path %q", cmd, got)
			}
			re := regexp.MustCompile(args[len(args)-1])
			if !re.MatchString(name) || re.String() != regexp.QuoteMeta(name) {
				t.Errorf("%s: pattern %q does not stand for %q", cmd, re, name)
			}
		}
	}
	if args := shellArgs(t, sh, pytestCommand("my tests/test_a.py", "TestA::test_b")); args[len(args)-1] != "my tests/test_a.py::TestA::test_b" {
		t.Errorf("pytest node id: %q", args)
	}
	if args := shellArgs(t, sh, goTestCommand("pkg/it's/a_test.go", "TestA")); strings.Join(args[2:], " ") != "-run ^TestA$ ./pkg/it's" {
		t.Errorf("go test args: %q", args)
	}
}

// shellArgs has sh parse cmd and returns its words.
func shellArgs(t *testing.T, sh, cmd string) []string {
	t.Helper()
	out, err := exec.Command(sh, "-c", "set -- "+cmd+`; for a in "$@"; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", cmd, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

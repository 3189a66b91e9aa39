package reward

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/finetune/env"
	"github.com/frognano/frognano/finetune/task"
	"github.com/frognano/frognano/internal/gocache"
)

// How the hidden Go tests run, and why so.
//
// go test -json reads a test binary's standard output, where package testing writes its
// results framed by the byte 0x16 (-test.v=test2json), and where the code under test
// writes too: whatever runs in the binary can print a result line. No channel of package
// testing is out of that code's reach (it shares the process), so no choice of channel
// alone makes a forged result impossible. What frognano controls is everything around the
// binary, so it does the steps go test would do, itself:
//
//   - It builds one test binary per package (go test -c) in the sandbox with the trusted
//     build cache and a scratch layer of the run's own. No code of the agent runs while
//     building (the screen refuses cgo, and the build's settings come from the base).
//   - It adds to each package two tests of its own, with names drawn at random for this
//     run (the canaries): one passes, the other fails, and their names do not say which.
//     Their source is removed once the binary is built, so the code under test finds
//     their names in its arguments only. The binary runs twice: the hidden tests with the
//     passing canary (a binary that ends before its tests have run, after printing passes
//     from an init, has no result for it), then the two canaries alone (one that prints a
//     pass for every test it was asked to run passes the failing one).
//   - It runs each binary with `exec`, so that the exit status is the binary's own as the
//     sandbox saw it, not a line someone printed; it also passes -test.paniconexit0, as go
//     test does, so os.Exit(0) during a test is a failure.
//   - The tree is read-only to the test run (bound so by bubblewrap): the code under test
//     cannot rewrite the golden files or test data its tests compare with. A test that
//     writes beside its own sources fails here.
//   - It reads the framing itself and trusts a run only if every test it named has
//     exactly one result, no other test has one, the canaries came out as written, and
//     the closing line and the exit status agree with the results: PASS and 0 when none
//     failed, FAIL and 1 when one did. Anything else gives 0, "results not trustworthy".
//
// Why the exit status matters most: a forger that rewrites what the binary prints (it may
// replace os.Stdout with a pipe of its own and turn a FAIL line into a PASS) leaves the
// exit status alone, and testing exits 1 when a test failed. Only a way to end the process
// itself (os.Exit, syscall.Exit, syscall.Syscall, //go:linkname, cgo, package flag's exit on
// -h) or to choose which tests run (os.Args, testing's flags through package flag) changes
// that, and those are what the screen refuses. A dependency of the repository's that exits
// on its own (a command-line library's --help) is one the screen cannot know. This is also why the failing canary runs apart: in the
// hidden tests' run, exit status 1 would always be expected, and would say nothing.
//
// The canaries raise the bar, not the ceiling: code that knows the repository's test
// names (its test files are readable) can tell frognano's tests from the hidden ones.
//
// The hidden tests are not in the agent's copy (finetune/withhold), but they are in this
// tree, with their golden files: code under test that reads them here (os.ReadFile,
// os/exec, //go:embed) can return what they assert with the bug left in (measured, reward
// 1), so the screen counts file reads as it counts exits (screen.go's goReads). A reader
// it does not name (a repository helper that opens a path it is given) is still open.

// goRun is one package's test binary and what it is to run.
type goRun struct {
	pkg, dir string   // import path; folder relative to the top, slash-separated
	mod      string   // its module's folder, where it builds (relative, slash-separated)
	gowork   string   // GOWORK for its build: a go.work of the tree (absolute), or off
	names    []string // the hidden tests of the package
	canary   string   // frognano's test that passes
	failing  string   // frognano's test that fails
	src      string   // their file, removed once the binary is built
	bin      string   // the built binary, outside the tree, once built
	buildErr string   // why it did not build
}

// runGo builds and runs the hidden tests of a Go task on the tree at root, each package in
// the module spec names; tmp is the run's private folder. It returns per hidden test
// whether it passed, and, when the results cannot be trusted, why.
func runGo(ctx context.Context, root, tmp string, spec task.TestSpec, hidden []string, o Options, res *Result) (passed map[string]bool, untrusted, broken string, err error) {
	runs, err := planGo(root, spec, hidden)
	if err != nil {
		return nil, "", "", err
	}
	start := time.Now()
	if err := buildGo(ctx, root, tmp, runs, o); err != nil {
		return nil, "", "", err
	}
	res.Build = time.Since(start)
	start = time.Now()
	defer func() { res.Test = time.Since(start) }()

	layers := gocache.Layers{Trusted: o.Trusted, Scratch: filepath.Join(tmp, "scratch-test")}
	opts := sandbox.Options{ReadOnly: []string{root, filepath.Join(tmp, "bin")}, Hide: o.hide(), Limits: runLimits(48 << 20)}
	if err := layers.Sandbox(&opts, o.Exe); err != nil {
		return nil, "", "", err
	}
	r, err := newRunner(ctx, opts)
	if err != nil {
		return nil, "", "", err
	}
	defer r.Close()
	passed = map[string]bool{}
	var why []string
	for i, run := range runs {
		if run.buildErr != "" {
			broken += fmt.Sprintf("; %s did not build (%s)", run.pkg, run.buildErr)
			for _, n := range run.names {
				passed[env.TestID(run.pkg, n)] = false
			}
			continue
		}
		wd := filepath.Join(tmp, fmt.Sprintf("run-%d", i))
		if err := os.Mkdir(wd, 0o755); err != nil {
			return nil, "", "", err
		}
		runBin := func(names []string) (sandbox.Output, error) {
			cmd := fmt.Sprintf("cd %s && exec %s -test.v=test2json -test.paniconexit0 -test.count=1 -test.timeout=%s -test.run=%s",
				env.ShellQuote(filepath.Join(root, filepath.FromSlash(run.dir))), env.ShellQuote(run.bin), o.Timeout, env.ShellQuote(env.RunRegexp(names)))
			return r.Run(ctx, sandbox.Cmd{Dir: wd, Command: cmd, Timeout: o.Timeout + time.Minute})
		}
		out, err := runBin(append(append([]string{}, run.names...), run.canary))
		if err != nil {
			return nil, "", "", err
		}
		got, bad := judge(out, append(append([]string{}, run.names...), run.canary), map[string]string{run.canary: "PASS"})
		if bad == "" {
			out, err := runBin([]string{run.canary, run.failing})
			if err != nil {
				return nil, "", "", err
			}
			_, bad = judge(out, []string{run.canary, run.failing}, map[string]string{run.canary: "PASS", run.failing: "FAIL"})
		}
		if bad != "" {
			why = append(why, run.pkg+": "+bad)
		}
		for _, n := range run.names {
			passed[env.TestID(run.pkg, n)] = got[n]
		}
	}
	return passed, strings.Join(why, "; "), broken, nil
}

// judge reads one run of a binary asked to run names: whether each passed, and why the run
// cannot be trusted ("" when it can). want are frognano's tests and their outcome.
func judge(out sandbox.Output, names []string, want map[string]string) (map[string]bool, string) {
	f := parseFraming(out.Stdout)
	got := map[string]bool{}
	for _, n := range names {
		got[n] = len(f.results[n]) == 1 && f.results[n][0] == "PASS"
	}
	switch {
	case out.TimedOut || out.ExitCode == 124:
		return got, "the tests ran past their time limit"
	case out.Flooded || out.StdoutDropped > 0:
		return got, "the tests printed more than frognano reads"
	}
	asked := map[string]bool{}
	for _, n := range names {
		asked[n] = true
	}
	for _, n := range sortedKeys(f.results) {
		if !asked[n] {
			return got, fmt.Sprintf("a result for %s, which was not run", n)
		}
	}
	failed := false
	for _, n := range names {
		rs := f.results[n]
		if len(rs) != 1 {
			if out.ExitCode != 0 && out.ExitCode != 1 && len(rs) == 0 {
				return got, fmt.Sprintf("the test binary ended (exit status %d) before %s had a result", out.ExitCode, n)
			}
			return got, fmt.Sprintf("%d results for %s", len(rs), n)
		}
		if w, ok := want[n]; ok && rs[0] != w {
			return got, fmt.Sprintf("frognano's %s came out %s, not %s", n, rs[0], w)
		}
		failed = failed || rs[0] == "FAIL"
	}
	closing, exit := "PASS", 0
	if failed {
		closing, exit = "FAIL", 1
	}
	if len(f.final) != 1 || f.final[0] != closing || out.ExitCode != exit {
		return got, fmt.Sprintf("the closing lines %q and exit status %d, where %s", f.final, out.ExitCode,
			map[bool]string{true: "a test failed", false: "no test failed"}[failed])
	}
	return got, ""
}

// framing is what a run's output says in test2json's framing: each top-level test's
// results in order (PASS, FAIL, SKIP), and the closing lines.
type framing struct {
	results map[string][]string
	final   []string
}

// parseFraming reads -test.v=test2json output: result lines are "\x16--- PASS: Name (…)"
// at the start of a line (subtests' names hold a slash), the closing line "\x16PASS" or
// "\x16FAIL".
func parseFraming(stdout string) framing {
	f := framing{results: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "\x16")
		if !ok {
			continue
		}
		if line == "PASS" || line == "FAIL" {
			f.final = append(f.final, line)
			continue
		}
		for _, st := range []string{"PASS", "FAIL", "SKIP"} {
			rest, ok := strings.CutPrefix(line, "--- "+st+": ")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(rest, " ")
			if name != "" && !strings.Contains(name, "/") {
				f.results[name] = append(f.results[name], st)
			}
		}
	}
	return f
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// modulePath is the module path in dir's go.mod (the base commit's).
func modulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("reward: a Go task with no go.mod in its module's folder: %w", err)
	}
	if m := env.ModulePath(b); m != "" {
		return m, nil
	}
	return "", errors.New("reward: go.mod names no module")
}

// planGo groups the hidden tests by package and writes each package's canary. A package
// lies in the module spec names for it (task.TestSpec.ModuleDir).
func planGo(root string, spec task.TestSpec, hidden []string) ([]goRun, error) {
	byPkg := map[string][]string{}
	for _, id := range hidden {
		pkg, name := env.SplitID(id)
		if pkg == "" || name == "" || strings.ContainsAny(name, "/ ") {
			return nil, fmt.Errorf("reward: %q is not a Go test's id", id)
		}
		byPkg[pkg] = append(byPkg[pkg], name)
	}
	var runs []goRun
	modules := map[string]string{} // folder → module path
	for _, pkg := range sortedKeys(byPkg) {
		mod := path.Clean(spec.ModuleDir(pkg))
		if path.IsAbs(mod) || mod == ".." || strings.HasPrefix(mod, "../") {
			return nil, fmt.Errorf("reward: the module folder %q of %s is outside the tree", mod, pkg)
		}
		module, ok := modules[mod]
		if !ok {
			if err := realParents(root, mod+"/go.mod"); err != nil {
				return nil, err
			}
			var err error
			if module, err = modulePath(filepath.Join(root, filepath.FromSlash(mod))); err != nil {
				return nil, err
			}
			modules[mod] = module
		}
		dir := "."
		if pkg != module {
			rel, ok := strings.CutPrefix(pkg, module+"/")
			if !ok {
				return nil, fmt.Errorf("reward: the package %s is not in the module %s", pkg, module)
			}
			dir = rel
		}
		dir = path.Join(mod, dir)
		if err := realParents(root, dir+"/x"); err != nil {
			return nil, err
		}
		gowork, err := goWork(root, spec, mod)
		if err != nil {
			return nil, err
		}
		name, err := testPackageName(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			return nil, fmt.Errorf("reward: %s: %w", pkg, err)
		}
		canary, failing, file := "TestFrognano"+random(), "TestFrognano"+random(), "zz_frognano_"+random()+"_test.go"
		src := fmt.Sprintf("package %s\n\nimport \"testing\"\n\n// frognano's: one passes, one fails, and each must come out so.\n\nfunc %s(t *testing.T) {}\n\nfunc %s(t *testing.T) { t.Error(\"frognano's canary fails on purpose\") }\n", name, canary, failing)
		p := filepath.Join(root, filepath.FromSlash(dir), file)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			return nil, err
		}
		names := byPkg[pkg]
		sort.Strings(names)
		runs = append(runs, goRun{pkg: pkg, dir: dir, mod: mod, gowork: gowork, names: names, canary: canary, failing: failing, src: p})
	}
	return runs, nil
}

// goWork is GOWORK for building the module in folder mod: the go.work at the top when the
// task runs with it, the one in the folder spec.Works gives for the module (below the top,
// inside the tree, reached by no link), else off. Each is the base commit's: the agent's
// changes count only in the files the task's patch touches (tree.go), never a go.work.
func goWork(root string, spec task.TestSpec, mod string) (string, error) {
	if spec.Workspace {
		return filepath.Join(root, "go.work"), nil
	}
	w := spec.WorkDir(mod)
	if w == "" {
		return "off", nil
	}
	w = path.Clean(w)
	if path.IsAbs(w) || w == ".." || strings.HasPrefix(w, "../") {
		return "", fmt.Errorf("reward: the go.work folder %q of the module in %s is outside the tree", w, mod)
	}
	if err := realParents(root, w+"/go.work"); err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(w), "go.work"), nil
}

// random is 16 hex digits drawn at random.
func random() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// testPackageName is the package clause of the test files in dir (the base commit's).
func testPackageName(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly)
		if err == nil {
			return f.Name.Name, nil
		}
	}
	return "", errors.New("no test file")
}

// buildGo compiles each package's test binary in the sandbox, in its module's folder with
// its GOWORK (goRun.gowork), and moves it out of the tree into tmp/bin, where the test run can only
// read it.
func buildGo(ctx context.Context, root, tmp string, runs []goRun, o Options) error {
	layers := gocache.Layers{Trusted: o.Trusted, Scratch: filepath.Join(tmp, "scratch-build")}
	opts := sandbox.Options{Limits: runLimits(1 << 20)}
	if err := layers.Sandbox(&opts, o.Exe); err != nil {
		return err
	}
	r, err := newRunner(ctx, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return err
	}
	const out = ".frognano-reward-bin"
	for i := range runs {
		run := &runs[i]
		defer os.Remove(run.src) // built in, or not: either way no test run reads it
		name := fmt.Sprintf("%d.test", i)
		rel, _ := strings.CutPrefix(run.dir, run.mod+"/")
		if run.dir == run.mod {
			rel = "."
		}
		// In the module's folder, from the top: the sandbox shows the command its own folder
		// only, and the module may need the rest of the tree (a replace, the go.work).
		cmd := fmt.Sprintf(`export GOTOOLCHAIN=local GOFLAGS="$GOFLAGS -buildvcs=false" GOWORK=%s; cd %s && go test -c -vet=off -o %s %s`,
			env.ShellQuote(run.gowork), env.ShellQuote(filepath.Join(root, filepath.FromSlash(run.mod))),
			env.ShellQuote(filepath.Join(root, out, name)), env.ShellQuote("./"+rel))
		o, err := r.Run(ctx, sandbox.Cmd{Dir: root, Command: cmd, Timeout: 20 * time.Minute})
		if err != nil {
			return err
		}
		built := filepath.Join(root, out, name)
		st, serr := os.Lstat(built)
		if o.ExitCode != 0 || serr != nil || !st.Mode().IsRegular() {
			run.buildErr = fmt.Sprintf("exit status %d: %s", o.ExitCode, tail(o.Stderr+o.Stdout, 1000))
			continue
		}
		run.bin = filepath.Join(bin, name)
		if err := os.Rename(built, run.bin); err != nil {
			return err
		}
		// frognano's, and not writable by the commands' user: no test run may replace the
		// binary of a package that runs after it.
		if err := os.Chown(run.bin, os.Geteuid(), os.Getegid()); err != nil {
			return err
		}
		if err := os.Chmod(run.bin, 0o555); err != nil {
			return err
		}
	}
	return os.RemoveAll(filepath.Join(root, out))
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// newRunner is a sandbox that confines writes: the trusted build cache layer and the tree
// are bound read-only only there (see gocache.Layers.Sandbox).
func newRunner(ctx context.Context, opts sandbox.Options) (*sandbox.Runner, error) {
	r, err := sandbox.NewRunner(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("reward: sandbox: %w", err)
	}
	if iso := r.Isolation(); !iso.WriteConfined {
		r.Close()
		return nil, fmt.Errorf("%w; this machine's is %s: install bubblewrap and check with `frognano doctor`", ErrUnconfined, iso.Summary())
	}
	return r, nil
}

// runLimits are the agent commands' limits (sandbox.DefaultLimits) with output as the
// output cap. Memory must be set: a Limits' zero Memory means none, and the code under
// test could then take all of the machine's memory, and with it Ollama or the trainer
// (measured: a 9 GiB allocation in the code under test was granted).
func runLimits(output int) *sandbox.Limits {
	l := sandbox.DefaultLimits()
	l.Output = output
	return &l
}

// ErrUnconfined: rewards need the bubblewrap sandbox, the only one that keeps the trusted
// build cache and the evaluation tree read-only to the commands; a reward computed where
// the code under test can rewrite them cannot be trusted.
var ErrUnconfined = errors.New("reward: the sandbox does not confine writes")

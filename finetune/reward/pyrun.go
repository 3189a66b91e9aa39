package reward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/finetune/env"
)

// How the hidden tests of a Python task run: pytest, from the user's virtual environment
// (env.Detection.LocatePython), on the evaluation tree bound read-only, the hidden tests
// named by node id, and two canary tests of frognano's beside the first of them, one that
// passes and one that fails. pytest writes its JUnit report onto a descriptor of the
// command's stdout (env's resultsFD), not into a file of the tree. The results count only
// when every hidden test and both canaries have exactly one <testcase>, no other test has
// one, the canaries came out as written, and pytest's exit status is 1 (a test failed).
//
// Why a failing canary: Python code runs in pytest's own process and can change pytest
// itself (patch _pytest's report so that every test passes, and pytest then exits 0 on a
// run that is consistent). Measured: behind the screen, such a patch in the agent's
// calc/__init__.py earned reward 1 with the passing canary alone; the failing canary turns
// that blanket forgery into "results not trustworthy". A forger that spares frognano's
// tests by name (they are in pytest's arguments) still gets past both, and only the screen
// (an import of pytest or _pytest, sys.exit, os._exit in the agent's code) refuses it;
// Python is dynamic enough (__import__ of a built string) that a determined forger gets
// past a screen of the text too.

// runPytest runs the hidden tests of a Python task on the tree at root; repo is the user's
// repository (its virtual environment).
func runPytest(ctx context.Context, root, tmp, repo string, hidden []string, o Options, res *Result) (passed map[string]bool, untrusted string, err error) {
	d, err := env.Detect(root)
	if err != nil {
		return nil, "", fmt.Errorf("reward: %w", err)
	}
	if d.Kind != env.KindPython || d.Runner != env.RunnerPytest {
		return nil, "", fmt.Errorf("reward: %w: a Python task whose suite is %q run by %q", ErrUnsupported, d.Kind, d.Runner)
	}
	d.LocatePython(repo)
	first, _ := env.SplitID(hidden[0])
	nonce := make([]byte, 8)
	rand.Read(nonce)
	file := path.Join(path.Dir(first), "test_zz_frognano_"+hex.EncodeToString(nonce)+".py")
	if err := realParents(root, file); err != nil {
		return nil, "", err
	}
	canary := env.TestID(file, "test_frognano_canary_"+hex.EncodeToString(nonce))
	failing := env.TestID(file, "test_frognano_canary_fails_"+hex.EncodeToString(nonce))
	_, name := env.SplitID(canary)
	_, fname := env.SplitID(failing)
	src := fmt.Sprintf("# frognano's: one pass and one failure say that pytest ran the tests and reported them as they went.\n\n\ndef %s():\n    pass\n\n\ndef %s():\n    assert False, \"frognano's canary fails on purpose\"\n", name, fname)
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(file)), []byte(src), 0o644); err != nil {
		return nil, "", err
	}

	start := time.Now()
	defer func() { res.Test = time.Since(start) }()
	opts := sandbox.Options{ReadOnly: append([]string{root}, d.ReadOnly...), Writable: []string{}, Limits: &sandbox.Limits{Output: 48 << 20}}
	r, err := newRunner(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	wd := filepath.Join(tmp, "run-py")
	if err := os.Mkdir(wd, 0o755); err != nil {
		return nil, "", err
	}
	all := append(append([]string{}, hidden...), canary, failing)
	cmd := "cd " + env.ShellQuote(root) + " && " + d.ScriptCommand(o.Timeout, o.Timeout, all, nil)
	out, err := r.Run(ctx, sandbox.Cmd{Dir: wd, Command: cmd, Timeout: o.Timeout + time.Minute})
	if err != nil {
		return nil, "", err
	}
	passed, untrusted = judgeScript(out, d.ParseScript([]byte(out.Stdout), []byte(out.Stderr), root), hidden, canary, failing)
	return passed, untrusted, nil
}

// judgeScript reads a pytest run: each hidden test's pass, and why the run cannot be
// trusted ("" when it can). canary must pass and failing fail, so pytest must exit 1.
func judgeScript(out sandbox.Output, r env.Results, hidden []string, canary, failing string) (map[string]bool, string) {
	passed := map[string]bool{}
	for _, id := range hidden {
		passed[id] = r.Tests[id].Status == env.Pass
	}
	switch {
	case out.TimedOut || out.ExitCode == 124:
		return passed, "the tests ran past their time limit"
	case out.Flooded || out.StdoutDropped > 0:
		return passed, "the tests printed more than frognano reads"
	}
	expected := map[string]bool{canary: true, failing: true}
	for _, id := range hidden {
		expected[id] = true
	}
	for _, id := range sortedKeys(r.Tests) {
		if !expected[id] {
			return passed, fmt.Sprintf("a result for %s, which was not run", id)
		}
	}
	// The report is parsed into one result per test; a test reported twice (a forged
	// report beside the real one, or a pass and a teardown error) shows in the count.
	if n := strings.Count(out.Stdout, "<testcase"); n != len(expected) {
		return passed, fmt.Sprintf("%d results for %d tests", n, len(expected))
	}
	for _, id := range sortedKeys(expected) {
		if _, ok := r.Tests[id]; !ok {
			return passed, "no result for " + id
		}
	}
	switch {
	case r.Tests[canary].Status != env.Pass:
		return passed, "frognano's passing test did not pass"
	case r.Tests[failing].Status != env.Fail:
		// What a patched report does to every test: the forger made all of them pass.
		return passed, "frognano's failing test did not fail"
	case out.ExitCode != 1:
		return passed, fmt.Sprintf("pytest's exit status %d, where a test failed", out.ExitCode)
	}
	return passed, ""
}

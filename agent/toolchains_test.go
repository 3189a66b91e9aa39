package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
)

// The sandbox denies by default and binds back what test runners need: a repository's own
// test suite must still run in it, from the tools the user has (a virtual environment made
// by pyenv's Python, Node from the system). Go is covered by the demo's test.
func TestProjectTestsRunInTheSandbox(t *testing.T) {
	t.Parallel()
	if iso := sandbox.Detect(context.Background()); iso.Mode != sandbox.ModeBwrap && os.Getenv("CI") != "" {
		t.Fatalf("CI must test the sandbox under bubblewrap: %s", iso.Summary())
	}
	t.Run("pytest from a virtual environment", func(t *testing.T) {
		python, err := exec.LookPath("python3")
		if err != nil || exec.Command(python, "-c", "import pytest").Run() != nil {
			t.Skip("python3 with pytest is not installed")
		}
		user := t.TempDir()
		os.WriteFile(filepath.Join(user, "calc.py"), []byte("def add(a, b):\n    return a + b\n"), 0o644)
		os.WriteFile(filepath.Join(user, "test_calc.py"), []byte("from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"), 0o644)
		// The user's environment sees the interpreter's packages (pytest) without a download:
		// the sandbox has no network.
		if out, err := exec.Command(python, "-m", "venv", "--system-site-packages", filepath.Join(user, ".venv")).CombinedOutput(); err != nil {
			t.Fatalf("venv: %v %s", err, out)
		}
		out := runInCopy(t, user, `.venv/bin/python -m pytest -q -p no:cacheprovider 2>&1 | tail -3`)
		if !strings.Contains(out, "1 passed") {
			t.Errorf("pytest in the sandbox: %s", out)
		}
	})
	t.Run("node's test runner", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			t.Skip("node is not installed")
		}
		user := t.TempDir()
		os.WriteFile(filepath.Join(user, "package.json"), []byte(`{"name":"calc","version":"1.0.0","scripts":{"test":"node --test"}}`), 0o644)
		os.WriteFile(filepath.Join(user, "calc.test.js"), []byte("const test = require('node:test');\nconst assert = require('node:assert');\ntest('add', () => assert.strictEqual(2 + 3, 5));\n"), 0o644)
		out := runInCopy(t, user, `npm test 2>&1 | tail -12`)
		if !strings.Contains(out, "# pass 1") {
			t.Errorf("npm test in the sandbox: %s", out)
		}
	})
}

// runInCopy runs command in a private copy of user, in an episode's sandbox, and returns
// what the model would see; a non-zero exit fails t.
func runInCopy(t *testing.T, user, command string) string {
	t.Helper()
	ctx := context.Background()
	ws, err := workspace.Prepare(ctx, user, filepath.Join(t.TempDir(), "repo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Remove()
	r, err := newRunner(ctx, ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if os.Getenv("FROGNANO_SANDBOX_GOCACHE") == "" {
		defer os.RemoveAll(sandbox.GoCacheFor(user)) // a test repository's own cache
	}
	o, err := r.Run(ctx, sandbox.Cmd{Dir: ws.Root, Command: "set -o pipefail; " + command, Timeout: 2 * time.Minute})
	if err != nil || o.ExitCode != 0 {
		t.Fatalf("%s: exit %d, %v\n%s%s", command, o.ExitCode, err, o.Stdout, o.Stderr)
	}
	return o.Stdout
}

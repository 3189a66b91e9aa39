package demo

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestDemoFallsBackToPrivateOllama: with no Ollama at the configured address, the demo
// starts its own with the scripted model and says so plainly.
func TestDemoFallsBackToPrivateOllama(t *testing.T) {
	ollamatest.Binary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = Run(ctx, Options{Config: ollama.Config{Host: closed}, Out: &out, Err: &out, WorkDir: t.TempDir(), Modelgen: buildModelgen(t)})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"Not using your Ollama: Ollama is not reachable at http://" + closed,
		"--- FAIL: TestAdd",
		"Add(2, 3) = -1, want 5",
		"Model: " + ScriptedModelName + " — a SCRIPTED DEMO MODEL",
		"[step 3] Editing calc.go",
		"Agent finished: done after 5 steps.",
		"-\treturn a - b",
		"+\treturn a + b",
		"(after applying the diff: PASS)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

// buildModelgen builds cmd/frognano-modelgen, the helper the demo writes its model with,
// into t's temp folder.
func buildModelgen(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), ModelgenName)
	// The test runs in demo/: the command's package is one folder up.
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/frognano-modelgen").CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", ModelgenName, err, out)
	}
	return bin
}

// TestModelgenMissing: without the helper the demo says which binary it lacks and how to
// build it, before starting anything.
func TestModelgenMissing(t *testing.T) {
	bin := buildModelgen(t)
	t.Setenv("PATH", t.TempDir())
	_, err := FindModelgen() // the test binary's folder has no frognano-modelgen
	if err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), ModelgenName) {
		t.Fatalf("FindModelgen with no helper anywhere: %v", err)
	}
	t.Setenv("PATH", filepath.Dir(bin))
	if got, err := FindModelgen(); err != nil || got != bin {
		t.Fatalf("FindModelgen with the helper on PATH = %q, %v; want %q", got, err, bin)
	}
}

// TestWriteScripted: the helper writes the demo's model and reports its file and template,
// which is what Ollama is given.
func TestWriteScripted(t *testing.T) {
	gen := buildModelgen(t)
	path := filepath.Join(t.TempDir(), "m.gguf")
	m, err := writeScripted(context.Background(), gen, path, Script())
	if err != nil {
		t.Fatal(err)
	}
	if m.Path != path || !strings.Contains(m.Template, ".Tools") || m.Parameters["stop"] == nil {
		t.Fatalf("scripted model %+v", m)
	}
	if _, err := writeScripted(context.Background(), gen, filepath.Join(t.TempDir(), "no", "such", "dir", "m.gguf"), Script()); err == nil || !strings.Contains(err.Error(), ModelgenName) {
		t.Fatalf("writing into a missing folder: %v", err)
	}
}

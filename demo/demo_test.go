package demo

import (
	"bytes"
	"context"
	"net"
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
	err = Run(ctx, Options{Config: ollama.Config{Host: closed}, Out: &out, Err: &out, WorkDir: t.TempDir()})
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

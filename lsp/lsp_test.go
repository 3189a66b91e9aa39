package lsp

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// workspace is the demo's sample project plus a stub to implement and a Python file.
const sampleWorkspace = `
-- go.mod --
module example.com/calc

go 1.22
-- calc.go --
// Package calc is frognano's demo project.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}

// Mul returns the product of a and b.
func Mul(a, b int) int {
	panic("not implemented")
}
-- calc_test.go --
package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}
`

// closedAddr is an address where nothing listens: Ollama is "down".
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestCodeActionsNeedNoModel lists every kind of action with Ollama down: listing never
// calls the model, and each action sits where it should.
func TestCodeActionsNeedNoModel(t *testing.T) {
	t.Parallel()
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: closedAddr(t)}, capsFull(), nil)
	e.open("calc.go")
	e.open("calc_test.go")

	got := titles(e.actions("calc_test.go", "Add(2, 3)", true))
	want := []string{"Fix failing test TestAdd", "Explain TestAdd", "Ask FrogNano…"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("in a test: %q, want %q", got, want)
	}
	got = titles(e.actions("calc.go", `panic("not implemented")`, true))
	want = []string{"Implement Mul", "Explain Mul", "Ask FrogNano…"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("in a stub: %q, want %q", got, want)
	}
	diag := protocol.Diagnostic{Range: e.rangeOf("calc.go", "a - b"), Message: protocol.String("suspicious subtraction in Add\nmore detail")}
	got = titles(e.actions("calc.go", "return a - b", false, diag))
	want = []string{"Fix: suspicious subtraction in Add", "Write tests for Add", "Explain this", "Ask FrogNano…"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("on a diagnostic with a selection: %q, want %q", got, want)
	}
	if msgs := e.shownMessages(); len(msgs) != 0 {
		t.Errorf("listing actions showed messages: %q", msgs)
	}
}

// TestDidChangeIsSeenByTheNextRequest: a change followed at once by a code action must be
// visible to it, although the library dispatches requests concurrently.
func TestDidChangeIsSeenByTheNextRequest(t *testing.T) {
	t.Parallel()
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: closedAddr(t)}, capsFull(), nil)
	e.open("calc.go")
	for i := 0; i < 30; i++ {
		stub, body := "return a - b", `panic("TODO")`
		if i%2 == 1 {
			stub, body = body, stub
		}
		e.edit("calc.go", stub, body)
		got := titles(e.actions("calc.go", "func Add", true))
		implement := len(got) > 0 && got[0] == "Implement Add"
		if implement != (i%2 == 0) {
			t.Fatalf("change %d: actions %q do not reflect the edit", i, got)
		}
	}
	// A burst of keystrokes, each an incremental change against the previous version,
	// then at once a request whose answer depends on all of them.
	for i := 0; i < 200; i++ {
		e.edit("calc.go", "func Mul(", "func Mulx(")
		e.edit("calc.go", "func Mulx(", "func Mul(")
	}
	e.edit("calc.go", "func Mul(", "func Product(")
	if got := titles(e.actions("calc.go", `panic("not implemented")`, true)); len(got) == 0 || got[0] != "Implement Product" {
		t.Errorf("after a burst of changes: %q", got)
	}
	if msgs := e.shownMessages(); len(msgs) > 0 {
		t.Errorf("changes were lost: %q", msgs)
	}
	if text := e.text("calc.go"); !strings.Contains(text, "func Product(") {
		t.Fatalf("editor buffer wrong: %s", text)
	}
}

// TestUTF16Positions: ranges after non-BMP characters are counted in UTF-16 units.
func TestUTF16Positions(t *testing.T) {
	t.Parallel()
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: closedAddr(t)}, capsFull(), nil)
	e.open("calc.go")
	e.edit("calc.go", "// Add returns the sum of a and b.", "// Add returns the sum 😀 of a and b, ça va.")
	got := titles(e.actions("calc.go", "return a - b", true))
	if len(got) == 0 || got[0] != "Write tests for Add" {
		t.Errorf("after an emoji edit: %q", got)
	}
}

// TestFixFailingTestEndToEnd: the scripted FrogNano episode behind "Fix failing test", on
// the real Ollama: progress with the agent's step titles, one versioned applyEdit, the
// buffer fixed, nothing written to disk by the server itself.
func TestFixFailingTestEndToEnd(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("fixer-e2e", modelgen.Qwen3, demo.Script())
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: srv.Host, Model: "fixer-e2e", NumCtx: 16384}, capsFull(), nil)
	e.open("calc.go")
	e.open("calc_test.go")
	a := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	if err := e.execute(context.Background(), a); err != nil {
		t.Fatalf("run: %v (messages %q)", err, e.shownMessages())
	}
	e.checkFixed(t)
}

// TestCancelStopsTheRun: cancelling through the progress token ends the run at once:
// no edit is applied and the agent's command is gone.
func TestCancelStopsTheRun(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("slow-cancel", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		{ToolCalls: []modelgen.ToolCall{{Name: "Bash", Arguments: map[string]any{"command": "sleep 93"}}}},
		{ToolCalls: []modelgen.ToolCall{{Name: "Write", Arguments: map[string]any{"file_path": "calc.go", "content": "broken"}}}},
		{Content: "done"},
	}})
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: srv.Host, Model: "slow-cancel", NumCtx: 16384}, capsFull(), nil)
	e.open("calc_test.go")
	a := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	errc := make(chan error, 1)
	go func() { errc <- e.execute(context.Background(), a) }()
	e.waitFor(30*time.Second, "the sleep to start", func() bool {
		out, _ := exec.Command("pgrep", "-f", "sleep 93").Output()
		return len(out) > 0
	})
	var token string
	e.mu.Lock()
	for _, p := range e.progress {
		token = p.token
	}
	e.mu.Unlock()
	start := time.Now()
	e.server.WorkDoneProgressCancel(context.Background(), &protocol.WorkDoneProgressCancelParams{Token: protocol.String(token)})
	// Uncancelled, the run would last the 93 s of its command: a deadline well short of
	// that, yet far above what a loaded machine needs, tells the two apart.
	select {
	case err := <-errc:
		if err == nil {
			t.Error("a cancelled run should answer with an error")
		}
		t.Logf("the run ended %s after the cancel", time.Since(start))
	case <-time.After(45 * time.Second):
		t.Fatal("the run did not end within 45s of cancel")
	}
	if len(e.editsSent()) != 0 {
		t.Error("a cancelled run applied an edit")
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 93").Output(); len(out) > 0 {
		t.Errorf("the agent's command survived: %s", out)
	}
}

// TestAppliedFalseIsReported: an editor that refuses the edit is not ignored.
func TestAppliedFalseIsReported(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("fixer-refused", modelgen.Qwen3, demo.Script())
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: srv.Host, Model: "fixer-refused", NumCtx: 16384}, capsFull(), nil)
	e.applyHook = func(*protocol.ApplyWorkspaceEditParams) *protocol.ApplyWorkspaceEditResult {
		reason := "the user rejected it"
		return &protocol.ApplyWorkspaceEditResult{Applied: false, FailureReason: &reason}
	}
	e.open("calc_test.go")
	a := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	if err := e.execute(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.waitMessage("did not apply FrogNano's change for Fix failing test TestAdd (the user rejected it)")
}

// TestOllamaDownIsExplained: the error names the address and says what to do.
func TestOllamaDownIsExplained(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: addr}, capsFull(), nil)
	e.open("calc_test.go")
	a := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	if err := e.execute(context.Background(), a); err == nil {
		t.Fatal("want an error")
	}
	e.waitMessage("Ollama is not reachable at http://" + addr + ". Start it with `ollama serve`")
}

package lsp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

func scripted(t *testing.T, srv *ollamatest.Server, name string, turns ...modelgen.Turn) ollama.Config {
	t.Helper()
	srv.Scripted(name, modelgen.Qwen3, modelgen.Script{Turns: turns})
	return ollama.Config{Host: srv.Host, Model: name, NumCtx: 16384}
}

func calls(cs ...modelgen.ToolCall) modelgen.Turn { return modelgen.Turn{ToolCalls: cs} }

func tc(name string, args map[string]any) modelgen.ToolCall {
	return modelgen.ToolCall{Name: name, Arguments: args}
}

// TestResolveReturnsTheEdit: a client that resolves edits gets actions with data and the
// edit in the resolve answer; the server sends no applyEdit of its own.
func TestResolveReturnsTheEdit(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("fixer-resolve", modelgen.Qwen3, demo.Script())
	caps := capsFull()
	caps.TextDocument = &protocol.TextDocumentClientCapabilities{CodeAction: &protocol.CodeActionClientCapabilities{
		DataSupport: ptr(true), ResolveSupport: protocol.ClientCodeActionResolveOptions{Properties: []string{"edit"}}}}
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: srv.Host, Model: "fixer-resolve", NumCtx: 16384}, caps, nil)
	e.open("calc.go")
	e.open("calc_test.go")
	a := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	if a.Data == nil || a.Command.Command != "" {
		t.Fatalf("want data and no command: %+v", a)
	}
	resolved, err := e.server.CodeActionResolve(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if resolved.Edit == nil || len(resolved.Edit.DocumentChanges) != 1 {
		t.Fatalf("resolved edit: %+v", resolved.Edit)
	}
	if reason := e.apply(resolved.Edit); reason != "" {
		t.Fatal(reason)
	}
	if !strings.Contains(e.text("calc.go"), "return a + b") {
		t.Error("resolved edit does not fix the file")
	}
	if n := len(e.editsSent()); n != 0 {
		t.Errorf("the server sent %d applyEdits on resolve", n)
	}
}

// TestEditDuringRun: the user types elsewhere in the file while the agent works; the
// agent's change is carried over onto the new text. Typing on the same line instead
// leaves the change out and says why.
func TestEditDuringRun(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("fixer-edit-during-run", modelgen.Qwen3, demo.Script())
	for _, tc := range []struct {
		name, old, new string
		applied        bool
	}{
		{"elsewhere", "// Mul returns the product of a and b.", "// Mul multiplies.", true},
		{"same line", "return a - b", "return b - a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEditor(t, sampleWorkspace, ollama.Config{Host: srv.Host, Model: "fixer-edit-during-run", NumCtx: 16384}, capsFull(), nil)
			e.open("calc.go")
			e.open("calc_test.go")
			a := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
			errc := make(chan error, 1)
			go func() { errc <- e.execute(context.Background(), a) }()
			e.waitFor(3*time.Minute, "the agent's edit", func() bool {
				return strings.Contains(strings.Join(e.progressMessages(), "|"), "report:Editing calc.go")
			})
			e.edit("calc.go", tc.old, tc.new)
			err := <-errc
			text := e.text("calc.go")
			if tc.applied {
				if err != nil || !strings.Contains(text, "return a + b") || !strings.Contains(text, "// Mul multiplies.") {
					t.Fatalf("err %v; want both changes:\n%s", err, text)
				}
				if v := *e.editsSent()[0].Edit.DocumentChanges[0].(*protocol.TextDocumentEdit).TextDocument.Version; v != 2 {
					t.Errorf("the re-based edit must be for the current version 2, got %d", v)
				}
				return
			}
			if err == nil || len(e.editsSent()) != 0 || !strings.Contains(text, "return b - a") {
				t.Fatalf("err %v, %d edits, text:\n%s", err, len(e.editsSent()), text)
			}
			e.waitMessage("you changed the same lines the agent did")
		})
	}
}

// TestMultiFileResult: created and modified files arrive in one edit, annotated for
// confirmation where the client supports it.
func TestMultiFileResult(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "multi",
		calls(tc("Write", map[string]any{"file_path": "mul_test.go", "content": "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {}\n"}),
			tc("Edit", map[string]any{"file_path": "calc.go", "old_string": "panic(\"not implemented\")", "new_string": "return a * b"})),
		modelgen.Turn{Content: "Implemented Mul and added a test."})
	caps := capsFull()
	caps.Workspace.WorkspaceEdit.ChangeAnnotationSupport = &protocol.ChangeAnnotationsSupportOptions{}
	e := newEditor(t, sampleWorkspace, cfg, caps, nil)
	e.open("calc.go")
	if err := e.execute(context.Background(), find(t, e.actions("calc.go", "panic(", true), "Implement Mul")); err != nil {
		t.Fatal(err)
	}
	edits := e.editsSent()
	if len(edits) != 1 {
		t.Fatalf("%d edits; messages %q", len(edits), e.shownMessages())
	}
	w := edits[0].Edit
	var kinds []string
	for _, dc := range w.DocumentChanges {
		switch c := dc.(type) {
		case *protocol.CreateFile:
			kinds = append(kinds, "create "+filepath.Base(c.URI.FsPath()))
			if c.AnnotationID != annotationID {
				t.Error("create not annotated")
			}
		case *protocol.TextDocumentEdit:
			kinds = append(kinds, "edit "+filepath.Base(c.TextDocument.URI.FsPath()))
			if _, ok := c.Edits[0].(*protocol.AnnotatedTextEdit); !ok {
				t.Error("text edit not annotated")
			}
		}
	}
	if strings.Join(sorted(kinds), ",") != "create mul_test.go,edit calc.go,edit mul_test.go" {
		t.Errorf("changes %v", kinds)
	}
	if a := w.ChangeAnnotations[annotationID]; a.NeedsConfirmation == nil || !*a.NeedsConfirmation || !strings.Contains(a.Label, "Implement Mul") {
		t.Errorf("annotation %+v", a)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "mul_test.go")); !strings.Contains(string(b), "func TestMul") {
		t.Errorf("created file: %q", b)
	}
	if !strings.Contains(e.text("calc.go"), "return a * b") {
		t.Error("calc.go not changed")
	}
}

// TestLinksFromTheAgent: links the agent made never reach the editor as file content; the
// one inside the folder is made by the server as a link once the edit is applied, the ones
// pointing outside are left out and named.
func TestLinksFromTheAgent(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	secret := filepath.Join(t.TempDir(), "id_rsa")
	os.WriteFile(secret, []byte("PRIVATE KEY\n"), 0o600)
	cfg := scripted(t, srv, "linker",
		calls(tc("Bash", map[string]any{"command": "ln -s " + secret + " notes.txt && ln -s /proc/self/environ env.txt && ln -s calc.go alias.go"}),
			tc("Edit", map[string]any{"file_path": "calc.go", "old_string": "panic(\"not implemented\")", "new_string": "return a * b"})),
		modelgen.Turn{Content: "Done."})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	e.open("calc.go")
	if err := e.execute(context.Background(), find(t, e.actions("calc.go", "panic(", true), "Implement Mul")); err != nil {
		t.Fatal(err)
	}
	edits := e.editsSent()
	if len(edits) != 1 {
		t.Fatalf("%d edits; messages %q", len(edits), e.shownMessages())
	}
	for _, dc := range edits[0].Edit.DocumentChanges {
		if c, ok := dc.(*protocol.CreateFile); ok {
			t.Errorf("the edit creates %s: links must not become files", c.URI.FsPath())
		}
	}
	for _, name := range []string{"notes.txt", "env.txt"} {
		if _, err := os.Lstat(filepath.Join(e.root, name)); err == nil {
			t.Errorf("%s was made in the user's folder", name)
		}
	}
	if target, err := os.Readlink(filepath.Join(e.root, "alias.go")); err != nil || target != "calc.go" {
		t.Errorf("alias.go: %q %v, want a link to calc.go", target, err)
	}
	msgs := strings.Join(e.shownMessages(), "\n")
	if !strings.Contains(msgs, "notes.txt: a symbolic link to "+secret+", outside the folder") || strings.Contains(msgs, "PRIVATE") {
		t.Errorf("messages %q", msgs)
	}
	if !strings.Contains(e.text("calc.go"), "return a * b") {
		t.Error("calc.go not changed")
	}
}

// TestBusy: a second action while one runs is refused with a clear message.
func TestBusy(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "slow-busy", calls(tc("Bash", map[string]any{"command": "sleep 94"})), modelgen.Turn{Content: "done"})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	e.open("calc_test.go")
	e.open("calc.go")
	ctx, cancel := context.WithCancel(context.Background())
	first := find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	errc := make(chan error, 1)
	go func() { errc <- e.execute(ctx, first) }()
	e.waitFor(60*time.Second, "the first run", func() bool { return len(e.progressMessages()) > 0 })
	if err := e.execute(context.Background(), find(t, e.actions("calc.go", "panic(", true), "Implement Mul")); err == nil {
		t.Error("a second run should be refused")
	}
	e.waitMessage(`already working on "Fix failing test TestAdd"`)
	// Cancelling the request ($/cancelRequest) stops the first run too: uncancelled it
	// would last the 94 s of its command, so a deadline well short of that tells.
	cancel()
	select {
	case <-errc:
	case <-time.After(45 * time.Second):
		t.Fatal("$/cancelRequest did not stop the run within 45s")
	}
}

// TestExplainShowsADocument and TestAskTakesAnInstruction cover the answer-only action and
// the free-form one.
func TestExplainShowsADocument(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "explainer", modelgen.Turn{Content: "`Add` subtracts: **a bug**."})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	e.open("calc.go")
	if err := e.execute(context.Background(), find(t, e.actions("calc.go", "return a - b", true), "Explain Add")); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	shown := append([]string(nil), e.shown...)
	e.mu.Unlock()
	if len(shown) != 1 {
		t.Fatalf("shown %v; messages %q", shown, e.shownMessages())
	}
	b, _ := os.ReadFile(uri.URI(shown[0]).FsPath())
	if !strings.Contains(string(b), "# Explain Add") || !strings.Contains(string(b), "`Add` subtracts: **a bug**.") {
		t.Errorf("document:\n%s", b)
	}
	if len(e.editsSent()) != 0 {
		t.Error("explain must not edit")
	}
}

func TestAskTakesAnInstruction(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "asker",
		calls(tc("Edit", map[string]any{"file_path": "calc.go", "old_string": "// Add returns", "new_string": "// Add adds and returns"})),
		modelgen.Turn{Content: "Reworded."})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	e.open("calc.go")
	a := find(t, e.actions("calc.go", "return a - b", true), "Ask FrogNano…")
	var d actionData
	json.Unmarshal(a.Command.Arguments[0], &d)
	if err := e.execute(context.Background(), a); err == nil {
		t.Error("ask without an instruction must fail")
	}
	e.waitMessage("Ask FrogNano needs an instruction")
	d.Instruction = "Reword the comment of Add."
	raw, _ := json.Marshal(d)
	if _, err := e.server.ExecuteCommand(context.Background(), &protocol.ExecuteCommandParams{Command: CommandAsk, Arguments: []protocol.LSPAny{raw}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.text("calc.go"), "// Add adds and returns") {
		t.Errorf("not applied:\n%s", e.text("calc.go"))
	}
}

// TestConfiguration: initializationOptions, workspace/configuration and
// didChangeConfiguration all reach the server; here they switch actions off.
func TestConfiguration(t *testing.T) {
	t.Parallel()
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: closedAddr(t)}, capsFull(),
		map[string]any{"frognano": map[string]any{"actions": map[string]bool{"explain": false}}})
	e.open("calc.go")
	has := func(prefix string) bool {
		for _, title := range titles(e.actions("calc.go", "return a - b", true)) {
			if strings.HasPrefix(title, prefix) {
				return true
			}
		}
		return false
	}
	if has("Explain") || !has("Ask") || !has("Write tests") {
		t.Fatalf("initializationOptions: %q", titles(e.actions("calc.go", "return a - b", true)))
	}
	e.mu.Lock()
	e.config = json.RawMessage(`{"actions": {"tests": false}}`)
	e.mu.Unlock()
	e.server.DidChangeConfiguration(context.Background(), &protocol.DidChangeConfigurationParams{Settings: protocol.LSPAny(`{"frognano": {"actions": {"ask": false}}}`)})
	e.waitFor(30*time.Second, "the pulled configuration", func() bool { return !has("Write tests") })
	if has("Ask") || has("Explain") {
		t.Errorf("after didChangeConfiguration: %q", titles(e.actions("calc.go", "return a - b", true)))
	}
}

// TestShutdownExit: exit after shutdown ends the server with code 0.
func TestShutdownExit(t *testing.T) {
	t.Parallel()
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: closedAddr(t)}, capsFull(), nil)
	if err := e.server.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.server.Exit(context.Background())
	select {
	case code := <-e.done:
		if code != 0 {
			t.Errorf("exit code %d after shutdown", code)
		}
		e.done <- code // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not exit within 60s of exit")
	}
}

// TestMissingModelOffersPull: a missing model is offered for pulling, with progress. The
// model names a registry on a closed loopback port, so the pull fails at once without
// leaving the machine, and the user is told what else to do.
func TestMissingModelOffersPull(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	model := closedAddr(t) + "/frognano/absent:1b"
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: srv.Host, Model: model, NumCtx: 16384}, capsFull(), nil)
	e.open("calc_test.go")
	err := e.execute(context.Background(), find(t, e.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd"))
	if err == nil {
		t.Fatal("want an error")
	}
	e.mu.Lock()
	asked := append([]string(nil), e.asked...)
	e.mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0], model+" is not installed") {
		t.Fatalf("asked %q", asked)
	}
	e.waitMessage("pulling " + model + " failed")
	e.waitMessage("frognano model import")
	if !strings.Contains(strings.Join(e.progressMessages(), "|"), "begin:Pulling "+model) {
		t.Errorf("no pull progress: %q", e.progressMessages())
	}
}

// TestStatusRequest: frognano/status says which model, whether Ollama answers and has it.
func TestStatusRequest(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "present", modelgen.Turn{Content: "hi there"})
	for _, tc := range []struct {
		name  string
		cfg   ollama.Config
		check func(Status) bool
	}{
		{"ok", cfg, func(s Status) bool {
			return s.Ollama == "ok" && s.ModelPresent && s.Model == "present" && s.OllamaVersion == ollama.Version
		}},
		{"missing", ollama.Config{Host: srv.Host, Model: "absent"}, func(s Status) bool {
			return s.Ollama == "ok" && !s.ModelPresent && strings.Contains(s.Problem, `Model "absent" is not installed`)
		}},
		{"down", ollama.Config{Host: closedAddr(t), Model: "x"}, func(s Status) bool {
			return s.Ollama == "unreachable" && strings.Contains(s.Problem, "ollama serve")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEditor(t, sampleWorkspace, tc.cfg, capsFull(), nil)
			st := e.status()
			if !tc.check(st) {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// TestTrace: $/setTrace turns $/logTrace on: the agent's steps, with their details when
// "verbose"; "off" turns it off again.
func TestTrace(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "tracer", calls(tc("Bash", map[string]any{"command": "true"})), modelgen.Turn{Content: "Done."})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	e.open("calc.go")
	traces := func() string {
		e.mu.Lock()
		defer e.mu.Unlock()
		return strings.Join(e.traces, "\n")
	}
	setTrace := func(v string) {
		if err := e.conn.Notify(context.Background(), "$/setTrace", map[string]string{"value": v}); err != nil {
			t.Fatal(err)
		}
	}
	setTrace("verbose")
	e.ask("run true")
	e.waitFor(10*time.Second, "the run's trace", func() bool {
		return strings.Contains(traces(), `agent: tool_start step 1 Running true | {"kind":"tool_start","step":1,"tool":"Bash","title":"Running true"}`)
	})
	setTrace("off")
	before := traces()
	e.ask("run true")
	e.waitMessage("without changing files")
	if after := traces(); after != before {
		t.Errorf("traces after $/setTrace off:\n%s", strings.TrimPrefix(after, before))
	}
}

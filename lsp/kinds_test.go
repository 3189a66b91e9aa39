package lsp

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/ollama"
)

// TestActionKinds: every action has a kind of its own under the LSP kind it belongs to
// (Explain is no refactoring), the server declares them, and a request's "only" filter
// selects by kind, a parent kind covering its children (the spec's prefix matching).
func TestActionKinds(t *testing.T) {
	t.Parallel()
	e := newEditor(t, sampleWorkspace, ollama.Config{Host: closedAddr(t)}, capsFull(), nil)
	e.open("calc.go")
	e.open("calc_test.go")
	list := func(rel, at string, only ...protocol.CodeActionKind) []string {
		t.Helper()
		r := e.rangeOf(rel, at)
		r.End = r.Start
		got, err := e.server.CodeAction(context.Background(), &protocol.CodeActionParams{
			TextDocument: protocol.TextDocumentIdentifier{URI: uri.URI(e.uri(rel))}, Range: r,
			Context: protocol.CodeActionContext{Only: only}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range got {
			ca := a.(*protocol.CodeAction)
			out = append(out, string(*ca.Kind)+" "+ca.Title)
		}
		return out
	}
	eq := func(what string, got []string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %q\nwant %q", what, got, want)
		}
	}
	eq("in a test, all", list("calc_test.go", "Add(2, 3)"),
		"quickfix.frognano.fixTest Fix failing test TestAdd", "source.frognano.explain Explain TestAdd",
		"refactor.rewrite.frognano.ask Ask FrogNano…")
	eq("in a stub, all", list("calc.go", `panic("not implemented")`),
		"refactor.rewrite.frognano.implement Implement Mul", "source.frognano.explain Explain Mul",
		"refactor.rewrite.frognano.ask Ask FrogNano…")
	eq("only quickfix", list("calc_test.go", "Add(2, 3)", "quickfix"), "quickfix.frognano.fixTest Fix failing test TestAdd")
	eq("only the exact kind", list("calc_test.go", "Add(2, 3)", "source.frognano.explain"), "source.frognano.explain Explain TestAdd")
	eq("only refactor: Explain is no refactoring", list("calc.go", `panic("not implemented")`, "refactor"),
		"refactor.rewrite.frognano.implement Implement Mul", "refactor.rewrite.frognano.ask Ask FrogNano…")
	eq("only two kinds", list("calc.go", "return a - b", "source.frognano.writeTests", "source.frognano.explain"),
		"source.frognano.writeTests Write tests for Add", "source.frognano.explain Explain Add")
	eq("a prefix that is not a parent kind", list("calc_test.go", "Add(2, 3)", "quickfix.frognano.fix"))
	eq("another server's kind", list("calc_test.go", "Add(2, 3)", "source.organizeImports"))

	// Declared in the capabilities, each once, so that clients ask the server for them.
	opts, ok := e.init.Capabilities.CodeActionProvider.(*protocol.CodeActionOptions)
	if !ok {
		t.Fatalf("codeActionProvider %T", e.init.Capabilities.CodeActionProvider)
	}
	var declared []string
	for _, k := range opts.CodeActionKinds {
		declared = append(declared, string(k))
	}
	var want []string
	for _, d := range ActionDocs() {
		want = append(want, d.Kind)
	}
	if !slices.Equal(declared, want) {
		t.Errorf("declared kinds %q, want %q", declared, want)
	}
}

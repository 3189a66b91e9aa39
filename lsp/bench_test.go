package lsp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/ollama"
)

// bigGoFile is a normal-sized Go file: 100 functions, about 1,000 lines, one a stub.
func bigGoFile() string {
	var b strings.Builder
	b.WriteString("package calc\n\nimport \"fmt\"\n\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "// F%d does step %d.\nfunc F%d(a, b int) int {\n\tx := a + %d\n\tif x > b {\n\t\treturn x - b\n\t}\n\tfmt.Println(x)\n\treturn b\n}\n\n", i, i, i, i)
	}
	b.WriteString("func Stub() {\n\tpanic(\"not implemented\")\n}\n")
	return b.String()
}

// BenchmarkListActions measures what textDocument/codeAction does besides the transport:
// locating the function and running the action table, on a 1,000-line file whose
// functions are cached (as they are after the first request for a document version).
func BenchmarkListActions(b *testing.B) {
	text := bigGoFile()
	snap := document.Snapshot{URI: "file:///w/calc.go", LanguageID: "go", Version: 1, Text: text}
	pos := document.PositionOf(text, strings.Index(text, "return x - b"))
	var cache funcCache
	for b.Loop() {
		in, err := newInput(snap, "/w", document.Range{Start: pos, End: pos}, nil, cache.get)
		if err != nil {
			b.Fatal(err)
		}
		if len(listActions(in, Settings{}, nil, b.Logf)) == 0 {
			b.Fatal("no actions")
		}
	}
}

// BenchmarkCodeActionRoundTrip is the whole request as an editor sees it: JSON-RPC over
// a pipe to the in-process server and back.
func BenchmarkCodeActionRoundTrip(b *testing.B) {
	e := newEditor(b, sampleWorkspace, ollama.Config{Host: "127.0.0.1:1"}, capsFull(), nil)
	text := bigGoFile()
	u := uri.URI(e.uri("calc.go"))
	e.server.DidOpen(context.Background(), &protocol.DidOpenTextDocumentParams{TextDocument: protocol.TextDocumentItem{URI: u, LanguageID: "go", Version: 1, Text: text}})
	p := toRange(document.Range{Start: document.PositionOf(text, strings.Index(text, "return x - b"))})
	p.End = p.Start
	for b.Loop() {
		as, err := e.server.CodeAction(context.Background(), &protocol.CodeActionParams{TextDocument: protocol.TextDocumentIdentifier{URI: u}, Range: p})
		if err != nil || len(as) == 0 {
			b.Fatal(err, len(as))
		}
	}
}

// BenchmarkListActionsCold includes parsing the file: the first request after an edit.
func BenchmarkListActionsCold(b *testing.B) {
	text := bigGoFile()
	snap := document.Snapshot{URI: "file:///w/calc.go", LanguageID: "go", Version: 1, Text: text}
	pos := document.PositionOf(text, strings.Index(text, "return x - b"))
	for b.Loop() {
		var cache funcCache
		in, err := newInput(snap, "/w", document.Range{Start: pos, End: pos}, nil, cache.get)
		if err != nil || len(listActions(in, Settings{}, nil, b.Logf)) == 0 {
			b.Fatal(err)
		}
	}
}

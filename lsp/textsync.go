package lsp

import (
	"context"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/lsp/document"
)

// Document sync handlers run on the read loop (see transport.go), so the store always
// reflects every notification received before the request being handled.

func (s *server) DidOpen(ctx context.Context, p *protocol.DidOpenTextDocumentParams) error {
	d := p.TextDocument
	s.docs.Open(string(d.URI), string(d.LanguageID), d.Version, d.Text)
	return nil
}

func (s *server) DidChange(ctx context.Context, p *protocol.DidChangeTextDocumentParams) error {
	changes := make([]document.Change, 0, len(p.ContentChanges))
	for _, c := range p.ContentChanges {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangePartial:
			r := fromRange(c.Range)
			changes = append(changes, document.Change{Range: &r, Text: c.Text})
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, document.Change{Text: c.Text})
		}
	}
	if err := s.docs.Change(string(p.TextDocument.URI), p.TextDocument.Version, changes); err != nil {
		// A lost change means our copy of the buffer is wrong: say so, loudly, once.
		s.show(ctx, protocol.MessageTypeError, "frognano lost track of %s (%v); close and reopen the file", p.TextDocument.URI, err)
	}
	return nil
}

func (s *server) DidClose(ctx context.Context, p *protocol.DidCloseTextDocumentParams) error {
	s.docs.Close(string(p.TextDocument.URI))
	return nil
}

func (s *server) DidSave(ctx context.Context, p *protocol.DidSaveTextDocumentParams) error {
	return nil
}

func fromRange(r protocol.Range) document.Range {
	return document.Range{
		Start: document.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   document.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

func toRange(r document.Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   protocol.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

package lsp

import (
	"context"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/lsp/source"
)

// Document sync handlers run on the read loop (see transport.go), so the store always
// reflects every notification received before the request being handled. They run before
// jsonrpc2 releases (copies) the message, so the strings they keep are cloned: decoded
// strings may alias the transport's reused read buffer.

func (s *server) DidOpen(ctx context.Context, p *protocol.DidOpenTextDocumentParams) error {
	d := p.TextDocument
	u := strings.Clone(string(d.URI))
	s.docs.Open(u, strings.Clone(string(d.LanguageID)), d.Version, strings.Clone(d.Text))
	// No parse here: an editor opens many documents it never asks about (a workspace's
	// worth, at startup), and parsing each would cost time and garbage for nothing. The
	// first request parses; a change starts the parse at once (DidChange).
	return nil
}

func (s *server) DidChange(ctx context.Context, p *protocol.DidChangeTextDocumentParams) error {
	changes := make([]document.Change, 0, len(p.ContentChanges))
	for _, c := range p.ContentChanges {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangePartial:
			r := fromRange(c.Range)
			changes = append(changes, document.Change{Range: &r, Text: strings.Clone(c.Text)})
		case *protocol.TextDocumentContentChangeWholeDocument:
			changes = append(changes, document.Change{Text: strings.Clone(c.Text)})
		}
	}
	u := strings.Clone(string(p.TextDocument.URI))
	if err := s.docs.Change(u, p.TextDocument.Version, changes); err != nil {
		// A lost change means our copy of the buffer is wrong: say so, loudly, once.
		s.show(ctx, protocol.MessageTypeError, "frognano lost track of %s (%v); close and reopen the file", p.TextDocument.URI, err)
	}
	go s.warm(u)
	return nil
}

func (s *server) DidClose(ctx context.Context, p *protocol.DidCloseTextDocumentParams) error {
	s.docs.Close(string(p.TextDocument.URI))
	s.funcs.forget(string(p.TextDocument.URI))
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

// warm parses a changed document off the read loop, so that the code action request
// that usually follows a change finds its functions cached, or being computed (the
// request then waits for this parse rather than starting its own). Most changes touch one
// function, and only that one is parsed again (source.File.Update).
func (s *server) warm(u string) {
	snap, ok := s.docs.Get(u)
	if !ok {
		return
	}
	_, _, root := s.snapshotSettings()
	rel := relPath(root, u)
	if lang := source.LangOf(rel, snap.LanguageID); lang != "" {
		s.funcs.file(snap, lang, rel) // not get: that would copy the functions into one slice
	}
}

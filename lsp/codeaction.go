package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/lsp/source"
)

// CodeAction lists actions instantly: it never calls the model. Each carries its context
// in data (resolved later) or in its command's argument.
func (s *server) CodeAction(ctx context.Context, p *protocol.CodeActionParams) ([]protocol.CommandOrCodeAction, error) {
	settings, caps, root := s.snapshotSettings()
	snap, ok := s.docs.Get(string(p.TextDocument.URI))
	if !ok {
		return nil, nil // not open: nothing we can say about it
	}
	in, err := newInput(snap, root, fromRange(p.Range), p.Context.Diagnostics, s.funcs.get)
	if err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	var out []protocol.CommandOrCodeAction
	for _, d := range listActions(in, settings, p.Context.Only, s.log.Printf) {
		out = append(out, codeActionFor(d, caps))
	}
	return out, nil
}

// funcsOf returns a document's functions; the server caches them per document version.
type funcsOf func(snap document.Snapshot, lang source.Lang, rel string) []source.Func

func newInput(snap document.Snapshot, root string, rng document.Range, diags []protocol.Diagnostic, funcs funcsOf) (*actionInput, error) {
	start, err := document.OffsetOf(snap.Text, rng.Start)
	if err != nil {
		return nil, err
	}
	end, err := document.OffsetOf(snap.Text, rng.End)
	if err != nil {
		return nil, err
	}
	if end < start {
		start, end = end, start
	}
	in := &actionInput{snap: snap, rel: relPath(root, snap.URI), rng: rng, start: start, end: end, diagnostics: diags}
	in.lang = source.LangOf(in.rel, snap.LanguageID)
	if in.lang != "" {
		in.fn = innermost(funcs(snap, in.lang, in.rel), start)
	}
	return in, nil
}

// innermost is the narrowest function whose range holds offset.
func innermost(fs []source.Func, offset int) *source.Func {
	var best *source.Func
	for i := range fs {
		f := &fs[i]
		if f.Start <= offset && offset <= f.End && (best == nil || f.End-f.Start < best.End-best.Start) {
			best = f
		}
	}
	return best
}

// funcCache keeps the parsed functions of each open document's latest version, so that
// listing actions as the cursor moves costs a lookup, not a parse. mu guards byURI.
type funcCache struct {
	mu    sync.Mutex
	byURI map[string]cachedFuncs
}

type cachedFuncs struct {
	version int32
	text    string // the text they were parsed from: versions alone can repeat on reopen
	funcs   []source.Func
}

func (c *funcCache) get(snap document.Snapshot, lang source.Lang, rel string) []source.Func {
	c.mu.Lock()
	if e, ok := c.byURI[snap.URI]; ok && e.version == snap.Version && e.text == snap.Text {
		c.mu.Unlock()
		return e.funcs
	}
	c.mu.Unlock()
	// A file that does not parse still gets what can be found, and the actions that need
	// no function.
	fs, _ := source.Funcs(lang, rel, snap.Text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byURI == nil {
		c.byURI = map[string]cachedFuncs{}
	}
	c.byURI[snap.URI] = cachedFuncs{version: snap.Version, text: snap.Text, funcs: fs}
	return fs
}

func (c *funcCache) forget(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byURI, uri)
}

// codeActionFor makes the action a client can use: with data to resolve when it resolves
// edits, else with the frognano.run command.
func codeActionFor(d actionData, caps clientCaps) *protocol.CodeAction {
	kind := kindOf(d.Action)
	raw, _ := json.Marshal(d)
	a := &protocol.CodeAction{Title: d.Title, Kind: &kind}
	if caps.resolveEdit && caps.codeActionData {
		a.Data = raw
	} else {
		a.Command = protocol.Command{Title: d.Title, Command: CommandRun, Arguments: []protocol.LSPAny{raw}}
	}
	return a
}

// CodeActionResolve runs the agent and returns its result as the action's edit, which the
// client then applies (with a preview where it offers one).
func (s *server) CodeActionResolve(ctx context.Context, a *protocol.CodeAction) (*protocol.CodeAction, error) {
	var d actionData
	if err := json.Unmarshal(a.Data, &d); err != nil || d.Action == "" {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, "this code action has no frognano data")
	}
	edit, err := s.runAction(ctx, d, false)
	if err != nil {
		return nil, err
	}
	out := *a
	out.Edit = edit
	return &out, nil
}

func (s *server) ExecuteCommand(ctx context.Context, p *protocol.ExecuteCommandParams) (protocol.LSPAny, error) {
	switch p.Command {
	case CommandCancel:
		n := s.cancelAll()
		return json.Marshal(map[string]int{"cancelled": n})
	case CommandRun, CommandAsk:
		if len(p.Arguments) == 0 {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, p.Command+" needs an argument")
		}
		var d actionData
		if err := json.Unmarshal(p.Arguments[0], &d); err != nil {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("%s: bad argument: %v", p.Command, err))
		}
		if p.Command == CommandAsk {
			d.Action = "ask"
			if d.Title == "" {
				d.Title = "Ask FrogNano"
			}
		}
		_, err := s.runAction(ctx, d, true)
		return nil, err
	}
	return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "unknown command "+p.Command)
}

func (s *server) WorkDoneProgressCancel(ctx context.Context, p *protocol.WorkDoneProgressCancelParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.byToken[tokenString(p.Token)]; r != nil {
		r.cancel()
	}
	return nil
}

func tokenString(t protocol.ProgressToken) string {
	switch t := t.(type) {
	case protocol.String:
		return string(t)
	case protocol.Integer:
		return fmt.Sprint(int32(t))
	}
	return ""
}

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
	in, err := newInput(snap, root, fromRange(p.Range), p.Context.Diagnostics, &s.funcs)
	if err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	var out []protocol.CommandOrCodeAction
	for _, d := range listActions(in, settings, p.Context.Only, s.log.Printf) {
		out = append(out, codeActionFor(d, caps))
	}
	return out, nil
}

func newInput(snap document.Snapshot, root string, rng document.Range, diags []protocol.Diagnostic, docs *funcCache) (*actionInput, error) {
	lines := docs.lines(snap)
	start, err := lines.Offset(rng.Start)
	if err != nil {
		return nil, err
	}
	end := start
	if rng.End != rng.Start {
		if end, err = lines.Offset(rng.End); err != nil {
			return nil, err
		}
	}
	if end < start {
		start, end = end, start
	}
	in := &actionInput{snap: snap, rel: relPath(root, snap.URI), rng: rng, start: start, end: end, diagnostics: diags}
	in.lang = source.LangOf(in.rel, snap.LanguageID)
	if in.lang != "" {
		in.fn = docs.funcAt(snap, in.lang, in.rel, start)
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

// funcCache keeps what requests derive from each open document's text: its line index,
// which converts positions, and its functions. Listing actions as the cursor moves then
// costs lookups, not scans of a text that can be 10,000 lines long; and after an edit both
// are updated from the last ones computed (document.Lines.Update, source.File.Update), not
// derived afresh. mu guards byURI and the docStates in it.
type funcCache struct {
	mu    sync.Mutex
	byURI map[string]*docState
}

// docState is what the cache holds for one document.
type docState struct {
	latest *docVersion // the version last asked about
	// The line index and functions computed last, for whichever version: what the next
	// version's are updated from. Only the last are kept, so that old texts do not pile
	// up: they hold the text they were computed from.
	lines             document.Lines
	file              *source.File
	fileLang, fileRel string // what file was parsed as
}

// docVersion is one version of a document. Its line index and its functions are each
// computed once, when first asked for: a request that needs one while it is being
// computed (the code action that follows a didChange, while the parse that didChange
// started in the background runs) waits for it rather than computing it again.
type docVersion struct {
	version int32
	text    string // versions alone can repeat on reopen

	linesOnce sync.Once
	lines     document.Lines

	fileOnce          sync.Once
	file              *source.File
	fileLang, fileRel string
}

// at returns the document's state and the entry for snap's version, which it makes the
// latest.
func (c *funcCache) at(snap document.Snapshot) (*docState, *docVersion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byURI == nil {
		c.byURI = map[string]*docState{}
	}
	st := c.byURI[snap.URI]
	if st == nil {
		st = &docState{}
		c.byURI[snap.URI] = st
	}
	if v := st.latest; v == nil || v.version != snap.Version || v.text != snap.Text {
		st.latest = &docVersion{version: snap.Version, text: snap.Text}
	}
	return st, st.latest
}

// lines returns the line index of snap's text.
func (c *funcCache) lines(snap document.Snapshot) document.Lines {
	st, v := c.at(snap)
	v.linesOnce.Do(func() {
		c.mu.Lock()
		base := st.lines
		c.mu.Unlock()
		v.lines = base.Update(v.text) // the zero Lines indexes the text afresh
		c.mu.Lock()
		st.lines = v.lines
		c.mu.Unlock()
	})
	return v.lines
}

// get returns the functions of snap's text.
func (c *funcCache) get(snap document.Snapshot, lang source.Lang, rel string) []source.Func {
	f, fs := c.file(snap, lang, rel)
	if f != nil {
		return f.Funcs()
	}
	return fs
}

// funcAt returns the narrowest top-level function of snap's text that holds offset, or
// nil. Unlike get, it does not copy the functions of a File updated from an earlier
// version into one slice (source.File.FuncAt): a keystroke's code action stays O(edit).
func (c *funcCache) funcAt(snap document.Snapshot, lang source.Lang, rel string, offset int) *source.Func {
	f, fs := c.file(snap, lang, rel)
	if f == nil {
		return innermost(fs, offset)
	}
	if fn, ok := f.FuncAt(offset); ok {
		return &fn
	}
	return nil
}

// file returns the File of snap's text; or, when it was parsed for another language or
// path, nil and the functions of a fresh parse.
func (c *funcCache) file(snap document.Snapshot, lang source.Lang, rel string) (*source.File, []source.Func) {
	st, v := c.at(snap)
	v.fileOnce.Do(func() {
		c.mu.Lock()
		base, baseLang, baseRel := st.file, st.fileLang, st.fileRel
		c.mu.Unlock()
		if base != nil && baseLang == string(lang) && baseRel == rel {
			v.file = base.Update(v.text)
		} else {
			// A file that does not parse still gets what can be found, and the actions
			// that need no function.
			v.file, _ = source.Parse(lang, rel, v.text)
		}
		v.fileLang, v.fileRel = string(lang), rel
		c.mu.Lock()
		old := st.file
		st.file, st.fileLang, st.fileRel = v.file, v.fileLang, v.fileRel
		c.mu.Unlock()
		// Only the last File is updated from: free the syntax tree of the one before
		// (its Funcs stay valid for requests still holding that version). An update
		// from it running elsewhere then parses afresh.
		if old != v.file {
			old.Close()
		}
	})
	if v.fileLang != string(lang) || v.fileRel != rel {
		fs, _ := source.Funcs(lang, rel, v.text) // the workspace root moved: rare
		return nil, fs
	}
	return v.file, nil
}

func (c *funcCache) forget(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.byURI[uri]; st != nil {
		st.file.Close()
	}
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

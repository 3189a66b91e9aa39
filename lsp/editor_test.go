package lsp

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	"golang.org/x/tools/txtar"

	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/ollama"
)

// editor is a fake LSP client in the style of gopls's fake editor: it keeps buffers,
// records what the server sends (progress, messages, edits, documents to show) and
// answers server requests the way a real editor would, applying workspace edits to its
// buffers and, for files it has not open, to disk.
type editor struct {
	t        testing.TB
	root     string
	cacheDir string // the server's Options.CacheDir
	workDir  string // the server's Options.AgentWorkDir
	// registryDir is the server's Options.RegistryDir: fine-tuning's registries for this
	// test alone (FROGNANO_CACHE=registryCache puts a frognano process's there too).
	registryDir, registryCache string
	server                     protocol.Server
	conn                       jsonrpc2.Conn
	init                       *protocol.InitializeResult
	done                       chan int // Serve's exit code

	mu        sync.Mutex
	buffers   map[string]*buffer // by URI
	progress  []progressEvent
	messages  []protocol.ShowMessageParams
	edits     []protocol.ApplyWorkspaceEditParams
	shown     []string
	external  []string // documents shown with external true (window/showDocument)
	asked     []string // showMessageRequest messages; the editor picks the first action
	config    json.RawMessage
	applyHook func(*protocol.ApplyWorkspaceEditParams) *protocol.ApplyWorkspaceEditResult
	// registered are client/registerCapability registrations: "method options-JSON".
	registered []string
	// traces are $/logTrace messages: "message | verbose".
	traces []string
	// logs are window/logMessage messages.
	logs    []string
	changed chan struct{} // signalled on every recorded event
}

type buffer struct {
	version int32
	text    string
	lang    string
}

type progressEvent struct {
	token string
	kind  string
	title string
	msg   string
}

// client is the protocol.Client side of the editor.
type client struct {
	protocol.UnimplementedClient
	e *editor
}

// capsFull is a client like VS Code: progress, documentChanges with resource operations,
// change annotations, codeAction resolve of edits, showDocument, configuration.
func capsFull() protocol.ClientCapabilities {
	return protocol.ClientCapabilities{
		Window: &protocol.WindowClientCapabilities{WorkDoneProgress: ptr(true), ShowDocument: &protocol.ShowDocumentClientCapabilities{Support: true}},
		Workspace: &protocol.WorkspaceClientCapabilities{
			Configuration: ptr(true),
			WorkspaceEdit: &protocol.WorkspaceEditClientCapabilities{DocumentChanges: ptr(true),
				ResourceOperations: []protocol.ResourceOperationKind{"create", "rename", "delete"}},
		},
	}
}

// newEditor writes the txtar workspace, starts the server in-process on a pipe with the
// given Ollama configuration, and initializes it.
func newEditor(t testing.TB, files string, env ollama.Config, caps protocol.ClientCapabilities, initOpts any) *editor {
	t.Helper()
	return newEditorWith(t, files, env, caps, initOpts, nil)
}

// newEditorWith is newEditor with the server's Options changed by opts.
func newEditorWith(t testing.TB, files string, env ollama.Config, caps protocol.ClientCapabilities, initOpts any, opts func(*Options)) *editor {
	t.Helper()
	root := t.TempDir()
	for _, f := range txtar.Parse([]byte(files)).Files {
		p := filepath.Join(root, f.Name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := &editor{t: t, root: root, cacheDir: t.TempDir(), workDir: t.TempDir(), registryCache: t.TempDir(),
		buffers: map[string]*buffer{}, done: make(chan int, 1), changed: make(chan struct{}, 1000)}
	e.registryDir = filepath.Join(e.registryCache, "finetune", "models")
	sconn, cconn := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	o := Options{Env: env, CacheDir: e.cacheDir, AgentWorkDir: e.workDir, RegistryDir: e.registryDir}
	if opts != nil {
		opts(&o)
	}
	go func() { e.done <- Serve(ctx, sconn, o) }()
	conn, server := dialServer(ctx, &client{e: e}, jsonrpc2.NewHeaderStream(cconn))
	e.conn, e.server = conn, server
	t.Cleanup(func() {
		cancel()
		conn.Close()
		select {
		case <-e.done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop within 10s of the connection closing")
		}
	})
	raw, _ := json.Marshal(initOpts)
	if initOpts == nil {
		raw = nil
	}
	res, err := server.Initialize(ctx, &protocol.InitializeParams{
		RootURI:               ptr(uri.File(root)),
		Capabilities:          caps,
		InitializationOptions: raw,
	})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "frognano" {
		t.Fatalf("server info %+v", res.ServerInfo)
	}
	e.init = res
	if err := server.Initialized(ctx, &protocol.InitializedParams{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// dialServer connects the fake editor like a real one: notifications (progress, messages)
// are handled in arrival order, before the response that follows them is read, while
// requests from the server run concurrently so none can block the connection.
// protocol.NewClient would dispatch everything concurrently and reorder notifications.
func dialServer(ctx context.Context, c protocol.Client, stream jsonrpc2.Stream) (jsonrpc2.Conn, protocol.Server) {
	conn := jsonrpc2.NewConn(stream, jsonrpc2.WithCodec(codec{}))
	h := protocol.ClientHandler(c, jsonrpc2.MethodNotFoundHandler)
	conn.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.IsCall() {
			jsonrpc2.Async(ctx)
		}
		return h(ctx, req)
	})
	return conn, protocol.ServerDispatcher(conn)
}

// stop closes the connection and waits for the server to finish; it returns Serve's exit
// code (and leaves it for the test's cleanup too).
func (e *editor) stop() int {
	e.t.Helper()
	e.conn.Close()
	select {
	case code := <-e.done:
		e.done <- code
		return code
	case <-time.After(10 * time.Second):
		e.t.Fatal("the server did not stop within 10s of the connection closing")
		return -1
	}
}

func (e *editor) uri(rel string) string { return string(uri.File(filepath.Join(e.root, rel))) }

func (e *editor) open(rel string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, rel))
	if err != nil {
		e.t.Fatal(err)
	}
	lang := map[string]string{".go": "go", ".py": "python", ".ts": "typescript"}[filepath.Ext(rel)]
	e.mu.Lock()
	e.buffers[e.uri(rel)] = &buffer{version: 1, text: string(b), lang: lang}
	e.mu.Unlock()
	err = e.server.DidOpen(context.Background(), &protocol.DidOpenTextDocumentParams{TextDocument: protocol.TextDocumentItem{
		URI: uri.URI(e.uri(rel)), LanguageID: protocol.LanguageKind(lang), Version: 1, Text: string(b)}})
	if err != nil {
		e.t.Fatal(err)
	}
}

// edit replaces the first occurrence of old in an open buffer, the way typing does: one
// incremental change with a UTF-16 range.
func (e *editor) edit(rel, old, new string) {
	e.t.Helper()
	e.mu.Lock()
	b := e.buffers[e.uri(rel)]
	i := strings.Index(b.text, old)
	if i < 0 {
		e.mu.Unlock()
		e.t.Fatalf("%q not in %s", old, rel)
	}
	r := document.Range{Start: document.PositionOf(b.text, i), End: document.PositionOf(b.text, i+len(old))}
	b.text = b.text[:i] + new + b.text[i+len(old):]
	b.version++
	v := b.version
	e.mu.Unlock()
	err := e.server.DidChange(context.Background(), &protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri.URI(e.uri(rel))}, Version: v},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{&protocol.TextDocumentContentChangePartial{Range: toRange(r), Text: new}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *editor) text(rel string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b := e.buffers[e.uri(rel)]; b != nil {
		return b.text
	}
	data, _ := os.ReadFile(filepath.Join(e.root, rel))
	return string(data)
}

// rangeOf is the range of the first occurrence of s in an open buffer.
func (e *editor) rangeOf(rel, s string) protocol.Range {
	e.t.Helper()
	text := e.text(rel)
	i := strings.Index(text, s)
	if i < 0 {
		e.t.Fatalf("%q not in %s", s, rel)
	}
	return toRange(document.Range{Start: document.PositionOf(text, i), End: document.PositionOf(text, i+len(s))})
}

// actions lists the code actions at the first occurrence of at (an empty selection at
// its start when cursor is true).
func (e *editor) actions(rel, at string, cursor bool, diags ...protocol.Diagnostic) []*protocol.CodeAction {
	e.t.Helper()
	r := e.rangeOf(rel, at)
	if cursor {
		r.End = r.Start
	}
	list, err := e.server.CodeAction(context.Background(), &protocol.CodeActionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: uri.URI(e.uri(rel))}, Range: r,
		Context: protocol.CodeActionContext{Diagnostics: diags}})
	if err != nil {
		e.t.Fatalf("codeAction: %v", err)
	}
	var out []*protocol.CodeAction
	for _, a := range list {
		if ca, ok := a.(*protocol.CodeAction); ok {
			out = append(out, ca)
		}
	}
	return out
}

func titles(as []*protocol.CodeAction) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Title)
	}
	return out
}

func find(t *testing.T, as []*protocol.CodeAction, title string) *protocol.CodeAction {
	t.Helper()
	for _, a := range as {
		if a.Title == title {
			return a
		}
	}
	t.Fatalf("no action %q in %q", title, titles(as))
	return nil
}

// execute runs an action's command as a client would after the user picks it.
func (e *editor) execute(ctx context.Context, a *protocol.CodeAction) error {
	_, err := e.server.ExecuteCommand(ctx, &protocol.ExecuteCommandParams{Command: a.Command.Command, Arguments: a.Command.Arguments})
	return err
}

// waitFor waits until cond holds (checked on every recorded event, and at least every
// 50 ms), failing the test after d.
func (e *editor) waitFor(d time.Duration, what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-e.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (e *editor) note() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

func (e *editor) progressMessages() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, p := range e.progress {
		out = append(out, p.kind+":"+p.title+p.msg)
	}
	return out
}

// waitMessage waits for a shown message containing s: notifications reach the editor
// asynchronously, possibly after the response to the request that caused them.
func (e *editor) waitMessage(s string) {
	e.t.Helper()
	e.waitFor(10*time.Second, "a message containing "+strconv.Quote(s), func() bool {
		return strings.Contains(strings.Join(e.shownMessages(), "\n"), s)
	})
}

func (e *editor) shownMessages() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, m := range e.messages {
		out = append(out, m.Message)
	}
	return out
}

// --- protocol.Client: what the server asks of the editor ---

func (c *client) WorkDoneProgressCreate(ctx context.Context, p *protocol.WorkDoneProgressCreateParams) error {
	return nil
}

func (c *client) Progress(ctx context.Context, p *protocol.ProgressParams) error {
	var v struct {
		Kind, Title, Message string
	}
	json.Unmarshal(p.Value, &v)
	c.e.mu.Lock()
	c.e.progress = append(c.e.progress, progressEvent{token: tokenString(p.Token), kind: v.Kind, title: v.Title, msg: v.Message})
	c.e.mu.Unlock()
	c.e.note()
	return nil
}

func (c *client) ShowMessage(ctx context.Context, p *protocol.ShowMessageParams) error {
	c.e.mu.Lock()
	c.e.messages = append(c.e.messages, *p)
	c.e.mu.Unlock()
	c.e.note()
	return nil
}

func (c *client) ShowMessageRequest(ctx context.Context, p *protocol.ShowMessageRequestParams) (*protocol.MessageActionItem, error) {
	c.e.mu.Lock()
	c.e.asked = append(c.e.asked, p.Message)
	c.e.mu.Unlock()
	c.e.note()
	if len(p.Actions) == 0 {
		return nil, nil
	}
	return &p.Actions[0], nil
}

func (c *client) RegisterCapability(ctx context.Context, p *protocol.RegistrationParams) error {
	c.e.mu.Lock()
	for _, r := range p.Registrations {
		c.e.registered = append(c.e.registered, r.Method+" "+string(r.RegisterOptions))
	}
	c.e.mu.Unlock()
	c.e.note()
	return nil
}

func (c *client) LogTrace(ctx context.Context, p *protocol.LogTraceParams) error {
	c.e.mu.Lock()
	t := p.Message
	if p.Verbose != nil {
		t += " | " + *p.Verbose
	}
	c.e.traces = append(c.e.traces, t)
	c.e.mu.Unlock()
	c.e.note()
	return nil
}

func (c *client) LogMessage(ctx context.Context, p *protocol.LogMessageParams) error {
	c.e.mu.Lock()
	c.e.logs = append(c.e.logs, p.Message)
	c.e.mu.Unlock()
	c.e.note()
	return nil
}

func (c *client) Configuration(ctx context.Context, p *protocol.ConfigurationParams) ([]protocol.LSPAny, error) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	if c.e.config == nil {
		return []protocol.LSPAny{protocol.LSPAny("null")}, nil
	}
	return []protocol.LSPAny{protocol.LSPAny(c.e.config)}, nil
}

func (c *client) ShowDocument(ctx context.Context, p *protocol.ShowDocumentParams) (*protocol.ShowDocumentResult, error) {
	c.e.mu.Lock()
	c.e.shown = append(c.e.shown, string(p.URI))
	if p.External != nil && *p.External {
		c.e.external = append(c.e.external, string(p.URI))
	}
	c.e.mu.Unlock()
	c.e.note()
	return &protocol.ShowDocumentResult{Success: true}, nil
}

func (c *client) ApplyEdit(ctx context.Context, p *protocol.ApplyWorkspaceEditParams) (*protocol.ApplyWorkspaceEditResult, error) {
	e := c.e
	e.mu.Lock()
	e.edits = append(e.edits, *p)
	hook := e.applyHook
	e.mu.Unlock()
	defer e.note()
	if hook != nil {
		if r := hook(p); r != nil {
			return r, nil
		}
	}
	if reason := e.apply(&p.Edit); reason != "" {
		return &protocol.ApplyWorkspaceEditResult{Applied: false, FailureReason: &reason}, nil
	}
	return &protocol.ApplyWorkspaceEditResult{Applied: true}, nil
}

// apply applies a workspace edit like an editor: all or nothing, versions checked.
func (e *editor) apply(w *protocol.WorkspaceEdit) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, dc := range w.DocumentChanges {
		if td, ok := dc.(*protocol.TextDocumentEdit); ok && td.TextDocument.Version != nil {
			if b := e.buffers[string(td.TextDocument.URI)]; b == nil || b.version != *td.TextDocument.Version {
				return "document version changed"
			}
		}
	}
	for _, dc := range w.DocumentChanges {
		switch c := dc.(type) {
		case *protocol.TextDocumentEdit:
			u := string(c.TextDocument.URI)
			var edits []document.TextEdit
			for _, el := range c.Edits {
				switch te := el.(type) {
				case *protocol.TextEdit:
					edits = append(edits, document.TextEdit{Range: fromRange(te.Range), NewText: te.NewText})
				case *protocol.AnnotatedTextEdit:
					edits = append(edits, document.TextEdit{Range: fromRange(te.Range), NewText: te.NewText})
				}
			}
			if b := e.buffers[u]; b != nil {
				text, err := document.Apply(b.text, edits)
				if err != nil {
					return err.Error()
				}
				b.text = text
				b.version++
				continue
			}
			p := uri.URI(u).FsPath()
			old, _ := os.ReadFile(p)
			text, err := document.Apply(string(old), edits)
			if err != nil {
				return err.Error()
			}
			os.WriteFile(p, []byte(text), 0o644)
		case *protocol.CreateFile:
			p := c.URI.FsPath()
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, nil, 0o644)
		case *protocol.DeleteFile:
			os.Remove(c.URI.FsPath())
		case *protocol.RenameFile:
			os.Rename(c.OldURI.FsPath(), c.NewURI.FsPath())
		}
	}
	return ""
}

func (e *editor) editsSent() []protocol.ApplyWorkspaceEditParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]protocol.ApplyWorkspaceEditParams(nil), e.edits...)
}

// checkFixed checks the outcome of the scripted "Fix failing test TestAdd" run on the
// sample workspace: one applyEdit for calc.go at the open buffer's version 1, the buffer
// fixed, the file on disk untouched (only the editor writes), and progress from begin
// through the agent's steps to end.
func (e *editor) checkFixed(t testing.TB) {
	t.Helper()
	edits := e.editsSent()
	if len(edits) != 1 {
		t.Fatalf("want one applyEdit, got %d (messages %q)", len(edits), e.shownMessages())
	}
	dc := edits[0].Edit.DocumentChanges
	if len(dc) != 1 {
		t.Fatalf("document changes %+v", dc)
	}
	td, ok := dc[0].(*protocol.TextDocumentEdit)
	if !ok {
		t.Fatalf("want a TextDocumentEdit, got %T", dc[0])
	}
	if td.TextDocument.URI != uri.URI(e.uri("calc.go")) {
		t.Errorf("the edit is for %s, want calc.go", td.TextDocument.URI)
	}
	if td.TextDocument.Version == nil || *td.TextDocument.Version != 1 {
		t.Errorf("the edit must carry the open buffer's version 1: %+v", td.TextDocument)
	}
	if text := e.text("calc.go"); !strings.Contains(text, "return a + b") || strings.Contains(text, "return a - b") {
		t.Errorf("buffer not fixed:\n%s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "calc.go")); !strings.Contains(string(b), "return a - b") {
		t.Error("the server wrote the user's file itself; only the editor may")
	}
	prog := e.progressMessages()
	joined := strings.Join(prog, "|")
	for _, want := range []string{"begin:FrogNano: Fix failing test TestAdd", "report:Reading calc.go", "report:Editing calc.go", "end:1 files changed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("progress lacks %q: %s", want, joined)
		}
	}
	if len(prog) < 3 || !strings.HasPrefix(prog[0], "begin:") || !strings.HasPrefix(prog[len(prog)-1], "end:") {
		t.Errorf("progress must begin, report, end in that order: %q", prog)
	}
}

func sorted(s []string) []string { sort.Strings(s); return s }

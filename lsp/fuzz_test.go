package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/ollama"
)

// The fuzz targets hold the server to one promise: whatever arrives on the wire, it
// answers or rejects it, and it neither panics nor hangs. Ollama is at an address where
// nothing listens, so a run that gets as far as the model fails at once.

// fuzzTimeout bounds one session: it tells a hang from a slow session, also while
// fuzzing, where no test timeout applies. A healthy session takes milliseconds, but a
// seed that starts a run (a git copy, the sandbox's probes: a dozen processes) took
// more than 5s under -race at load 25 on 2 cores, so the bound is far above that.
const fuzzTimeout = time.Minute

// fuzzOptions are the server options of every fuzz session.
func fuzzOptions(tb testing.TB) Options {
	return Options{
		Env:          ollama.Config{Host: "127.0.0.1:1", Model: "fuzz", NumCtx: 2048},
		Log:          io.Discard,
		CacheDir:     tb.TempDir(),
		AgentWorkDir: tb.TempDir(),
	}
}

// serveResult is how a Serve call ended.
type serveResult struct {
	code  int
	panic string // the panic and its stack, if Serve panicked
}

// serving is a Serve call in progress.
type serving struct {
	done chan struct{} // closed when Serve has returned
	res  serveResult   // set before done is closed
}

// ended reports whether Serve has returned.
func (sv *serving) ended() bool {
	select {
	case <-sv.done:
		return true
	default:
		return false
	}
}

// startServe runs Serve on conn.
func startServe(ctx context.Context, conn io.ReadWriteCloser, opts Options) *serving {
	sv := &serving{done: make(chan struct{})}
	go func() {
		defer close(sv.done)
		defer func() {
			if r := recover(); r != nil {
				sv.res = serveResult{code: -1, panic: fmt.Sprintf("%v\n%s", r, debug.Stack())}
			}
		}()
		sv.res = serveResult{code: Serve(ctx, conn, opts)}
	}()
	return sv
}

// goroutines is every goroutine's stack, trimmed for a failure message.
func goroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	if len(buf) > 24000 {
		buf = append(buf[:24000], "\n…"...)
	}
	return string(buf)
}

// --- FuzzFraming: arbitrary bytes on the wire ---

// inputConn is the server's side of a connection on which the client wrote the fuzz
// input and then closed its write side: reads drain the input then see EOF; writes are
// kept so the test can look at what the server answered.
type inputConn struct {
	in *bytes.Reader

	// mu guards out and closed.
	mu     sync.Mutex
	out    bytes.Buffer
	closed bool
}

func (c *inputConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	return c.in.Read(p)
}

func (c *inputConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, io.ErrClosedPipe
	}
	if c.out.Len() < 1<<20 { // enough to look for a panic report
		c.out.Write(p)
	}
	return len(p), nil
}

func (c *inputConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *inputConn) written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.out.Bytes())
}

// frame is one message with the LSP base protocol's header.
func frame(body string) string {
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

// fuzzRoot is the workspace the seeds name; it need not exist for anything but a run,
// and a run fails before it reads the folder (Ollama is down).
const fuzzRoot = "file:///tmp/frognano-fuzz/ws"

var (
	seedInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":"` + fuzzRoot + `",` +
		`"capabilities":{"window":{"workDoneProgress":true,"showDocument":{"support":true}},"workspace":{"configuration":true,` +
		`"workspaceEdit":{"documentChanges":true,"resourceOperations":["create","rename","delete"]}}}}}`
	seedInitialized = `{"jsonrpc":"2.0","method":"initialized","params":{}}`
	seedDidOpen     = `{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"` + fuzzRoot + `/calc_test.go",` +
		`"languageId":"go","version":1,"text":"package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"}}}`
	seedDidChange = `{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"` + fuzzRoot + `/calc_test.go","version":2},` +
		`"contentChanges":[{"range":{"start":{"line":5,"character":11},"end":{"line":5,"character":14}},"text":"Sum"}]}}`
	seedCodeAction = `{"jsonrpc":"2.0","id":2,"method":"textDocument/codeAction","params":{"textDocument":{"uri":"` + fuzzRoot + `/calc_test.go"},` +
		`"range":{"start":{"line":5,"character":11},"end":{"line":5,"character":11}},"context":{"diagnostics":[]}}}`
	seedRun = `{"jsonrpc":"2.0","id":3,"method":"workspace/executeCommand","params":{"command":"frognano.run","arguments":[` +
		`{"action":"fixTest","title":"Fix failing test TestAdd","uri":"` + fuzzRoot + `/calc_test.go","version":1,` +
		`"range":{"start":{"line":5,"character":11},"end":{"line":5,"character":11}},"test":"TestAdd","testCommand":"go test -run ^TestAdd$ ."}]}}`
	seedRunGarbage = `{"jsonrpc":"2.0","id":4,"method":"workspace/executeCommand","params":{"command":"frognano.run","arguments":[[1,{"x":null}],"?"]}}`
	seedCancel     = `{"jsonrpc":"2.0","id":5,"method":"workspace/executeCommand","params":{"command":"frognano.cancel"}}`
	seedShutdown   = `{"jsonrpc":"2.0","id":6,"method":"shutdown"}`
	seedExit       = `{"jsonrpc":"2.0","method":"exit"}`
)

func framingSeeds() []string {
	session := frame(seedInitialize) + frame(seedInitialized) + frame(seedDidOpen) + frame(seedCodeAction)
	return []string{
		"",
		frame(seedInitialize),
		session,
		session + frame(seedDidChange) + frame(seedCodeAction) + frame(seedRun) + frame(seedRunGarbage) + frame(seedCancel),
		frame(seedInitialize) + frame(seedDidOpen) + frame(`{"jsonrpc":"2.0","method":"textDocument/didClose","params":{"textDocument":{"uri":"`+fuzzRoot+`/calc_test.go"}}}`) + frame(seedCodeAction),
		// A truncated header, and a header without its blank line.
		"Content-Length: 12\r\nContent-Ty",
		"Content-Length: 2\r\n{}",
		// Content-Length shorter, then longer, than the body.
		"Content-Length: 10\r\n\r\n" + seedInitialize,
		"Content-Length: 9000\r\n\r\n" + seedInitialize,
		// Not JSON, and JSON that is not JSON-RPC.
		frame("hello, server"),
		frame(`{"id":1}`) + frame(`{"jsonrpc":"2.0","id":{},"method":7}`) + frame(`"string"`),
		frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":"not an object"}`),
		// Content-Length far beyond the limit, and at it (the framer allocates that much).
		"Content-Length: 99999999999999999999\r\n\r\n{}",
		"Content-Length: 1073741824\r\n\r\n{}",
		"Content-Length: -5\r\n\r\n{}",
		// Header variants: lower case, bare newlines, other fields.
		"content-length: 2\n\n{}" + frame(seedShutdown),
		"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: " + fmt.Sprint(len(seedInitialize)) + "\r\n\r\n" + seedInitialize,
		// Batches: a full one, an empty one, one with a bad member.
		frame("[" + seedInitialize + "," + seedInitialized + "," + seedDidOpen + "," + seedCodeAction + "," + seedShutdown + "]"),
		frame("[]"),
		frame(`[1,` + seedShutdown + `]`),
		// Responses to requests the server never made.
		frame(`{"jsonrpc":"2.0","id":99,"result":{"applied":true}}`) + frame(`{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}}`),
		// Cancel of a request in flight and of one that never was.
		frame(seedInitialize) + frame(seedRun) + frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`) +
			frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"nope"}}`),
		// A notification the server does not know.
		frame(seedInitialize) + frame(`{"jsonrpc":"2.0","method":"$/frognano.unknown","params":{}}`) + frame(seedCodeAction),
		// The clean end of a session.
		frame(seedInitialize) + frame(seedInitialized) + frame(seedShutdown) + frame(seedExit),
	}
}

// FuzzFraming feeds arbitrary bytes to Serve, as if the client wrote them and closed its
// side: Serve must return, without panicking and without a handler panicking.
func FuzzFraming(f *testing.F) {
	for _, s := range framingSeeds() {
		f.Add([]byte(s))
	}
	opts := fuzzOptions(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if hasHostSetting(in) {
			t.Skip("the input points the server at another Ollama")
		}
		conn := &inputConn{in: bytes.NewReader(in)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sv := startServe(ctx, conn, opts)
		select {
		case <-sv.done:
			if sv.res.panic != "" {
				t.Fatalf("Serve panicked: %s", sv.res.panic)
			}
		case <-time.After(fuzzTimeout):
			t.Fatalf("Serve did not return within %s of the input ending\n\n%s", fuzzTimeout, goroutines())
		}
		if out := conn.written(); bytes.Contains(out, []byte("panicked")) {
			t.Fatalf("a handler panicked; the server answered:\n%s", truncate(string(out), 4000))
		}
	})
}

// hasHostSetting reports whether b may set frognano.ollamaHost (JSON keys match case-
// insensitively): the fuzzer must not send runs to a real server.
func hasHostSetting(b []byte) bool { return bytes.Contains(bytes.ToLower(b), []byte("ollamahost")) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// --- FuzzRequests: well-framed messages with fuzzed methods, shapes and contents ---

// fuzzMethods are what the generator sends: the methods the server handles, one it
// leaves unimplemented, and one nobody knows. A message is a request or a notification
// as the spec says, unless the input flips it.
var fuzzMethods = []struct {
	name string
	call bool
}{
	{"initialize", true},
	{"initialized", false},
	{"textDocument/didOpen", false},
	{"textDocument/didChange", false},
	{"textDocument/didClose", false},
	{"textDocument/didSave", false},
	{"textDocument/codeAction", true},
	{"codeAction/resolve", true},
	{"workspace/executeCommand", true},
	{"shutdown", true},
	{"exit", false},
	{"$/cancelRequest", false},
	{"window/workDoneProgress/cancel", false},
	{"workspace/didChangeConfiguration", false},
	{"$/setTrace", false},
	{"textDocument/hover", true},
	{"$/frognano.unknown", false},
}

// fuzzInput hands out the fuzz input a piece at a time; past its end it yields zeros.
type fuzzInput struct{ b []byte }

func (in *fuzzInput) empty() bool { return len(in.b) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

func (in *fuzzInput) intn(n int) int { return int(in.byte()) % n }

// bytes takes a length-prefixed slice (up to max bytes).
func (in *fuzzInput) bytes(max int) []byte {
	n := in.intn(max + 1)
	if n > len(in.b) {
		n = len(in.b)
	}
	s := in.b[:n]
	in.b = in.b[n:]
	return s
}

func (in *fuzzInput) str(max int) string { return string(in.bytes(max)) }

// number is a JSON number: small mostly, sometimes a boundary or a value no field takes.
func (in *fuzzInput) number() string {
	switch c := in.byte(); {
	case c < 200:
		return fmt.Sprint(c % 40)
	case c < 210:
		return "4294967295"
	case c < 220:
		return "-1"
	case c < 230:
		return "2147483648"
	case c < 240:
		return "1.5"
	case c < 250:
		return "1e400"
	default:
		return `"7"`
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// raw is fuzz bytes as a JSON value: themselves when they are JSON, else a string.
func (in *fuzzInput) raw(max int) string {
	b := in.bytes(max)
	if json.Valid(b) {
		return string(b)
	}
	return js(string(b))
}

// fuzzSession is the generator's knowledge of the workspace it talks about.
type fuzzSession struct {
	root  string // file URI of the workspace folder
	files map[string]string
}

var fuzzFiles = map[string]string{
	"calc.go":      "// Package calc is frognano's demo project.\npackage calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n\n// Mul returns the product of a and b.\nfunc Mul(a, b int) int {\n\tpanic(\"not implemented\")\n}\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	"calc.py":      "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\nclass Calc:\n    def mul(self, a, b):\n        raise NotImplementedError\n",
	"calc.ts":      "export function add(a: number, b: number): number {\n  return a - b;\n}\n\ntest('add', () => {\n  expect(add(2, 3)).toBe(5);\n});\n\nexport const mul = (a: number, b: number): number => {\n  throw new Error('not implemented');\n};\n",
}

var fuzzNames = []string{"calc.go", "calc_test.go", "calc.py", "calc.ts"}

func (s *fuzzSession) uri(in *fuzzInput) string {
	switch c := in.intn(10); {
	case c < 7:
		return s.root + "/" + fuzzNames[c%len(fuzzNames)]
	case c == 7:
		return "untitled:Untitled-1"
	case c == 8:
		return s.root + "/../outside.go"
	default:
		return in.str(24)
	}
}

func (s *fuzzSession) text(in *fuzzInput, u string) string {
	base := fuzzFiles[fuzzNames[in.intn(len(fuzzNames))]]
	for name, text := range fuzzFiles {
		if strings.HasSuffix(u, "/"+name) {
			base = text
		}
	}
	switch in.intn(4) {
	case 0, 1:
		return base
	case 2: // the file with fuzz bytes spliced in
		at := in.intn(len(base) + 1)
		return base[:at] + in.str(40) + base[at:]
	default:
		return in.str(120)
	}
}

func (s *fuzzSession) position(in *fuzzInput) string {
	return `{"line":` + in.number() + `,"character":` + in.number() + `}`
}

func (s *fuzzSession) rangeJSON(in *fuzzInput) string {
	return `{"start":` + s.position(in) + `,"end":` + s.position(in) + `}`
}

func (s *fuzzSession) actionData(in *fuzzInput) string {
	actions := []string{"fix", "fixTest", "implement", "tests", "explain", "ask", "", "bogus"}
	return `{"action":` + js(actions[in.intn(len(actions))]) + `,"title":` + js(in.str(12)) + `,"uri":` + js(s.uri(in)) +
		`,"version":` + in.number() + `,"range":` + s.rangeJSON(in) + `,"diagnostic":` + js(in.str(12)) +
		`,"func":` + js(in.str(8)) + `,"test":"TestAdd","testCommand":"go test -run ^TestAdd$ .","selection":` + js(in.str(16)) +
		`,"instruction":` + js(in.str(16)) + `}`
}

func (s *fuzzSession) settings(in *fuzzInput) string {
	busy := []string{"reject", "queue", ""}
	return `{"frognano":{"maxSteps":` + in.number() + `,"maxMinutes":` + in.number() + `,"whenBusy":` + js(busy[in.intn(3)]) +
		`,"preview":` + []string{"true", "false", "null"}[in.intn(3)] +
		`,"actions":{"fix":` + []string{"true", "false"}[in.intn(2)] + `,"explain":` + []string{"true", "false", "0"}[in.intn(3)] + `}}}`
}

func (s *fuzzSession) capabilities(in *fuzzInput) string {
	switch in.intn(5) {
	case 0:
		return `{}`
	case 1: // VS Code-like, with codeAction resolve of edits
		return `{"window":{"workDoneProgress":true,"showDocument":{"support":true}},"workspace":{"configuration":true,` +
			`"workspaceEdit":{"documentChanges":true,"resourceOperations":["create","rename","delete"],"changeAnnotationSupport":{}}},` +
			`"textDocument":{"codeAction":{"dataSupport":true,"resolveSupport":{"properties":["edit"]}}}}`
	case 2:
		return `{"window":{"workDoneProgress":true},"workspace":{"configuration":true}}`
	case 3:
		return `{"textDocument":{"codeAction":{"dataSupport":` + in.raw(6) + `,"resolveSupport":` + in.raw(16) + `}}}`
	default:
		return in.raw(40)
	}
}

// params makes the params of method: the right shape with fuzzed contents mostly, else
// fuzz bytes (as JSON), or nothing at all.
func (s *fuzzSession) params(in *fuzzInput, method string, ids []int64) jsonrpc2.RawMessage {
	switch in.intn(8) {
	case 6:
		return jsonrpc2.RawMessage(in.raw(60))
	case 7:
		return nil
	}
	var p string
	switch method {
	case "initialize":
		root := js(s.root)
		switch in.intn(4) {
		case 1:
			root = "null"
		case 2:
			root = js(in.str(20))
		case 3:
			root = `"file:///"`
		}
		p = `{"processId":null,"rootUri":` + root + `,"capabilities":` + s.capabilities(in)
		switch in.intn(3) {
		case 0:
			p += `,"initializationOptions":` + s.settings(in)
		case 1:
			p += `,"initializationOptions":` + in.raw(30)
		}
		if in.intn(3) == 0 {
			p += `,"workspaceFolders":[{"uri":` + js(s.root) + `,"name":"ws"}]`
		}
		p += `}`
	case "textDocument/didOpen":
		u := s.uri(in)
		langs := []string{"go", "python", "typescript", "javascript", "", "plaintext"}
		p = `{"textDocument":{"uri":` + js(u) + `,"languageId":` + js(langs[in.intn(len(langs))]) +
			`,"version":` + in.number() + `,"text":` + js(s.text(in, u)) + `}}`
	case "textDocument/didChange":
		var changes []string
		for n := in.intn(4); n > 0; n-- {
			if in.intn(4) == 0 {
				changes = append(changes, `{"text":`+js(in.str(60))+`}`)
			} else {
				changes = append(changes, `{"range":`+s.rangeJSON(in)+`,"text":`+js(in.str(20))+`}`)
			}
		}
		p = `{"textDocument":{"uri":` + js(s.uri(in)) + `,"version":` + in.number() + `},"contentChanges":[` + strings.Join(changes, ",") + `]}`
	case "textDocument/didClose", "textDocument/didSave":
		p = `{"textDocument":{"uri":` + js(s.uri(in)) + `}}`
	case "textDocument/codeAction":
		var diags []string
		for n := in.intn(3); n > 0; n-- {
			diags = append(diags, `{"range":`+s.rangeJSON(in)+`,"message":`+js(in.str(20))+`,"severity":`+fmt.Sprint(in.intn(5))+`}`)
		}
		only := []string{"", `,"only":["quickfix"]`, `,"only":["refactor"]`, `,"only":["source","refactor.rewrite"]`, `,"only":[""]`}[in.intn(5)]
		p = `{"textDocument":{"uri":` + js(s.uri(in)) + `},"range":` + s.rangeJSON(in) +
			`,"context":{"diagnostics":[` + strings.Join(diags, ",") + `]` + only + `}}`
	case "codeAction/resolve":
		data := "null"
		switch in.intn(3) {
		case 0:
			data = s.actionData(in)
		case 1:
			data = in.raw(30)
		}
		p = `{"title":` + js(in.str(10)) + `,"kind":"quickfix","data":` + data + `}`
	case "workspace/executeCommand":
		commands := []string{CommandCancel, CommandRun, CommandAsk, "frognano.nothing"}
		c := commands[in.intn(len(commands))]
		switch in.intn(4) {
		case 0:
			p = `{"command":` + js(c) + `}`
		case 1:
			p = `{"command":` + js(c) + `,"arguments":[` + s.actionData(in) + `]}`
		default:
			p = `{"command":` + js(c) + `,"arguments":[` + in.raw(30) + `]}`
		}
	case "$/cancelRequest":
		id := in.number()
		if len(ids) > 0 && in.intn(4) != 0 {
			id = fmt.Sprint(ids[in.intn(len(ids))])
		}
		p = `{"id":` + id + `}`
	case "window/workDoneProgress/cancel":
		token := `"frognano-run-1"`
		switch in.intn(4) {
		case 1:
			token = `"frognano-run-2"`
		case 2:
			token = in.number()
		case 3:
			token = js(in.str(10))
		}
		p = `{"token":` + token + `}`
	case "workspace/didChangeConfiguration":
		settings := "null"
		switch in.intn(3) {
		case 0:
			settings = s.settings(in)
		case 1:
			settings = in.raw(40)
		}
		p = `{"settings":` + settings + `}`
	case "$/setTrace":
		value := []string{"off", "messages", "verbose", ""}[in.intn(4)]
		if value == "" {
			value = in.str(8)
		}
		p = `{"value":` + js(value) + `}`
	default: // shutdown, exit and the others take no params
		return nil
	}
	return jsonrpc2.RawMessage(p)
}

// fuzzMessage is one message the generator sends.
type fuzzMessage struct {
	method string
	call   bool
	params jsonrpc2.RawMessage
}

func (m fuzzMessage) String() string {
	kind := "notify"
	if m.call {
		kind = "call"
	}
	return fmt.Sprintf("%s %s %s", kind, m.method, truncate(string(m.params), 300))
}

// messages turns the fuzz input into at most 12 messages; an exit ends the list.
func (s *fuzzSession) messages(data []byte) []fuzzMessage {
	in := &fuzzInput{b: data}
	var out []fuzzMessage
	var ids []int64
	for !in.empty() && len(out) < 12 {
		c := in.byte()
		m := fuzzMethods[int(c)%len(fuzzMethods)]
		msg := fuzzMessage{method: m.name, call: m.call != (c >= 0xf0)}
		msg.params = s.params(in, m.name, ids)
		if hasHostSetting(msg.params) {
			msg.params = nil
		}
		if msg.call {
			ids = append(ids, int64(len(out)+1))
		}
		out = append(out, msg)
		if m.name == "exit" {
			break
		}
	}
	return out
}

// fuzzClient is the client end of a session: it writes the messages in order on a real
// header-framed connection, answers the server's requests like an editor (or, as the
// input says, with errors or nonsense), and matches every response to its request.
type fuzzClient struct {
	stream jsonrpc2.Stream
	wmu    sync.Mutex // serializes writes
	mode   byte       // how to answer the server's requests

	// mu guards the fields below it.
	mu       sync.Mutex
	pending  map[int64]string // request id → method, until answered
	problems []string
	changed  chan struct{}
}

func (c *fuzzClient) write(msg jsonrpc2.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.stream.Write(context.Background(), msg)
	return err
}

func (c *fuzzClient) problem(format string, a ...any) {
	c.mu.Lock()
	c.problems = append(c.problems, fmt.Sprintf(format, a...))
	c.mu.Unlock()
}

// read handles what the server sends until the connection ends.
func (c *fuzzClient) read(done chan<- struct{}) {
	defer close(done)
	for {
		msg, _, err := c.stream.Read(context.Background())
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *jsonrpc2.Response:
			id, ok := m.ID().Number()
			c.mu.Lock()
			method, pending := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if !ok || !pending {
				c.problem("a response to no request of ours: id %v, error %v", m.ID(), m.Err())
			}
			if err := m.Err(); err != nil && strings.Contains(err.Error(), "panicked") {
				c.problem("%s: %v", method, err)
			}
			select {
			case c.changed <- struct{}{}:
			default:
			}
		case *jsonrpc2.Call:
			// Never write on the read loop: net.Pipe has no buffer, and the server may be
			// blocked writing to us while our writer waits for it to read.
			go c.answer(m)
		}
	}
}

// answer replies to a server request: as an editor would (mode 0 and most others), with
// an error (mode 1), or with a result of the wrong shape (mode 2).
func (c *fuzzClient) answer(call *jsonrpc2.Call) {
	var result jsonrpc2.RawMessage
	var err error
	switch c.mode % 4 {
	case 1:
		err = jsonrpc2.NewError(jsonrpc2.InternalError, "the editor failed")
	case 2:
		result = jsonrpc2.RawMessage(`"nonsense"`)
	default:
		switch call.Method() {
		case "workspace/applyEdit":
			result = jsonrpc2.RawMessage(`{"applied":true}`)
		case "window/showDocument":
			result = jsonrpc2.RawMessage(`{"success":true}`)
		case "workspace/configuration":
			result = jsonrpc2.RawMessage(`[{"frognano":{"whenBusy":"queue"}}]`)
		default:
			result = jsonrpc2.RawMessage(`null`)
		}
	}
	c.write(jsonrpc2.NewResponse(call.ID(), result, err))
}

func (c *fuzzClient) unanswered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, m := range c.pending {
		out = append(out, fmt.Sprintf("%d %s", id, m))
	}
	return out
}

// waitAnswered waits until every request has its response, until the deadline, or until
// the server has ended (when no more answers can come).
func (c *fuzzClient) waitAnswered(deadline <-chan time.Time, sv *serving) bool {
	for len(c.unanswered()) > 0 {
		select {
		case <-c.changed:
		case <-time.After(20 * time.Millisecond):
		case <-sv.done:
			time.Sleep(10 * time.Millisecond) // let the reader take the last answers
			return len(c.unanswered()) == 0
		case <-deadline:
			return false
		}
	}
	return true
}

// FuzzRequests sends sequences of well-framed messages built from the input: every
// request must get a response, the server must not end the connection unasked, and after
// the client closes (or sends exit) Serve must return, with 0 only after a shutdown.
func FuzzRequests(f *testing.F) {
	ws := f.TempDir()
	for name, text := range fuzzFiles {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	s := &fuzzSession{root: string(uri.File(ws))}
	opts := fuzzOptions(f)
	for _, seed := range requestSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := s.messages(data)
		mode := byte(0)
		if len(data) > 0 {
			mode = data[len(data)-1] >> 6
		}
		sconn, cconn := net.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sv := startServe(ctx, sconn, opts)
		c := &fuzzClient{stream: jsonrpc2.NewHeaderStream(cconn), mode: mode, pending: map[int64]string{}, changed: make(chan struct{}, 1)}
		readDone := make(chan struct{})
		go c.read(readDone)
		defer cconn.Close()

		fail := func(format string, a ...any) {
			t.Helper()
			var list strings.Builder
			for i, m := range msgs {
				fmt.Fprintf(&list, "  %d: %s\n", i+1, m)
			}
			t.Fatalf("%s\nmessages:\n%s", fmt.Sprintf(format, a...), list.String())
		}
		deadline := time.After(fuzzTimeout)
		// unanswered fails the iteration for requests left without a response.
		unanswered := func(when string) {
			t.Helper()
			if sv.ended() {
				fail("the server ended the connection (code %d) %s, leaving unanswered: %q%s", sv.res.code, when, c.unanswered(), sv.res.panic)
			}
			fail("requests unanswered %s after %s: %q\n\n%s", when, fuzzTimeout, c.unanswered(), goroutines())
		}
		exited, shutdownOK := false, false
		for i, m := range msgs {
			if m.method == "exit" {
				// A client sends exit once its requests are answered (after shutdown's).
				if !c.waitAnswered(deadline, sv) {
					unanswered("before exit")
				}
				exited = true
			}
			var err error
			if m.call {
				id := int64(i + 1)
				c.mu.Lock()
				c.pending[id] = m.method
				c.mu.Unlock()
				err = c.write(jsonrpc2.NewCall(jsonrpc2.NewNumberID(id), m.method, m.params))
				if m.method == "shutdown" && err == nil {
					shutdownOK = c.waitAnswered(deadline, sv)
				}
			} else {
				err = c.write(jsonrpc2.NewNotification(m.method, m.params))
			}
			if err != nil {
				fail("writing message %d: %v (the server closed the connection?)", i+1, err)
			}
		}
		if !exited {
			if !c.waitAnswered(deadline, sv) {
				unanswered("at the end")
			}
			// A handler that runs asynchronously may still end the connection: check
			// that the server still answers a request sent after all the others.
			probe := int64(len(msgs) + 1)
			c.mu.Lock()
			c.pending[probe] = "frognano/probe"
			c.mu.Unlock()
			if err := c.write(jsonrpc2.NewCall(jsonrpc2.NewNumberID(probe), "frognano/probe", nil)); err != nil {
				fail("the server closed the connection by itself (writing a probe: %v)", err)
			}
			if !c.waitAnswered(deadline, sv) {
				unanswered("(a probe sent last)")
			}
			select {
			case <-sv.done:
				fail("the server ended the connection by itself (code %d) %s", sv.res.code, sv.res.panic)
			case <-time.After(2 * time.Millisecond):
			}
			cconn.Close()
		}
		select {
		case <-sv.done:
		case <-deadline:
			fail("Serve did not return within %s\n\n%s", fuzzTimeout, goroutines())
		}
		if sv.res.panic != "" {
			fail("Serve panicked: %s", sv.res.panic)
		}
		<-readDone
		c.mu.Lock()
		problems := c.problems
		c.mu.Unlock()
		if len(problems) > 0 {
			fail("%s", strings.Join(problems, "\n"))
		}
		if exited {
			sentShutdown := false
			for _, m := range msgs {
				sentShutdown = sentShutdown || m.method == "shutdown"
			}
			switch {
			case shutdownOK && sv.res.code != 0:
				fail("exit after an answered shutdown returned %d, want 0", sv.res.code)
			case !sentShutdown && sv.res.code != 1:
				fail("exit without shutdown returned %d, want 1", sv.res.code)
			}
		}
	})
}

// requestSeeds are inputs for the generator that walk the main paths: a full session,
// runs that fail at the model, cancels, settings, garbage, shutdown and exit. The bytes
// after a method's byte are its choices in the order params reads them; the first is the
// shape (0–5: built, 6: fuzz bytes, 7: none).
func requestSeeds() [][]byte {
	idx := func(name string, flip bool) byte {
		for i, m := range fuzzMethods {
			if m.name != name {
				continue
			}
			if !flip {
				return byte(i)
			}
			for c := 0xf0; c <= 0xff; c++ {
				if c%len(fuzzMethods) == i {
					return byte(c)
				}
			}
		}
		panic(name)
	}
	seed := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	b := func(v ...byte) []byte { return v }
	// initialize: root = the workspace, VS Code-like capabilities, no options, no folders.
	initFull := b(idx("initialize", false), 0, 0, 1, 2, 1)
	// didOpen: calc_test.go (or calc.go), language go, version 1, its text.
	openTest := b(idx("textDocument/didOpen", false), 0, 1, 0, 1, 0, 0)
	openGo := b(idx("textDocument/didOpen", false), 0, 0, 0, 1, 0, 0)
	// codeAction on calc_test.go at Add(2, 3): no diagnostics, no filter.
	actionAt := b(idx("textDocument/codeAction", false), 0, 0, 0, 1, 5, 11, 5, 11)
	// executeCommand frognano.run with the fixTest action on calc_test.go.
	run := b(idx("workspace/executeCommand", false), 0, 1, 1, 1, 3, 'F', 'i', 'x', 1, 1, 5, 11, 5, 11, 0, 0, 0, 0)
	cancel := b(idx("workspace/executeCommand", false), 0, 0, 0)
	return [][]byte{
		{},
		seed(initFull, b(idx("initialized", false), 0), openTest, openGo, actionAt),
		seed(initFull, openTest, run, cancel),
		seed(initFull, openTest, run, b(idx("$/cancelRequest", false), 0, 0, 1, 1)),
		seed(initFull, openTest, run, b(idx("window/workDoneProgress/cancel", false), 0, 0)),
		seed(initFull, b(idx("workspace/didChangeConfiguration", false), 0, 0, 1, 3, 1, 0, 1, 0), openTest, run, run, cancel),
		seed(initFull, openTest, b(idx("textDocument/didChange", false), 0, 1, 1, 5, 11, 5, 14, 3, 'S', 'u', 'm', 1, 2), actionAt),
		seed(initFull, b(idx("codeAction/resolve", false), 0, 1, 7, '{', '"', 'x', '"', ':', '1', '}', 0),
			b(idx("codeAction/resolve", false), 0, 0, 4, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
		seed(initFull, openTest, b(idx("textDocument/didClose", false), 0, 1), actionAt),
		seed(b(idx("textDocument/codeAction", false), 6, 3, '[', '1', ']'), b(idx("shutdown", true), 0), b(idx("textDocument/didOpen", true), 7)),
		seed(initFull, run, b(0x40)), // the client answers the server's requests with errors
		seed(initFull, b(idx("shutdown", false), 0), b(idx("exit", false), 0)),
		seed(initFull, b(idx("exit", false), 0)),
		seed(initFull, b(idx("textDocument/hover", false), 7), b(idx("$/setTrace", false), 0, 2)),
		seed(initFull, b(idx("$/frognano.unknown", false), 0), actionAt),
		seed(initFull, b(idx("textDocument/didOpen", false), 6, 4, 'n', 'u', 'l', 'l'), actionAt),
	}
}

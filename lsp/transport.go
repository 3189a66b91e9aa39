package lsp

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// codec marshals payloads with the protocol package's union-aware encoder, as
// protocol.NewServer does; we build the connection ourselves to control dispatch order.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case *jsonrpc2.RawMessage:
		if m == nil || *m == nil {
			return []byte("null"), nil
		}
		return *m, nil
	}
	return protocol.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	if p, ok := v.(*jsonrpc2.RawMessage); ok {
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	}
	// The decoder may leave strings aliasing its input, and the transport reuses its read
	// buffers: decode a private copy, or a kept string changes under us (seen: a code
	// action title overwritten by the next message).
	return protocol.Unmarshal(bytes.Clone(data), v)
}

// inOrder lists the methods handled on the read loop, before any later message is read:
// the spec orders document sync before the requests that follow it, and go.lsp.dev v1's
// async dispatch would otherwise let a codeAction overtake the didChange before it.
var inOrder = map[string]bool{
	protocol.MethodTextDocumentDidOpen:             true,
	protocol.MethodTextDocumentDidChange:           true,
	protocol.MethodTextDocumentDidClose:            true,
	protocol.MethodTextDocumentDidSave:             true,
	protocol.MethodWorkspaceDidChangeConfiguration: true,
	protocol.MethodInitialize:                      true,
	protocol.MethodInitialized:                     true,
	protocol.MethodShutdown:                        true, // or an exit right behind it overtakes it: exit code 1
	protocol.MethodExit:                            true,
	protocol.MethodCancelRequest:                   true,
	protocol.MethodSetTrace:                        true, // a trace starts where it was asked for
}

// dispatcher runs document sync in order, everything else concurrently, and cancels
// requests on $/cancelRequest.
//
// It replaces jsonrpc2's CancelHandler, which derives a context from the pooled
// per-request context: the watcher goroutine of that derivation can read the request after
// the library has recycled it (a data race, and a "nil parent" panic, seen under -race).
// Here each request gets a context of our own, derived from the connection's, which is
// also safe to keep after the handler returns (an agent run outlives nothing, but its
// cleanup does).
type dispatcher struct {
	logf     func(format string, a ...any)
	mu       sync.Mutex // guards inflight
	inflight map[jsonrpc2.ID]context.CancelFunc
}

func (d *dispatcher) handler(h jsonrpc2.Handler) jsonrpc2.Handler {
	return func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() == protocol.MethodCancelRequest {
			var p protocol.CancelParams
			if err := protocol.Unmarshal(req.Params(), &p); err != nil {
				d.logf("ignoring a malformed $/cancelRequest: %v", err)
				return nil, nil
			}
			d.cancel(p.ID)
			return nil, nil
		}
		if !inOrder[req.Method()] {
			jsonrpc2.Async(ctx)
		}
		hctx, cancel := context.WithCancel(jsonrpc2.DetachContext(ctx))
		defer cancel()
		if req.IsCall() {
			id := req.ID()
			d.mu.Lock()
			d.inflight[id] = cancel
			d.mu.Unlock()
			defer func() {
				d.mu.Lock()
				delete(d.inflight, id)
				d.mu.Unlock()
			}()
		}
		res, err := h(hctx, req)
		if err != nil && !req.IsCall() {
			// A notification has no reply to carry an error, and jsonrpc2 closes the whole
			// connection when its handler fails: a malformed or unknown notification (the
			// spec lets servers ignore "$/" ones) must not end the session.
			d.logf("ignoring notification %s: %v", req.Method(), err)
			return nil, nil
		}
		return res, err
	}
}

func (d *dispatcher) cancel(id protocol.ProgressToken) {
	var key jsonrpc2.ID
	switch id := id.(type) {
	case protocol.Integer:
		key = jsonrpc2.NewNumberID(int64(id))
	case protocol.String:
		key = jsonrpc2.NewStringID(string(id))
	default:
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.inflight[key]; c != nil {
		c()
	}
}

// Serve runs the language server on rwc (stdin/stdout framed with Content-Length headers)
// until the client exits or the connection closes. It returns the process exit code the
// spec asks for: 0 after shutdown then exit, 1 otherwise.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, opts Options) int {
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(rwc), jsonrpc2.WithCodec(codec{}))
	client := protocol.ClientDispatcher(conn)
	s := newServer(client, opts)
	s.closeConn = func() { conn.Close() }
	ctx = protocol.WithClient(ctx, client)
	d := &dispatcher{logf: s.log.Printf, inflight: map[jsonrpc2.ID]context.CancelFunc{}}
	conn.Go(ctx, d.handler(protocol.ServerHandler(s, jsonrpc2.MethodNotFoundHandler)))
	select {
	case <-conn.Done():
	case <-ctx.Done():
		conn.Close()
	case <-s.exited:
		// The spec: the server exits on `exit`. The connection is being closed, but over
		// stdio its read loop may sit in a read the client never ends (it may keep the pipe
		// open), so it gets a moment, not a promise.
		select {
		case <-conn.Done():
		case <-time.After(time.Second):
		}
	}
	s.stopAll()
	return s.exitCode()
}

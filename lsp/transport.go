package lsp

import (
	"context"
	"io"

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
	return protocol.Unmarshal(data, v)
}

// inOrder lists the methods handled on the read loop, before any later message is read:
// the spec orders document sync before the requests that follow it, and go.lsp.dev v1's
// async handler would otherwise let a codeAction overtake the didChange before it.
var inOrder = map[string]bool{
	protocol.MethodTextDocumentDidOpen:             true,
	protocol.MethodTextDocumentDidChange:           true,
	protocol.MethodTextDocumentDidClose:            true,
	protocol.MethodTextDocumentDidSave:             true,
	protocol.MethodWorkspaceDidChangeConfiguration: true,
	protocol.MethodInitialize:                      true,
	protocol.MethodInitialized:                     true,
	protocol.MethodExit:                            true,
}

// ordered runs document sync inline and releases everything else to run concurrently.
func ordered(h jsonrpc2.Handler) jsonrpc2.Handler {
	return func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if !inOrder[req.Method()] {
			jsonrpc2.Async(ctx)
		}
		return h(ctx, req)
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
	conn.Go(ctx, protocol.CancelHandler(ordered(protocol.ServerHandler(s, jsonrpc2.MethodNotFoundHandler))))
	select {
	case <-conn.Done():
	case <-ctx.Done():
		conn.Close()
	}
	s.stopAll()
	return s.exitCode()
}

// Command benchfloor is the floor the start-up and memory benchmarks compare frognano
// against: a language server in Go that answers initialize, shutdown and exit and does
// nothing else, linking only what frognano's design names for the editor half
// (go.lsp.dev/jsonrpc2 and protocol; with deps.go also Ollama's api package, fsnotify and
// net/http; build with -tags bare to leave those out). It shows what a Go binary with
// those dependencies costs before any of frognano's own code:
//
//	go build -o /tmp/floor ./lsp/internal/benchfloor
//	FROGNANO_BENCH_PEER=/tmp/floor go test -run '^$' -bench 'ColdStart$|IdleMemory$' -benchtime 50x ./lsp/
package main

import (
	"context"
	"os"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// stdio is the process's stdin and stdout as one connection.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

func main() {
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(stdio{}))
	exited := make(chan struct{})
	conn.Go(context.Background(), func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		switch req.Method() {
		case protocol.MethodInitialize:
			var p protocol.InitializeParams
			if err := protocol.Unmarshal(req.Params(), &p); err != nil {
				return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
			}
			return protocol.InitializeResult{ServerInfo: protocol.ServerInfo{Name: "benchfloor"}}, nil
		case protocol.MethodExit:
			close(exited)
		}
		return nil, nil // shutdown, initialized and the rest: nothing to do
	})
	select {
	case <-exited:
	case <-conn.Done():
		os.Exit(1) // the spec's code for a connection that ended without exit
	}
}

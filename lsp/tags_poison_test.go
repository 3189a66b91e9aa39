//go:build jsonrpc2poison

package lsp

// frognanoTags: under `go test -tags jsonrpc2poison` (make test runs the package so) the
// `frognano lsp` processes that the stdio and exit tests start are poisoned too, so that a
// request the server keeps past its handler fails there as it does in-process.
var frognanoTags = []string{"jsonrpc2poison"}

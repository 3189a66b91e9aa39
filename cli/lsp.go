package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/frognano/frognano/internal/gctune"
	"github.com/frognano/frognano/lsp"
	"github.com/frognano/frognano/ollama"
)

func runLSP(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "lsp", "", "Serve the Language Server Protocol over stdio (what editors start).")
	cfg := configFlags(fs, env)
	listen := fs.String("listen", "", "serve one client on this TCP address instead of stdio, e.g. 127.0.0.1:7777 (for debugging)")
	logPath := fs.String("log", "", "log file (default: lsp.log in the cache folder)")
	// vscode-languageclient's stdio transport passes --stdio; stdio is the default anyway.
	fs.Bool("stdio", true, "serve over stdin and stdout (the default; accepted for clients that pass it)")
	if code, done := parse(fs, args); done {
		return code
	}
	c, err := cfg()
	if err != nil {
		fmt.Fprintf(env.Stderr, "frognano lsp: %v\n", err)
		return exitUsage
	}
	if *logPath == "" {
		*logPath = filepath.Join(ollama.CacheDir(), "lsp.log")
	}
	var logw io.Writer = env.Stderr
	if err := os.MkdirAll(filepath.Dir(*logPath), 0o755); err == nil {
		if f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			defer f.Close()
			logw = f
		}
	}
	// A keystroke copies the document; the default GOGC collects a small heap every few
	// keystrokes, and those make the slow tail of didChange + codeAction.
	defer gctune.Start(env.Getenv)()
	opts := lsp.Options{Env: c, Log: logw}
	if *listen != "" {
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(env.Stderr, "frognano lsp: %v\n", err)
			return exitFailed
		}
		defer l.Close()
		fmt.Fprintf(env.Stderr, "frognano lsp: listening on %s\n", l.Addr())
		conn, err := l.Accept()
		if err != nil {
			fmt.Fprintf(env.Stderr, "frognano lsp: %v\n", err)
			return exitFailed
		}
		return lsp.Serve(ctx, conn, opts)
	}
	return lsp.Serve(ctx, stdio{}, opts)
}

// stdio is the process's stdin and stdout as one connection.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error {
	os.Stdin.Close()
	return os.Stdout.Close()
}

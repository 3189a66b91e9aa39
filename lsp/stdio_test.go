package lsp

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
	"golang.org/x/tools/txtar"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// The in-process tests drive Serve on a pipe; this one drives the real binary the way an
// editor does: `frognano lsp` as a child process, LSP over its stdin and stdout,
// configured through the environment.

// procConn is a child's stdout (to read) and stdin (to write) as one connection.
type procConn struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (c procConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c procConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c procConn) Close() error {
	err := c.w.Close()
	c.r.Close()
	return err
}

// lspProcess is a running `frognano lsp` and the editor connected to it.
type lspProcess struct {
	*editor
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan struct{} // closed when the process has exited
	log    string
}

// startLSP starts `frognano lsp` with env on a workspace written from files, and connects
// the fake editor to it; it does not initialize.
func startLSP(t *testing.T, bin, files string, env ...string) *lspProcess {
	t.Helper()
	root := t.TempDir()
	for _, f := range txtar.Parse([]byte(files)).Files {
		p := filepath.Join(root, f.Name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logPath := filepath.Join(t.TempDir(), "lsp.log")
	p, err := launchLSP(t, bin, root, logPath, env...)
	if err != nil {
		t.Fatal(err)
	}
	cmd, conn := p.cmd, p.conn
	t.Cleanup(func() {
		conn.Close()
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("frognano lsp stderr:\n%s", p.stderr)
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("frognano lsp log:\n%s", b)
			}
		}
	})
	return p
}

// launchLSP starts `frognano lsp` on root (log in logPath, env added to passthroughEnv) and
// connects the fake editor to it; stopping it is the caller's (startLSP leaves it to the
// test's cleanup, benchmarks start many).
func launchLSP(tb testing.TB, bin, root, logPath string, env ...string) (*lspProcess, error) {
	cmd := exec.Command(bin, "lsp", "--log", logPath)
	if peer := benchPeer(); len(peer) > 0 {
		cmd = exec.Command(peer[0], peer[1:]...)
	}
	cmd.Env = append(passthroughEnv(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &lspProcess{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{}), log: logPath}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	e := &editor{t: tb, root: root, buffers: map[string]*buffer{}, done: make(chan int, 1), changed: make(chan struct{}, 1000)}
	conn, server := dialServer(context.Background(), &client{e: e}, jsonrpc2.NewHeaderStream(procConn{r: stdout, w: stdin}))
	e.conn, e.server = conn, server
	p.editor = e
	return p, nil
}

// passthroughEnv is what the server needs from the test's environment: the user's home
// and PATH (the agent runs go), and Go's own settings where they are set.
func passthroughEnv() []string {
	var env []string
	for _, k := range []string{"HOME", "PATH", "TMPDIR", "GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func (p *lspProcess) initialize(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	res, err := p.server.Initialize(ctx, &protocol.InitializeParams{RootURI: ptr(uri.File(p.root)), Capabilities: capsFull()})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "frognano" {
		t.Fatalf("server info %+v", res.ServerInfo)
	}
	if err := p.server.Initialized(ctx, &protocol.InitializedParams{}); err != nil {
		t.Fatal(err)
	}
}

// exitCode waits up to d for the process to exit and returns its exit code.
func (p *lspProcess) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("frognano lsp did not exit within %s", d)
		return -1
	}
}

// TestStdioEndToEnd: "Fix failing test" against the real binary over stdio, with the
// scripted FrogNano episode on the real Ollama; then the exit codes the spec asks for: 0
// after shutdown and exit, 1 after exit alone.
func TestStdioEndToEnd(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("fixer-stdio", modelgen.Qwen3, demo.Script())
	bin := frognanoBinary(t)
	cache := t.TempDir()
	p := startLSP(t, bin, sampleWorkspace, "OLLAMA_HOST="+srv.Host, "FROGNANO_MODEL=fixer-stdio",
		"FROGNANO_NUM_CTX=16384", "FROGNANO_CACHE="+cache)
	p.initialize(t)
	p.open("calc.go")
	p.open("calc_test.go")
	a := find(t, p.actions("calc_test.go", "Add(2, 3)", true), "Fix failing test TestAdd")
	// A bound for a hang, not a speed test: the episode builds and runs the tests in the
	// sandbox four times, 2 minutes alone at load 18 on 2 cores, and it ran out at 3.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := p.execute(ctx, a); err != nil {
		t.Fatalf("run: %v (messages %q)", err, p.shownMessages())
	}

	p.checkFixed(t)

	if err := p.server.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := p.server.Exit(context.Background()); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if code := p.exitCode(t, 60*time.Second); code != 0 {
		t.Errorf("exit code %d after shutdown and exit, want 0", code)
	}
	if fi, err := os.Stat(p.log); err != nil || fi.Size() == 0 {
		t.Errorf("the log file %s is missing or empty (%v)", p.log, err)
	}

	// Exit without shutdown: the spec's exit code 1.
	q := startLSP(t, bin, sampleWorkspace, "OLLAMA_HOST="+srv.Host, "FROGNANO_MODEL=fixer-stdio", "FROGNANO_CACHE="+cache)
	q.initialize(t)
	if err := q.server.Exit(context.Background()); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if code := q.exitCode(t, 60*time.Second); code != 1 {
		t.Errorf("exit code %d after exit without shutdown, want 1", code)
	}
}

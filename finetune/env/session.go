package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/internal/cachedir"
)

// Session is one repository at one commit, ready for test runs on private copies. Close it.
type Session struct {
	Checkout  *Checkout
	Detection Detection
	Env       *Env // set by Open
	GoCache   string
	tmp       string
	copies    int
	progress  func(string)
}

// Copy is a private copy of the checkout with a sandbox to run commands in.
type Copy struct {
	WS     *workspace.Workspace
	runner *sandbox.Runner
	gowork string // GOWORK for go: the copy's go.work, or off
}

// NewSession exports repo's HEAD into a private temporary folder and detects its suite.
func NewSession(ctx context.Context, repo string, opts Options) (*Session, error) {
	tmp, err := os.MkdirTemp("", "frognano-synth-")
	if err != nil {
		return nil, err
	}
	co, err := Export(ctx, repo, filepath.Join(tmp, "checkout"))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	s := &Session{Checkout: co, tmp: tmp, GoCache: opts.goCache(co.Repo), progress: opts.Progress}
	if s.progress == nil {
		s.progress = func(string) {}
	}
	if s.Detection, err = Detect(co.Dir); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.locate(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// locate finds what a Python or JS/TS suite runs with on this machine (the user's virtual
// environment, node_modules) and writes node --test's reporter beside the copies.
func (s *Session) locate() error {
	d := &s.Detection
	if d.Unsupported != "" {
		return nil
	}
	switch {
	case d.Kind == KindPython && d.Runner == RunnerPytest:
		d.locatePython(s.Checkout.Repo)
	case d.Kind == KindJavaScript:
		d.locateNode(s.Checkout.Repo)
		if d.Runner == RunnerNodeTest {
			d.Reporter = filepath.Join(s.tmp, "node", "frognano-reporter.mjs")
			if err := os.MkdirAll(filepath.Dir(d.Reporter), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(d.Reporter, []byte(nodeReporter), 0o644); err != nil {
				return err
			}
			d.ReadOnly = append(d.ReadOnly, d.Reporter)
		}
	}
	return nil
}

// goCache is the sandbox's Go build cache for repo's test runs here: the repository's own,
// but not the one the agent's episodes use (agent/run.go). A command in an episode can write
// a build result into its cache that a later build trusts (a std package whose tests always
// pass, say); the suite's outcomes here decide which tasks exist, so they are built only
// from what frognano itself compiled: the user's code and frognano's own mutants.
// FROGNANO_SANDBOX_GOCACHE (test suites) overrides both.
func (o Options) goCache(repo string) string {
	if o.GoCache != "" {
		return o.GoCache
	}
	if shared := os.Getenv("FROGNANO_SANDBOX_GOCACHE"); shared != "" {
		return shared
	}
	episodes := sandbox.GoCacheFor(repo)
	return filepath.Join(filepath.Dir(episodes), "tasks-"+filepath.Base(episodes))
}

// Close removes the checkout and every copy.
func (s *Session) Close() error { return os.RemoveAll(s.tmp) }

// Copy makes a fresh private copy of the checkout, with patch (a unified diff, may be
// empty) applied by frognano before any command runs.
func (s *Session) Copy(ctx context.Context, files map[string][]byte) (*Copy, error) {
	s.copies++
	ws, err := workspace.Prepare(ctx, s.Checkout.Dir, filepath.Join(s.tmp, fmt.Sprintf("copy-%d", s.copies)), files)
	if err != nil {
		return nil, err
	}
	// As the agent does (agent/run.go newRunner): the copy's git objects readable, not
	// writable; the Go build cache the repository's own; the repository and frognano's
	// cache folder (the task store) hidden.
	// A Python or JS/TS suite's packages (the user's virtual environment, node_modules):
	// read-only, at their own paths.
	r, err := sandbox.NewRunner(ctx, sandbox.Options{ReadOnly: append([]string{ws.ObjectsDir()}, s.Detection.ReadOnly...),
		Hide:    append([]string{s.Checkout.Repo, s.Checkout.Dir, cachedir.Dir()}, s.Detection.Shadowed...),
		GoCache: s.GoCache, Limits: &sandbox.Limits{Output: 48 << 20}})
	if err != nil {
		ws.Remove()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := s.Detection.linkNodeModules(ws.Root); err != nil {
		r.Close()
		ws.Remove()
		return nil, err
	}
	gowork := "off"
	if s.Detection.Workspace {
		gowork = filepath.Join(ws.Root, "go.work")
	}
	return &Copy{WS: ws, runner: r, gowork: gowork}, nil
}

// Run runs command (bash) at the top of the copy. Go never fetches a toolchain there: the
// sandbox has no network, and a clear build failure beats a download that cannot happen.
// GOWORK is explicit: the go.work at the top of the copy when detection honoured one,
// else off, so that a module runs alone whatever go.work a folder above it may hold; a
// command entering a module a go.work below the top ties sets that one (Module.Enter).
func (c *Copy) Run(ctx context.Context, command string, timeout time.Duration) (sandbox.Output, error) {
	return c.runner.Run(ctx, sandbox.Cmd{Dir: c.WS.Root, Command: "export GOTOOLCHAIN=local GOFLAGS=\"$GOFLAGS -buildvcs=false\" GOWORK=" + shellQuote(c.gowork) + "; " + command, Timeout: timeout})
}

// Path is rel inside the copy.
func (c *Copy) Path(rel string) string { return filepath.Join(c.WS.Root, filepath.FromSlash(rel)) }

// Close removes the copy and its sandbox's private home.
func (c *Copy) Close() {
	c.runner.Close()
	c.WS.Remove()
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ShellQuote quotes s for bash (the commands run with `bash -lc`).
func ShellQuote(s string) string { return shellQuote(s) }

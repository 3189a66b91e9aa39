// Package ollamatest starts real, private Ollama servers for tests and registers models
// that the tests generate (package modelgen).
//
// Tests call [Shared] for their package's one server (its TestMain runs [Main]), or [Start]
// for a server of their own. Both find the binary through OLLAMA_BIN or the build cache
// (scripts/build-ollama.sh). When none is found the test is skipped on a developer's
// machine and fails under CI (CI=true), so CI can never pass without the real server.
package ollamatest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/internal/procgroup"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
)

// Server is a running test server bound to a test: its own ([Start]), stopped when the
// test ends, or the package's shared one ([Shared]).
type Server struct {
	*ollama.Server
	t      testing.TB
	shared bool
}

// Binary returns the Ollama binary for tests, skipping or failing the test when absent.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := ollama.FindBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real Ollama server is required under CI: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return bin
}

// testEnv is every test server's environment. Flash attention off: a scripted model's
// one attention head is 32 wide, and ggml's CPU flash-attention kernel (an exp and an f16
// dot product per query and key) then took ~70% of the runner's time, for an attention
// whose weights are zero. Without it a 7,000-token prompt evaluates in 0.4-0.5 s instead
// of 1.4 s (BenchmarkEpisode20Steps, quiet machine, 2026-12-03). extraEnv comes after, so
// a test can turn it back on.
var testEnv = []string{"OLLAMA_FLASH_ATTENTION=false"}

// Start starts a private server for t and stops it, with all its runners, at cleanup.
func Start(t testing.TB, extraEnv ...string) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, err := ollama.StartServer(ctx, bin, dir, append(slices.Clone(testEnv), extraEnv...)...)
	if err != nil {
		t.Fatalf("starting ollama: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("ollama server log (tail):\n%s", s.LogTail(4000))
		}
		// Nothing of the server may survive it: its process group must be empty.
		if left := procgroup.Members(s.Pgid()); len(left) > 0 {
			t.Errorf("ollama processes %v still alive after Stop", left)
		}
	})
	return &Server{Server: s, t: t}
}

// Stop stops a server the test started for itself. The shared server outlives every
// test, so stopping it is refused (the test fails and the server runs on).
func (s *Server) Stop() {
	s.t.Helper()
	if s.shared {
		s.t.Error("a test may not stop the shared ollama server: use ollamatest.Start for a server of its own")
		return
	}
	s.Server.Stop()
}

// Create registers m under name.
func (s *Server) Create(name string, m *modelgen.Model) {
	s.t.Helper()
	s.claim(name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := ollama.Create(ctx, s.Client, ollama.CreateRequest{
		Name: name, GGUF: m.Path, Template: m.Template, Renderer: m.Renderer, Parser: m.Parser, Parameters: m.Parameters,
	}, nil)
	if err != nil {
		s.t.Fatalf("creating model %s: %v", name, err)
	}
}

// Scripted writes a scripted model for script and registers it under name.
func (s *Server) Scripted(name string, arch modelgen.Arch, script modelgen.Script) {
	s.t.Helper()
	m, err := modelgen.Scripted(filepath.Join(s.t.TempDir(), safe(name)+".gguf"), arch, script)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Create(name, m)
}

// Random writes a tiny random model and registers it under name.
func (s *Server) Random(name string, arch modelgen.Arch) {
	s.t.Helper()
	m, err := modelgen.Random(filepath.Join(s.t.TempDir(), safe(name)+".gguf"), arch, 1)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Create(name, m)
}

func safe(name string) string { return strings.NewReplacer(":", "_", "/", "_").Replace(name) }

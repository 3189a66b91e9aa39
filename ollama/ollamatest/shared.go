package ollamatest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/frognano/frognano/internal/procgroup"
	"github.com/frognano/frognano/ollama"
)

// sharedEnv lets the shared server keep every model a package's parallel tests use
// loaded at once: Ollama's CPU default is 3, and a fourth model would first wait for one
// to go idle and unload it, and its test would load it again on its next turn. The tiny
// generated models take little memory each.
var sharedEnv = append(slices.Clone(testEnv), "OLLAMA_MAX_LOADED_MODELS=8")

// shared is the test binary's one server for the tests that need no server of their own;
// Main stops it.
var shared struct {
	once sync.Once
	srv  *ollama.Server
	dir  string
	err  error

	mu     sync.Mutex
	owners map[string]string // model name → the test that created it; guarded by mu
}

// inMain is set by Main: without it nothing would stop the shared server.
var inMain atomic.Bool

// Main runs the package's tests, then stops the shared server (if a test started it) and
// checks that none of its processes is left. A package whose tests call [Shared] uses it
// as its TestMain: os.Exit(ollamatest.Main(m)).
func Main(m *testing.M) int {
	inMain.Store(true)
	code := m.Run()
	if s := shared.srv; s != nil {
		s.Stop()
		if left := procgroup.Members(s.Pgid()); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "ollamatest: processes %v of the shared ollama server still alive after Stop\n", left)
			code = 1
		}
		os.RemoveAll(shared.dir)
	}
	return code
}

// Shared returns the package's shared server, started by the first test that asks, bound
// to t: models t creates fail t. Tests share it by giving their models names of their own
// (Create fails a test that takes a name another test created), so they can run in
// parallel. A test that stops its server, needs another environment or counts the
// server's processes uses [Start] instead.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !inMain.Load() {
		t.Fatal("ollamatest.Shared needs the package's TestMain to be os.Exit(ollamatest.Main(m)), which stops the server")
	}
	bin := Binary(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "frognano-ollama-shared-")
		if err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		shared.dir = dir
		shared.srv, shared.err = ollama.StartServer(ctx, bin, dir, sharedEnv...)
	})
	if shared.err != nil {
		t.Fatalf("starting the shared ollama server: %v", shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared ollama server log (tail, all tests):\n%s", shared.srv.LogTail(4000))
		}
	})
	return &Server{Server: shared.srv, t: t, shared: true}
}

// claim records that s's test creates the model name on the shared server, failing the
// test if another test took the name: its model would be replaced under that test.
func (s *Server) claim(name string) {
	s.t.Helper()
	if !s.shared {
		return
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.owners == nil {
		shared.owners = map[string]string{}
	}
	if owner, ok := shared.owners[name]; ok && owner != s.t.Name() {
		s.t.Fatalf("model %q is already %s's on the shared ollama server: give this test's model a name of its own", name, owner)
	}
	shared.owners[name] = s.t.Name()
}

// For returns s bound to another test (t's subtests, or a test's own stand-in).
func (s *Server) For(t testing.TB) *Server {
	return &Server{Server: s.Server, t: t, shared: s.shared}
}

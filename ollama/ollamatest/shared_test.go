package ollamatest_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

func TestMain(m *testing.M) { os.Exit(ollamatest.Main(m)) }

// failures is a test that records its failures instead of failing the real one; Fatal
// ends the goroutine it runs on, as in the testing package.
type failures struct {
	testing.TB
	name   string
	errors []string
}

func (f *failures) Name() string { return f.name }
func (f *failures) Helper()      {}
func (f *failures) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *failures) Error(args ...any) { f.errors = append(f.errors, fmt.Sprint(args...)) }
func (f *failures) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// as runs fn with s bound to a recording test named name and returns what it failed with.
func as(t *testing.T, s *ollamatest.Server, name string, fn func(*ollamatest.Server)) []string {
	f := &failures{TB: t, name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(s.For(f))
	}()
	<-done
	return f.errors
}

// TestSharedServer: every test of the package gets the same server; a model name belongs
// to the test that created it; nobody may stop the server under the others.
func TestSharedServer(t *testing.T) {
	srv := ollamatest.Shared(t)
	srv.Scripted("shared-owner", modelgen.Llama, modelgen.Script{Turns: []modelgen.Turn{{Content: "mine"}}})
	t.Run("same server", func(t *testing.T) {
		if again := ollamatest.Shared(t); again.Host != srv.Host {
			t.Errorf("a second test got the server at %s, the first %s", again.Host, srv.Host)
		}
	})
	errs := as(t, srv, "TestOther", func(s *ollamatest.Server) {
		s.Scripted("shared-owner", modelgen.Llama, modelgen.Script{Turns: []modelgen.Turn{{Content: "theirs"}}})
	})
	if len(errs) != 1 || !strings.Contains(errs[0], `model "shared-owner" is already TestSharedServer's`) {
		t.Errorf("taking another test's model name: %q", errs)
	}
	if errs := as(t, srv, t.Name(), func(s *ollamatest.Server) {
		s.Scripted("shared-owner", modelgen.Llama, modelgen.Script{Turns: []modelgen.Turn{{Content: "mine again"}}})
	}); len(errs) != 0 {
		t.Errorf("a test may replace its own model: %q", errs)
	}
	errs = as(t, srv, "TestStopper", func(s *ollamatest.Server) { s.Stop() })
	if len(errs) != 1 || !strings.Contains(errs[0], "may not stop the shared ollama server") {
		t.Errorf("stopping the shared server: %q", errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Client.Heartbeat(ctx); err != nil {
		t.Errorf("the shared server stopped: %v", err)
	}
}

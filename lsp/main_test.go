package lsp

import (
	"os"
	"sync"
	"testing"

	"github.com/frognano/frognano/internal/frognanotest"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestMain gives the package's tests one Ollama server (ollamatest.Shared) and one
// frognano binary (frognanoBinary) instead of one each, and removes both at the end.
func TestMain(m *testing.M) {
	code := ollamatest.Main(m)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the frognano binary the tests that run `frognano lsp` as a process share: a
// build takes seconds, and they would otherwise each make the same one.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// frognanoBinary builds frognano once for the package, with the test binary's build tags
// (frognanoTags), and returns its path.
func frognanoBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "frognano-lsp-test-"); built.err == nil {
			built.bin, built.err = frognanotest.BuildIn(built.dir, frognanoTags)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

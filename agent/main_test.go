package agent_test

import (
	"os"
	"testing"

	"github.com/frognano/frognano/internal/gocache"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestMain lets the test binary be the GOCACHEPROG helper of runs with Options.GoCache:
// it is their os.Executable, as frognano is outside tests. The tests share one Ollama
// server (ollamatest.Shared), which Main stops at the end.
func TestMain(m *testing.M) {
	gocache.HelperMain()
	os.Exit(ollamatest.Main(m))
}

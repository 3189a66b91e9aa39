package rollout_test

import (
	"os"
	"testing"

	"github.com/frognano/frognano/internal/gocache"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestMain lets the test binary be the GOCACHEPROG helper of episodes run with the trusted
// Go build cache (it is their os.Executable, as frognano is outside tests); the runner's
// tests share one Ollama server (ollamatest.Shared), which Main stops at the end.
func TestMain(m *testing.M) {
	gocache.HelperMain()
	os.Exit(ollamatest.Main(m))
}

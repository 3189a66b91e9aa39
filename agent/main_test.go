package agent_test

import (
	"os"
	"testing"

	"github.com/frognano/frognano/internal/gocache"
)

// TestMain lets the test binary be the GOCACHEPROG helper of runs with Options.GoCache:
// it is their os.Executable, as frognano is outside tests.
func TestMain(m *testing.M) {
	gocache.HelperMain()
	os.Exit(m.Run())
}

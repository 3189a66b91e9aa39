package env

import (
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
)

// The suite's outcomes decide which tasks exist: they never come from the build cache the
// agent's episodes write (a command there could plant a package whose tests always pass).
func TestTaskRunsDoNotShareTheEpisodesCache(t *testing.T) {
	t.Setenv("FROGNANO_SANDBOX_GOCACHE", "")
	repo := t.TempDir()
	got := Options{}.goCache(repo)
	if got == sandbox.GoCacheFor(repo) || !strings.Contains(got, "tasks-") {
		t.Errorf("task runs use %s; the episodes use %s", got, sandbox.GoCacheFor(repo))
	}
	if (Options{}).goCache(t.TempDir()) == got {
		t.Error("two repositories share a cache")
	}
}

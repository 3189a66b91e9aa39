// Package frognanotest builds the frognano binary for tests that drive it the way users
// and editors do: as a separate process.
package frognanotest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build compiles cmd/frognano from the module the test runs in into t's temp folder and
// returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		t.Fatalf("finding the module root: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "frognano")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/frognano")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building frognano: %v\n%s", err, out)
	}
	return bin
}

// Package frognanotest builds the frognano binary for tests that drive it the way users
// and editors do: as a separate process.
package frognanotest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build compiles cmd/frognano from the module the test runs in into t's temp folder and
// returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	bin, err := BuildIn(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildIn compiles cmd/frognano from the module the test runs in, with the build tags
// given, into dir and returns the binary's path: for a binary that several tests share
// (their TestMain removes dir).
func BuildIn(dir string, tags []string) (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		return "", fmt.Errorf("finding the module root: %v", err)
	}
	bin := filepath.Join(dir, "frognano")
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, "./cmd/frognano")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building frognano: %v\n%s", err, out)
	}
	return bin, nil
}

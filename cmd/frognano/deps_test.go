package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoModelWriterLinked: frognano is what editors start for every session, so it links
// nothing it does not need to serve. The scripted-model writer (ollama/modelgen) and
// Ollama's ggml packages it brings (whose package initialisation stats the filesystem,
// and which made `frognano lsp` start slower and hold more memory) belong to the
// frognano-modelgen helper the demo runs.
func TestNoModelWriterLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "github.com/frognano/frognano/ollama/modelgen",
			"github.com/ollama/ollama/fs/ggml",
			"github.com/ollama/ollama/ml":
			t.Errorf("frognano links %s (see cmd/frognano-modelgen)", pkg)
		}
	}
}

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

// TestNoPlotLibraryLinked: the report's plots are drawn by internal/pngplot. gonum's plot
// package brought its PDF, SVG and LaTeX backends and their fonts: 8 MB of binary, about
// 1 ms of package initialisation and 2 MB more resident in every idle `frognano lsp`
// (see internal/pngplot).
func TestNoPlotLibraryLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"gonum.org/v1/plot", "codeberg.org/go-latex/", "codeberg.org/go-pdf/",
			"codeberg.org/go-fonts/", "github.com/ajstarks/svgo", "git.sr.ht/~sbinet/gg", "github.com/golang/freetype"} {
			if pkg == strings.TrimSuffix(banned, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(banned, "/")+"/") {
				t.Errorf("frognano links %s (draw plots with internal/pngplot)", pkg)
			}
		}
	}
}

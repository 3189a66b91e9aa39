package ollama

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBuildOf(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ollama")
	os.WriteFile(bin, nil, 0o755)
	if _, ok := BuildOf(bin); ok {
		t.Error("a binary without a record has a build")
	}
	os.WriteFile(filepath.Join(dir, "ollama.build"), []byte("key=abc\ncflags=-O3 -march=native\ncpu=Xeon\nfeatures=avx2 fma\n"), 0o644)
	b, ok := BuildOf(bin)
	if !ok || !b.Native() || b.CPU != "Xeon" || b.Features != "avx2 fma" {
		t.Errorf("BuildOf = %+v, %v", b, ok)
	}
}

// The Ollama that the tests and the demo run is built for this machine's instruction set
// (scripts/build-ollama.sh, which setup.sh runs): a baseline build runs every model 5-11x
// slower. Under CI the build must be there.
func TestCachedBuildIsNative(t *testing.T) {
	bin := filepath.Join(CacheDir(), "ollama-v"+Version, "ollama")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Ollama build in the cache under CI: %v", err)
		}
		t.Skip("no Ollama built by scripts/build-ollama.sh here")
	}
	b, ok := BuildOf(bin)
	if !ok {
		t.Fatalf("%s has no build record: an old baseline build that scripts/build-ollama.sh should have replaced", bin)
	}
	if !b.Native() {
		t.Errorf("%s was built with %q, not for this machine's instruction set", bin, b.CFlags)
	}
}

package ollama

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// Build is how scripts/build-ollama.sh built a cached Ollama: the C flags ggml was compiled
// with, and the processor and instruction-set features they were chosen for.
type Build struct {
	Key, CFlags, CPU, Features string
}

// Native reports whether ggml was compiled for the machine's own instruction set.
func (b Build) Native() bool { return strings.Contains(b.CFlags, "-march=native") }

// BuildOf reads the record scripts/build-ollama.sh writes beside the binary it built
// (ollama.build); false when bin was built otherwise (an official release picks its CPU code
// at run time, so it needs none).
func BuildOf(bin string) (Build, bool) {
	f, err := os.Open(filepath.Join(filepath.Dir(bin), "ollama.build"))
	if err != nil {
		return Build{}, false
	}
	defer f.Close()
	var b Build
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), "=")
		switch k {
		case "key":
			b.Key = v
		case "cflags":
			b.CFlags = v
		case "cpu":
			b.CPU = v
		case "features":
			b.Features = v
		}
	}
	return b, b.Key != ""
}

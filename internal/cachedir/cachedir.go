// Package cachedir says where frognano keeps its caches (the Ollama build, models,
// trajectories, the LSP log, the sandbox's Go build cache). It stands apart so that
// packages which must not import each other (ollama, agent/sandbox) agree on it.
package cachedir

import (
	"os"
	"path/filepath"
)

// Dir is $FROGNANO_CACHE, else $XDG_CACHE_HOME/frognano, else ~/.cache/frognano.
func Dir() string {
	if d := os.Getenv("FROGNANO_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "frognano")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "frognano-cache")
	}
	return filepath.Join(home, ".cache", "frognano")
}

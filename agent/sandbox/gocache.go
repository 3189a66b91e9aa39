package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/frognano/frognano/internal/cachedir"
)

// GoCacheFor is the Go build cache for the commands run on copies of repo (the user's
// folder the copy is made from, not the copy): pass it as Options.GoCache. Every command can
// write its Go build cache, and go trusts what it finds there (compiled packages, cached test
// results), so a cache shared by all repositories would let one repository's commands plant
// results that another's runs, and their rewards, then trust. Each repository gets its own,
// keyed by a hash of its absolute real path, under sandbox-go in frognano's cache folder;
// runs of the same repository share it, which keeps their builds fast.
func GoCacheFor(repo string) string {
	p, err := filepath.Abs(repo)
	if err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
	} else {
		p = repo
	}
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(cachedir.Dir(), "sandbox-go", hex.EncodeToString(sum[:12]))
}

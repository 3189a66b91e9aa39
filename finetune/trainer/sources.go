package trainer

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/frognano/frognano/internal/cachedir"
)

// The Python package and its lock file travel inside the frognano binary, so that an
// installed frognano needs no checkout: Start writes the package to the cache, once per
// content, and setup installs the embedded lock.
//
//go:embed frognano_trainer/*.py requirements.lock
var sources embed.FS

// Lock returns the embedded requirements.lock.
func Lock() []byte {
	b, err := sources.ReadFile("requirements.lock")
	if err != nil {
		panic(err) // embedded at build time
	}
	return b
}

// LockHash is the sha256 of the lock file: the stamp that makes setup idempotent.
func LockHash() string {
	h := sha256.Sum256(Lock())
	return hex.EncodeToString(h[:])
}

// VenvDir is the trainer's private virtual environment: <cache>/trainer-venv.
func VenvDir() string { return filepath.Join(cachedir.Dir(), "trainer-venv") }

// Python is the interpreter that runs the trainer: $FROGNANO_TRAINER_PYTHON when set (an
// environment of your own, e.g. a GPU machine's preinstalled torch), else the venv's.
func Python() string {
	if p := os.Getenv("FROGNANO_TRAINER_PYTHON"); p != "" {
		return p
	}
	return filepath.Join(VenvDir(), "bin", "python")
}

// sourceDir writes the embedded package to <cache>/trainer-src/<hash> unless it is there
// already, and returns that folder (the PYTHONPATH of the trainer). A folder named by its
// content's hash is never rewritten, so concurrent trainers of different versions coexist.
func sourceDir() (string, error) {
	h := sha256.New()
	var files []string
	fs.WalkDir(sources, "frognano_trainer", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	for _, f := range files {
		b, _ := sources.ReadFile(f)
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	dir := filepath.Join(cachedir.Dir(), "trainer-src", hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "frognano_trainer")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Mkdir(filepath.Join(tmp, "frognano_trainer"), 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		b, _ := sources.ReadFile(f)
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return "", err
		}
	}
	// Rename is atomic; losing the race to another process that wrote the same content
	// is fine.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "frognano_trainer")); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

// Package atomicfile writes a file so that readers see either the old content or the new,
// never half of it: the finetune caches and task store are read by other processes (the
// training loop) while they are written, and a crash must not leave a torn record.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces p with content through a temporary file in the same folder, synced, then
// renamed over p (a link at p is replaced, never followed). The folder is made if missing.
func Write(p string, content []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(content); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

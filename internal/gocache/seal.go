package gocache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The trusted layer is built by a sandboxed command, so what Build renames into place was
// written by the user commands run as (nobody, when frognano is root: the sandbox adopts
// its writable folders), and stays theirs unless frognano takes it back. Bubblewrap binds
// it read-only, but in the modes that do not confine writes (unshare), any later command of
// any episode, running as that same nobody, could rewrite it. seal makes it frognano's
// own and read-only: where commands run as another user (frognano root, commands nobody),
// the file modes refuse their writes whatever the mode. Where they run as frognano's own
// user, only a confining sandbox protects it (Isolation.WriteConfined).

// seal makes the layer at dir frognano's: it keeps regular files and folders only (a link
// or a device a command left there is removed, a file with other names elsewhere is
// copied), and gives them to the effective user, files read-only (0444), folders 0755:
// what protects them from another user is that they are not theirs, and frognano (or a
// test run as a user) can still remove them.
func seal(dir string) error {
	uid, gid := os.Geteuid(), os.Getegid()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			if err := syscall.Lchown(p, uid, gid); err != nil {
				return err
			}
			return os.Chmod(p, 0o755)
		case syscall.S_IFREG:
			if st.Nlink > 1 {
				// A hard link a command made to a file elsewhere: chowning it would take
				// that file too, and the layer would share what the other name may change.
				return copyOver(p)
			}
			if err := syscall.Lchown(p, uid, gid); err != nil {
				return err
			}
			return os.Chmod(p, 0o444)
		default:
			return os.Remove(p)
		}
	})
	if err != nil {
		return fmt.Errorf("gocache: sealing the trusted layer: %w", err)
	}
	return nil
}

// copyOver replaces the file p by a new copy of it, read-only and ours.
func copyOver(p string) error {
	in, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(p), ".seal-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(out.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(out.Name(), p)
	}
	if err != nil {
		os.Remove(out.Name())
	}
	return err
}

// errUnsealed: a trusted layer that seal did not make (Build of an older frognano, or a
// folder someone else put at its path).
var errUnsealed = errors.New("not sealed")

// sealed checks the top of the layer at dir: a folder (not a link) of the effective user
// that no one else may write. Below it, seal made everything ours and not writable by
// others, so no other user can have changed it since. (Its folders are chowned before
// their entries are walked, so the top being ours says the walk began; Build renames the
// layer into place only after seal returned.)
func sealed(dir string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("%w: %s is not a folder", errUnsealed, dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%w: %s belongs to user %d, not to frognano's %d", errUnsealed, dir, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%w: %s is writable (mode %o)", errUnsealed, dir, st.Mode&0o777)
	}
	return nil
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// When frognano runs as root, commands do not: root reads every file whatever its mode, so
// credentials outside both tables (/etc/wireguard, /var/lib/tailscale, a root-owned 0600 file
// anywhere) would be readable. Under bubblewrap they run as nobody, switched to by setpriv
// once the sandbox is set up (bwrap keeps only the capabilities to switch, and
// no_new_privs stops setuid programs from giving any back). What they must write (the copy,
// the private HOME, the writable caches) is then given to nobody (Adopt).

// nobody is who commands run as when frognano is root: the kernel's overflow user, which
// owns nothing that matters. Its group is nogroup.
const nobody = 65534

// setprivArgs switch to nobody with no capabilities left and no supplementary groups.
var setprivArgs = []string{"setpriv", fmt.Sprintf("--reuid=%d", nobody), fmt.Sprintf("--regid=%d", nobody),
	"--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"}

// Adopt gives path, and everything under it when it is a directory, to the user commands run
// as, so that they may change it: only needed when frognano runs as root (commands then run
// as nobody), a no-op otherwise. Run adopts each Cmd.Dir the first time it sees it; call
// Adopt after writing files into the copy from outside (the agent's Write and Edit tools),
// since a root-owned file there is read-only to the commands. Adopting the copy before its
// base commit keeps git's index in step (git records owners, and a chown changes ctime).
//
// Only entries not owned yet are changed; symlinks are never followed (the walk holds each
// directory open, so a command that swaps a directory for a link cannot redirect it), and a
// file with several hard links keeps its owner: the other links lie outside, in the user's
// repository perhaps (git clone --local links objects).
func (r *Runner) Adopt(path string) error {
	if r.iso.UID != nobody || os.Geteuid() != 0 {
		return nil
	}
	if err := searchable(path, r.hidden); err != nil {
		return err
	}
	if err := adopt(path, nobody, nobody); err != nil {
		return fmt.Errorf("sandbox: adopt %s: %w", path, err)
	}
	return nil
}

// adopt chowns path and what it holds to uid:gid (see Adopt).
func adopt(path string, uid, gid int) error {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		if (int(st.Uid) != uid || int(st.Gid) != gid) && (st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink == 1) {
			return syscall.Lchown(path, uid, gid)
		}
		return nil
	}
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := adoptIn(fd, uid, gid); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		return syscall.Fchown(fd, uid, gid) // last: a top already adopted means all of it was
	}
	return nil
}

// adoptIn chowns what the open directory dirfd holds, recursively, never through a link.
func adoptIn(dirfd, uid, gid int) error {
	dup, err := syscall.Dup(dirfd)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), "")
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := fstatat(dirfd, name, &st); err != nil {
			if errors.Is(err, syscall.ENOENT) {
				continue // removed meanwhile
			}
			return err
		}
		if (int(st.Uid) != uid || int(st.Gid) != gid) && (st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink == 1) {
			if err := unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, syscall.ENOENT) {
				return err
			}
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			continue
		}
		sub, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
				continue // replaced meanwhile: not followed
			}
			return err
		}
		err = adoptIn(sub, uid, gid)
		syscall.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// searchable checks that nobody can reach dir: each folder above it must be searchable by
// others, except those bubblewrap makes afresh (in the private /tmp and the hidden roots),
// which are.
func searchable(dir string, hidden []string) error {
	fresh := append([]string{"/tmp"}, hidden...)
	for d := filepath.Dir(dir); d != "/" && !containedBy(d, fresh, false); d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox: commands run as nobody and cannot reach %s: %s is not searchable by others (chmod o+x %s, or use a folder under /tmp)", dir, d, d)
		}
	}
	return nil
}

// ownedBy reports whether uid owns the file st describes (its group is the same number).
func ownedBy(st os.FileInfo, uid int) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(s.Uid) == uid && int(s.Gid) == uid
}

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	return unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// How the secrets (secrets.go) are hidden in each mode: mounts in the command's own mount
// namespace, made before it starts and which it lacks the capabilities to undo. Nothing
// changes outside the sandbox.

// bwrapPrivate are mounted fresh by the bwrap prefix: nothing of the machine's is under them unless
// a writable bind brings it back.
var bwrapPrivate = []string{"/tmp", "/dev", "/proc"}

// bind is one mount of bwrap mode that brings something back: the machine's src (a directory,
// or a file when read-only) at path, writable or read-only, or a symlink to src when link.
// try skips it when src is gone.
type bind struct {
	path, src     string
	ro, link, try bool
}

// rw is a writable directory bound at its own path.
func rw(p string) bind { return bind{path: p, src: p} }

// same reports whether b shows the machine's own path read-only, as `--ro-bind / /` does.
func (b *bind) same() bool { return b != nil && b.ro && !b.link && b.src == b.path }

// op is one mount of bwrapMounts: a mask, or a bind when bind is set.
type op struct {
	mask
	bind *bind
}

// bwrapMounts are bwrap's arguments for the binds and the masks: an empty tmpfs over a
// directory, the empty file empty over anything else. bwrap mounts in order, so each mount
// must come after every mount above it: a mask inside a bound directory after that
// directory's bind (which brings the machine's files back), a bind inside a masked directory
// after the mask (bwrap then makes the mount point in the empty tmpfs). Sorting by depth does
// both; at equal depth binds come first, so that a mask on a read-only bind hides it (a
// PATH entry's installation may be a masked folder: the entry itself is bound again below
// the mask). The masked directories become read-only last, once the mount points in them
// exist. A mask gives way to a writable directory at its path, and a read-only bind to a
// writable one. A mask inside another mask, or in bwrapPrivate and not in a bound directory,
// has nothing to hide; a read-only bind of a path as it is, inside another such bind, shows
// nothing new. readOnlyDirs false leaves the empty tmpfs writable by root only, for commands
// that run as nobody.
func bwrapMounts(binds []bind, masks []mask, empty string, readOnlyDirs bool) []string {
	ops := make([]op, 0, len(binds)+len(masks))
	var paths, writable []string
	for _, b := range binds {
		if !b.ro && !b.link {
			writable = append(writable, b.path)
		}
	}
	for i, b := range binds {
		if (b.ro || b.link) && containedBy(b.path, writable, true) {
			continue
		}
		paths = append(paths, b.path)
		ops = append(ops, op{mask{path: b.path, dir: true}, &binds[i]})
	}
	for _, m := range masks {
		if !containedBy(m.path, writable, true) && (containedBy(m.path, paths, false) || !containedBy(m.path, bwrapPrivate, false)) {
			ops = append(ops, op{m, nil})
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return depth(ops[i].path) < depth(ops[j].path) })
	var args, readOnly []string
	var kept []op
	created := map[string]bool{}
	for _, o := range ops {
		var parent *op // the innermost mount above it, the later one at equal depth
		for i := range kept {
			if within(o.path, kept[i].path) && (parent == nil || depth(kept[i].path) >= depth(parent.path)) {
				parent = &kept[i]
			}
		}
		switch {
		case o.bind == nil && parent != nil && parent.bind == nil:
			continue // hidden already
		case o.bind.same() && parent != nil && parent.bind.same():
			continue // shown already
		}
		kept = append(kept, o)
		if o.bind != nil {
			args = append(args, mountPoints(o.path, parent, created)...)
		}
		switch {
		case o.bind != nil && o.bind.link:
			args = append(args, "--symlink", o.bind.src, o.path)
		case o.bind != nil && o.bind.ro && o.bind.try:
			args = append(args, "--ro-bind-try", o.bind.src, o.path)
		case o.bind != nil && o.bind.ro:
			args = append(args, "--ro-bind", o.bind.src, o.path)
		case o.bind != nil:
			args = append(args, "--bind", o.bind.src, o.path)
		case o.dir:
			args = append(args, "--tmpfs", o.path)
			if readOnlyDirs {
				readOnly = append(readOnly, "--remount-ro", o.path)
			}
		default:
			args = append(args, "--ro-bind", empty, o.path)
		}
	}
	return append(args, readOnly...)
}

// mountPoints makes the directories between an empty tmpfs (parent's, else the private /tmp)
// and a bind's path, which bwrap would otherwise make itself with mode 0700: searchable by
// all, so that commands running as nobody reach the binds. created says which are made.
func mountPoints(path string, parent *op, created map[string]bool) []string {
	root := "/tmp"
	if parent != nil {
		if parent.bind != nil {
			return nil // inside a bind: they exist
		}
		root = parent.path
	}
	var dirs []string
	for d := filepath.Dir(path); d != root && within(d, root); d = filepath.Dir(d) {
		if !created[d] {
			created[d] = true
			dirs = append(dirs, d)
		}
	}
	var args []string
	for i := len(dirs) - 1; i >= 0; i-- {
		args = append(args, "--perms", "0755", "--dir", dirs[i])
	}
	return args
}

// unshareInit is the PID 1 shell of unshare mode. Its arguments: the empty file, then pairs
// of "d" or "f" and a path to hide, then "--" and the command. It stays in Run's process
// group whatever the command does (setsid), so that an empty group means an empty
// namespace. A path gone since it was found has nothing left to hide; a mount that fails
// stops the command rather than run it with the secret in view.
//
// The empty file itself is first made read-only in the namespace, when there is anything to
// hide: it lives in the real /tmp and belongs to the user the command runs as, who could
// otherwise chmod it and write what every masked path then shows.
const unshareInit = `empty=$1; shift
if [ "$1" != -- ]; then
	mount -n --bind -o ro "$empty" "$empty" || { echo "sandbox: cannot protect $empty" >&2; exit 125; }
fi
while [ "$1" != -- ]; do
	if [ -e "$2" ]; then
		case $1 in
		d) mount -n -t tmpfs -o ro,mode=755 frognano-masked "$2" ;;
		*) mount -n --bind -o ro "$empty" "$2" ;;
		esac || { echo "sandbox: cannot hide $2" >&2; exit 125; }
	fi
	shift 2
done
shift
"$@"; exit $?`

// dropCaps runs the command without capabilities, which unshare mode otherwise leaves it
// (as root, or as root of its user namespace): with them it could unmount the masks. An
// empty bounding set also keeps root from getting any back at exec.
var dropCaps = []string{"setpriv", "--bounding-set=-all", "--inh-caps=-all"}

// unshareMasks are unshareInit's pairs for masks. In unshare mode nothing is bound back over
// a mask, so one holding a directory the command needs (the copy, the private home, a
// writable directory) is replaced by masks of what it holds but the way to that directory
// (siblings), as far as it can be listed; one inside another is left out.
func unshareMasks(need []string, masks []mask) []string {
	sorted := aroundNeeded(need, masks)
	sort.SliceStable(sorted, func(i, j int) bool { return depth(sorted[i].path) < depth(sorted[j].path) })
	var args, done []string
	for _, m := range sorted {
		if holds(m.path, need) || containedBy(m.path, done, false) {
			continue
		}
		kind := "f"
		if m.dir {
			kind = "d"
			done = append(done, m.path)
		}
		args = append(args, kind, m.path)
	}
	return args
}

// aroundNeeded is masks with each directory that holds a needed path replaced by masks
// of its entries, recursively, but the needed paths and links (a mount on a link would
// land on its target). Before it, frognano's cache folder stayed visible in unshare mode
// (the repository's Go build cache lives in it), and with it the task store.
func aroundNeeded(need []string, masks []mask) []mask {
	var out []mask
	for _, m := range masks {
		if !m.dir || !holds(m.path, need) {
			out = append(out, m)
			continue
		}
		if containedBy(m.path, need, true) {
			continue // needed itself
		}
		ents, err := os.ReadDir(m.path)
		if err != nil {
			continue // as before: it stays visible
		}
		var inner []mask
		for _, e := range ents {
			if e.Type()&os.ModeSymlink != 0 {
				continue
			}
			inner = append(inner, mask{path: filepath.Join(m.path, e.Name()), dir: e.IsDir()})
		}
		out = append(out, aroundNeeded(need, inner)...)
	}
	return out
}

// probeMasks checks that unshare mode can hide a directory and then drop capabilities.
func probeMasks(ctx context.Context, prefix []string) error {
	for _, tool := range []string{"mount", dropCaps[0]} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s (util-linux) is not installed", tool)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	argv := append(append(prefix[:len(prefix):len(prefix)], "/bin/sh", "-c", unshareInit, "sandbox-init", "/dev/null", "d", "/tmp", "--"), dropCaps...)
	argv = append(argv, "/bin/sh", "-c", "! umount /tmp 2>/dev/null")
	probe := exec.CommandContext(ctx, argv[0], argv[1:]...)
	probe.Dir = "/"
	if out, err := probe.CombinedOutput(); err != nil {
		return fmt.Errorf("hiding them does not work here: %s", firstLine(string(out), err.Error()))
	}
	return nil
}

// within reports whether p is dir or under it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// containedBy reports whether p is within one of dirs (equal to one, if exact).
func containedBy(p string, dirs []string, exact bool) bool {
	for _, d := range dirs {
		if (exact && p == d) || (!exact && within(p, d)) {
			return true
		}
	}
	return false
}

// holds reports whether dir is one of paths or above one.
func holds(dir string, paths []string) bool {
	for _, p := range paths {
		if within(p, dir) {
			return true
		}
	}
	return false
}

func depth(p string) int { return strings.Count(p, "/") }

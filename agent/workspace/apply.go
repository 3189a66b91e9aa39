package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Apply writes changes into dir (normally the user's folder), but only if every file there
// still has the base content the agent saw; otherwise nothing is written and the error
// names the files that moved on. Used by `frognano agent --apply`.
//
// The changes are the model's work and are checked as hostile input before anything is
// written: every path must be a plain relative path outside any .git folder; nothing is
// written through a symbolic link or a file standing where a folder is needed in dir (the
// link would carry the write elsewhere), unless the same change set removes it first; and a
// symbolic link is made only when its target stays inside dir (see CheckLink). A committed
// link is compared as a link, by its target. What it replaces is moved aside first, and put
// back if a step fails: all or nothing.
func Apply(dir string, c *Changes) (err error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := CheckApply(root, c); err != nil {
		return err
	}
	// All or nothing: what is removed or replaced is first moved aside into a folder of
	// frognano's at the root (a rename, no copy), and put back if any step fails.
	tx, err := newApplyTx(root)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rerr := tx.rollback(); rerr != nil {
				err = fmt.Errorf("%w; and restoring your files failed: %v (what was moved aside is in %s)", err, rerr, tx.aside)
				return
			}
		}
		tx.finish()
	}()
	// Removals first: a change may put a folder where a file or link was, or a link where a
	// folder was.
	for _, f := range c.Files {
		switch f.Kind {
		case Deleted:
			err = tx.stash(f.Path)
		case Renamed:
			err = tx.stash(f.OldPath)
		}
		if err != nil {
			return fmt.Errorf("applying %s: %w", f.Path, err)
		}
	}
	for _, f := range c.Files {
		if f.Kind == Deleted {
			continue
		}
		if err := tx.write(f); err != nil {
			return fmt.Errorf("applying %s: %w", f.Path, err)
		}
	}
	return nil
}

// failWrite, when set (by tests), fails the write of a path: a disk that fills up halfway.
var failWrite func(rel string) error

// applyTx is one Apply in progress: what it moved aside and what it made, to undo.
type applyTx struct {
	root, aside string
	moved       [][2]string // (place aside, original), in order
	made        []string    // files and folders made, in order
}

func newApplyTx(root string) (*applyTx, error) {
	aside, err := os.MkdirTemp(root, ".frognano-apply-")
	if err != nil {
		return nil, err
	}
	return &applyTx{root: root, aside: aside}, nil
}

// stash moves rel aside if it exists; a folder that holds nothing but empty folders (its
// files were stashed before) goes too.
func (tx *applyTx) stash(rel string) error {
	p := filepath.Join(tx.root, filepath.FromSlash(rel))
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return tx.removeEmptyDirs(p)
	}
	dst := filepath.Join(tx.aside, strconv.Itoa(len(tx.moved)))
	if err := os.Rename(p, dst); err != nil {
		return err
	}
	tx.moved = append(tx.moved, [2]string{dst, p})
	return nil
}

// removeEmptyDirs removes the folder p if it holds only empty folders, to be remade on
// rollback; anything else in it fails (CheckApply refuses that case).
func (tx *applyTx) removeEmptyDirs(p string) error {
	var dirs []string
	err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return fmt.Errorf("%s is in the way", q)
		}
		dirs = append(dirs, q)
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil {
			return err
		}
		tx.moved = append(tx.moved, [2]string{"", dirs[i]})
	}
	return nil
}

// write makes one created, modified or renamed entry: its folders one by one without
// following links, what was there moved aside, then the new content renamed into place.
func (tx *applyTx) write(f FileChange) error {
	parts := strings.Split(f.Path, "/")
	dir := tx.root
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err == nil {
			tx.made = append(tx.made, dir)
		} else if !errors.Is(err, fs.ErrExist) {
			return err
		}
		if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("%s is not a folder", dir)
		}
	}
	if failWrite != nil {
		if err := failWrite(f.Path); err != nil {
			return err
		}
	}
	p := filepath.Join(tx.root, filepath.FromSlash(f.Path))
	mode := fileMode(p, f.Mode)
	if err := tx.stash(f.Path); err != nil {
		return err
	}
	var err error
	if f.IsLink() {
		err = linkAtomic(p, string(f.Content))
	} else {
		err = writeAtomic(p, f.Content, mode)
	}
	if err == nil {
		tx.made = append(tx.made, p)
	}
	return err
}

// rollback removes what was made and puts back what was moved aside, newest first.
func (tx *applyTx) rollback() error {
	var errs []error
	for i := len(tx.made) - 1; i >= 0; i-- {
		if err := os.Remove(tx.made[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for i := len(tx.moved) - 1; i >= 0; i-- {
		aside, orig := tx.moved[i][0], tx.moved[i][1]
		var err error
		if aside == "" {
			err = os.Mkdir(orig, 0o755)
		} else {
			err = os.Rename(aside, orig)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.Remove(tx.aside)
}

// finish drops what was moved aside.
func (tx *applyTx) finish() { os.RemoveAll(tx.aside) }

// CheckApply reports, without writing anything, why c cannot be applied to the folder root
// (absolute): paths that are not plain, links pointing outside, something in the way, or
// files that changed since the agent started. Nil means Apply would go ahead.
func CheckApply(root string, c *Changes) error {
	removed := map[string]bool{}
	for _, f := range c.Files {
		switch f.Kind {
		case Deleted:
			removed[f.Path] = true
		case Renamed:
			removed[f.OldPath] = true
		}
	}
	var refused, conflicts []string
	for _, f := range c.Files {
		for i, p := range []string{f.Path, f.OldPath} {
			if p == "" {
				continue
			}
			// Only a path that is written afresh (created, or a rename's new name) may lead
			// through a link or file the change set removes first; a path that is read,
			// replaced or removed must be there as it is, through real folders: otherwise a
			// forged set could remove "ext/x" through the link "ext" and then "ext".
			fresh := removed
			if i == 1 || f.Kind == Deleted || f.Kind == Modified {
				fresh = nil
			}
			if err := checkRel(p); err != nil {
				refused = append(refused, err.Error())
			} else if err := checkParents(root, p, fresh); err != nil {
				refused = append(refused, err.Error())
			}
		}
		if f.IsLink() {
			if err := CheckLink(root, f.Path, string(f.Content)); err != nil {
				refused = append(refused, err.Error())
			}
		}
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		switch f.Kind {
		case Created:
			if _, err := os.Lstat(p); err == nil && !removed[f.Path] && !emptiedBy(p, f.Path, removed) {
				conflicts = append(conflicts, f.Path+" (now exists)")
			}
			continue
		case Renamed:
			if _, err := os.Lstat(p); err == nil && !removed[f.Path] {
				conflicts = append(conflicts, f.Path+" (rename target now exists)")
			}
			p = filepath.Join(root, filepath.FromSlash(f.OldPath))
		}
		if !sameAsBase(p, f) {
			conflicts = append(conflicts, f.Path+" (changed since the agent started)")
		}
	}
	var msgs []string
	if len(refused) > 0 {
		msgs = append(msgs, "refused: "+strings.Join(refused, "; "))
	}
	if len(conflicts) > 0 {
		msgs = append(msgs, "files changed meanwhile: "+strings.Join(conflicts, ", "))
	}
	if len(msgs) > 0 {
		return errors.New("not applied, " + strings.Join(msgs, "; "))
	}
	return nil
}

// emptiedBy reports whether p (at rel) is a folder whose every file the change set removes:
// the agent replaced a folder by a file or a link. Anything else in it (an ignored build
// output, say) keeps it.
func emptiedBy(p, rel string, removed map[string]bool) bool {
	st, err := os.Lstat(p)
	if err != nil || !st.IsDir() {
		return false
	}
	ok := true
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return err
		}
		if !d.IsDir() {
			r, _ := filepath.Rel(p, q)
			if !removed[rel+"/"+filepath.ToSlash(r)] {
				ok = false
				return filepath.SkipAll
			}
		}
		return nil
	})
	return ok
}

// sameAsBase reports whether p holds f's base: the same link target for a link, the same
// bytes in a regular file otherwise (a link where a file was is a change).
func sameAsBase(p string, f FileChange) bool {
	st, err := os.Lstat(p)
	if err != nil {
		return false
	}
	if f.BaseIsLink() {
		target, err := os.Readlink(p)
		return err == nil && target == string(f.Base)
	}
	if !st.Mode().IsRegular() {
		return false
	}
	cur, err := os.ReadFile(p)
	return err == nil && bytes.Equal(cur, f.Base)
}

// checkRel refuses a path that is not plain: absolute, unclean, leaving through "..", or in
// a .git folder (git itself never records those; a forged change set might).
func checkRel(rel string) error {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == "." {
		return fmt.Errorf("%q is not a plain relative path", rel)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." || strings.EqualFold(part, ".git") {
			return fmt.Errorf("%q leaves the folder or enters a .git folder", rel)
		}
	}
	return nil
}

// checkParents refuses rel when a folder on its way in root is a symbolic link or not a
// folder, unless the change set removes that entry first.
func checkParents(root, rel string, removed map[string]bool) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(prefix)))
		switch {
		case errors.Is(err, fs.ErrNotExist) || removed[prefix]:
			return nil // nothing further down exists either
		case err != nil:
			return err
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %s is a symbolic link in your folder; not writing through it", rel, prefix)
		case !st.IsDir():
			return fmt.Errorf("%s: %s is a file in your folder", rel, prefix)
		}
	}
	return nil
}

// ToolSettings lists the changed files that editors and shells act on without being asked
// (VS Code settings and tasks, other editors' project files, direnv, dev containers): a
// change there can run code the next time the folder is opened, so it deserves a closer
// look than a source file. The CLI and the language server name them before applying.
func (c *Changes) ToolSettings() []string {
	var out []string
	for _, f := range c.Files {
		for _, p := range []string{f.Path, f.OldPath} {
			top, _, _ := strings.Cut(p, "/")
			switch top {
			case ".vscode", ".idea", ".devcontainer", ".zed", ".nvim.lua", ".exrc", ".nvimrc", ".envrc", ".env":
				out = append(out, p)
			}
		}
	}
	return out
}

// CheckPath refuses rel (a path a change names) when it is not a plain relative path, or
// when something on its way in the folder root is a symbolic link or a file: writing there
// would go through the link. For a caller that cannot order removals first (an editor).
func CheckPath(root, rel string) error {
	if err := checkRel(rel); err != nil {
		return err
	}
	return checkParents(root, rel, nil)
}

// CheckLink refuses a symbolic link at rel with target unless the target stays inside the
// folder root: LinkInside, and no part of the target's path in root is itself a link (a
// link of the user's pointing out, say vendor -> /opt/vendor, would carry it out).
func CheckLink(root, rel, target string) error {
	if !LinkInside(rel, target) {
		return fmt.Errorf("%s: a symbolic link to %s, outside the folder", rel, target)
	}
	resolved := path.Join(path.Dir(rel), target)
	parts := strings.Split(resolved, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		if prefix == "." || prefix == "" {
			continue
		}
		st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(prefix)))
		if err != nil {
			return nil // what does not exist cannot lead out
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: a symbolic link to %s, which goes through the link %s in your folder", rel, target, prefix)
		}
	}
	return nil
}

// LinkInside reports whether a symbolic link at rel (a plain relative path) with target
// stays inside the folder: the target is relative, and its ".." come first and climb no
// higher than the link's own folder, whose parents are real folders (checkParents). A ".."
// after a name is refused: it would climb out of whatever that name is, a link included.
func LinkInside(rel, target string) bool {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return false
	}
	depth := strings.Count(rel, "/")
	named := false
	for _, part := range strings.Split(target, "/") {
		switch {
		case part == "" || part == ".":
		case part == "..":
			if named || depth == 0 {
				return false
			}
			depth--
		case strings.EqualFold(part, ".git"):
			return false
		default:
			named = true
		}
	}
	return true
}

// fileMode is the permission for the new content of p: the current one, with the
// executable bits git records (ModeExec or not) set or cleared.
func fileMode(p, mode string) os.FileMode {
	perm := os.FileMode(0o644)
	if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
		perm = st.Mode().Perm()
	}
	if mode == ModeExec {
		if perm&0o111 == 0 {
			perm |= (perm & 0o444) >> 2
		}
	} else {
		perm &^= 0o111
	}
	return perm
}

// writeAtomic replaces p with content through a temporary file and a rename, so a crash
// never leaves a half-written file; a link at p is replaced, never followed.
func writeAtomic(p string, content []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".frognano-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// linkAtomic makes p a symbolic link to target, replacing what is there in one rename.
func linkAtomic(p, target string) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".frognano-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	if err := os.Remove(name); err != nil {
		return err
	}
	if err := os.Symlink(target, name); err != nil {
		return err
	}
	if err := os.Rename(name, p); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

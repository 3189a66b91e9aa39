// Package workspace gives the agent a private copy of the user's folder, confines every
// path the agent names to that copy, and reports what the agent changed as a unified diff
// plus structured file changes tied to the exact base content the agent saw.
//
// Entry point: [Prepare]. The user's folder is only ever read.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Workspace is a private copy under git, with the base committed so changes can be diffed.
type Workspace struct {
	// Root is the copy's absolute path, symlinks resolved.
	Root string
	// Source is the user's folder it was copied from.
	Source string
	// base is the commit holding the copy as the agent first saw it (overlays included); the
	// agent may commit or check out in its copy, so diffs are always taken against this.
	base string
	// gitDir is frognano's own repository of the copy (see privategit.go): beside Root,
	// never inside it, so that nothing the agent runs can configure the git frognano runs.
	gitDir string
	// sealed are the hashes of gitDir's configuration files as frognano wrote them.
	sealed map[string]string
	// gitWaitDelay is the git commands' gitcmd.Repo.WaitDelay (0: the default); tests under
	// -race on a loaded machine give more.
	gitWaitDelay time.Duration
}

// Prepare copies src into dst (which must not exist or be empty), lays overlays (relative
// path → content, e.g. unsaved editor buffers) over it, and commits that as the base.
// The source's .git folders are not copied: the copy gets a repository of its own.
func Prepare(ctx context.Context, src, dst string, overlays map[string][]byte) (*Workspace, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a folder", src)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(dst)
	if err != nil {
		return nil, err
	}
	if within(root, src) || within(src, root) {
		return nil, fmt.Errorf("workspace: the copy %s and the folder %s must not contain each other", root, src)
	}
	if err := copyTree(ctx, src, root); err != nil {
		return nil, fmt.Errorf("workspace: copying %s: %w", src, err)
	}
	w := &Workspace{Root: root, Source: src, gitDir: root + gitDirSuffix}
	if err := w.initGit(ctx); err != nil {
		return nil, err
	}
	if err := w.commitBase(ctx, overlays); err != nil {
		return nil, err
	}
	return w, nil
}

// commitBase lays overlays over the copy and commits everything as the base the agent's
// changes are diffed against.
func (w *Workspace) commitBase(ctx context.Context, overlays map[string][]byte) error {
	for rel, content := range overlays {
		p, err := w.Resolve(rel, true)
		if err != nil {
			return fmt.Errorf("workspace: overlay %s: %w", rel, err)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"add", "-A"},
		{"commit", "-q", "--allow-empty", "--no-verify", "-m", "frognano: base"},
	} {
		if _, err := w.git(ctx, args...); err != nil {
			return err
		}
	}
	head, err := w.git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	w.base = strings.TrimSpace(string(head))
	return w.seedAgentRepo(ctx)
}

// Remove deletes the copy and frognano's repository of it.
func (w *Workspace) Remove() error {
	err := os.RemoveAll(w.Root)
	if gerr := os.RemoveAll(w.gitDir); err == nil {
		err = gerr
	}
	return err
}

// ErrOutside is returned for a path that leaves the private copy.
var ErrOutside = errors.New("path is outside the workspace")

// Resolve maps a path the agent named (relative to the copy, or absolute inside it) to an
// absolute path in the copy. It refuses paths that leave the copy, directly, through "..",
// or through a symlink; forWrite also checks the nearest existing parent, since the file
// itself may not exist yet.
func (w *Workspace) Resolve(p string, forWrite bool) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.Root, p)
	}
	p = filepath.Clean(p)
	if !within(w.Root, p) {
		return "", fmt.Errorf("%s: %w (%s)", p, ErrOutside, w.Root)
	}
	// Follow symlinks in the longest existing prefix; what does not exist yet cannot be a link.
	existing, rest := p, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", err
	}
	if !within(w.Root, real) {
		return "", fmt.Errorf("%s: %w: it leads to %s through a symlink", rel(w.Root, p), ErrOutside, real)
	}
	if rest != "" && !forWrite {
		// Reading something that does not exist: report it plainly.
		return "", fmt.Errorf("%s: %w", rel(w.Root, p), fs.ErrNotExist)
	}
	return filepath.Join(real, rest), nil
}

// Rel is p relative to the copy, for messages and events.
func (w *Workspace) Rel(p string) string { return rel(w.Root, p) }

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// copyTree copies regular files, folders and symlinks (as links) from src to dst,
// skipping .git folders and special files, keeping permission bits.
func copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, r)
		switch {
		case d.IsDir():
			if d.Name() == ".git" && p != src {
				return filepath.SkipDir
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			if d.Name() == ".git" {
				return nil
			}
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if d.Name() == ".git" {
				return nil // a submodule's or worktree's .git file
			}
			return copyFile(p, target)
		}
		return nil // sockets, devices, fifos
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// The source's modification time is kept (as cp -a does) so a later check can tell
	// an unchanged file by its size and time alone (see Warm).
	return os.Chtimes(dst, time.Time{}, st.ModTime())
}

// Hash is the content hash used for base checks: "sha256:" and hex.
func Hash(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

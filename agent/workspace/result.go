package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ChangeKind says what happened to a file.
type ChangeKind string

const (
	Created  ChangeKind = "created"
	Modified ChangeKind = "modified"
	Deleted  ChangeKind = "deleted"
	Renamed  ChangeKind = "renamed"
)

// FileChange is one changed file, relative to the workspace, with the hash of the base
// content the agent started from so the editor side can detect that the user's file moved
// on meanwhile instead of overwriting it.
type FileChange struct {
	Kind ChangeKind `json:"kind"`
	Path string     `json:"path"`
	// OldPath is the previous path of a renamed file.
	OldPath string `json:"old_path,omitempty"`
	// BaseHash is Hash of the base content (of OldPath for a rename); empty for Created.
	BaseHash string `json:"base_hash,omitempty"`
	// Content is the new content; nil for Deleted.
	Content []byte `json:"content,omitempty"`
	// Base is the base content; nil for Created.
	Base []byte `json:"-"`
}

// Changes is the agent's result on the workspace.
type Changes struct {
	// Diff is `git diff` of the copy against its base: what the FrogNano harness reports.
	Diff  string       `json:"diff"`
	Files []FileChange `json:"files"`
}

// Changes computes what differs between the copy now and its base, the way the model's
// training harness did (`git add -A && git diff --cached`), with renames detected.
func (w *Workspace) Changes(ctx context.Context) (*Changes, error) {
	if _, err := w.git(ctx, "add", "-A"); err != nil {
		return nil, err
	}
	diff, err := w.git(ctx, "diff", "--cached", "--binary", "-M", w.base)
	if err != nil {
		return nil, err
	}
	status, err := w.git(ctx, "diff", "--cached", "-M", "--name-status", "-z", w.base)
	if err != nil {
		return nil, err
	}
	c := &Changes{Diff: string(diff)}
	fields := strings.Split(strings.TrimSuffix(string(status), "\x00"), "\x00")
	for i := 0; i < len(fields) && fields[i] != ""; {
		code := fields[i]
		fc := FileChange{}
		switch code[0] {
		case 'R':
			if i+2 >= len(fields) {
				return nil, fmt.Errorf("workspace: short rename record in git status")
			}
			fc.Kind, fc.OldPath, fc.Path = Renamed, fields[i+1], fields[i+2]
			i += 3
		case 'A':
			fc.Kind, fc.Path = Created, fields[i+1]
			i += 2
		case 'D':
			fc.Kind, fc.Path = Deleted, fields[i+1]
			i += 2
		default: // M, T (type change)
			fc.Kind, fc.Path = Modified, fields[i+1]
			i += 2
		}
		if fc.Kind != Created {
			basePath := fc.Path
			if fc.Kind == Renamed {
				basePath = fc.OldPath
			}
			base, err := w.git(ctx, "cat-file", "blob", w.base+":"+basePath)
			if err != nil {
				return nil, err
			}
			fc.Base, fc.BaseHash = base, Hash(base)
		}
		if fc.Kind != Deleted {
			b, err := os.ReadFile(filepath.Join(w.Root, filepath.FromSlash(fc.Path)))
			if err != nil {
				return nil, err
			}
			fc.Content = b
		}
		c.Files = append(c.Files, fc)
	}
	return c, nil
}

// Apply writes changes into dir (normally the user's folder), but only if every file there
// still has the base content the agent saw; otherwise nothing is written and the error
// names the files that moved on. Used by `frognano agent --apply`.
func Apply(dir string, c *Changes) error {
	var conflicts []string
	for _, f := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		switch f.Kind {
		case Created:
			if _, err := os.Lstat(p); err == nil {
				conflicts = append(conflicts, f.Path+" (now exists)")
			}
			continue
		case Renamed:
			if _, err := os.Lstat(p); err == nil {
				conflicts = append(conflicts, f.Path+" (rename target now exists)")
			}
			p = filepath.Join(dir, filepath.FromSlash(f.OldPath))
		}
		cur, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(cur, f.Base) {
			conflicts = append(conflicts, f.Path+" (changed since the agent started)")
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("not applied, files changed meanwhile: %s", strings.Join(conflicts, ", "))
	}
	for _, f := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		var err error
		switch f.Kind {
		case Deleted:
			err = os.Remove(p)
		case Renamed:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				if err = os.Rename(filepath.Join(dir, filepath.FromSlash(f.OldPath)), p); err == nil {
					err = writeAtomic(p, f.Content)
				}
			}
		default:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = writeAtomic(p, f.Content)
			}
		}
		if err != nil {
			return fmt.Errorf("applying %s: %w", f.Path, err)
		}
	}
	return nil
}

// writeAtomic replaces p with content through a temporary file and a rename, keeping p's
// permission bits, so a crash never leaves a half-written file.
func writeAtomic(p string, content []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(p); err == nil {
		mode = st.Mode().Perm()
	}
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

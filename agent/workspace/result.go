package workspace

import (
	"context"
	"fmt"
	"io/fs"
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
//
// A symbolic link is reported as a link: its Content (or Base) is the link's target as
// text, never what it points to, and Mode (or BaseMode) is ModeLink.
type FileChange struct {
	Kind ChangeKind `json:"kind"`
	Path string     `json:"path"`
	// OldPath is the previous path of a renamed file.
	OldPath string `json:"old_path,omitempty"`
	// BaseHash is Hash of the base content (of OldPath for a rename); empty for Created.
	BaseHash string `json:"base_hash,omitempty"`
	// Content is the new content; nil for Deleted.
	Content []byte `json:"content,omitempty"`
	// Mode is git's mode of the new content (ModeFile, ModeExec or ModeLink); empty for
	// Deleted.
	Mode string `json:"mode,omitempty"`
	// BaseMode is git's mode of the base; empty for Created.
	BaseMode string `json:"base_mode,omitempty"`
	// Base is the base content; nil for Created.
	Base []byte `json:"-"`
}

// Git's modes of the entries a change can hold.
const (
	ModeFile = "100644"
	ModeExec = "100755"
	ModeLink = "120000"
	modeRepo = "160000" // a nested repository (gitlink)
)

// IsLink reports whether the change leaves a symbolic link (Content is its target).
func (f FileChange) IsLink() bool { return f.Mode == ModeLink }

// BaseIsLink reports whether the base was a symbolic link (Base is its target).
func (f FileChange) BaseIsLink() bool { return f.BaseMode == ModeLink }

// Skipped is a change in the copy that is neither shown nor applied, with why.
type Skipped struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Changes is the agent's result on the workspace.
type Changes struct {
	// Diff is `git diff` of the copy against its base: what the FrogNano harness reports.
	Diff  string       `json:"diff"`
	Files []FileChange `json:"files"`
	// Skipped are changes left out, such as a nested git repository the agent made.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Changes computes what differs between the copy now and its base, the way the model's
// training harness did (`git add -A && git diff --cached`), with renames detected. Contents
// come from what git recorded, so no link in the copy is ever followed.
func (w *Workspace) Changes(ctx context.Context) (*Changes, error) {
	if err := w.checkSeal(); err != nil {
		return nil, err
	}
	specials, err := w.removeSpecialFiles()
	if err != nil {
		return nil, err
	}
	if _, err := w.git(ctx, "add", "-A"); err != nil {
		return nil, err
	}
	diff, err := w.git(ctx, "diff", "--cached", "--binary", "-M", w.base)
	if err != nil {
		return nil, err
	}
	raw, err := w.git(ctx, "diff", "--cached", "-M", "--raw", "--no-abbrev", "-z", w.base)
	if err != nil {
		return nil, err
	}
	entries, err := parseRaw(raw)
	if err != nil {
		return nil, err
	}
	c := &Changes{Diff: string(diff), Skipped: specials}
	var ids []string
	for _, e := range entries {
		if e.oldMode == modeRepo || e.newMode == modeRepo {
			c.Skipped = append(c.Skipped, Skipped{Path: e.path, Why: "a nested git repository: not shown, not applied"})
			continue
		}
		fc := FileChange{Path: e.path}
		switch e.status {
		case 'R':
			fc.Kind, fc.OldPath = Renamed, e.oldPath
		case 'A':
			fc.Kind = Created
		case 'D':
			fc.Kind = Deleted
		default: // M, T (a type change: file to link or back)
			fc.Kind = Modified
		}
		if fc.Kind != Created {
			fc.BaseMode = e.oldMode
			ids = append(ids, e.oldID)
		}
		if fc.Kind != Deleted {
			fc.Mode = e.newMode
			ids = append(ids, e.newID)
		}
		c.Files = append(c.Files, fc)
	}
	blobs, err := w.readBlobs(ctx, ids)
	if err != nil {
		return nil, err
	}
	k := 0
	for i := range c.Files {
		f := &c.Files[i]
		if f.Kind != Created {
			f.Base = blobs[ids[k]]
			f.BaseHash = Hash(f.Base)
			k++
		}
		if f.Kind != Deleted {
			f.Content = blobs[ids[k]]
			if f.Content == nil {
				f.Content = []byte{}
			}
			k++
		}
	}
	return c, nil
}

// removeSpecialFiles deletes the FIFOs, sockets and devices a command left in the copy,
// which git refuses to add (a tracked file replaced by a FIFO would fail the whole diff)
// and which no editor could apply, and names them.
func (w *Workspace) removeSpecialFiles() ([]Skipped, error) {
	var out []Skipped
	err := filepath.WalkDir(w.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && filepath.Dir(p) == w.Root {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		out = append(out, Skipped{Path: w.Rel(p), Why: "not a regular file (a FIFO, socket or device): not applied"})
		return os.Remove(p)
	})
	return out, err
}

// rawEntry is one record of `git diff --raw -z`.
type rawEntry struct {
	oldMode, newMode string
	oldID, newID     string
	status           byte
	oldPath, path    string
}

// parseRaw parses `git diff --raw -z --no-abbrev`: ":old new oldid newid STATUS\0path\0"
// with a second path for renames and copies.
func parseRaw(raw []byte) ([]rawEntry, error) {
	fields := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	var out []rawEntry
	for i := 0; i < len(fields) && fields[i] != ""; {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("workspace: unexpected git diff record %q", fields[i])
		}
		e := rawEntry{oldMode: meta[0], newMode: meta[1], oldID: meta[2], newID: meta[3], status: meta[4][0], path: fields[i+1]}
		i += 2
		if e.status == 'R' || e.status == 'C' {
			if i >= len(fields) {
				return nil, fmt.Errorf("workspace: short rename record in git diff")
			}
			e.oldPath, e.path = e.path, fields[i]
			i++
		}
		out = append(out, e)
	}
	return out, nil
}

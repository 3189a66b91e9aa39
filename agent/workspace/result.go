package workspace

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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

// Caps on what Changes reads: the copy is the model's, and a sparse file costs it no disk
// while costing frognano its size in memory (in the result, the trajectory and the edit).
const (
	// MaxFileSize: a file larger than this is left out of the changes, named in Skipped.
	MaxFileSize = 8 << 20
	// MaxChangeSize: new content beyond this in all is left out, the largest files first.
	MaxChangeSize = 64 << 20
	// changesTimeout bounds reading the changes, whatever the copy holds.
	changesTimeout = 5 * time.Minute
)

// Changes computes what differs between the copy now and its base, the way the model's
// training harness did (`git add -A && git diff --cached`), with renames detected. Contents
// come from what git recorded, so no link in the copy is ever followed. What git cannot or
// must not record is left out first and named in Skipped: special files, .git folders or
// files below the copy's root, and files over MaxFileSize.
func (w *Workspace) Changes(ctx context.Context) (*Changes, error) {
	ctx, cancel := context.WithTimeout(ctx, changesTimeout)
	defer cancel()
	if err := w.checkSeal(); err != nil {
		return nil, err
	}
	skipped, large, err := w.prune()
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if err := w.addAll(ctx, large); err != nil {
		return nil, err
	}
	more, err := w.largeChanged(ctx, large)
	if err != nil {
		return nil, err
	}
	skipped = append(skipped, more...)
	raw, err := w.git(ctx, "diff", "--cached", "-M", "--raw", "--no-abbrev", "-z", w.base)
	if err != nil {
		return nil, err
	}
	entries, err := parseRaw(raw)
	if err != nil {
		return nil, err
	}
	entries, dropped, more, err := w.capSizes(ctx, entries)
	if err != nil {
		return nil, err
	}
	skipped = append(skipped, more...)
	c := &Changes{Skipped: skipped}
	var ids []string
	for _, e := range entries {
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
	switch {
	case len(dropped) > maxExcluded:
		c.Diff = "(the change is too large to show as a diff)\n"
	case len(entries) > 0:
		// The diff of what is reported, no more: a left-out file must not reach it either.
		args := []string{"diff", "--cached", "--binary", "-M", w.base, "--"}
		if len(dropped) > 0 {
			args = append(args, ".")
			for _, p := range dropped {
				args = append(args, excluded(p))
			}
		}
		diff, err := w.git(ctx, args...)
		if err != nil {
			return nil, err
		}
		c.Diff = string(diff)
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

// prune removes from the copy what git must not see, naming it: FIFOs, sockets and devices
// (git refuses them, and opening a FIFO would block), and every .git below the root, in any
// case (git refuses those names; a nested repository would be recorded as a commit id read
// from wherever its .git file points, and its files hidden). It also lists the regular files
// over MaxFileSize, which git is told to leave alone. The copy's own .git is the agent's
// repository and stays.
func (w *Workspace) prune() (skipped []Skipped, large []string, err error) {
	own := filepath.Join(w.Root, ".git")
	err = filepath.WalkDir(w.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == own {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel := w.Rel(p)
		switch {
		case strings.EqualFold(d.Name(), ".git"):
			skipped = append(skipped, Skipped{Path: rel, Why: "a git repository's own data inside the copy: left out"})
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		case d.IsDir(), d.Type()&fs.ModeSymlink != 0:
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Size() > MaxFileSize {
				large = append(large, rel)
			}
		default:
			skipped = append(skipped, Skipped{Path: rel, Why: "not a regular file (a FIFO, socket or device): not applied"})
			return os.Remove(p)
		}
		return nil
	})
	return skipped, large, err
}

// addAll is `git add -A` of the copy, leaving the large files as the base has them.
func (w *Workspace) addAll(ctx context.Context, large []string) error {
	spec := []byte(".\x00") // NUL-separated, for --pathspec-from-file: names may hold anything
	for _, p := range large {
		spec = append(spec, excluded(p)+"\x00"...)
	}
	_, err := w.private().Run(ctx, spec, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// excluded is the pathspec that leaves the path p out, taken literally.
func excluded(p string) string { return ":(exclude,literal)" + p }

// largeChanged names the large files that are not the base's as they are (new, or of
// another size): they are left out of the changes. One of the same size is taken as
// unchanged, unread.
func (w *Workspace) largeChanged(ctx context.Context, large []string) ([]Skipped, error) {
	if len(large) == 0 {
		return nil, nil
	}
	var q strings.Builder
	for _, p := range large {
		q.WriteString(w.base + ":" + p + "\n")
	}
	out, err := w.private().Run(ctx, []byte(q.String()), "cat-file", "--batch-check=%(objectsize)")
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var skipped []Skipped
	for i, p := range large {
		st, err := os.Lstat(filepath.Join(w.Root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		if i >= len(lines) || lines[i] != strconv.FormatInt(st.Size(), 10) {
			skipped = append(skipped, Skipped{Path: p, Why: fmt.Sprintf("larger than %d MiB: not shown, not applied", MaxFileSize>>20)})
		}
	}
	return skipped, nil
}

// maxExcluded bounds the paths excluded from the diff on its command line.
const maxExcluded = 1000

// capSizes drops the entries whose new content would take the total over MaxChangeSize,
// the largest first, and returns the paths dropped.
func (w *Workspace) capSizes(ctx context.Context, entries []rawEntry) ([]rawEntry, []string, []Skipped, error) {
	var ids []string
	for _, e := range entries {
		if e.status != 'D' {
			ids = append(ids, e.newID)
		}
	}
	if len(ids) == 0 {
		return entries, nil, nil, nil
	}
	out, err := w.private().Run(ctx, []byte(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("workspace: %w", err)
	}
	size := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, n, _ := strings.Cut(line, " ")
		v, _ := strconv.ParseInt(n, 10, 64)
		size[id] = v
	}
	var total int64
	for _, e := range entries {
		if e.status != 'D' {
			total += size[e.newID]
		}
	}
	if total <= MaxChangeSize {
		return entries, nil, nil, nil
	}
	order := slices.Clone(entries)
	slices.SortStableFunc(order, func(a, b rawEntry) int { return cmp.Compare(size[b.newID], size[a.newID]) })
	drop := map[string]bool{}
	var skipped []Skipped
	for _, e := range order {
		if total <= MaxChangeSize {
			break
		}
		if e.status != 'D' {
			drop[e.path] = true
			total -= size[e.newID]
			skipped = append(skipped, Skipped{Path: e.path, Why: fmt.Sprintf("the change is over %d MiB in all: not shown, not applied", MaxChangeSize>>20)})
		}
	}
	var kept []rawEntry
	var dropped []string
	for _, e := range entries {
		if drop[e.path] {
			dropped = append(dropped, e.path)
		} else {
			kept = append(kept, e)
		}
	}
	return kept, dropped, skipped, nil
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

package watch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// The workspace side: which folders are watched, and how events change that.
//
// fsnotify watches single folders (its recursive mode is not public in v1.10), and when a
// watched folder is moved it forgets only that folder's watch: the watches below it keep
// their old paths, and re-adding the moved folder's inode would hand back the old watch with
// its old path. So on a rename the watcher removes the folder's watches and those below it
// itself, before the Create of the new name (which comes later in the same queue) adds them
// back under the new path.

// watchAll walks the whole tree and, in a git work tree, the git folders that hold HEAD.
func (w *Watcher) watchAll() error {
	var ignored map[string]bool
	if w.repo != nil {
		ignored = w.ignoredDirs()
	}
	err := w.walk([]string{w.root}, func(rels []string) map[string]bool { return ignored }, false)
	if err != nil {
		return err
	}
	return w.watchGit()
}

// walk watches the folders dirs (absolute) and every folder below them, breadth first,
// except .git, skipped folders and those ignoredIn reports for a round (one git call per
// depth for new folders); those become Unwatched. Each folder is listed after its watch is in
// place, so a file created meanwhile is either listed or reported by an event. With report,
// every path found is added to the batch. The error is ErrLimit (before Start returns) or
// the cancellation of the watcher.
func (w *Watcher) walk(dirs []string, ignoredIn func(rels []string) map[string]bool, report bool) error {
	for len(dirs) > 0 {
		dirs = w.dropExcluded(dirs, ignoredIn)
		var next []string
		for _, abs := range dirs {
			if err := w.ctx.Err(); err != nil {
				return err
			}
			rel := w.rel(abs)
			if _, ok := w.folders[rel]; ok {
				continue // named twice among the folders just created
			}
			ok, err := w.watchDir(abs, rel)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			entries, err := readDir(abs)
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				w.logf("watch: %v", err)
			}
			for _, e := range entries {
				if e.Name() == ".git" {
					continue // a nested repository's git dir or file: never reported
				}
				// Concatenating once and slicing rel from abs lets the folder map, fsnotify's
				// map and the batch share one string per folder.
				child := abs + string(filepath.Separator) + e.Name()
				if report {
					w.note(w.rel(child))
					if e.Name() == ".gitignore" && w.repo != nil {
						w.batch.ignores = true // a folder that came with its own ignore rules
					}
				}
				if e.IsDir() { // false for a symbolic link: links are not followed
					next = append(next, child)
				}
			}
		}
		dirs = next
	}
	return nil
}

// dropExcluded returns the folders of dirs to watch; skipped and ignored ones become
// Unwatched, .git is left out silently.
func (w *Watcher) dropExcluded(dirs []string, ignoredIn func(rels []string) map[string]bool) []string {
	keep := dirs[:0]
	var rels []string
	for _, abs := range dirs {
		rel := w.rel(abs)
		base := filepath.Base(rel)
		switch {
		case abs == w.root:
		case base == ".git":
			continue
		case w.skip[base]:
			w.markUnwatched(rel)
			continue
		}
		keep = append(keep, abs)
		rels = append(rels, filepath.ToSlash(rel))
	}
	if w.repo == nil || len(keep) == 0 {
		return keep
	}
	ignored := ignoredIn(rels)
	if len(ignored) == 0 {
		return keep
	}
	out := keep[:0]
	for i, abs := range keep {
		if ignored[rels[i]] && abs != w.root {
			w.markUnwatched(w.rel(abs))
			continue
		}
		out = append(out, abs)
	}
	return out
}

// watchDir adds the watch for one folder. A folder that vanished meanwhile is not an error;
// the inotify limit is ErrLimit during Start, and afterwards logged once and reported as
// Overflow, the folder becoming Unwatched.
func (w *Watcher) watchDir(abs, rel string) (bool, error) {
	err := w.addWatch(abs)
	switch {
	case err == nil:
		w.mu.Lock()
		w.folders[rel] = struct{}{}
		w.mu.Unlock()
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case errors.Is(err, syscall.ENOSPC):
		if !w.started {
			return false, ErrLimit
		}
		w.limitHit()
	default:
		w.logf("watch: not watching %s: %v", abs, err)
	}
	w.markUnwatched(rel)
	return false, nil
}

func (w *Watcher) addWatch(abs string) error {
	if w.opts.addHook != nil {
		if err := w.opts.addHook(abs); err != nil {
			return err
		}
	}
	return w.fsw.Add(abs)
}

func (w *Watcher) limitHit() {
	if !w.limitLogged {
		w.limitLogged = true
		w.logf("%v", ErrLimit)
	}
	w.batch.over = true
	w.arm()
}

func (w *Watcher) markUnwatched(rel string) {
	w.mu.Lock()
	w.unwatched[rel] = struct{}{}
	w.mu.Unlock()
}

// handle takes one fsnotify event.
func (w *Watcher) handle(ev fsnotify.Event) {
	if w.repo != nil && w.repo.owns(ev.Name) {
		w.handleGit(ev)
		return
	}
	rel, ok := w.relOK(ev.Name)
	if !ok {
		return
	}
	if rel == "" {
		if ev.Has(fsnotify.Remove | fsnotify.Rename) {
			w.logf("watch: %s itself was removed or renamed; watching stops", w.root)
			w.batch.over = true
			w.rootGone = true // the watcher ends after this batch: nothing under root is watched
			w.arm()
		}
		return
	}
	base := filepath.Base(rel)
	if base == ".git" {
		return
	}
	if ev.Has(fsnotify.Remove | fsnotify.Rename) {
		w.forget(rel, ev.Has(fsnotify.Rename))
	}
	w.note(rel)
	if ev.Has(fsnotify.Create) {
		// A folder found by listing its parent comes with its own Create event later.
		_, watched := w.folders[rel]
		_, unwatched := w.unwatched[rel]
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() && !unwatched {
			if watched {
				// Either listed already (a harmless second walk), or another folder renamed
				// onto this one: inotify then sends no Remove for the old folder, whose watch
				// is gone with it, so the new one must be watched afresh.
				w.unwatchTree(rel, true)
			}
			w.newDirs = append(w.newDirs, ev.Name) // walked by flush
		}
	}
	if base == ".gitignore" && w.repo != nil {
		w.batch.ignores = true
	}
}

// forget drops a removed or renamed folder from the watched or unwatched set. Below a
// removed folder nothing is left (its contents were removed first, each with its event);
// below a renamed one everything must go, see the comment at the top.
func (w *Watcher) forget(rel string, renamed bool) {
	_, watched := w.folders[rel]
	_, unwatched := w.unwatched[rel]
	if !watched && !unwatched {
		return
	}
	if w.batch.gone == nil {
		w.batch.gone = map[string]struct{}{}
	}
	w.batch.gone[rel] = struct{}{}
	w.unwatchTree(rel, renamed)
}

// unwatchTree removes the watch of folder rel, with below the watches of the folders below
// it, and drops them from the watched and unwatched sets.
func (w *Watcher) unwatchTree(rel string, below bool) {
	var gone []string
	w.mu.Lock()
	if _, ok := w.folders[rel]; ok {
		gone = append(gone, rel)
		delete(w.folders, rel)
	}
	delete(w.unwatched, rel)
	if below {
		prefix := rel + string(filepath.Separator)
		for f := range w.folders {
			if strings.HasPrefix(f, prefix) {
				gone = append(gone, f)
				delete(w.folders, f)
			}
		}
		for u := range w.unwatched {
			if strings.HasPrefix(u, prefix) {
				delete(w.unwatched, u)
			}
		}
	}
	w.mu.Unlock()
	for _, f := range gone {
		// An error means fsnotify dropped the watch already (the folder was deleted).
		_ = w.fsw.Remove(w.abs(f))
	}
}

// reignore re-evaluates ignored folders after a .gitignore or info/exclude edit: folders now
// ignored stop being watched, folders no longer ignored are walked and watched; both are
// reported as changed.
func (w *Watcher) reignore() {
	ignored := w.ignoredDirs()
	var now []string
	for rel := range w.folders {
		if rel != "" && ignored[filepath.ToSlash(rel)] {
			now = append(now, rel)
		}
	}
	for _, rel := range now {
		w.unwatchTree(rel, true)
		w.markUnwatched(rel)
		w.note(rel)
	}
	var back []string
	for rel := range w.unwatched {
		if !w.skip[filepath.Base(rel)] && !ignored[filepath.ToSlash(rel)] {
			back = append(back, rel)
		}
	}
	for _, rel := range back {
		w.mu.Lock()
		delete(w.unwatched, rel)
		w.mu.Unlock()
		w.note(rel)
		err := w.walk([]string{w.abs(rel)}, func([]string) map[string]bool { return ignored }, true)
		if err != nil {
			return
		}
	}
}

// rebuild replaces every watch after lost events: folders may have been created, moved or
// removed unseen, so the old watches' paths cannot be trusted. The old inotify instance is
// closed first so that the two never hold watches together, which could hit the limit.
func (w *Watcher) rebuild() error {
	w.fsw.Close()
	w.mu.Lock()
	w.folders = map[string]struct{}{}
	w.unwatched = map[string]struct{}{}
	if w.repo != nil {
		w.repo.dirs = map[string]struct{}{}
	}
	w.mu.Unlock()
	if err := w.newFS(); err != nil {
		return err
	}
	return w.watchAll()
}

func readDir(abs string) ([]os.DirEntry, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1) // unsorted: cheaper than os.ReadDir, and order does not matter
}

// abs returns the absolute path of a relative one ("" is the root).
func (w *Watcher) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return w.root + string(filepath.Separator) + rel
}

// rel returns the path of abs relative to the root, sharing abs's memory.
func (w *Watcher) rel(abs string) string {
	rel, _ := w.relOK(abs)
	return rel
}

func (w *Watcher) relOK(abs string) (string, bool) {
	if abs == w.root {
		return "", true
	}
	if len(abs) > len(w.root) && strings.HasPrefix(abs, w.root) && abs[len(w.root)] == filepath.Separator {
		return abs[len(w.root)+1:], true
	}
	return "", false
}

package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Warm keeps the next private copy of a folder ready, so that a run starts from it in
// milliseconds instead of copying and committing the whole folder (seconds on a large
// repository: see the README's Performance section).
//
// The copy goes stale as the user's files change. A watcher (package watch, or the editor's
// workspace/didChangeWatchedFiles) reports changed paths through [Warm.Changed]; [Warm.Take]
// re-copies just those, plus the folders the watcher does not watch. Without a watcher, or
// after it lost events, Take compares the whole tree by size and modification time, which
// still costs only a stat per file.
//
// A change is only seen once the watcher has delivered it, so a file written a few
// milliseconds before Take may be missed; the editor's own unsaved buffers are laid over
// the copy as overlays and are always current.
type Warm struct {
	src    string
	parent string
	ctx    context.Context
	stop   context.CancelFunc

	mu        sync.Mutex
	spare     *Workspace    // ready, committed as the source was when it was copied
	pending   chan struct{} // open while a spare is being made
	err       error         // why the last spare could not be made
	dirty     map[string]struct{}
	all       bool            // check the whole tree at the next Take
	watched   bool            // a watcher reports changes
	unwatched func() []string // folders the watcher skips, checked at every Take
	made      int
	closed    bool
	// started is when the ready copy's making began: files modified since may differ from
	// the copy even with the same size and time (the clock's tick is coarse), so a
	// comparison copies them whatever their size and time say, as git does with racy files.
	started time.Time
}

// maxDirty bounds the changed paths kept; beyond it the whole tree is checked instead.
const maxDirty = 10000

// ErrClosed is returned by Take after Close.
var ErrClosed = errors.New("workspace: the warm copy was closed")

// NewWarm makes a Warm for the folder src whose copies are made in parent (created if
// needed, and owned by the Warm: Close removes what is left there). No copy is made yet:
// call Prefetch, or the first Take makes one.
func NewWarm(src, parent string) (*Warm, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	realSrc, err := filepath.EvalSymlinks(src)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	// Checked before and after creating parent: it must not even be made inside src.
	for i := range 2 {
		if parent, err = filepath.Abs(parent); err != nil {
			return nil, err
		}
		if within(parent, src) || within(src, parent) || within(parent, realSrc) || within(realSrc, parent) {
			return nil, fmt.Errorf("workspace: the copies' folder %s and the folder %s must not contain each other", parent, src)
		}
		if i == 0 {
			if err := os.MkdirAll(parent, 0o700); err != nil {
				return nil, err
			}
			if parent, err = filepath.EvalSymlinks(parent); err != nil {
				return nil, err
			}
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Warm{src: src, parent: parent, ctx: ctx, stop: stop, dirty: map[string]struct{}{}, all: true}, nil
}

// Watching says a watcher now reports every change outside the folders unwatched returns
// (relative, slash-separated; asked at each Take, as the watcher's skipped folders come and
// go). Changes it may have missed before are caught by one whole-tree check.
func (w *Warm) Watching(unwatched func() []string) {
	if unwatched == nil {
		unwatched = func() []string { return nil }
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched, w.unwatched, w.all = true, unwatched, true
}

// NotWatching says changes are no longer reported: every Take checks the whole tree.
func (w *Warm) NotWatching() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched, w.unwatched, w.all = false, nil, true
}

// Changed records paths (relative to the folder, slash-separated, or absolute inside it)
// that changed on disk.
func (w *Warm) Changed(paths ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range paths {
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(w.src, p)
			if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				continue
			}
			p = r
		}
		p = filepath.ToSlash(filepath.Clean(p))
		if p == "." {
			w.all = true
			continue
		}
		w.dirty[p] = struct{}{}
	}
	if len(w.dirty) > maxDirty {
		w.all, w.dirty = true, map[string]struct{}{}
	}
}

// ChangedAll records that anything may have changed (the watcher lost events).
func (w *Warm) ChangedAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all, w.dirty = true, map[string]struct{}{}
}

// Prefetch starts making a copy in the background if none is ready or being made.
func (w *Warm) Prefetch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.spare == nil && w.pending == nil && !w.closed {
		w.startLocked()
	}
}

// Ready reports whether a copy is ready: Take then only brings it up to date.
func (w *Warm) Ready() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spare != nil
}

// Wait returns once no copy is being made: the next Take is then only the refresh.
func (w *Warm) Wait(ctx context.Context) error {
	w.mu.Lock()
	pending := w.pending
	w.mu.Unlock()
	if pending == nil {
		return nil
	}
	select {
	case <-pending:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startLocked makes the next spare in the background. Changes recorded from now on are
// applied to it at Take, since the copy may or may not have seen them.
func (w *Warm) startLocked() {
	w.made++
	dst := filepath.Join(w.parent, fmt.Sprintf("copy-%d", w.made))
	done := make(chan struct{})
	w.pending, w.err, w.started = done, nil, time.Now()
	w.dirty, w.all = map[string]struct{}{}, !w.watched
	go func() {
		defer close(done)
		ws, err := Prepare(w.ctx, w.src, dst, nil)
		if err != nil {
			os.RemoveAll(dst)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.pending = nil
		if w.closed {
			if ws != nil {
				ws.Remove()
			}
			return
		}
		w.spare, w.err = ws, err
	}()
}

// Take hands over the ready copy, brought up to date with the folder and with overlays
// laid over it and committed as its base, exactly like [Prepare]. The caller owns it
// (Remove it when done). With no copy ready or being made, it makes one and waits. The
// next copy is not started: call Prefetch when the machine is idle again (after the run),
// so that copying does not compete with the run for the cores.
func (w *Warm) Take(ctx context.Context, overlays map[string][]byte) (*Workspace, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, ErrClosed
	}
	if w.spare == nil && w.pending == nil {
		w.startLocked()
	}
	pending := w.pending
	w.mu.Unlock()
	if pending != nil {
		select {
		case <-pending:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, ErrClosed
	}
	ws, err := w.spare, w.err
	dirty, all, started := w.dirty, w.all, w.started
	unwatchedOf := w.unwatched
	if !w.watched {
		unwatchedOf = nil
	}
	w.spare, w.err = nil, nil
	// What changes from now on concerns the next copy, which starts afresh anyway.
	w.dirty, w.all = map[string]struct{}{}, !w.watched
	w.mu.Unlock()
	if ws == nil {
		if err == nil { // another Take got it first: runs are meant to take turns
			err = errors.New("workspace: the ready copy was taken by another run")
		}
		return nil, err
	}
	var unwatched []string
	if unwatchedOf != nil && !all {
		unwatched = unwatchedOf() // not under w.mu: the watcher takes its own lock
	}
	// A second of margin: file times may come from a clock a tick behind time.Now.
	if err := w.refresh(ctx, ws, dirty, all, unwatched, started.Add(-time.Second)); err != nil {
		ws.Remove()
		return nil, fmt.Errorf("workspace: bringing the copy up to date: %w", err)
	}
	if err := ws.commitBase(ctx, overlays); err != nil {
		ws.Remove()
		return nil, err
	}
	return ws, nil
}

// Close stops making copies and removes the ready one. A copy already taken is the
// caller's.
func (w *Warm) Close() error {
	w.mu.Lock()
	w.closed = true
	spare, pending := w.spare, w.pending
	w.spare = nil
	w.mu.Unlock()
	w.stop()
	if pending != nil {
		<-pending
	}
	if spare != nil {
		return spare.Remove()
	}
	return nil
}

// refresh copies into ws what changed in the source since ws was copied.
func (w *Warm) refresh(ctx context.Context, ws *Workspace, dirty map[string]struct{}, all bool, unwatched []string, racy time.Time) error {
	if all {
		return syncTree(ctx, w.src, ws.Root, ".", racy)
	}
	paths := make([]string, 0, len(dirty)+len(unwatched))
	for p := range dirty {
		paths = append(paths, p)
	}
	slices.Sort(paths) // parents before children
	paths = append(paths, unwatched...)
	for _, p := range paths {
		if err := syncPath(ctx, w.src, ws.Root, filepath.FromSlash(p), racy); err != nil {
			return err
		}
	}
	return nil
}

// syncPath makes rel in the copy what it is in the source: gone, a link, a file, or a
// folder (compared entry by entry). Paths through a .git folder are left alone: the
// copy's own repository lives at its root, and the source's are never copied.
func syncPath(ctx context.Context, src, dst, rel string, racy time.Time) error {
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == ".git" || part == ".." {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Every folder on the way must be a real folder on both sides. A reported path under
	// what is now a symlink (a folder replaced by a link) is skipped: the link is synced as
	// itself, and following it here could write through it, even into the user's folder.
	// In the copy, anything but a folder on the way is removed, to be made a folder.
	parts := strings.Split(rel, string(filepath.Separator))
	for i := 1; i < len(parts); i++ {
		prefix := filepath.Join(parts[:i]...)
		st, err := os.Lstat(filepath.Join(src, prefix))
		if err != nil || !st.IsDir() {
			return nil // gone or not a folder: its own sync covers what is below
		}
		cp := filepath.Join(dst, prefix)
		if st, err := os.Lstat(cp); err == nil && !st.IsDir() {
			if err := os.Remove(cp); err != nil {
				return err
			}
		}
	}
	sp, dp := filepath.Join(src, rel), filepath.Join(dst, rel)
	st, err := os.Lstat(sp)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return removeIfExists(dp)
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return syncTree(ctx, src, dst, rel, racy)
	}
	if err := os.MkdirAll(filepath.Dir(dp), 0o755); err != nil {
		return err
	}
	// Belt and braces: what is written must be inside the copy.
	if real, err := filepath.EvalSymlinks(filepath.Dir(dp)); err != nil || !within(dst, real) {
		return fmt.Errorf("%s leads out of the copy", rel)
	}
	return syncEntry(sp, dp, st, true)
}

// syncEntry brings the non-folder dp in line with sp (whose Lstat is st). With force a
// regular file is copied even if its size and time match.
func syncEntry(sp, dp string, st fs.FileInfo, force bool) error {
	dst, err := os.Lstat(dp)
	if err == nil && (dst.IsDir() || dst.Mode().Type() != st.Mode().Type()) {
		if err := os.RemoveAll(dp); err != nil {
			return err
		}
		dst, err = nil, fs.ErrNotExist
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(sp)
		if err != nil {
			return err
		}
		if old, err := os.Readlink(dp); err == nil && old == link {
			return nil
		}
		removeIfExists(dp)
		return os.Symlink(link, dp)
	case st.Mode().IsRegular():
		// Only the executable bits are compared: the umask may have trimmed others, and
		// they are all git records.
		if err == nil && !force && dst.Size() == st.Size() && dst.ModTime().Equal(st.ModTime()) &&
			dst.Mode().Perm()&0o111 == st.Mode().Perm()&0o111 {
			return nil
		}
		if err := copyFile(sp, dp); err != nil {
			return err
		}
		return os.Chmod(dp, st.Mode().Perm())
	default: // sockets, devices, fifos are not copied
		return removeIfExists(dp)
	}
}

// syncTree makes the folder rel in the copy match the source's, comparing files by size,
// mode and modification time (the copy keeps the source's times); files modified at racy or
// later are copied whatever they look like.
func syncTree(ctx context.Context, src, dst, rel string, racy time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sp, dp := filepath.Join(src, rel), filepath.Join(dst, rel)
	st, err := os.Stat(sp)
	if err != nil {
		return err
	}
	if dst, err := os.Lstat(dp); err == nil && !dst.IsDir() {
		if err := os.Remove(dp); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dp, st.Mode().Perm()|0o700); err != nil {
		return err
	}
	have, err := os.ReadDir(dp)
	if err != nil {
		return err
	}
	want, err := os.ReadDir(sp)
	if err != nil {
		return err
	}
	inSource := make(map[string]bool, len(want))
	for _, e := range want {
		inSource[e.Name()] = true
		if e.Name() == ".git" {
			continue
		}
		r := filepath.Join(rel, e.Name())
		if e.IsDir() {
			if err := syncTree(ctx, src, dst, r, racy); err != nil {
				return err
			}
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile; the next check sees it
		}
		if err != nil {
			return err
		}
		racyFile := !info.ModTime().Before(racy)
		if err := syncEntry(filepath.Join(src, r), filepath.Join(dst, r), info, racyFile); err != nil {
			return err
		}
	}
	for _, e := range have {
		if !inSource[e.Name()] && !(e.Name() == ".git" && rel == ".") {
			if err := os.RemoveAll(filepath.Join(dp, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func removeIfExists(p string) error {
	if err := os.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Package watch tells which paths of a workspace changed on disk, so that the language server
// re-copies only those into its private copy of the workspace, and the fine-tuning daemon
// learns of new commits. [Start] is the entry point; it returns a [Watcher] that reports
// [Batch]es to a callback until [Watcher.Close].
//
// It is a thin layer over fsnotify (inotify on Linux), which watches single folders: the
// watcher walks the tree once, watches every folder except skipped and .gitignore'd ones, and
// follows folders as they come and go (tree.go). Git questions (what is ignored, where HEAD
// lives, which commit it names) go to the real git CLI so that they mean what git says
// (git.go). Per folder it keeps one map entry, sharing the path string with fsnotify, and no
// per-file state at all: large repositories cost a few hundred bytes of Go heap per folder
// plus the kernel's inotify watch (see bench_test.go for measured figures).
package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options tune a Watcher; zero values take defaults.
type Options struct {
	// Skip: folder names never watched (matched on the base name, anywhere), in addition to
	// folders .gitignore'd. Nil takes DefaultSkip; an empty, non-nil slice skips nothing.
	Skip []string
	// Debounce: how long to gather events into one Batch, counted from the first event of the
	// batch so that a steady stream of events still yields batches (default 50 ms).
	Debounce time.Duration
	// MaxPaths: a batch with more changed paths than this is reported as Overflow instead
	// (default 4096); the receiver then checks the whole tree, which is cheaper than handling
	// a huge list, and the watcher stops collecting paths, which bounds its memory.
	MaxPaths int
	// Logf, if set, receives diagnostics (a folder that could not be watched, etc.). It is
	// called from one goroutine at a time.
	Logf func(format string, args ...any)

	// addHook, when set (by tests), runs before each inotify watch is added and can fail it,
	// which is how the tests reach the kernel's watch limit without changing sysctls.
	addHook func(path string) error
}

// DefaultSkip lists folders that hold installed packages, caches or editor state, never
// sources. Build outputs (build, dist, target) are left out on purpose: in a git work tree
// their .gitignore already keeps them unwatched, and where they are not ignored they are
// often tracked sources (deployment scripts in build/, published assets in dist/) whose
// edits must not go unnoticed. Callers watching large non-git folders can add them.
var DefaultSkip = []string{"node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
	".pytest_cache", ".ruff_cache", ".gradle", ".idea", ".cache"}

// Batch is what changed during one debounce period.
type Batch struct {
	// Paths changed (created, written, removed, renamed, chmod-ed) relative to the root,
	// slash-separated, sorted, without duplicates. A removed or renamed folder appears as
	// itself; paths that were removed with it are left out. A folder that appears (created,
	// moved in, or no longer ignored) is listed with everything found in it. Files inside
	// skipped or ignored folders never appear (the folder itself does when it is created,
	// removed or renamed); paths under .git never appear.
	Paths []string
	// Overflow: events were lost (fsnotify.ErrEventOverflow, the inotify limit) or there were
	// more than MaxPaths; the receiver must treat the whole tree as changed. Paths is empty.
	Overflow bool
	// Head is non-nil when the repository's HEAD commit changed (a commit, checkout, reset,
	// pull…).
	Head *HeadChange
}

// HeadChange says which commit HEAD moved from and to.
type HeadChange struct {
	Old, New string // full commit hashes; Old is empty if there was none (unborn branch)
	Branch   string // short branch name, "" when HEAD is detached
}

// Stats describe a live Watcher.
type Stats struct {
	Folders    int   // workspace folders watched, the root included
	GitFolders int   // folders of the git dir watched for HEAD changes
	Unwatched  int   // len(Unwatched())
	GitCalls   int64 // git commands run so far; index churn (git status) must not add any
}

// ErrLimit: the system's inotify watch limit was reached. Start returns it (wrapped) and
// releases what it took; after Start the watcher logs it once and reports Overflow.
var ErrLimit = errors.New("watch: the inotify watch limit fs.inotify.max_user_watches is reached; " +
	"raise it (sudo sysctl fs.inotify.max_user_watches=524288, and the same line in " +
	"/etc/sysctl.d/90-inotify.conf to keep it) or skip or .gitignore large folders")

// Watcher watches one workspace; see Start.
type Watcher struct {
	root    string // absolute and clean; every watched path starts with it
	opts    Options
	skip    map[string]bool
	onBatch func(Batch)
	repo    *repo // nil outside a git work tree

	ctx    context.Context // cancelled by Close or the caller's context; stops git commands too
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has ended

	// Owned by the loop goroutine (by Start before it runs).
	fsw         *fsnotify.Watcher
	started     bool // Start returned: an inotify limit is reported as Overflow, not ErrLimit
	batch       pending
	timer       *time.Timer
	armed       bool     // timer runs for the current batch
	newDirs     []string // folders created during the batch, walked when it ends
	limitLogged bool
	rootGone    bool // the root was removed or renamed: end after reporting Overflow
	closeErr    error

	// Written by the drainer goroutines, read by the loop.
	lost   atomic.Bool   // the kernel queue overflowed: rebuild all watches
	poke   chan struct{} // wakes the loop after lost was set
	errs   chan error    // other fsnotify errors, for Logf
	drains sync.WaitGroup

	gitCalls atomic.Int64

	// Sync calls: requests reach the loop on syncs; barrier is the loop's own; drained asks
	// the error drainer to catch up.
	syncs   chan chan<- error
	barrier barrier
	drained chan chan struct{}

	// mu guards writes to folders, unwatched and repo.dirs, which only the loop (or Start)
	// makes, and reads from other goroutines (Stats, Unwatched); the loop reads unlocked.
	mu        sync.Mutex
	folders   map[string]struct{} // relative paths of watched folders ("" is the root)
	unwatched map[string]struct{} // relative paths of top-most skipped, ignored or failed folders
}

// pending is the batch being gathered.
type pending struct {
	paths   map[string]struct{} // relative, OS separators; nil once tooMany
	tooMany bool                // more than MaxPaths
	gone    map[string]struct{} // folders removed or renamed: leave out what was below them
	over    bool                // report Overflow
	head    bool                // HEAD, a branch or packed-refs changed: ask git
	ignores bool                // a .gitignore or info/exclude changed: re-evaluate
}

func newPending() pending { return pending{paths: map[string]struct{}{}} }

// Start walks root, watches every folder except skipped/ignored ones (and not inside .git),
// and calls onBatch from one goroutine, never concurrently, until Close or until ctx is
// cancelled. It returns once the initial watches are in place, so a change made after Start
// returns is reported. onBatch must not call Close (it would wait for itself); it may cancel
// ctx.
func Start(ctx context.Context, root string, opts Options, onBatch func(Batch)) (*Watcher, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("watch: %s is not a folder", abs)
	}
	if opts.Skip == nil {
		opts.Skip = DefaultSkip
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	if opts.MaxPaths <= 0 {
		opts.MaxPaths = 4096
	}
	w := &Watcher{
		root:      abs,
		opts:      opts,
		skip:      map[string]bool{},
		onBatch:   onBatch,
		done:      make(chan struct{}),
		batch:     newPending(),
		timer:     time.NewTimer(time.Hour),
		poke:      make(chan struct{}, 1),
		syncs:     make(chan chan<- error),
		drained:   make(chan chan struct{}),
		errs:      make(chan error, 16),
		folders:   map[string]struct{}{},
		unwatched: map[string]struct{}{},
	}
	w.timer.Stop()
	for _, s := range opts.Skip {
		w.skip[s] = true
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	if err := w.newFS(); err != nil {
		w.cancel()
		return nil, err
	}
	w.repo = w.findRepo()
	if err := w.watchAll(); err != nil {
		w.cancel()
		w.fsw.Close()
		w.drains.Wait()
		if errors.Is(err, ErrLimit) {
			return nil, fmt.Errorf("%w (%d folders of %s were watched)", err, len(w.folders), abs)
		}
		return nil, err
	}
	w.started = true
	go w.loop()
	return w, nil
}

// Close stops the watcher; no onBatch call happens after it returns. It is idempotent.
func (w *Watcher) Close() error {
	w.cancel()
	<-w.done
	return w.closeErr
}

// Done is closed once the watcher has stopped, by Close or by the cancellation of Start's
// context; a receiver that outlives the watcher then knows it must check the tree itself.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Unwatched returns the relative slash paths of the top-most skipped or ignored folders (and
// of folders that could not be watched), sorted: callers check these another way.
func (w *Watcher) Unwatched() []string {
	w.mu.Lock()
	out := make([]string, 0, len(w.unwatched))
	for rel := range w.unwatched {
		out = append(out, filepath.ToSlash(rel))
	}
	w.mu.Unlock()
	slices.Sort(out)
	return out
}

// Stats returns counters of the live watcher.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Stats{Folders: len(w.folders), Unwatched: len(w.unwatched), GitCalls: w.gitCalls.Load()}
	if w.repo != nil {
		s.GitFolders = len(w.repo.dirs)
	}
	return s
}

// newFS starts a fresh fsnotify watcher and the goroutine that drains its errors.
func (w *Watcher) newFS() error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		if errors.Is(err, syscall.EMFILE) {
			return fmt.Errorf("watch: %w; the inotify instance limit fs.inotify.max_user_instances "+
				"is reached: raise it with sysctl or stop other watchers", err)
		}
		return fmt.Errorf("watch: %w", err)
	}
	w.fsw = fsw
	w.drains.Add(1)
	go w.drain(fsw.Errors)
	return nil
}

// drain receives fsnotify's errors in their own goroutine and never blocks: fsnotify sends
// some errors while holding the lock that Add and Remove take, so a loop busy adding watches
// must never be the one that receives them.
//
// A request on drained is answered once every error received before it is recorded: fsnotify
// hands over an overflow before the events that follow it, so a Sync marker's event is only
// trusted after asking (see handleSync).
func (w *Watcher) drain(errs <-chan error) {
	defer w.drains.Done()
	for {
		var err error
		select {
		case e, ok := <-errs:
			if !ok {
				return
			}
			err = e
		case reply := <-w.drained:
			close(reply)
			continue
		}
		if errors.Is(err, fsnotify.ErrEventOverflow) {
			w.lost.Store(true)
			select {
			case w.poke <- struct{}{}:
			default:
			}
			continue
		}
		select {
		case w.errs <- err:
		default: // Logf is diagnostics only; drop rather than block.
		}
	}
}

func (w *Watcher) loop() {
	defer func() {
		w.cancel()
		w.timer.Stop()
		w.closeErr = w.fsw.Close()
		w.drains.Wait()
		w.endSync()
		close(w.done)
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if !w.handleSync(ev) {
				w.handle(ev)
			}
		case done := <-w.syncs:
			w.startSync(done)
		case err := <-w.errs:
			w.logf("watch: %v", err)
		case <-w.poke:
			w.arm()
		case <-w.timer.C:
			w.flush()
		}
	}
}

// arm starts the debounce timer for the batch being gathered, unless it runs already.
func (w *Watcher) arm() {
	if !w.armed {
		w.armed = true
		w.timer.Reset(w.opts.Debounce)
	}
}

// note adds a changed path to the batch.
func (w *Watcher) note(rel string) {
	b := &w.batch
	if !b.tooMany {
		b.paths[rel] = struct{}{}
		if len(b.paths) > w.opts.MaxPaths {
			b.tooMany, b.paths = true, nil
		}
	}
	w.arm()
}

// flush ends the debounce period: it brings the watches up to date (new folders, lost
// events, an ignore-file edit), asks git about HEAD if needed, and reports the batch.
//
// New folders are walked here rather than at their Create event so that one git
// check-ignore call per depth covers all the folders of the period: a checkout that makes a
// thousand folders one by one would otherwise cost a git call each. Nothing is lost by
// waiting: each folder is listed once its watch is in place.
func (w *Watcher) flush() {
	if w.rootGone {
		// Sync then fails with ErrClosed and callers check the whole tree themselves.
		defer w.cancel()
	}
	w.armed = false
	if dirs := w.newDirs; len(dirs) > 0 {
		w.newDirs = nil
		if err := w.walk(dirs, w.checkIgnore, true); err != nil && w.ctx.Err() == nil {
			w.logf("watch: %v", err)
		}
	}
	if w.lost.Swap(false) {
		// Sync markers written before the overflow may have lost their events: the
		// Overflow batch answers them all.
		defer func() {
			if err := w.watchSyncDir(); err != nil {
				w.logf("%v", err)
			}
			w.releaseSyncs(len(w.barrier.waiting), nil)
		}()
		w.logf("watch: inotify queue overflow; rewatching %s", w.root)
		w.batch.over, w.batch.head = true, true
		if err := w.rebuild(); err != nil {
			w.logf("watch: %v; watching stopped", err)
			defer w.cancel()
		}
	} else if w.batch.ignores {
		w.reignore()
	}
	b := w.batch
	w.batch = newPending()
	w.armed = false // reignore may have noted paths: they belong to this batch
	w.timer.Stop()

	var out Batch
	if b.head {
		out.Head = w.checkHead()
	}
	if b.over || b.tooMany {
		out.Overflow = true
	} else {
		out.Paths = w.paths(b)
	}
	if !out.Overflow && len(out.Paths) == 0 && out.Head == nil {
		return
	}
	if w.ctx.Err() != nil {
		return // Close was called: report nothing more
	}
	w.onBatch(out)
}

// paths returns the batch's paths in Batch form, without those below a gone folder (unless
// the folder exists again, as when it was removed and made anew).
func (w *Watcher) paths(b pending) []string {
	out := make([]string, 0, len(b.paths))
	stillGone := map[string]bool{}
	isGone := func(dir string) bool {
		if _, ok := b.gone[dir]; !ok {
			return false
		}
		g, ok := stillGone[dir]
		if !ok {
			_, err := os.Lstat(w.abs(dir))
			g = err != nil
			stillGone[dir] = g
		}
		return g
	}
	for p := range b.paths {
		below := false
		if len(b.gone) > 0 {
			for d := filepath.Dir(p); d != "." && !below; d = filepath.Dir(d) {
				below = isGone(d)
			}
		}
		if !below {
			out = append(out, filepath.ToSlash(p))
		}
	}
	slices.Sort(out)
	return out
}

func (w *Watcher) logf(format string, args ...any) {
	if w.opts.Logf != nil {
		w.opts.Logf(format, args...)
	}
}

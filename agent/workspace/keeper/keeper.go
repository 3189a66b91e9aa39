// Package keeper keeps a folder's next private copy ready (workspace.Warm) and up to date
// while the folder changes: it watches the folder (package watch), hands every change to
// the ready copy, and follows HEAD, so that a new commit is known as it happens. The
// language server keeps one per workspace; the fine-tuning daemon will keep its own, and
// learn of new commits through Options.OnHead, without importing lsp.
//
// Start with [Start]; [Keeper.Warm] is what agent.Task.Warm takes.
package keeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/watch"
)

// Options tune a Keeper; the zero value works.
type Options struct {
	// Parent holds the folder of the copies (default os.TempDir()). Copies that killed
	// processes left there are removed at Start.
	Parent string
	// Logf hears what happened, for the log; default nothing.
	Logf func(format string, args ...any)
	// OnHead hears each new HEAD that is seen (a commit, a checkout); it must not block.
	OnHead func(watch.HeadChange)
	// StartWatcher is watch.Start unless set (tests make it fail).
	StartWatcher func(ctx context.Context, root string, opts watch.Options, onBatch func(watch.Batch)) (*watch.Watcher, error)
}

// Keeper keeps the ready copy of one folder.
type Keeper struct {
	root    string
	opts    Options
	dir     string // owned: holds the copies and the lock, removed at Close
	lock    *os.File
	warm    *workspace.Warm
	watcher *watch.Watcher // nil when the folder could not be watched
	why     string         // why it is not watched

	mu   sync.Mutex
	head watch.HeadChange // guarded by mu: the latest HEAD seen; New is empty before any commit is seen
}

// Status is what a Keeper can tell of itself (the "workspace" part of frognano/status).
type Status struct {
	// Watching says changes to the folder are seen as they happen; Why says why not.
	Watching bool   `json:"watching"`
	Why      string `json:"why,omitempty"`
	Folders  int    `json:"folders,omitempty"`
	// Ready says the next run's copy is made (it is made after each run).
	Ready bool `json:"ready"`
	// Commit and Branch are the repository's HEAD as last seen.
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
}

// Start makes the copy keeper of root and watches root. A folder that cannot be watched is
// no error: Watching is then false and Status says why; the caller should pass on the
// changes it learns of otherwise (Changed, ReadHead), and each run compares the whole folder
// by size and time instead (Sync).
func Start(root string, opts Options) (*Keeper, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.StartWatcher == nil {
		opts.StartWatcher = watch.Start
	}
	parent := opts.Parent
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	RemoveStale(parent)
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("frognano-ready-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	// Held while the keeper runs: a copy folder whose lock can be taken is stale, whatever
	// its process id means in this PID namespace.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	warm, err := workspace.NewWarm(root, filepath.Join(dir, "copies"))
	if err != nil {
		lock.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	k := &Keeper{root: root, opts: opts, dir: dir, warm: warm, lock: lock}
	if h, err := watch.Head(context.Background(), root); err == nil {
		k.head = h
	}
	w, err := opts.StartWatcher(context.Background(), root, watch.Options{Logf: opts.Logf}, k.onBatch)
	if err != nil {
		k.why = err.Error()
		opts.Logf("not watching %s: %v", root, err)
	} else {
		k.watcher = w
		warm.Watching(w.Unwatched)
	}
	return k, nil
}

// Root is the folder kept.
func (k *Keeper) Root() string { return k.root }

// Warm is the ready copy, for agent.Task.Warm.
func (k *Keeper) Warm() *workspace.Warm { return k.warm }

// Watching says whether the folder is watched (it may stop later: see Status).
func (k *Keeper) Watching() bool { return k.watcher != nil }

// Sync makes sure the copy hears of every change made before a run was asked for (a file
// saved a moment ago may still be in the watcher's debounce); if the watcher cannot say,
// the whole folder is compared instead.
func (k *Keeper) Sync(ctx context.Context) {
	if k.watcher == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := k.watcher.Sync(ctx); err != nil {
		k.warm.ChangedAll()
	}
}

// Changed passes on changes learned of elsewhere (the editor's file events): paths relative
// to the root.
func (k *Keeper) Changed(paths ...string) { k.warm.Changed(paths...) }

// ReadHead reads HEAD again (something under .git changed).
func (k *Keeper) ReadHead(ctx context.Context) {
	if h, err := watch.Head(ctx, k.root); err == nil {
		k.setHead(h)
	}
}

// onBatch receives the watcher's changes.
func (k *Keeper) onBatch(b watch.Batch) {
	if b.Overflow {
		k.warm.ChangedAll()
	} else {
		k.warm.Changed(b.Paths...)
	}
	if b.Head != nil {
		k.setHead(*b.Head)
	}
}

// setHead records a new HEAD and tells Options.OnHead.
func (k *Keeper) setHead(h watch.HeadChange) {
	k.mu.Lock()
	old := k.head.New
	k.head = h
	k.mu.Unlock()
	if h.New != old {
		k.opts.Logf("HEAD of %s is now %s (%s)", k.root, short(h.New), h.Branch)
		if k.opts.OnHead != nil {
			k.opts.OnHead(h)
		}
	}
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// Close stops watching and removes the ready copy.
func (k *Keeper) Close() {
	if k.watcher != nil {
		k.watcher.Close()
	}
	k.warm.Close()
	os.RemoveAll(k.dir)
	k.lock.Close()
}

// Status says whether the folder is watched, whether the copy is ready, and HEAD.
func (k *Keeper) Status() Status {
	st := Status{Watching: k.watcher != nil, Why: k.why, Ready: k.warm.Ready()}
	if k.watcher != nil {
		select {
		case <-k.watcher.Done():
			// Each run then compares the folder (Sync fails, see Sync).
			st.Watching, st.Why = false, "watching stopped: the folder was moved or removed; restart the server to watch it again"
		default:
			st.Folders = k.watcher.Stats().Folders
		}
	}
	k.mu.Lock()
	st.Commit, st.Branch = k.head.New, k.head.Branch
	k.mu.Unlock()
	return st
}

// RemoveStale removes the ready copies of processes that were killed before they could
// clean up: their lock is free. A folder without a lock (being made, or older) is judged by
// the process id in its name.
func RemoveStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "frognano-ready-*-*"))
	for _, d := range dirs {
		if lock, err := os.Open(filepath.Join(d, ".lock")); err == nil {
			free := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
			st, err := lock.Stat()
			lock.Close()
			// A minute old at least: a keeper that just made its lock may not hold it yet.
			if free && err == nil && time.Since(st.ModTime()) > time.Minute {
				os.RemoveAll(d)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.Split(filepath.Base(d), "-")[2])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

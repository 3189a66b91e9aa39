package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/watch"
)

// fresh keeps the workspace's next private copy ready (workspace.Warm) and up to date: the
// folder is watched (package watch) and the editor's workspace/didChangeWatchedFiles are
// honoured too. It starts with the first run, so a server that never runs the agent
// neither watches nor copies anything.
type fresh struct {
	root    string
	dir     string // owned: holds the copies and the lock, removed at close
	lock    *os.File
	warm    *workspace.Warm
	watcher *watch.Watcher // nil when the folder could not be watched
	why     string         // why it is not watched

	mu   sync.Mutex
	head watch.HeadChange // the latest HEAD seen; New is empty before any commit is seen
}

// FreshStatus is the "workspace" part of frognano/status.
type FreshStatus struct {
	// Watching says changes to the folder are seen as they happen; Why says why not.
	Watching bool   `json:"watching"`
	Why      string `json:"why,omitempty"`
	Folders  int    `json:"folders,omitempty"`
	// Ready says the next run's copy is made (it is made after each run).
	Ready bool `json:"ready"`
	// Commit and Branch are the repository's HEAD as last seen by the watcher.
	Commit string `json:"commit,omitempty"`
	Branch string `json:"branch,omitempty"`
}

// startWatcher is watch.Start; tests replace it to see how a failure is handled.
var startWatcher = watch.Start

// warmFor returns the ready-copy keeper for root, starting it (and the watcher) on first
// use; nil when the setting turns it off.
func (s *server) warmFor(ctx context.Context, root string, settings Settings, caps clientCaps) *workspace.Warm {
	s.mu.Lock()
	f := s.fresh
	if f != nil && (!settings.watch() || f.root != root) {
		go f.close()
		s.fresh, f = nil, nil
	}
	s.mu.Unlock()
	if f != nil {
		f.sync(ctx)
		return f.warm
	}
	if !settings.watch() {
		return nil
	}
	// Started outside the lock: watching walks the whole folder.
	f, err := s.startFresh(root, caps)
	if err != nil {
		s.log.Printf("keeping a copy ready: %v; each run copies the folder instead", err)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != running || s.fresh != nil {
		go f.close() // shut down meanwhile, or (cannot happen: runs take turns) started twice
		return nil
	}
	s.fresh = f
	return f.warm
}

// startFresh makes the copy keeper and watches root; if the folder cannot be watched, the
// editor is asked to report changes (used for commits) and each run compares the whole
// folder by size and time instead.
func (s *server) startFresh(root string, caps clientCaps) (*fresh, error) {
	parent := s.opts.AgentWorkDir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	removeStaleCopies(parent)
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("frognano-ready-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	// Held while the server runs: a copy folder whose lock can be taken is stale, whatever
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
	f := &fresh{root: root, dir: dir, warm: warm, lock: lock}
	if h, err := watch.Head(context.Background(), root); err == nil {
		f.head = h
	}
	w, err := startWatcher(context.Background(), root, watch.Options{Logf: s.log.Printf}, f.onBatch(s))
	if err != nil {
		f.why = err.Error()
		s.log.Printf("not watching %s: %v", root, err)
		if caps.watchedFiles {
			go s.registerWatchedFiles()
		}
	} else {
		f.watcher = w
		warm.Watching(w.Unwatched)
	}
	return f, nil
}

// sync makes sure the copy hears of every change made before the run was asked for (a
// file saved a moment ago may still be in the watcher's debounce); if the watcher cannot
// say, the whole folder is compared instead.
func (f *fresh) sync(ctx context.Context) {
	if f.watcher == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := f.watcher.Sync(ctx); err != nil {
		f.warm.ChangedAll()
	}
}

// onBatch receives the watcher's changes.
func (f *fresh) onBatch(s *server) func(watch.Batch) {
	return func(b watch.Batch) {
		if b.Overflow {
			f.warm.ChangedAll()
		} else {
			f.warm.Changed(b.Paths...)
		}
		if b.Head != nil {
			f.setHead(s, *b.Head)
		}
	}
}

// setHead records a new HEAD; the fine-tuning daemon will learn of new commits here.
func (f *fresh) setHead(s *server, h watch.HeadChange) {
	f.mu.Lock()
	old := f.head.New
	f.head = h
	f.mu.Unlock()
	if h.New != old {
		s.log.Printf("HEAD of %s is now %s (%s)", f.root, short(h.New), h.Branch)
	}
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// close stops watching and removes the ready copy.
func (f *fresh) close() {
	if f.watcher != nil {
		f.watcher.Close()
	}
	f.warm.Close()
	os.RemoveAll(f.dir)
	f.lock.Close()
}

func (f *fresh) status() FreshStatus {
	st := FreshStatus{Watching: f.watcher != nil, Why: f.why, Ready: f.warm.Ready()}
	if f.watcher != nil {
		select {
		case <-f.watcher.Done():
			// Each run then compares the folder (Sync fails, see sync).
			st.Watching, st.Why = false, "watching stopped: the folder was moved or removed; restart the server to watch it again"
		default:
			st.Folders = f.watcher.Stats().Folders
		}
	}
	f.mu.Lock()
	st.Commit, st.Branch = f.head.New, f.head.Branch
	f.mu.Unlock()
	return st
}

// registerWatchedFiles asks the editor to send workspace/didChangeWatchedFiles for every
// file (clients that watch the folder themselves can, when our watcher cannot).
func (s *server) registerWatchedFiles() {
	opts, err := json.Marshal(protocol.DidChangeWatchedFilesRegistrationOptions{Watchers: []protocol.FileSystemWatcher{{GlobPattern: protocol.Pattern("**/*")}}})
	if err != nil {
		s.log.Printf("registering for workspace/didChangeWatchedFiles: %v", err)
		return
	}
	err = s.client.RegisterCapability(context.Background(), &protocol.RegistrationParams{Registrations: []protocol.Registration{{
		ID: "frognano-watched-files", Method: protocol.MethodWorkspaceDidChangeWatchedFiles, RegisterOptions: protocol.LSPAny(opts),
	}}})
	if err != nil {
		s.log.Printf("registering for workspace/didChangeWatchedFiles: %v", err)
	}
}

// DidChangeWatchedFiles honours the editor's file events: the paths are refreshed in the
// ready copy (they add to what the watcher reports), and a change under .git re-reads HEAD.
func (s *server) DidChangeWatchedFiles(ctx context.Context, p *protocol.DidChangeWatchedFilesParams) error {
	s.mu.Lock()
	f := s.fresh
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	gitChanged := false
	for _, ev := range p.Changes {
		path := ev.URI.FsPath()
		rel, err := filepath.Rel(f.root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
			gitChanged = true
			continue
		}
		f.warm.Changed(rel)
	}
	if gitChanged {
		if h, err := watch.Head(ctx, f.root); err == nil {
			f.setHead(s, h)
		}
	}
	return nil
}

// removeStaleCopies removes the ready copies of servers that were killed before they could
// clean up: their lock is free. A folder without a lock (being made, or older) is judged by
// the process id in its name.
func removeStaleCopies(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "frognano-ready-*-*"))
	for _, d := range dirs {
		if lock, err := os.Open(filepath.Join(d, ".lock")); err == nil {
			free := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
			st, err := lock.Stat()
			lock.Close()
			// A minute old at least: a server that just made its lock may not hold it yet.
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

package lsp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/agent/workspace/keeper"
	"github.com/frognano/frognano/watch"
)

// The server keeps the workspace's next private copy ready and up to date with a
// keeper.Keeper: the folder is watched, and the editor's workspace/didChangeWatchedFiles are
// honoured too. It starts with the first run, so a server that never runs the agent neither
// watches nor copies anything.

// FreshStatus is the "workspace" part of frognano/status.
type FreshStatus = keeper.Status

// startWatcher is watch.Start; tests replace it to see how a failure is handled.
var startWatcher = watch.Start

// warmFor returns the ready copy for root, starting its keeper (and the watcher) on first
// use; nil when the setting turns it off.
func (s *server) warmFor(ctx context.Context, root string, settings Settings, caps clientCaps) *workspace.Warm {
	s.mu.Lock()
	k := s.keeper
	if k != nil && (!settings.watch() || k.Root() != root) {
		go k.Close()
		s.keeper, k = nil, nil
	}
	s.mu.Unlock()
	if k != nil {
		k.Sync(ctx)
		return k.Warm()
	}
	if !settings.watch() {
		return nil
	}
	// Started outside the lock: watching walks the whole folder.
	k, err := keeper.Start(root, keeper.Options{Parent: s.opts.AgentWorkDir, Logf: s.log.Printf, StartWatcher: startWatcher})
	if err != nil {
		s.log.Printf("keeping a copy ready: %v; each run copies the folder instead", err)
		return nil
	}
	if !k.Watching() && caps.watchedFiles {
		// The editor is asked to report changes (used for commits); each run compares the
		// whole folder by size and time besides.
		go s.registerWatchedFiles()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != running || s.keeper != nil {
		go k.Close() // shut down meanwhile, or (cannot happen: runs take turns) started twice
		return nil
	}
	s.keeper = k
	return k.Warm()
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
	k := s.keeper
	s.mu.Unlock()
	if k == nil {
		return nil
	}
	gitChanged := false
	for _, ev := range p.Changes {
		path := ev.URI.FsPath()
		rel, err := filepath.Rel(k.Root(), path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
			gitChanged = true
			continue
		}
		k.Changed(rel)
	}
	if gitChanged {
		k.ReadHead(ctx)
	}
	return nil
}

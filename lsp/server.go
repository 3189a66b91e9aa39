package lsp

import (
	"context"
	"fmt"
	"io"
	"log"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace/keeper"
	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/ollama"
)

// Options configure a server instance (the process, not the user: that is Settings).
type Options struct {
	// Env is the Ollama configuration from the environment; Settings override it.
	Env ollama.Config
	// Log receives the server's log (the editor's log shows window/logMessage too).
	Log io.Writer
	// CacheDir holds explanations shown as documents.
	CacheDir string
	// AgentWorkDir, when set, is the parent of the agents' private copies (tests).
	AgentWorkDir string
	// RegistryDir holds fine-tuning's model registries (finetune/registry); "" is
	// registry.DefaultDir, where `frognano finetune` keeps them.
	RegistryDir string
	// Frognano is the frognano binary whose `finetune daemon-run` is fine-tuning's background
	// process; "" is this process's own binary (the server is `frognano lsp`).
	Frognano string
}

// server implements protocol.Server. Handlers are thin: they decode, look up state and
// call the logic in actions.go, run.go and edit.go.
type server struct {
	protocol.UnimplementedServer
	client    protocol.Client
	opts      Options
	docs      *document.Store
	funcs     funcCache
	log       *log.Logger
	closeConn func()
	// exited is closed by the exit notification: Serve returns then, whether or not the
	// client closes its end (a read blocked on stdin cannot be interrupted).
	exited     chan struct{}
	exitedOnce sync.Once

	// mu guards the fields below it.
	mu       sync.Mutex
	settings Settings
	caps     clientCaps
	root     string // the workspace folder, a local path
	state    lifecycle
	// runs are the agent runs in progress, by id; each can be cancelled.
	runs map[int]*run
	// byToken maps a progress token to its run, for window/workDoneProgress/cancel.
	byToken map[string]*run
	nextRun int
	// slot is held by the run in progress: one run per workspace at a time.
	slot chan struct{}
	// keeper keeps the next run's copy ready; nil until the first run.
	keeper *keeper.Keeper
	// trace is the client's $/setTrace value: "off" (or empty), "messages" or "verbose".
	trace protocol.TraceValue
	// warned are the warnings logged once (warnOnce).
	warned map[string]bool

	// summaries keeps fine-tuning's report Summary between status requests (it has its own
	// lock: collecting it must not hold mu).
	summaries summaryCache
}

type lifecycle int

const (
	starting lifecycle = iota
	running
	shutDown // after shutdown, before exit
	exited
	exitedClean // exit after shutdown: exit code 0
)

// clientCaps are what the client told us it can do, reduced to what we use.
type clientCaps struct {
	progress        bool // window/workDoneProgress
	showDocument    bool
	configuration   bool // workspace/configuration
	documentChanges bool
	resourceOps     map[string]bool // create, rename, delete
	annotations     bool            // change annotations (preview/confirmation)
	resolveEdit     bool            // codeAction/resolve of "edit"
	codeActionData  bool
	watchedFiles    bool // dynamic registration of workspace/didChangeWatchedFiles
}

func newServer(client protocol.Client, opts Options) *server {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &server{
		client:  client,
		opts:    opts,
		docs:    document.NewStore(),
		log:     log.New(opts.Log, "frognano-lsp: ", log.LstdFlags|log.Lmsgprefix),
		runs:    map[int]*run{},
		byToken: map[string]*run{},
		slot:    make(chan struct{}, 1),
		exited:  make(chan struct{}),
	}
}

// logf writes to the log file and, best effort, to the editor's log (and its trace).
func (s *server) logf(ctx context.Context, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	s.log.Print(msg)
	// Detached: the request's context may be recycled before this goroutine runs.
	go s.client.LogMessage(context.Background(), &protocol.LogMessageParams{Type: protocol.MessageTypeLog, Message: msg})
	s.tracef(msg, "")
}

// tracef sends $/logTrace when the client turned tracing on; verbose is sent only when it
// asked for "verbose".
func (s *server) tracef(msg, verbose string) {
	s.mu.Lock()
	trace := s.trace
	s.mu.Unlock()
	if trace != protocol.TraceValueMessages && trace != protocol.TraceValueVerbose {
		return
	}
	p := &protocol.LogTraceParams{Message: msg}
	if trace == protocol.TraceValueVerbose && verbose != "" {
		p.Verbose = &verbose
	}
	// In order, unlike logMessage: a trace is read as a sequence.
	if err := s.client.LogTrace(context.Background(), p); err != nil {
		s.log.Printf("$/logTrace: %v", err)
	}
}

// show tells the user something in the editor's message area.
func (s *server) show(ctx context.Context, typ protocol.MessageType, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	s.log.Print(msg)
	if err := s.client.ShowMessage(context.Background(), &protocol.ShowMessageParams{Type: typ, Message: msg}); err != nil {
		s.log.Printf("showMessage: %v", err)
	}
}

func (s *server) snapshotSettings() (Settings, clientCaps, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings, s.caps, s.root
}

func (s *server) agentModel(cfg ollama.Config) (agent.Model, error) { return cfg.Client() }

// stopAll cancels every run, stops watching and removes the ready copy; used when the
// connection ends.
func (s *server) stopAll() {
	s.mu.Lock()
	for _, r := range s.runs {
		r.cancel()
	}
	k := s.keeper
	s.keeper = nil
	s.mu.Unlock()
	if k != nil {
		k.Close()
	}
}

func (s *server) exitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == exitedClean {
		return 0
	}
	return 1
}

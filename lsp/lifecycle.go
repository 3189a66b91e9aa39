package lsp

import (
	"context"
	"slices"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/internal/buildinfo"
)

func (s *server) Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != starting {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "initialize was already called")
	}
	// Initialize runs before the message is released: keep no string that aliases it.
	s.caps = readCaps(&p.Capabilities)
	s.root = strings.Clone(rootOf(p))
	s.trace = protocol.TraceValue(strings.Clone(string(p.Trace)))
	if err := s.settings.merge(p.InitializationOptions); err != nil {
		s.log.Printf("initializationOptions: %v (ignored)", err)
	}
	s.state = running

	resolve := s.caps.resolveEdit
	change := protocol.TextDocumentSyncKindIncremental
	openClose, save := true, true
	return &protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			PositionEncoding: protocol.PositionEncodingKindUTF16,
			TextDocumentSync: &protocol.TextDocumentSyncOptions{OpenClose: &openClose, Change: &change,
				Save: protocol.Boolean(save)},
			CodeActionProvider: &protocol.CodeActionOptions{
				CodeActionKinds: kinds(),
				ResolveProvider: &resolve,
			},
			ExecuteCommandProvider: protocol.ExecuteCommandOptions{Commands: commandNames()},
		},
		ServerInfo: protocol.ServerInfo{Name: "frognano", Version: protocol.NewOptional(buildinfo.String())},
	}, nil
}

func (s *server) Initialized(ctx context.Context, _ *protocol.InitializedParams) error {
	s.mu.Lock()
	pull := s.caps.configuration
	s.mu.Unlock()
	if pull {
		// A request to the client must not run on the read loop, which reads its reply; it
		// outlives this handler, whose context ends when it returns.
		go s.pullConfiguration(context.WithoutCancel(ctx))
	}
	return nil
}

func (s *server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = shutDown
	for _, r := range s.runs {
		r.cancel()
	}
	return nil
}

func (s *server) Exit(ctx context.Context) error {
	s.mu.Lock()
	if s.state == shutDown {
		s.state = exitedClean
	} else {
		s.state = exited
	}
	s.mu.Unlock()
	s.exitedOnce.Do(func() { close(s.exited) })
	if s.closeConn != nil {
		// Not inline: closing waits for the read loop, which is running this handler.
		go s.closeConn()
	}
	return nil
}

func (s *server) SetTrace(ctx context.Context, p *protocol.SetTraceParams) error {
	s.log.Printf("trace set to %s", p.Value)
	s.mu.Lock()
	s.trace = protocol.TraceValue(strings.Clone(string(p.Value)))
	s.mu.Unlock()
	return nil
}

func (s *server) DidChangeConfiguration(ctx context.Context, p *protocol.DidChangeConfigurationParams) error {
	s.mu.Lock()
	err := s.settings.merge(p.Settings)
	pull := s.caps.configuration
	s.mu.Unlock()
	if err != nil {
		s.logf(ctx, "didChangeConfiguration: %v (ignored)", err)
	}
	if pull {
		go s.pullConfiguration(context.WithoutCancel(ctx))
	}
	return nil
}

// pullConfiguration asks the client for the "frognano" section.
func (s *server) pullConfiguration(ctx context.Context) {
	section := "frognano"
	items, err := s.client.Configuration(ctx, &protocol.ConfigurationParams{Items: []protocol.ConfigurationItem{{Section: &section}}})
	if err != nil || len(items) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.settings.merge(items[0]); err != nil {
		s.log.Printf("workspace/configuration: %v (ignored)", err)
	}
}

func readCaps(c *protocol.ClientCapabilities) clientCaps {
	caps := clientCaps{resourceOps: map[string]bool{}}
	if w := c.Window; w != nil {
		caps.progress = w.WorkDoneProgress != nil && *w.WorkDoneProgress
		caps.showDocument = w.ShowDocument != nil && w.ShowDocument.Support
	}
	if w := c.Workspace; w != nil {
		caps.configuration = w.Configuration != nil && *w.Configuration
		caps.watchedFiles = w.DidChangeWatchedFiles != nil && w.DidChangeWatchedFiles.DynamicRegistration != nil && *w.DidChangeWatchedFiles.DynamicRegistration
		if e := w.WorkspaceEdit; e != nil {
			caps.documentChanges = e.DocumentChanges != nil && *e.DocumentChanges
			for _, op := range e.ResourceOperations {
				caps.resourceOps[strings.Clone(string(op))] = true
			}
			caps.annotations = e.ChangeAnnotationSupport != nil
		}
	}
	if td := c.TextDocument; td != nil && td.CodeAction != nil {
		caps.resolveEdit = slices.Contains(td.CodeAction.ResolveSupport.Properties, "edit")
		caps.codeActionData = td.CodeAction.DataSupport != nil && *td.CodeAction.DataSupport
	}
	return caps
}

// rootOf picks the workspace folder: the first workspace folder, else rootUri, else rootPath.
func rootOf(p *protocol.InitializeParams) string {
	if folders, ok := p.WorkspaceFolders.Get(); ok && len(folders) > 0 {
		return uri.URI(folders[0].URI).FsPath()
	}
	if p.RootURI != nil && *p.RootURI != "" {
		return p.RootURI.FsPath()
	}
	if r, ok := p.RootPath.Get(); ok {
		return r
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

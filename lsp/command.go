package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// Commands the server executes (workspace/executeCommand).
const (
	CommandRun    = "frognano.run"    // arguments: [actionData]
	CommandAsk    = "frognano.ask"    // arguments: [{"uri", "range", "instruction"}]
	CommandCancel = "frognano.cancel" // no arguments: cancel the run in progress
	// CommandFineTuneStart starts fine-tuning the workspace's repository in the background
	// (`frognano finetune start`); no arguments. Result: {"repo", "pid", "already"}.
	CommandFineTuneStart = "frognano.finetune.start"
	// CommandFineTuneStop stops it (`frognano finetune stop`); no arguments. Result:
	// {"repo", "pid" (0: it was not running), "killed"}.
	CommandFineTuneStop = "frognano.finetune.stop"
	// CommandFineTuneReport writes the report page (`frognano finetune report`) and asks
	// the client to open it in the browser (window/showDocument, external); no arguments.
	// Result: {"repo", "path", "shown"}: a client that did not show it opens path itself.
	CommandFineTuneReport = "frognano.finetune.report"
)

// serverCommand is one command of the server: its handler gets the command's arguments
// and returns its result.
type serverCommand struct {
	name string
	run  func(s *server, ctx context.Context, args []protocol.LSPAny) (any, error)
}

// commands are the server's commands, in the order it advertises them (initialize's
// executeCommandProvider); ExecuteCommand dispatches through the same table.
var commands = []serverCommand{
	{CommandRun, func(s *server, ctx context.Context, args []protocol.LSPAny) (any, error) {
		return s.runCommand(ctx, CommandRun, args)
	}},
	{CommandAsk, func(s *server, ctx context.Context, args []protocol.LSPAny) (any, error) {
		return s.runCommand(ctx, CommandAsk, args)
	}},
	{CommandCancel, func(s *server, _ context.Context, _ []protocol.LSPAny) (any, error) {
		return map[string]int{"cancelled": s.cancelAll()}, nil
	}},
	{CommandFineTuneStart, (*server).fineTuneStart},
	{CommandFineTuneStop, (*server).fineTuneStop},
	{CommandFineTuneReport, (*server).fineTuneReport},
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

func (s *server) ExecuteCommand(ctx context.Context, p *protocol.ExecuteCommandParams) (protocol.LSPAny, error) {
	for _, c := range commands {
		if c.name == p.Command {
			res, err := c.run(s, ctx, p.Arguments)
			if err != nil || res == nil {
				return nil, err
			}
			return json.Marshal(res)
		}
	}
	return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "unknown command "+p.Command)
}

// runCommand is frognano.run and frognano.ask: an agent run whose edit is applied.
func (s *server) runCommand(ctx context.Context, command string, args []protocol.LSPAny) (any, error) {
	if len(args) == 0 {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, command+" needs an argument")
	}
	var d actionData
	if err := json.Unmarshal(args[0], &d); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("%s: bad argument: %v", command, err))
	}
	if command == CommandAsk {
		d.Action = "ask"
		if d.Title == "" {
			d.Title = "Ask FrogNano"
		}
	}
	_, err := s.runAction(ctx, d, true)
	return nil, err
}

// fineTuneTokens numbers the fine-tuning commands' progress tokens.
var fineTuneTokens atomic.Int64

// fineTuning runs one fine-tuning command for the workspace's repository under progress and
// delivers its outcome: do returns the command's result and a message for the user (none
// when there is nothing to say), or an error, which the user is shown and the client gets.
func (s *server) fineTuning(ctx context.Context, title string, do func(repo string, settings Settings, caps clientCaps) (any, string, error)) (any, error) {
	settings, caps, root := s.snapshotSettings()
	fail := func(err error) (any, error) {
		s.show(ctx, protocol.MessageTypeError, "FrogNano: %s: %v", title, err)
		return nil, jsonrpc2.NewError(jsonrpc2.InternalError, err.Error())
	}
	if root == "" {
		return fail(errors.New("the editor opened no workspace folder; open the repository's folder"))
	}
	repo, err := workspaceRepo(root)
	if err != nil {
		return fail(err)
	}
	prog := s.beginProgress(ctx, caps, fmt.Sprintf("frognano-finetune-%d", fineTuneTokens.Add(1)), "FrogNano: "+title, false)
	res, msg, err := do(repo, settings, caps)
	if err != nil {
		prog.end("failed")
		return fail(err)
	}
	prog.end(msg)
	if msg != "" {
		s.show(ctx, protocol.MessageTypeInfo, "FrogNano: %s", msg)
	}
	return res, nil
}

func (s *server) fineTuneStart(ctx context.Context, _ []protocol.LSPAny) (any, error) {
	return s.fineTuning(ctx, "Start fine-tuning", func(repo string, settings Settings, _ clientCaps) (any, string, error) {
		exe := s.opts.Frognano
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				return nil, "", err
			}
		}
		cfg := settings.ollamaConfig(s.opts.Env)
		pid, already, err := startFineTuning(startRequest{Repo: repo, Model: cfg.Model, Host: cfg.Host,
			Weights: settings.FinetuneWeights, Hours: settings.FinetuneHours, Frognano: exe, Env: os.Environ()})
		if err != nil {
			return nil, "", err
		}
		msg := fmt.Sprintf("fine-tuning of %s started in the background (pid %d); the status shows its progress", repo, pid)
		if already {
			msg = fmt.Sprintf("fine-tuning of %s is already running (pid %d); stop it first to change its settings", repo, pid)
		}
		return map[string]any{"repo": repo, "pid": pid, "already": already}, msg, nil
	})
}

func (s *server) fineTuneStop(ctx context.Context, _ []protocol.LSPAny) (any, error) {
	return s.fineTuning(ctx, "Stop fine-tuning", func(repo string, _ Settings, _ clientCaps) (any, string, error) {
		st, err := stopFineTuning(ctx, repo)
		if err != nil {
			return nil, "", err
		}
		msg := fmt.Sprintf("stopped fine-tuning of %s (pid %d); the next start resumes its iteration", repo, st.PID)
		switch {
		case st.PID == 0:
			msg = fmt.Sprintf("fine-tuning of %s is not running", repo)
		case st.Killed:
			msg = fmt.Sprintf("stopped fine-tuning of %s (pid %d): it did not end within %v of SIGTERM and was killed; the next start resumes its iteration", repo, st.PID, stopGrace)
		}
		return map[string]any{"repo": repo, "pid": st.PID, "killed": st.Killed}, msg, nil
	})
}

func (s *server) fineTuneReport(ctx context.Context, _ []protocol.LSPAny) (any, error) {
	return s.fineTuning(ctx, "Show fine-tuning report", func(repo string, _ Settings, caps clientCaps) (any, string, error) {
		path, started, err := writeReport(repo, s.opts.RegistryDir)
		if err != nil {
			return nil, "", err
		}
		shown := false
		if caps.showDocument {
			// external: the page is HTML with its plots beside it, for the browser, not a
			// text editor.
			res, err := s.client.ShowDocument(ctx, &protocol.ShowDocumentParams{URI: uri.File(path), External: ptr(true)})
			if err != nil {
				s.logf(ctx, "window/showDocument %s: %v", path, err)
			}
			shown = err == nil && res != nil && res.Success
		}
		msg := ""
		if !started {
			msg = "fine-tuning has not run on " + repo + " yet: the report says how to start"
		}
		return map[string]any{"repo": repo, "path": path, "shown": shown}, msg, nil
	})
}

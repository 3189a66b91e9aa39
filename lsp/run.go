package lsp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/workspace"
	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/ollama"
)

// run is an agent run in progress.
type run struct {
	id     int
	title  string
	token  string
	cancel context.CancelFunc
}

// errBusy is the answer when a run is already in progress and WhenBusy is "reject".
type errBusy struct{ title string }

func (e errBusy) Error() string {
	return fmt.Sprintf("FrogNano is already working on %q; wait for it to finish or cancel it", e.title)
}

// runAction runs the agent for one action. With apply, the result is sent to the editor
// as workspace/applyEdit (executeCommand); without, it is returned (codeAction/resolve).
// Every failure is shown to the user and also returned to the request.
func (s *server) runAction(ctx context.Context, d actionData, apply bool) (*protocol.WorkspaceEdit, error) {
	edit, err := s.doRun(ctx, d, apply)
	if err != nil {
		var busy errBusy
		switch {
		case errors.As(err, &busy):
			s.show(ctx, protocol.MessageTypeWarning, "%v", err)
		case errors.Is(err, context.Canceled):
			s.show(ctx, protocol.MessageTypeInfo, "FrogNano: %s was cancelled; nothing was changed", d.Title)
			return nil, jsonrpc2.NewError(requestCancelled, "cancelled")
		default:
			s.show(ctx, protocol.MessageTypeError, "FrogNano: %s failed: %v", d.Title, err)
		}
		return nil, jsonrpc2.NewError(jsonrpc2.InternalError, err.Error())
	}
	return edit, nil
}

// requestCancelled is the LSP error code for a cancelled request.
const requestCancelled = -32800

// doRun runs the agent for one action (runAgent) and delivers its result (deliver). The
// workspace's run slot is held through both: the next action starts once the editor has
// this one's edit, and works on the files with it.
func (s *server) doRun(ctx context.Context, d actionData, apply bool) (*protocol.WorkspaceEdit, error) {
	settings, caps, root := s.snapshotSettings()
	if root == "" {
		return nil, errors.New("the editor opened no workspace folder; open the project's folder")
	}
	rel := relPath(root, d.URI)
	task, err := instruction(d, rel)
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.acquire(ctx, settings, d.Title); err != nil {
		return nil, err
	}
	defer func() { <-s.slot }()
	r := s.register(d.Title, cancel)
	defer s.unregister(r)

	j := &job{d: d, settings: settings, caps: caps, root: root, prog: s.beginProgress(ctx, caps, r.token, "FrogNano: "+d.Title, true)}
	out, err := s.runAgent(ctx, j, task)
	if out.warm != nil {
		// The next run's copy is made once this one is over, its edit delivered, not
		// alongside it.
		defer out.warm.Prefetch()
	}
	if err != nil {
		return nil, err
	}
	return s.deliver(ctx, j, out, apply)
}

// job is one action being run: what was asked, and the settings, editor and folder it
// runs with.
type job struct {
	d        actionData
	settings Settings
	caps     clientCaps
	root     string
	prog     *progress
}

// outcome is what runAgent hands to deliver.
type outcome struct {
	res *agent.Result
	// base is the editor's buffers the agent started from: the edit is made against them.
	base map[string]document.Snapshot
	// warm is the ready copy the run took, if any; set even when the run failed.
	warm *workspace.Warm
}

// runAgent runs the agent on task and returns its result when it finished (ExitDone).
// Any other end is an error, and the progress is ended with it; a cancelled run's error
// is context.Canceled.
func (s *server) runAgent(ctx context.Context, j *job, task string) (outcome, error) {
	var out outcome
	configured := j.settings.ollamaConfig(s.opts.Env)
	cfg, ft := s.chooseModel(configured, j.root)
	if ft != nil {
		// Said before the run, so that a user reading the log knows which model answered.
		s.logf(ctx, "%s: using the %s", j.d.Title, ft.describe())
		j.prog.report("using the " + ft.describe())
	}
	model, err := s.agentModel(cfg)
	if err != nil {
		j.prog.end("failed")
		return out, err
	}
	out.base = s.openDocuments(j.root)
	overlays := map[string][]byte{}
	for rel, doc := range out.base {
		overlays[rel] = []byte(doc.Text)
	}
	out.warm = s.warmFor(ctx, j.root, j.settings, j.caps)
	trajDir := filepath.Join(s.cacheDir(), "trajectories")
	run := func() (*agent.Result, error) {
		return agent.Run(ctx, model, agent.Task{Dir: j.root, Instruction: task, Overlays: overlays, Warm: out.warm}, agent.Options{
			Model: cfg.Model, NumCtx: cfg.NumCtx, MaxSteps: j.settings.MaxSteps, MaxTime: j.settings.maxTime(),
			WorkDir: s.opts.AgentWorkDir,
			Explain: func(err error) string { return ollama.Explain(err, cfg).Error() },
			// A name of the agent's own (start time and a random part): two runs of one
			// action in the same millisecond would share a made-up one, and the second fail.
			TrajectoryDir: trajDir,
			OnEvent:       j.prog.event,
		})
	}
	if out.warm == nil || !out.warm.Ready() {
		j.prog.report("copying the workspace") // seconds on a large repository
	}
	res, err := run()
	if p := ollama.Explain(err, cfg); p != nil && p.Kind == ollama.KindModelMissing && ft != nil {
		// The registry names a model that left Ollama since it last reconciled (removed
		// by hand): it cannot be pulled, and the base it came from still serves.
		s.warnOnce(fmt.Sprintf("FrogNano: the fine-tuned model %s is no longer in Ollama, so the configured model %s is used (`frognano finetune models` lists the fine-tuned ones)", cfg.Model, configured.Model))
		cfg, ft = configured, nil
		res, err = run()
	}
	if p := ollama.Explain(err, cfg); p != nil && p.Kind == ollama.KindModelMissing && s.offerPull(ctx, j.caps, cfg, j.d.Title) {
		res, err = run()
	}
	if err != nil {
		j.prog.end("failed")
		if errors.Is(err, agent.ErrNoTools) {
			return out, fmt.Errorf("%w: choose a model with tool support (setting frognano.model) or import FrogNano with `frognano model import`", err)
		}
		return out, ollama.Explain(err, cfg)
	}
	s.logf(ctx, "%s: %s after %d steps with model %s; trajectory %s", j.d.Title, res.Exit, res.Steps, cfg.Model, res.Trajectory)
	switch res.Exit {
	case agent.ExitDone:
	case agent.ExitCancelled:
		j.prog.end("cancelled")
		return out, context.Canceled
	default:
		j.prog.end(string(res.Exit))
		return out, fmt.Errorf("the agent stopped (%s): %s. Its partial changes were not applied; see the trajectory at %s", res.Exit, res.Error, res.Trajectory)
	}
	out.res = res
	return out, nil
}

// deliver gives the user a finished run's result: an explanation is shown; changes become
// a WorkspaceEdit, returned for a preview (codeAction/resolve) or, with apply, sent to the
// editor as workspace/applyEdit. It ends the progress.
func (s *server) deliver(ctx context.Context, j *job, out outcome, apply bool) (*protocol.WorkspaceEdit, error) {
	d, res, caps := j.d, out.res, j.caps
	if d.Action == "explain" {
		j.prog.end("done")
		return nil, s.showAnswer(ctx, caps, d, res.Answer)
	}
	if res.Changes == nil || len(res.Changes.Files) == 0 {
		j.prog.end("no changes")
		s.show(ctx, protocol.MessageTypeInfo, "FrogNano finished %s without changing files. %s", d.Title, res.Answer)
		return nil, nil
	}
	edit, skipped, err := buildEdit(res.Changes, out.base, s.docs, j.root, caps, j.settings.preview(), d.Title, res.Answer)
	if err != nil {
		j.prog.end("failed")
		return nil, err
	}
	if len(skipped) > 0 {
		s.show(ctx, protocol.MessageTypeWarning, "FrogNano left out some of its changes: %s", strings.Join(skipped, "; "))
	}
	if tools := res.Changes.ToolSettings(); len(tools) > 0 {
		s.show(ctx, protocol.MessageTypeWarning, "FrogNano's change for %s touches files that configure tools which may run code on their own (%s): read them before you accept it.", d.Title, strings.Join(tools, ", "))
	}
	summary := fmt.Sprintf("%d files changed", len(res.Changes.Files)-len(skipped))
	links := linkChanges(res.Changes, j.root)
	if !apply {
		if len(links.Files) > 0 {
			s.show(ctx, protocol.MessageTypeWarning, "FrogNano's change for %s also touches symbolic links, which a previewed edit cannot carry: %s. Turn the preview off to have them applied, or make them yourself.", d.Title, linkNames(links))
		}
		j.prog.end(summary)
		return edit, nil
	}
	label := "FrogNano: " + d.Title
	result := &protocol.ApplyWorkspaceEditResult{Applied: true}
	if len(edit.DocumentChanges) > 0 || len(edit.Changes) > 0 {
		result, err = s.client.ApplyEdit(ctx, &protocol.ApplyWorkspaceEditParams{Label: &label, Edit: *edit})
	}
	if err == nil && result.Applied && len(links.Files) > 0 {
		if lerr := workspace.Apply(j.root, links); lerr != nil {
			s.show(ctx, protocol.MessageTypeWarning, "FrogNano applied the edit for %s but not its symbolic links: %v", d.Title, lerr)
		}
	}
	switch {
	case err != nil:
		j.prog.end("not applied")
		return nil, fmt.Errorf("sending the edit to the editor: %w", err)
	case !result.Applied:
		j.prog.end("not applied")
		reason := "no reason given"
		if result.FailureReason != nil {
			reason = *result.FailureReason
		}
		s.show(ctx, protocol.MessageTypeWarning, "Your editor did not apply FrogNano's change for %s (%s). If you edited the file meanwhile, run the action again.", d.Title, reason)
		return nil, nil
	}
	j.prog.end(summary)
	if res.Answer != "" {
		s.logf(ctx, "%s: %s", d.Title, res.Answer)
	}
	return nil, nil
}

// linkNames lists the links of c as "path -> target" (or "path removed").
func linkNames(c *workspace.Changes) string {
	var names []string
	for _, f := range c.Files {
		if f.IsLink() {
			names = append(names, f.Path+" -> "+string(f.Content))
		} else {
			names = append(names, f.Path+" ("+string(f.Kind)+")")
		}
	}
	return strings.Join(names, ", ")
}

// acquire takes the workspace's run slot: at once, or by waiting when WhenBusy is "queue".
func (s *server) acquire(ctx context.Context, settings Settings, title string) error {
	select {
	case s.slot <- struct{}{}:
		return nil
	default:
	}
	if settings.WhenBusy != "queue" {
		return errBusy{s.currentTitle()}
	}
	select {
	case s.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *server) currentTitle() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		return r.title
	}
	return "another action"
}

func (s *server) register(title string, cancel context.CancelFunc) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextRun++
	r := &run{id: s.nextRun, title: title, cancel: cancel, token: fmt.Sprintf("frognano-run-%d", s.nextRun)}
	s.runs[r.id] = r
	s.byToken[r.token] = r
	return r
}

func (s *server) unregister(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, r.id)
	delete(s.byToken, r.token)
}

func (s *server) cancelAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.runs {
		r.cancel()
	}
	return len(s.runs)
}

// openDocuments are the editor's buffers inside root, by relative path: the agent works on
// them as the user sees them, saved or not.
func (s *server) openDocuments(root string) map[string]document.Snapshot {
	out := map[string]document.Snapshot{}
	for _, d := range s.docs.All() {
		p := uri.URI(d.URI).FsPath()
		if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
			out[filepath.ToSlash(r)] = d
		}
	}
	return out
}

func (s *server) cacheDir() string {
	if s.opts.CacheDir != "" {
		return s.opts.CacheDir
	}
	return filepath.Join(ollama.CacheDir(), "lsp")
}

// showAnswer shows an explanation: as a Markdown document when the client can open one,
// else as a message.
func (s *server) showAnswer(ctx context.Context, caps clientCaps, d actionData, answer string) error {
	if answer == "" {
		answer = "(FrogNano gave no explanation.)"
	}
	if caps.showDocument {
		dir := filepath.Join(s.cacheDir(), "explanations")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			p := filepath.Join(dir, time.Now().UTC().Format("20060102-150405.000")+".md")
			text := "# " + d.Title + "\n\n" + answer + "\n"
			if err := os.WriteFile(p, []byte(text), 0o644); err == nil {
				res, err := s.client.ShowDocument(ctx, &protocol.ShowDocumentParams{URI: uri.File(p), TakeFocus: ptr(true)})
				if err == nil && res.Success {
					return nil
				}
			}
		}
	}
	s.show(ctx, protocol.MessageTypeInfo, "%s", answer)
	return nil
}

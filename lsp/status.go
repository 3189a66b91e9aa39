package lsp

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ollama/ollama/api"
	"go.lsp.dev/jsonrpc2"

	"github.com/frognano/frognano/ollama"
)

// MethodStatus is frognano's own request for the editors' status displays: which model,
// whether Ollama answers and has it, and what is running. Params: {} (or null; the library
// rejects a request with no params at all).
const MethodStatus = "frognano/status"

// Status is the answer to frognano/status.
type Status struct {
	OllamaHost string `json:"ollamaHost"`
	// Model is the model the next run uses: the configured one, or the fine-tuned model
	// that replaces it (FineTuned, absent otherwise).
	Model     string     `json:"model"`
	FineTuned *FineTuned `json:"fineTuned,omitempty"`
	// Ollama is "ok", "unreachable", or "error"; OllamaVersion is set when it answered.
	Ollama        string `json:"ollama"`
	OllamaVersion string `json:"ollamaVersion,omitempty"`
	// ModelPresent says Ollama has the model; Problem says what to do when something is wrong.
	ModelPresent bool     `json:"modelPresent"`
	Problem      string   `json:"problem,omitempty"`
	Running      []string `json:"running"`
	// Workspace is the watching of the folder; absent until the first run starts it.
	Workspace *FreshStatus `json:"workspace,omitempty"`
	// FineTuning is fine-tuning's state for the workspace's repository ("off" when it never
	// ran); absent without a workspace folder.
	FineTuning *FineTuning `json:"fineTuning,omitempty"`
}

// Request serves frognano's own methods; anything else is not found.
func (s *server) Request(ctx context.Context, method string, params any) (any, error) {
	if method != MethodStatus {
		return nil, jsonrpc2.NewError(jsonrpc2.MethodNotFound, "unknown method "+method)
	}
	b, err := json.Marshal(s.status(ctx))
	return jsonrpc2.RawMessage(b), err
}

func (s *server) status(ctx context.Context) Status {
	settings, _, root := s.snapshotSettings()
	configured := settings.ollamaConfig(s.opts.Env)
	cfg, ft := s.chooseModel(configured, root)
	st := Status{Model: cfg.Model, FineTuned: ft, Running: []string{}}
	if u, err := cfg.BaseURL(); err == nil {
		st.OllamaHost = u.String()
	}
	s.mu.Lock()
	for _, r := range s.runs {
		st.Running = append(st.Running, r.title)
	}
	k := s.keeper
	s.mu.Unlock()
	if k != nil {
		st.Workspace = ptr(k.Status())
	}
	if root != "" {
		if repo, err := workspaceRepo(root); err == nil {
			st.FineTuning = fineTuningStatus(repo, s.opts.RegistryDir, &s.summaries)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	client, err := cfg.Client()
	if err == nil {
		st.OllamaVersion, err = client.Version(ctx)
	}
	if err != nil {
		p := ollama.Explain(err, cfg)
		st.Ollama, st.Problem = "error", p.Error()
		if p.Kind == ollama.KindUnreachable {
			st.Ollama = "unreachable"
		}
		return st
	}
	st.Ollama = "ok"
	_, err = client.Show(ctx, &api.ShowRequest{Model: cfg.Model})
	if p := ollama.Explain(err, cfg); p != nil && p.Kind == ollama.KindModelMissing && ft != nil {
		// As a run would (runAgent): a fine-tuned model removed from Ollama gives way to
		// its base.
		cfg, st.Model, st.FineTuned = configured, configured.Model, nil
		_, err = client.Show(ctx, &api.ShowRequest{Model: cfg.Model})
	}
	if err != nil {
		st.Problem = ollama.Explain(err, cfg).Error()
		return st
	}
	st.ModelPresent = true
	return st
}

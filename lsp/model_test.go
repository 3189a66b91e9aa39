package lsp

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// fineTune does to e's workspace what fine-tuning does, through the real registry and the
// real Ollama: for each reply, the model of the next training step (a scripted model that
// gives only that reply) is imported and accepted by the gate, so the last is in use. base
// is the model fine-tuning started from. It returns the models' names.
func fineTune(t *testing.T, srv *ollamatest.Server, e *editor, base string, replies ...string) []string {
	t.Helper()
	ctx := context.Background()
	repo, err := filepath.EvalSymlinks(e.root)
	if err != nil {
		t.Fatal(err)
	}
	// The registry names the server "localhost" where the editor's setting says 127.0.0.1:
	// the same server, which the language server and `finetune rollback` must both see.
	_, port, err := net.SplitHostPort(srv.Host)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, registry.Options{Repo: repo, Client: srv.Client, Host: "http://localhost:" + port, Base: base, StateDir: e.registryDir})
	if err != nil {
		t.Fatal(err)
	}
	same := map[string]gate.Result{}
	for i := range 30 {
		same["task-"+strconv.Itoa(i)] = gate.Result{Successes: 4, Attempts: 8}
	}
	var names []string
	for i, reply := range replies {
		m, err := reg.Import(ctx, i+1, func(_ context.Context, name string) error {
			srv.Scripted(name, modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: reply}}})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		serving, _, _, err := reg.Serving()
		if err != nil {
			t.Fatal(err)
		}
		if v, err := reg.Judge(ctx, m.Name, serving, same, same, gate.DefaultRule()); err != nil || !v.Accept {
			t.Fatalf("judging %s: %+v %v", m.Name, v, err)
		}
		names = append(names, m.Name)
	}
	return names
}

// explainAdd runs "Explain Add" and returns the explanation the editor was shown: the
// scripted models each give a reply of their own, so it says which model answered.
func (e *editor) explainAdd(t *testing.T) string {
	t.Helper()
	e.open("calc.go")
	if err := e.execute(context.Background(), find(t, e.actions("calc.go", "return a - b", true), "Explain Add")); err != nil {
		t.Fatalf("explain: %v (messages %q)", err, e.shownMessages())
	}
	e.mu.Lock()
	shown := e.shown[len(e.shown)-1]
	e.mu.Unlock()
	b, err := os.ReadFile(uri.URI(shown).FsPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(strings.TrimPrefix(string(b), "# Explain Add\n"))
}

func (e *editor) logged() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.logs, "\n")
}

// TestFineTunedModelServes: once fine-tuning's registry has a model in use for the
// workspace, the next run chats with it and frognano/status names it; the user's choice of
// another model wins; `frognano finetune rollback` (the real binary) switches back, and the
// next run uses the previous model, with no restart.
func TestFineTunedModelServes(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "ft-base", modelgen.Turn{Content: "The base answers."})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	if got := e.explainAdd(t); got != "The base answers." {
		t.Fatalf("before fine-tuning: %q", got)
	}
	if st := e.status(); st.Model != "ft-base" || st.FineTuned != nil {
		t.Fatalf("status before fine-tuning: %+v", st)
	}

	names := fineTune(t, srv, e, "ft-base", "Step one answers.", "Step two answers.")
	if got := e.explainAdd(t); got != "Step two answers." {
		t.Fatalf("with step 2 in use: %q", got)
	}
	st := e.status()
	if want := (FineTuned{Model: names[1], Step: 2, Base: "ft-base"}); st.Model != names[1] || st.FineTuned == nil || *st.FineTuned != want || !st.ModelPresent {
		t.Fatalf("status with step 2 in use: %+v (fineTuned %+v)", st, st.FineTuned)
	}
	if log := e.logged(); !strings.Contains(log, "Explain Add: using the fine-tuned model "+names[1]+" (step 2, from ft-base)") ||
		!strings.Contains(log, "with model "+names[1]+";") {
		t.Errorf("the log does not name the fine-tuned model:\n%s", log)
	}
	if !strings.Contains(strings.Join(e.progressMessages(), "|"), "report:using the fine-tuned model "+names[1]) {
		t.Errorf("the progress does not name the fine-tuned model: %q", e.progressMessages())
	}

	// The user's explicit choice of another model wins over the registry.
	other := scripted(t, srv, "ft-other", modelgen.Turn{Content: "The other model answers."})
	e.server.DidChangeConfiguration(context.Background(), &protocol.DidChangeConfigurationParams{Settings: protocol.LSPAny(`{"frognano": {"model": "ft-other"}}`)})
	e.waitFor(30*time.Second, "the new setting", func() bool { return e.status().Model == other.Model })
	if got := e.explainAdd(t); got != "The other model answers." {
		t.Fatalf("with another model chosen: %q", got)
	}
	e.server.DidChangeConfiguration(context.Background(), &protocol.DidChangeConfigurationParams{Settings: protocol.LSPAny(`{"frognano": {"model": "ft-base"}}`)})
	e.waitFor(30*time.Second, "the base setting again", func() bool { return e.status().Model == names[1] })

	cmd := exec.Command(frognanoBinary(t), "finetune", "rollback", "--repo", e.root)
	cmd.Env = append(os.Environ(), "OLLAMA_HOST="+srv.Host, "FROGNANO_CACHE="+e.registryCache)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rolled back from "+names[1]+" to "+names[0]) {
		t.Fatalf("frognano finetune rollback: %v\n%s", err, out)
	}
	if got := e.explainAdd(t); got != "Step one answers." {
		t.Fatalf("after the rollback: %q", got)
	}
	if st := e.status(); st.FineTuned == nil || st.FineTuned.Model != names[0] || st.FineTuned.Step != 1 {
		t.Fatalf("status after the rollback: %+v", st)
	}
}

// TestBrokenRegistryFallsBack: a registry that cannot be read never fails a run: the
// configured model answers, and the log says why once, not on every run.
func TestBrokenRegistryFallsBack(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	cfg := scripted(t, srv, "ft-broken-base", modelgen.Turn{Content: "The base answers."})
	e := newEditor(t, sampleWorkspace, cfg, capsFull(), nil)
	names := fineTune(t, srv, e, "ft-broken-base", "Step one answers.")
	repo, _ := filepath.EvalSymlinks(e.root)
	path := registry.Path(e.registryDir, repo)
	if got := e.explainAdd(t); got != "Step one answers." {
		t.Fatalf("with step 1 in use: %q", got)
	}

	// A torn or foreign file, as a disk or another program could leave it.
	if err := os.WriteFile(path, []byte(`{"version":1,"in_use":`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got := e.explainAdd(t); got != "The base answers." {
			t.Fatalf("run %d with a corrupt registry: %q", i, got)
		}
	}
	if st := e.status(); st.Model != cfg.Model || st.FineTuned != nil || !st.ModelPresent {
		t.Errorf("status with a corrupt registry: %+v", st)
	}
	e.waitFor(30*time.Second, "the warning", func() bool { return strings.Contains(e.logged(), "cannot read the fine-tuned models' registry") })
	if n := strings.Count(e.logged(), "cannot read the fine-tuned models' registry "+path); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, e.logged())
	}

	// A fine-tuned model removed from Ollama behind the registry's back gives way to its base.
	raw, _ := json.Marshal(map[string]any{"version": registry.Version, "repo": repo, "host": "http://" + srv.Host,
		"base": cfg.Model, "in_use": names[0] + "-gone", "keep": 3, "models": []any{}})
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := e.status(); st.Model != cfg.Model || st.FineTuned != nil || !st.ModelPresent {
		t.Errorf("status with the fine-tuned model gone: %+v", st)
	}
	if got := e.explainAdd(t); got != "The base answers." {
		t.Fatalf("with the fine-tuned model gone: %q", got)
	}
	if msgs := e.shownMessages(); len(msgs) != 0 {
		t.Errorf("falling back showed messages: %q", msgs)
	}

	// The registry of another Ollama server, or of another base, is not this one's.
	for _, st := range []map[string]any{
		{"host": "http://127.0.0.1:1", "base": cfg.Model},
		{"host": "http://" + srv.Host, "base": "another-base"},
	} {
		raw, _ := json.Marshal(map[string]any{"version": registry.Version, "repo": repo, "host": st["host"],
			"base": st["base"], "in_use": names[0], "keep": 3, "models": []any{map[string]any{"name": names[0], "step": 1, "status": "accepted"}}})
		os.WriteFile(path, raw, 0o644)
		if got := e.status(); got.Model != cfg.Model || got.FineTuned != nil {
			t.Errorf("registry %v: status %+v", st, got)
		}
	}
}

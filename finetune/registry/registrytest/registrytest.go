// Package registrytest puts a fine-tuned model in use the way fine-tuning does, through the
// real registry and the real Ollama, for the tests of what serves it (the editors).
package registrytest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// AcceptScripted imports the model of step 1 for the repository at repo (which need not exist
// yet) into the registry kept in cache's folder (what FROGNANO_CACHE names), as a scripted
// model playing script, and has the gate accept it over base, which it then replaces. It
// returns the model's name.
func AcceptScripted(t testing.TB, srv *ollamatest.Server, repo, cache, base string, script modelgen.Script) string {
	t.Helper()
	ctx := context.Background()
	reg, err := registry.Open(ctx, registry.Options{Repo: repo, Client: srv.Client, Host: "http://" + srv.Host, Base: base,
		StateDir: filepath.Join(cache, "finetune", "models")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := reg.Import(ctx, 1, func(_ context.Context, name string) error {
		srv.Scripted(name, modelgen.Qwen3, script)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Equal held-out results on enough tasks: the gate accepts a model that did not fall.
	same := map[string]gate.Result{}
	for i := range 30 {
		same[fmt.Sprint("task-", i)] = gate.Result{Successes: 4, Attempts: 8}
	}
	if v, err := reg.Judge(ctx, m.Name, "", same, same, gate.DefaultRule()); err != nil || !v.Accept {
		t.Fatalf("judging %s: %+v %v", m.Name, v, err)
	}
	return m.Name
}

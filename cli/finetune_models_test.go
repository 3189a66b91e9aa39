package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// heldOutResults are results on 30 held-out tasks with successes of 8 each.
func heldOutResults(successes int) map[string]gate.Result {
	out := map[string]gate.Result{}
	for i := range 30 {
		out["task-"+strconv.Itoa(i)] = gate.Result{Successes: successes, Attempts: 8}
	}
	return out
}

// TestFinetuneModelsAndRollback: `finetune models` lists what the real registry recorded
// (made against the real Ollama), and `finetune rollback` switches back, by default and by
// name, with clear errors for a repository fine-tuning never touched, an unknown or
// rejected name, and nothing left to roll back.
func TestFinetuneModelsAndRollback(t *testing.T) {
	srv := ollamatest.Start(t)
	t.Setenv("FROGNANO_CACHE", t.TempDir())
	env := map[string]string{"OLLAMA_HOST": srv.Host}
	repo := t.TempDir()
	if r, err := filepath.EvalSymlinks(repo); err == nil {
		repo = r
	}
	if _, errOut, code := frognano(t, env, "finetune", "models", "--repo", repo); code != exitFailed || !strings.Contains(errOut, "fine-tuning has not made a model for "+repo) {
		t.Errorf("models before fine-tuning: %d %q", code, errOut)
	}
	if _, errOut, code := frognano(t, env, "finetune", "rollback", "--repo", repo); code != exitFailed || !strings.Contains(errOut, "fine-tuning has not made a model for "+repo) {
		t.Errorf("rollback before fine-tuning: %d %q", code, errOut)
	}

	ctx := context.Background()
	srv.Random("cli-base", modelgen.Llama)
	reg, err := registry.Open(ctx, registry.Options{Repo: repo, Client: srv.Client, Host: "http://" + srv.Host, Base: "cli-base"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for step, cand := range []int{4, 5, 1} { // accepted, accepted, rejected
		m, err := reg.Import(ctx, step+1, func(_ context.Context, name string) error {
			srv.Random(name, modelgen.Llama)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		serving, _, results, err := reg.Serving()
		if err != nil {
			t.Fatal(err)
		}
		if len(results) == 0 {
			results = heldOutResults(4)
		}
		if _, err := reg.Judge(ctx, m.Name, serving, results, heldOutResults(cand), gate.DefaultRule()); err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
	}

	out, errOut, code := frognano(t, env, "finetune", "models", "--repo", filepath.Join(repo, "."))
	if code != exitOK {
		t.Fatalf("models: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 {
		t.Fatalf("models: want a title, a blank line, a header and 4 models:\n%s", out)
	}
	for i, want := range [][]string{
		{"cli-base", "-", "base", "0.50 on 30 tasks"},
		{names[0], "1", "accepted", "0.50 on 30 tasks"},
		{"*", names[1], "2", "accepted", "0.62 on 30 tasks"},
		{names[2], "3", "rejected", "0.12 on 30 tasks"},
	} {
		if got := strings.Join(strings.Fields(lines[3+i]), " "); !strings.HasPrefix(got, strings.Join(want[:len(want)-1], " ")) || !strings.HasSuffix(got, want[len(want)-1]) {
			t.Errorf("models line %d: %q, want %q … %q", i, got, want[:len(want)-1], want[len(want)-1])
		}
	}

	out, _, code = frognano(t, env, "finetune", "models", "--repo", repo, "--json")
	var listed struct {
		Repo   string `json:"repo"`
		InUse  string `json:"inUse"`
		Models []struct {
			Name    string `json:"name"`
			Step    int    `json:"step"`
			Status  string `json:"status"`
			Digest  string `json:"digest"`
			InUse   bool   `json:"inUse"`
			HeldOut *struct {
				Tasks    int     `json:"tasks"`
				PassRate float64 `json:"passRate"`
			} `json:"heldOut"`
			Verdict *gate.Verdict `json:"verdict"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil {
		t.Fatalf("models --json: %d %v\n%s", code, err, out)
	}
	if m := listed.Models; listed.Repo != repo || listed.InUse != names[1] || len(m) != 4 || !m[2].InUse || m[2].Step != 2 ||
		len(m[2].Digest) < 12 || m[2].HeldOut == nil || m[2].HeldOut.Tasks != 30 || m[3].Verdict == nil || m[3].Verdict.Accept {
		t.Errorf("models --json:\n%s", out)
	}

	for _, tc := range []struct{ to, want string }{
		{"frognano-ft-000000000000:step-7", "the models " + repo + " can go back to are cli-base (the base), " + names[0]},
		{names[2], "the held-out gate rejected it"},
	} {
		if _, errOut, code := frognano(t, env, "finetune", "rollback", "--repo", repo, "--to", tc.to); code != exitFailed || !strings.Contains(errOut, tc.want) {
			t.Errorf("rollback --to %s: %d %q, want %q", tc.to, code, errOut, tc.want)
		}
	}
	if out, errOut, code := frognano(t, env, "finetune", "rollback", "--repo", repo); code != exitOK || !strings.Contains(out, "rolled back from "+names[1]+" to "+names[0]+";") {
		t.Fatalf("rollback: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := frognano(t, env, "finetune", "rollback", "--repo", repo, "--to", "cli-base"); code != exitOK || !strings.Contains(out, "rolled back from "+names[0]+" to cli-base (the base model)") {
		t.Fatalf("rollback --to the base: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := frognano(t, env, "finetune", "rollback", "--repo", repo); code != exitFailed || !strings.Contains(errOut, "nothing to roll back: "+repo+" already uses cli-base") {
		t.Errorf("rollback from the base: %d %q", code, errOut)
	}
	if st, _, err := registry.Find("", repo); err != nil || st.Serving() != "cli-base" || len(st.Switches) != 4 {
		t.Errorf("state after the rollbacks: %+v %v", st, err)
	}
	// Another server is not where the models live: said, and nothing changes.
	if _, errOut, code := frognano(t, map[string]string{"OLLAMA_HOST": "127.0.0.1:1"}, "finetune", "rollback", "--repo", repo); code != exitFailed || !strings.Contains(errOut, "live in Ollama at http://"+srv.Host) {
		t.Errorf("rollback against another server: %d %q", code, errOut)
	}

	// A model removed from Ollama behind frognano's back is shown as such, and the listing
	// changes nothing (the registry forgets it at its next change).
	if err := srv.Client.Delete(ctx, &api.DeleteRequest{Model: names[1]}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(registry.Path("", repo))
	out, _, code = frognano(t, env, "finetune", "models", "--repo", repo)
	if row := lineWith(out, names[1]); code != exitOK || !strings.Contains(row, "(not in Ollama)") || strings.Contains(lineWith(out, names[0]), "not in Ollama") ||
		!strings.Contains(out, "the registry forgets it at its next change") {
		t.Errorf("models after a model left Ollama: %d\n%s", code, out)
	}
	out, _, _ = frognano(t, env, "finetune", "models", "--repo", repo, "--json")
	var present struct {
		Models []struct {
			Name     string `json:"name"`
			InOllama *bool  `json:"inOllama"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(out), &present); err != nil || len(present.Models) != 4 {
		t.Fatalf("models --json: %v\n%s", err, out)
	}
	for _, m := range present.Models {
		if m.InOllama == nil || *m.InOllama != (m.Name != names[1]) {
			t.Errorf("models --json: %s inOllama %v\n%s", m.Name, m.InOllama, out)
		}
	}
	if after, _ := os.ReadFile(registry.Path("", repo)); string(after) != string(before) {
		t.Errorf("listing the models changed the registry")
	}

	os.WriteFile(registry.Path("", repo), []byte("{"), 0o644)
	if _, errOut, code := frognano(t, env, "finetune", "models", "--repo", repo); code != exitFailed || !strings.Contains(errOut, "remove it to forget the fine-tuned models") {
		t.Errorf("models with a corrupt registry: %d %q", code, errOut)
	}
}

// lineWith is the first line of out that contains s ("" if none).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/internal/cachedir"
	"github.com/frognano/frognano/internal/gitcmd"
)

func synthFixture(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	g := gitcmd.Repo{Dir: dir, Trust: gitcmd.User, Env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid"}}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "x"}} {
		if _, err := g.Run(context.Background(), nil, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFinetuneSynth(t *testing.T) {
	if os.Getenv("FROGNANO_SANDBOX_GOCACHE") == "" { // one Go cache for every test repository
		t.Setenv("FROGNANO_SANDBOX_GOCACHE", filepath.Join(cachedir.Dir(), "sandbox-go-tests"))
	}
	t.Setenv("FROGNANO_CACHE", t.TempDir())

	_, errOut, code := frognano(t, nil, "finetune", "synth", "--repo", t.TempDir())
	if code != exitFailed || !strings.Contains(errOut, "is not a git repository") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("not a repository: %d %q", code, errOut)
	}
	noTests := synthFixture(t, map[string]string{"go.mod": "module example.com/n\n\ngo 1.22\n", "a/a.go": "package a\n"})
	_, errOut, code = frognano(t, nil, "finetune", "synth", "--repo", noTests)
	if code != exitFailed || !strings.Contains(errOut, "no tests found") {
		t.Errorf("no tests: %d %q", code, errOut)
	}

	repo := synthFixture(t, map[string]string{
		"go.mod":      "module example.com/s\n\ngo 1.22\n",
		"m/m.go":      "package m\n\n// Max is the larger of a and b.\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n",
		"m/m_test.go": "package m\n\nimport \"testing\"\n\nfunc TestMax(t *testing.T) {\n\tif Max(1, 2) != 2 || Max(3, 1) != 3 {\n\t\tt.Fatal(1)\n\t}\n}\n",
	})
	out, errOut, code := frognano(t, nil, "finetune", "synth", "--repo", repo, "--n", "2", "--json", "--synthesizers", "mutation")
	if code != exitOK {
		t.Fatalf("synth: %d %s", code, errOut)
	}
	var sum struct {
		Valid      int            `json:"valid"`
		Candidates map[string]int `json:"candidates"`
		Store      string         `json:"store"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Valid != 2 || sum.Candidates["mutation"] == 0 {
		t.Fatalf("summary %+v (%v):\n%s", sum, err, out)
	}
	if ents, _ := os.ReadDir(sum.Store); len(ents) != 2 {
		t.Errorf("%d files in the store", len(ents))
	}
	out, _, code = frognano(t, nil, "finetune", "synth", "--repo", repo, "--n", "1", "--synthesizers", "mutation")
	if code != exitOK || !strings.Contains(out, "environment: cached") || !strings.Contains(out, "synthesizer  candidates  validated  valid") {
		t.Errorf("table: %d\n%s", code, out)
	}
	// The model's synthesizer and the symptom level say that they need a model.
	for _, args := range [][]string{{"--synth", "model"}, {"--hint", "2"}} {
		_, errOut, code = frognano(t, nil, append([]string{"finetune", "synth", "--repo", repo}, args...)...)
		if code != exitFailed || !strings.Contains(errOut, "no model is configured: pass --model NAME") {
			t.Errorf("%v without a model: %d %q", args, code, errOut)
		}
	}
	_, errOut, code = frognano(t, nil, "finetune", "synth", "--repo", repo, "--synth", "mutate,bogus")
	if code != exitUsage || !strings.Contains(errOut, `unknown synthesizer "bogus" (there are history, model,`) {
		t.Errorf("bogus synthesizer: %d %q", code, errOut)
	}
	// Lazy confirmation: unconfirmed candidates wait in screened/, --confirm makes them tasks.
	lazyStore := t.TempDir()
	out, _, code = frognano(t, nil, "finetune", "synth", "--repo", repo, "--n", "1", "--synthesizers", "mutation", "--lazy-confirm", "--store", lazyStore)
	if ents, _ := os.ReadDir(filepath.Join(lazyStore, "screened")); code != exitOK || !strings.Contains(out, "--confirm") || len(ents) != 1 {
		t.Errorf("lazy: %d, %d screened\n%s", code, len(ents), out)
	}
	out, _, code = frognano(t, nil, "finetune", "synth", "--repo", repo, "--confirm", "--json", "--store", lazyStore)
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != exitOK || sum.Valid != 1 {
		t.Errorf("confirm: %d %+v\n%s", code, sum, out)
	}
}

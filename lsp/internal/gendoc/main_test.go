package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/frognano/frognano/lsp"
)

// stale lists the generated files under root that differ from what generate writes.
func stale(t *testing.T, root string) []string {
	t.Helper()
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		old, err := os.ReadFile(filepath.Join(root, f.path))
		if err != nil || !bytes.Equal(old, f.content) {
			out = append(out, f.path)
		}
	}
	return out
}

// TestGeneratedFilesAreCurrent fails when a declaration changed and `go generate ./lsp` was not
// run (as gopls's doc generator test does).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if s := stale(t, root); len(s) > 0 {
		t.Errorf("stale: %s; run `go generate ./lsp` and commit the result", strings.Join(s, ", "))
	}
}

// TestStaleFilesAreFound: a hand edit of each generated file, or of a generated part, is found;
// an edit outside the generated parts is not.
func TestStaleFilesAreFound(t *testing.T) {
	src, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	copyRoot := func(t *testing.T) string {
		root := t.TempDir()
		for _, rel := range []string{"editors/vscode/src/server.gen.ts", "editors/nvim/lua/frognano/server.lua",
			"editors/vscode/package.json", "README.md", "editors/vscode/README.md"} {
			b, err := os.ReadFile(filepath.Join(src, rel))
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755)
			if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	edit := func(t *testing.T, root, rel, old, new string) {
		t.Helper()
		p := filepath.Join(root, rel)
		b, _ := os.ReadFile(p)
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("%s lacks %q", rel, old)
		}
		os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644)
	}
	for _, c := range []struct{ rel, old, new string }{
		{"editors/vscode/src/server.gen.ts", "numCtx?: number;", "numCtx?: string;"},
		{"editors/nvim/lua/frognano/server.lua", "kind = 'source.frognano.explain'", "kind = 'refactor'"},
		{"editors/vscode/package.json", `"default": 100`, `"default": 50`},
		{"editors/vscode/package.json", `"frognano.finetune.weights"
      ]`, `"frognano.finetune.weights",
        "frognano.model"
      ]`},
		{"editors/nvim/lua/frognano/server.lua", "['finetune.hours'] = { type = 'string' }", "finetune.hours = { type = 'string' }"},
		{"README.md", "| `maxSteps` | integer | `100` |", "| `maxSteps` | integer | `50` |"},
		{"README.md", "`source.frognano.explain`", "`refactor`"},
		{"editors/vscode/README.md", "| `frognano.maxMinutes` | `30` |", "| `frognano.maxMinutes` | `60` |"},
	} {
		root := copyRoot(t)
		edit(t, root, c.rel, c.old, c.new)
		if s := stale(t, root); strings.Join(s, ",") != c.rel {
			t.Errorf("after editing %q in %s: stale %q", c.old, c.rel, s)
		}
	}
	// Outside the generated parts: nothing is stale.
	root := copyRoot(t)
	edit(t, root, "editors/vscode/package.json", `"displayName": "FrogNano"`, `"displayName": "FrogNano!"`)
	edit(t, root, "README.md", "## Performance", "## Speed")
	if s := stale(t, root); len(s) > 0 {
		t.Errorf("edits outside the generated parts: stale %q", s)
	}
	// A README whose markers were deleted is an error that names the markers.
	edit(t, root, "editors/vscode/README.md", "<!-- END GENERATED: settings -->", "")
	if _, err := generate(root); err == nil || !strings.Contains(err.Error(), "<!-- END GENERATED: settings -->") {
		t.Errorf("missing markers: %v", err)
	}
}

// TestDeclarationsAgree: the Settings struct and SettingDocs cannot drift apart.
func TestDeclarationsAgree(t *testing.T) {
	type settings struct {
		Model  string          `json:"model,omitempty"`
		Steps  int             `json:"maxSteps,omitempty"`
		Flags  map[string]bool `json:"actions,omitempty"`
		Hidden *bool           `json:"watch,omitempty"`
	}
	st := reflect.TypeFor[settings]()
	model := lsp.SettingDoc{Key: "model", Doc: "the model"}
	steps := lsp.SettingDoc{Key: "maxSteps", Doc: "steps"}
	actions := lsp.SettingDoc{Key: "actions", Doc: "actions"}
	watch := lsp.SettingDoc{Key: "watch", Doc: "watch"}
	path := lsp.SettingDoc{Key: "path", Editor: "vscode", Type: "string", Doc: "binary"}
	d, err := declarationsOf(st, []lsp.SettingDoc{path, model, steps, actions, watch}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range d.settings {
		got = append(got, s.Key+":"+s.typ)
	}
	if want := "path:string model:string maxSteps:integer actions:object watch:boolean"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, c := range []struct {
		docs []lsp.SettingDoc
		want string
	}{
		{[]lsp.SettingDoc{model, steps, actions}, "field watch is not declared in lsp.SettingDocs"},
		{[]lsp.SettingDoc{model, steps, actions, watch, {Key: "extra", Doc: "x"}}, "lsp.Settings has no field with that JSON name"},
		{[]lsp.SettingDoc{model, model, steps, actions, watch}, "declared twice"},
		{[]lsp.SettingDoc{model, {Key: "maxSteps", Type: "string", Doc: "x"}, actions, watch}, "its field is integer"},
		{[]lsp.SettingDoc{{Key: "model"}, steps, actions, watch}, "has no Doc"},
		{[]lsp.SettingDoc{{Key: "path", Editor: "vscode", Doc: "x"}, model, steps, actions, watch}, "needs a Type"},
	} {
		if _, err := declarationsOf(st, c.docs, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
}

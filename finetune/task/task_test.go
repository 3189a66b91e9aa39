package task

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPatchRoundTrip(t *testing.T) {
	ctx := context.Background()
	changes := []Change{{Path: "calc/calc.go",
		Old: []byte("package calc\n\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n"),
		New: []byte("package calc\n\nfunc Max(a, b int) int {\n\tif a >= b {\n\t\treturn b\n\t}\n\treturn b\n}\n")}}
	patch, err := MakePatch(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(patch, "diff --git a/calc/calc.go b/calc/calc.go\n") || !strings.Contains(patch, "+++ b/calc/calc.go\n") {
		t.Fatalf("patch headers:\n%s", patch)
	}
	if n := ChangedLines(patch); n != 4 {
		t.Errorf("ChangedLines = %d\n%s", n, patch)
	}
	if err := CheckPatch(ctx, patch, changes); err != nil {
		t.Fatal(err)
	}
	// A patch for other content fails the check.
	other := []Change{{Path: "calc/calc.go", Old: []byte("package calc\n"), New: changes[0].New}}
	if err := CheckPatch(ctx, patch, other); err == nil {
		t.Fatal("CheckPatch accepted a patch that does not apply")
	}
	if _, err := MakePatch(ctx, []Change{{Path: "../x", Old: nil, New: []byte("x")}}); err == nil {
		t.Fatal("MakePatch accepted ../x")
	}

	// Apply gives New on a tree holding Old, and refuses to apply it twice.
	dir := t.TempDir()
	p := filepath.Join(dir, "calc", "calc.go")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, changes[0].Old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, dir, patch); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(changes[0].New) {
		t.Fatalf("Apply gave\n%s", got)
	}
	if err := Apply(ctx, dir, patch); err == nil || !strings.Contains(err.Error(), "does not apply") {
		t.Fatalf("a patch applied twice: %v", err)
	}
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tk := &Task{Version: Version, BaseCommit: "abc", Patch: "diff", FailToPass: []string{"m/a TestA"},
		PassToPass: []string{"m/a TestB"}, Test: TestSpec{Kind: "go", Command: "go test"},
		Issue: Issue{Level: 1, Text: "TestA fails"}, Features: Features{Synthesizer: "mutation", Bugs: 1, FailToPass: 1},
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tk.ID = MakeID(tk.BaseCommit, tk.Patch)
	if err := s.Put(tk); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "future.json"), []byte(`{"version": 2}`), 0o644)
	os.WriteFile(filepath.Join(dir, ".x.json.tmp-1"), []byte(`{`), 0o644)
	got, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], tk) {
		t.Fatalf("List = %+v", got)
	}
	b, _ := os.ReadFile(filepath.Join(dir, tk.ID+".json"))
	for _, key := range []string{`"FAIL_TO_PASS"`, `"PASS_TO_PASS"`, `"base_commit"`, `"version": 1`, `"hint_level"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("the file lacks %s:\n%s", key, b)
		}
	}
}

// A screened candidate is never read or written as a task: it lives in screened/ only.
func TestScreenedAreNotTasks(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir)
	sc := &Task{Version: Version, ID: "00000000000000aa", BaseCommit: "abc", Patch: "diff", Status: StatusScreened}
	if err := s.Put(sc); err == nil {
		t.Fatal("Put wrote a screened candidate as a task")
	}
	if err := s.PutScreened(sc); err != nil {
		t.Fatal(err)
	}
	// Even a screened file laid at the top level by hand is not a task.
	b, _ := os.ReadFile(filepath.Join(dir, ScreenedDir, sc.ID+".json"))
	os.WriteFile(filepath.Join(dir, "00000000000000bb.json"), b, 0o644)
	if got, err := s.List(); err != nil || len(got) != 0 {
		t.Fatalf("List = %v, %v", got, err)
	}
	if _, err := s.Get("00000000000000bb"); err == nil {
		t.Error("Get read a screened candidate")
	}
	got, err := s.ListScreened()
	if err != nil || len(got) != 1 || got[0].ID != sc.ID {
		t.Fatalf("ListScreened = %v, %v", got, err)
	}
	if err := s.RemoveScreened(sc.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListScreened(); len(got) != 0 {
		t.Errorf("still screened: %v", got)
	}
	empty, _ := Open(t.TempDir())
	if got, err := empty.ListScreened(); err != nil || got != nil {
		t.Errorf("empty store: %v, %v", got, err)
	}
}

// TestModuleDir: a task of one module at the top is written as before modules were
// recorded, and one read from then runs at the top; a package of another module runs in
// its folder.
func TestModuleDir(t *testing.T) {
	old := TestSpec{Kind: "go", Command: "go test -count=1 -vet=off -run {run} {packages}"}
	b, err := json.Marshal(old)
	if err != nil || strings.Contains(string(b), "modules") || strings.Contains(string(b), "workspace") {
		t.Fatalf("one module's spec: %s %v", b, err)
	}
	var back TestSpec
	if err := json.Unmarshal([]byte(`{"kind":"go","command":"go test"}`), &back); err != nil || back.ModuleDir("example.com/m/p") != "." {
		t.Fatalf("a spec from before modules: %+v %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"kind":"go","command":"go test","modules":{"example.com/lib/calc":"lib"},"workspace":true}`), &back); err != nil {
		t.Fatal(err)
	}
	if back.ModuleDir("example.com/lib/calc") != "lib" || back.ModuleDir("example.com/app/report") != "." || !back.Workspace {
		t.Errorf("spec %+v", back)
	}
}

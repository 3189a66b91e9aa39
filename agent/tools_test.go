package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestToolsAgainstRealServer drives every tool, and the mistakes a model makes with them,
// through one scripted episode; each result is what the model would read next.
func TestToolsAgainstRealServer(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	long := strings.Repeat("line\n", 30)
	e := newEpisode(t, srv, map[string]string{
		"src/a.go":   "package src\n\nvar x = 1\nvar y = 1\n",
		"src/b.go":   "package src\n",
		"README.md":  "# demo\n",
		"long.txt":   long,
		"binary.bin": "\x00\x01\x02",
	})
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(e.dir, "escape"))

	steps := []struct {
		call modelgen.ToolCall
		want string // substring of the result
	}{
		{call("Glob", map[string]any{"pattern": "**/*.go"}), "src/a.go\nsrc/b.go\n"},
		{call("Glob", map[string]any{"pattern": "*.go", "path": "src"}), "src/a.go\nsrc/b.go\n"},
		{call("Glob", map[string]any{"pattern": "**/*.rs"}), "No files match"},
		{call("Read", map[string]any{"file_path": "long.txt", "offset": 29, "limit": 5}), "29. line\n30. line\n"},
		{call("Read", map[string]any{"file_path": "long.txt", "limit": 2}), "1. line\n2. line\n(showing lines 1-2 of 30; read on with offset=3)"},
		{call("Read", map[string]any{"file_path": "long.txt", "offset": "3", "limit": "1"}), "3. line\n"},
		{call("Read", map[string]any{"file_path": "binary.bin"}), "binary file of 3 bytes"},
		{call("Read", map[string]any{"file_path": "missing.go"}), "Error: missing.go does not exist"},
		{call("Read", map[string]any{"file_path": "src"}), "is a folder"},
		{call("Read", map[string]any{"file_path": "../../etc/passwd"}), "Error: refused"},
		{call("Read", map[string]any{"file_path": "/etc/passwd"}), "Error: refused"},
		{call("Read", map[string]any{"file_path": "escape/secret.txt"}), "through a symlink"},
		{call("Write", map[string]any{"file_path": "escape/new.txt", "content": "x"}), "through a symlink"},
		{call("Read", map[string]any{}), `Read needs the argument "file_path"`},
		{call("Read", map[string]any{"file_path": "a", "offset": 1.5}), "must be a whole number"},
		{call("Read", map[string]any{"file_path": "a", "colour": "red"}), "Read has no argument colour"},
		{call("Edit", map[string]any{"file_path": "src/a.go", "old_string": "= 1", "new_string": "= 2"}), "matches 2 places"},
		{call("Edit", map[string]any{"file_path": "src/a.go", "old_string": "= 1", "new_string": "= 2", "replace_all": true}), "replaced 2 occurrence(s)"},
		{call("Edit", map[string]any{"file_path": "src/a.go", "old_string": "nope", "new_string": "x"}), "was not found"},
		{call("Write", map[string]any{"file_path": "docs/deep/new.md", "content": "hello\n"}), "Wrote 6 bytes to docs/deep/new.md"},
		{call("Bash", map[string]any{"command": "echo out; echo err >&2; exit 3", "description": "Try exit codes"}), "Exit code: 3\nSTDOUT:\nout\nSTDERR:\nerr\n"},
		{call("Bash", map[string]any{"command": "git mv README.md READ.md && rm src/b.go"}), "Exit code: 0"},
	}
	var script modelgen.Script
	for _, s := range steps {
		script.Turns = append(script.Turns, turn(s.call))
	}
	// Ollama's parser only knows the tools in the request and swallows a call to any other,
	// so an unknown tool can only reach the agent as text.
	script.Turns = append(script.Turns, modelgen.Turn{Content: `{"name": "Frobnicate", "arguments": {}}`})
	steps = append(steps, struct {
		call modelgen.ToolCall
		want string
	}{call("Frobnicate", nil), `there is no tool named "Frobnicate"`})
	script.Turns = append(script.Turns, modelgen.Turn{Content: "All done."})
	res := e.run(context.Background(), "tools", modelgen.Qwen3, script, agent.Options{NumCtx: 32768})
	if res.Exit != agent.ExitDone {
		t.Fatalf("exit %s: %s", res.Exit, res.Error)
	}
	results := e.toolResults()
	if len(results) != len(steps) {
		t.Fatalf("%d results for %d calls", len(results), len(steps))
	}
	for i, s := range steps {
		if !strings.Contains(results[i], s.want) {
			t.Errorf("call %d %s %v:\n got %q\nwant %q", i+1, s.call.Name, s.call.Arguments, results[i], s.want)
		}
	}
	kinds := map[string]string{}
	for _, f := range res.Changes.Files {
		kinds[f.Path] = string(f.Kind)
		if f.Kind == "renamed" && f.OldPath != "README.md" {
			t.Errorf("rename from %q", f.OldPath)
		}
	}
	want := map[string]string{"src/a.go": "modified", "docs/deep/new.md": "created", "READ.md": "renamed", "src/b.go": "deleted"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("changes %v, want %v", kinds, want)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a write escaped through the symlink")
	}
}

// TestTextFormToolCalls: calls written as text (the XML form FrogNano was trained on, and
// a bare JSON object) are recovered and run; their arguments are typed by the schema.
func TestTextFormToolCalls(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	e := newEpisode(t, srv, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	res := e.run(context.Background(), "textcalls", modelgen.Llama, modelgen.Script{Turns: []modelgen.Turn{
		{Content: "Let me look.\n<function=Read>\n<parameter=file_path>\na.txt\n</parameter>\n<parameter=limit>\n1\n</parameter>\n</function>"},
		{Content: `{"name": "Edit", "arguments": {"file_path": "a.txt", "old_string": "two", "new_string": "2"}}`},
		{Content: "<think>the edit worked, wrap up</think>Changed two to 2."},
	}}, agent.Options{})
	if res.Exit != agent.ExitDone {
		t.Fatalf("exit %s: %s", res.Exit, res.Error)
	}
	results := e.toolResults()
	if len(results) != 2 || results[0] != "1. one\n(showing lines 1-1 of 3; read on with offset=2)\n" || !strings.Contains(results[1], "replaced 1") {
		t.Fatalf("results %q", results)
	}
	if res.Answer != "Changed two to 2." {
		t.Errorf("thinking leaked into the answer: %q", res.Answer)
	}
	if !strings.Contains(res.Changes.Diff, "+2") {
		t.Errorf("diff %s", res.Changes.Diff)
	}
}

// TestLimits covers the exits other than done.
func TestLimits(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	readA := turn(call("Read", map[string]any{"file_path": "a.txt"}))
	t.Run("max steps", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a.txt": "a\n"})
		res := e.run(context.Background(), "steps", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{readA, readA, readA, {Content: "end"}}}, agent.Options{MaxSteps: 2})
		if res.Exit != agent.ExitMaxSteps || res.Steps != 2 {
			t.Errorf("exit %s after %d steps", res.Exit, res.Steps)
		}
	})
	t.Run("max tokens per turn", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a.txt": "a\n"})
		// The answer is one token and <|im_end|> a second: num_predict 1 cuts the turn.
		res := e.run(context.Background(), "tokens", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: "first words"}}},
			agent.Options{MaxTokensPerTurn: 1})
		if res.Exit != agent.ExitMaxTokens || res.Steps != 1 {
			t.Errorf("exit %s after %d steps", res.Exit, res.Steps)
		}
	})
	t.Run("repeated failing call", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a.txt": "a\n"})
		bad := turn(call("Edit", map[string]any{"file_path": "a.txt", "old_string": "zzz", "new_string": "y"}))
		res := e.run(context.Background(), "stuck", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{bad, bad, bad, bad, {Content: "end"}}}, agent.Options{})
		if res.Exit != agent.ExitRepeatedError || res.Steps != 3 {
			t.Errorf("exit %s after %d steps", res.Exit, res.Steps)
		}
	})
	t.Run("context exhausted", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("0123456789abcdef\n", 2000) // ~34 kB ≈ 11k tokens by estimate
		e := newEpisode(t, srv, map[string]string{"big.txt": big})
		readBig := turn(call("Read", map[string]any{"file_path": "big.txt"}))
		res := e.run(context.Background(), "ctx-exhausted", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{readBig, {Content: "end"}}}, agent.Options{NumCtx: 4096})
		if res.Exit != agent.ExitContext {
			t.Errorf("exit %s (%s)", res.Exit, res.Error)
		}
	})
	t.Run("the copy's .git removed", func(t *testing.T) {
		t.Parallel()
		// The changes are computed by frognano's own repository of the copy, kept outside
		// it: whatever the agent does to the copy's .git, the result stands.
		e := newEpisode(t, srv, map[string]string{"a.txt": "a\n"})
		res := e.run(context.Background(), "breaker", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
			turn(call("Bash", map[string]any{"command": "rm -rf .git && echo b > a.txt"})), {Content: "end"},
		}}, agent.Options{})
		if res.Exit != agent.ExitDone || res.Changes == nil || len(res.Changes.Files) != 1 || string(res.Changes.Files[0].Content) != "b\n" {
			t.Errorf("exit %s (%s), changes %+v", res.Exit, res.Error, res.Changes)
		}
	})
	t.Run("time limit", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a.txt": "a\n"})
		res := e.run(context.Background(), "slow-time-limit", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
			turn(call("Bash", map[string]any{"command": "sleep 30"})), {Content: "end"},
		}}, agent.Options{MaxTime: 2 * time.Second})
		if res.Exit != agent.ExitMaxTime {
			t.Errorf("exit %s (%s)", res.Exit, res.Error)
		}
	})
}

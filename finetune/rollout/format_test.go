package rollout_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// renderRecorder passes the agent's requests to the real server, and first asks the server
// to render each one (`_debug_render_only`): the prompt text Ollama built for that request.
type renderRecorder struct {
	*api.Client
	t       *testing.T
	prompts []string
}

func (r *renderRecorder) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	dbg := *req
	dbg.DebugRenderOnly, dbg.Stream = true, new(bool)
	var rendered string
	if err := r.Client.Chat(ctx, &dbg, func(resp api.ChatResponse) error {
		if resp.DebugInfo != nil {
			rendered = resp.DebugInfo.RenderedTemplate
		}
		return nil
	}); err != nil {
		r.t.Fatalf("render only: %v", err)
	}
	if rendered == "" {
		r.t.Fatal("the server rendered no prompt")
	}
	r.prompts = append(r.prompts, rendered)
	return r.Client.Chat(ctx, req, fn)
}

// runAgent runs one agent episode on a folder with files, through rec, with logprobs on,
// and reads its trajectory back.
func runAgent(t *testing.T, m agent.Model, model string, files map[string]string, opts agent.Options) (*agent.Result, *rollout.Episode) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts.Model, opts.Logprobs = model, true
	opts.Trajectory = filepath.Join(t.TempDir(), "traj.jsonl")
	if opts.NumCtx == 0 {
		opts.NumCtx = 16384
	}
	res, err := agent.Run(context.Background(), m, agent.Task{Dir: dir, Instruction: "do the task"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := rollout.Read(opts.Trajectory)
	if err != nil {
		t.Fatal(err)
	}
	return res, ep
}

func formatOf(t *testing.T, c *api.Client, model string) *rollout.Format {
	t.Helper()
	show, err := c.Show(context.Background(), &api.ShowRequest{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	f, err := rollout.FormatOf(show)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func call(name string, args map[string]any) modelgen.ToolCall {
	return modelgen.ToolCall{Name: name, Arguments: args}
}

// TestPromptsAreOllamas proves the prompt half of token-exactness for every chat format the
// project registers, on real episodes of the agent against the real Ollama: each turn's
// prompt, rebuilt from the trajectory alone and rendered by Format, is byte for byte the
// prompt the server rendered for the request the agent actually sent. Formats: FrogNano's
// (renderer and parser nemotron-3-nano, what `frognano model import` registers), the ChatML
// template with tools and thinking (scripted and random test models; family qwen3, whose
// earlier thinking the server strips, and llama), and the ChatML template with tools and
// no thinking (SmolLM2's and the random models'). The episodes cover thinking, structured
// and XML tool calls, tool results, a call the server swallows and the reminder that
// follows, and old tool outputs shortened to fit num_ctx.
func TestPromptsAreOllamas(t *testing.T) {
	srv := ollamatest.Start(t)
	long := strings.Repeat("a0123456789 ", 90) + "\n" // as agent.TestContextIsShortened
	files := map[string]string{"a.txt": long, "b.txt": long, "c.txt": long, "d.txt": long, "e.txt": long, "main.go": "package main\n"}
	reads := func(names ...string) []modelgen.Turn {
		var ts []modelgen.Turn
		for _, n := range names {
			ts = append(ts, modelgen.Turn{Thinking: "Read " + n + ".", ToolCalls: []modelgen.ToolCall{call("Read", map[string]any{"file_path": n})}})
		}
		return ts
	}
	chatML := append(reads("a.txt", "b.txt", "c.txt", "d.txt", "e.txt"),
		modelgen.Turn{ToolCalls: []modelgen.ToolCall{call("Grep", map[string]any{"pattern": "x"})}}, // swallowed: a reminder follows
		modelgen.Turn{Thinking: "Fix it.", Content: "Editing.", ToolCalls: []modelgen.ToolCall{
			call("Edit", map[string]any{"file_path": "main.go", "old_string": "main", "new_string": "main // ok"})}},
		modelgen.Turn{Thinking: "Done.", Content: "Fixed main.go."})
	cases := []struct {
		name   string
		arch   modelgen.Arch
		script modelgen.Script
		opts   agent.Options
	}{
		{"frognano-qwen3", modelgen.Qwen3, modelgen.Script{Renderer: ollama.FrogNanoRenderer, Parser: ollama.FrogNanoParser,
			Turns: []modelgen.Turn{{Content: "The user wants main.go.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nmain.go\n</parameter>\n</function>\n</tool_call>"}}},
			agent.Options{MaxSteps: 3}},
		{"frognano-llama", modelgen.Llama, modelgen.Script{Renderer: ollama.FrogNanoRenderer, Parser: ollama.FrogNanoParser,
			Turns: []modelgen.Turn{{Content: "Look.\n</think>\n\n<tool_call>\n<function=Glob>\n<parameter=pattern>\n*.go\n</parameter>\n</function>\n</tool_call>"}}},
			agent.Options{MaxSteps: 2}},
		// num_ctx small enough that the five reads get old outputs shortened
		{"chatml-thinking-qwen3", modelgen.Qwen3, modelgen.Script{Turns: chatML}, agent.Options{NumCtx: 8192}},
		// the same turns but four reads, without shortening (slow on byte-level prompts)
		{"chatml-thinking-llama", modelgen.Llama, modelgen.Script{Turns: chatML[4:]}, agent.Options{}},
		{"chatml-no-thinking", modelgen.Llama, modelgen.Script{NoThinking: true, Turns: []modelgen.Turn{
			{ToolCalls: []modelgen.ToolCall{call("Read", map[string]any{"file_path": "main.go"})}}, {Content: "It is a main package."}}},
			agent.Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.Scripted(c.name, c.arch, c.script)
			rec := &renderRecorder{Client: srv.Client, t: t}
			res, ep := runAgent(t, rec, c.name, files, c.opts)
			f := formatOf(t, srv.Client, c.name)
			if len(ep.Turns) != len(rec.prompts) || len(ep.Turns) < 2 {
				t.Fatalf("%d turns in the trajectory, %d requests (exit %s: %s)", len(ep.Turns), len(rec.prompts), res.Exit, res.Error)
			}
			shortened := false
			for i, turn := range ep.Turns {
				got, err := f.Prompt(turn.Messages, ep.Tools, ep.Think)
				if err != nil {
					t.Fatal(err)
				}
				if got != rec.prompts[i] {
					t.Fatalf("step %d: the prompt differs from Ollama's at byte %d:\nours:   %q\nOllama: %q", turn.Step, diffAt(got, rec.prompts[i]), tail(got, diffAt(got, rec.prompts[i])), tail(rec.prompts[i], diffAt(got, rec.prompts[i])))
				}
				shortened = shortened || strings.Contains(got, "[output shortened by frognano")
			}
			if c.name == "chatml-thinking-qwen3" && !shortened {
				t.Error("no tool output was shortened: the case does not cover it")
			}
			t.Logf("%s: %d prompts equal to Ollama's (exit %s, renderer %q, family %q, think %v)", c.name, len(ep.Turns), res.Exit, f.Renderer, f.Family, ep.Think || f.Thinking)
		})
	}
}

func diffAt(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func tail(s string, i int) string {
	lo := max(0, i-40)
	return s[lo:min(len(s), i+80)]
}

package modelgen_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

func readTool() api.Tool {
	props := api.NewToolPropertiesMap()
	props.Set("file_path", api.ToolProperty{Type: api.PropertyType{"string"}, Description: "path of the file"})
	return api.Tool{Type: "function", Function: api.ToolFunction{
		Name:        "Read",
		Description: "Read a file",
		Parameters:  api.ToolFunctionParameters{Type: "object", Required: []string{"file_path"}, Properties: props},
	}}
}

// chat sends one request and gathers the streamed reply into one message.
func chat(t *testing.T, c *api.Client, req *api.ChatRequest) api.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var msg api.Message
	err := c.Chat(ctx, req, func(r api.ChatResponse) error {
		msg.Content += r.Message.Content
		msg.Thinking += r.Message.Thinking
		msg.ToolCalls = append(msg.ToolCalls, r.Message.ToolCalls...)
		return nil
	})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	msg.Role = "assistant"
	return msg
}

// TestScriptedToolCallRoundTrip is the foundation's proof: a two-turn script (a Read call,
// then a final answer after the tool result) comes back from the real server as a
// structured tool call and then as text, on both of Ollama's engines, streaming or not.
func TestScriptedToolCallRoundTrip(t *testing.T) {
	srv := ollamatest.Start(t)
	const answer = "main.go defines main, which prints ünïcode — fine."
	script := modelgen.Script{Turns: []modelgen.Turn{
		{ToolCalls: []modelgen.ToolCall{{Name: "Read", Arguments: map[string]any{"file_path": "main.go"}}}},
		{Content: answer},
	}}
	for _, arch := range modelgen.Arches {
		for _, stream := range []bool{true, false} {
			name := "scripted-" + string(arch)
			t.Run(name+map[bool]string{true: "-stream", false: "-whole"}[stream], func(t *testing.T) {
				srv.Scripted(name, arch, script)
				opts := map[string]any{"temperature": 0.6, "top_p": 0.95, "top_k": 20, "num_ctx": 8192}
				msgs := []api.Message{
					{Role: "system", Content: "You are a coding agent."},
					{Role: "user", Content: "What does main.go do?"},
				}
				req := &api.ChatRequest{Model: name, Messages: msgs, Tools: api.Tools{readTool()}, Options: opts, Stream: &stream}
				first := chat(t, srv.Client, req)
				if len(first.ToolCalls) != 1 {
					t.Fatalf("turn 1: want one structured tool call, got %d (content %q)", len(first.ToolCalls), first.Content)
				}
				call := first.ToolCalls[0].Function
				if call.Name != "Read" {
					t.Errorf("turn 1: tool %q, want Read", call.Name)
				}
				if p, _ := call.Arguments.Get("file_path"); p != "main.go" {
					t.Errorf("turn 1: file_path %v, want main.go", p)
				}
				if strings.TrimSpace(first.Content) != "" {
					t.Errorf("turn 1: unexpected content %q", first.Content)
				}

				req.Messages = append(msgs, first, api.Message{Role: "tool", ToolName: "Read", Content: "1. package main\n2. func main() {}"})
				second := chat(t, srv.Client, req)
				if second.Content != answer || len(second.ToolCalls) != 0 {
					t.Fatalf("turn 2: got %q with %d calls, want %q", second.Content, len(second.ToolCalls), answer)
				}

				// Past the script the model says nothing, rather than repeating itself.
				req.Messages = append(req.Messages, second, api.Message{Role: "user", Content: "and?"})
				if third := chat(t, srv.Client, req); third.Content != "" || len(third.ToolCalls) != 0 {
					t.Fatalf("turn 3: want an empty reply past the script, got %+v", third)
				}
			})
		}
	}
}

// TestScriptedThinkingAndManyCalls checks the other shapes a turn can take: thinking that
// the server separates when asked, and several calls in one turn, repeated across turns.
func TestScriptedThinkingAndManyCalls(t *testing.T) {
	srv := ollamatest.Start(t)
	call := modelgen.ToolCall{Name: "Read", Arguments: map[string]any{"file_path": "a.go"}}
	other := modelgen.ToolCall{Name: "Read", Arguments: map[string]any{"file_path": "b.go"}}
	script := modelgen.Script{Turns: []modelgen.Turn{
		{Thinking: "I should read both files.", Content: "Reading.", ToolCalls: []modelgen.ToolCall{call, other}},
		{ToolCalls: []modelgen.ToolCall{call}},
		{ToolCalls: []modelgen.ToolCall{call}},
		{Content: "done"},
	}}
	srv.Scripted("think", modelgen.Qwen3, script)
	think := &api.ThinkValue{Value: true}
	req := &api.ChatRequest{Model: "think", Tools: api.Tools{readTool()}, Think: think,
		Options:  map[string]any{"num_ctx": 4096},
		Messages: []api.Message{{Role: "user", Content: "go"}}}
	var got []api.Message
	for range script.Turns {
		m := chat(t, srv.Client, req)
		got = append(got, m)
		req.Messages = append(req.Messages, m)
		for _, c := range m.ToolCalls {
			req.Messages = append(req.Messages, api.Message{Role: "tool", ToolName: c.Function.Name, Content: "ok"})
		}
	}
	if got[0].Thinking != "I should read both files." {
		t.Errorf("thinking = %q", got[0].Thinking)
	}
	if strings.TrimSpace(got[0].Content) != "Reading." {
		t.Errorf("content = %q", got[0].Content)
	}
	want := [][]string{{"a.go", "b.go"}, {"a.go"}, {"a.go"}, nil}
	for i, w := range want {
		var paths []string
		for _, c := range got[i].ToolCalls {
			p, _ := c.Function.Arguments.Get("file_path")
			paths = append(paths, p.(string))
		}
		if strings.Join(paths, ",") != strings.Join(w, ",") {
			t.Errorf("turn %d: calls %v, want %v", i+1, paths, w)
		}
	}
	if got[3].Content != "done" {
		t.Errorf("last turn: %q", got[3].Content)
	}
}

// TestCapabilitiesFollowTheScript checks the template switches that the doctor and the
// agent rely on to detect tool and thinking support.
func TestCapabilitiesFollowTheScript(t *testing.T) {
	srv := ollamatest.Start(t)
	srv.Scripted("plain", modelgen.Llama, modelgen.Script{NoTools: true, NoThinking: true, Turns: []modelgen.Turn{{Content: "hi there"}}})
	ctx := context.Background()
	show, err := srv.Client.Show(ctx, &api.ShowRequest{Model: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range show.Capabilities {
		if c == "tools" || c == "thinking" {
			t.Errorf("capability %q present without it in the template", c)
		}
	}
	err = srv.Client.Chat(ctx, &api.ChatRequest{Model: "plain", Tools: api.Tools{readTool()},
		Messages: []api.Message{{Role: "user", Content: "x"}}}, func(api.ChatResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "does not support tools") {
		t.Errorf("tools on a tool-less model: err = %v", err)
	}
}

// TestRandomModelGenerates covers the plumbing model on both engines.
func TestRandomModelGenerates(t *testing.T) {
	srv := ollamatest.Start(t)
	for _, arch := range modelgen.Arches {
		name := "random-" + string(arch)
		srv.Random(name, arch)
		var n int
		stream := false
		err := srv.Client.Chat(context.Background(), &api.ChatRequest{Model: name, Stream: &stream,
			Messages: []api.Message{{Role: "user", Content: "hello"}},
			Options:  map[string]any{"num_predict": 8, "num_ctx": 512, "seed": 1}},
			func(r api.ChatResponse) error { n += r.EvalCount; return nil })
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if n == 0 {
			t.Errorf("%s: generated no tokens", arch)
		}
	}
}

func TestScriptRejectsTextItCannotTokenize(t *testing.T) {
	_, err := modelgen.Scripted(filepath.Join(t.TempDir(), "m.gguf"), modelgen.Llama,
		modelgen.Script{Turns: []modelgen.Turn{{Content: "x"}}})
	if err == nil {
		t.Fatal("a one-byte turn cannot have tokens of its own; want an error")
	}
}

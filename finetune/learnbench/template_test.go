package learnbench

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/template"

	"github.com/frognano/frognano/finetune/rollout"
)

// TestTemplateRendersTheExampleAndCalls renders a two-turn conversation with Ollama's own
// template code, as the server and the trainer's rollouts do: the tools as one line each,
// the worked example before the task, and the model's earlier call and its result in the
// example's form (so the model sees its own calls as it was shown them).
func TestTemplateRendersTheExampleAndCalls(t *testing.T) {
	tmpl, err := template.Parse(Template)
	if err != nil {
		t.Fatal(err)
	}
	f := &rollout.Format{Template: tmpl, EndOfTurn: "<|im_end|>"}
	params := api.ToolFunctionParameters{Type: "object", Required: []string{"file_path"}}
	tools := api.Tools{{Type: "function", Function: api.ToolFunction{Name: "Read", Description: "Read a file.", Parameters: params}}}
	args := api.NewToolCallFunctionArguments()
	args.Set("file_path", "calc/calc.go")
	got, err := f.Prompt([]api.Message{
		{Role: "system", Content: "You are an agent."},
		{Role: "user", Content: "Fix Max."},
		{Role: "assistant", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "Read", Arguments: args}}}},
		{Role: "tool", ToolName: "Read", Content: "1. package calc"},
	}, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<|im_start|>system\nYou are an agent.\n\nYou have these tools:\nRead(file_path): Read a file.\n",
		`{"name": "Edit", "arguments": {"file_path": "calc/calc.go", "old_string": "return x / 4", "new_string": "return x / 2"}}`,
		"<|im_start|>user\nFix Max.<|im_end|>\n<|im_start|>assistant\n{\"name\": \"Read\", \"arguments\": {\"file_path\":\"calc/calc.go\"}}<|im_end|>\n",
		"<|im_start|>user\nRead result:\n1. package calc<|im_end|>\n<|im_start|>assistant\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "<|im_start|>assistant\n") {
		t.Errorf("the prompt does not end with the assistant's turn:\n%s", got)
	}
}

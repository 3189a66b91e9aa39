package modelgen

import "strings"

// ChatMLTemplate is the template of generated models without a script: ChatML, tools
// described and called as JSON (Qwen style), thinking in <think> when asked for. It also
// serves real ChatML models imported for tests (SmolLM2).
func ChatMLTemplate(tools, thinking bool) string { return chatTemplate(tools, thinking, false) }

// chatTemplate returns a ChatML template in the Qwen style (tools described as JSON inside
// <tools>, calls as JSON inside <tool_call>, results as <tool_response> in a user turn).
// Declaring .Tools gives the model Ollama's "tools" capability and lets the server infer
// the <tool_call> tag; a .Thinking block inside the message loop gives it "thinking".
// With trigger set, the generation prompt ends with the step's trigger word.
func chatTemplate(tools, thinking, trigger bool) string {
	var b strings.Builder
	if trigger {
		b.WriteString(`{{- $step := "zq" }}{{- range .Messages }}{{- if eq .Role "assistant" }}{{- $step = print $step "q" }}{{- end }}{{- end }}`)
	}
	if tools {
		b.WriteString(`{{- if or .System .Tools }}<|im_start|>system
{{ if .System }}{{ .System }}

{{ end }}
{{- if .Tools }}# Tools

You may call one or more functions to assist with the user query.

<tools>
{{- range .Tools }}
{"type": "function", "function": {{ .Function }}}
{{- end }}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>
{{- end }}<|im_end|>
{{ end }}`)
	} else {
		b.WriteString(`{{- if .System }}<|im_start|>system
{{ .System }}<|im_end|>
{{ end }}`)
	}
	b.WriteString(`{{- range $i, $_ := .Messages }}
{{- if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
{{ else if eq .Role "assistant" }}<|im_start|>assistant
`)
	if thinking {
		b.WriteString(`{{- if .Thinking }}<think>{{ .Thinking }}</think>
{{ end }}`)
	}
	b.WriteString(`{{- if .Content }}{{ .Content }}{{ end }}`)
	if tools {
		b.WriteString(`{{- if .ToolCalls }}{{ range .ToolCalls }}
<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>{{ end }}{{ end }}`)
	}
	b.WriteString(`<|im_end|>
{{ else if eq .Role "tool" }}<|im_start|>user
<tool_response>
{{ .Content }}
</tool_response><|im_end|>
{{ end }}
{{- end }}<|im_start|>assistant
`)
	if trigger {
		b.WriteString(`{{ $step }}`)
	}
	return b.String()
}

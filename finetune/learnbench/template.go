package learnbench

// Template is the chat format the benchmark imports SmolLM2-135M-Instruct with: plain
// ChatML (SmolLM2's own, without thinking: under FrogNano's renderer the prompt opens a
// <think> block that SmolLM2 never closes, and the agent sees only empty replies), tools
// and calls in the Qwen form (JSON inside <tool_call>, which Ollama's parser reads, and the
// agent's text-call recovery too when it does not), each tool as one line (its name,
// required arguments and description: the JSON schemas are about 500 tokens more to
// evaluate on every episode, on a CPU), and one worked episode before the
// real conversation. A 135M model does not follow a tool description, but it does imitate a
// demonstration: in a first try without it (the tools' JSON schemas and the call form
// only), SmolLM2 answered in prose, a made-up explanation ending in JavaScript, and called
// no tool. The example is part of the template, not MESSAGE
// lines, because the loop imports every fine-tuned model with the template of the model
// in use (finetune/loop importModel) and nothing else of its Modelfile: the example stays
// the same for the whole run, and the trainer renders it token-exact with Ollama's own
// template code (finetune/rollout).
//
// The example's bug and file are not in the fixture the benchmark uses by default, so
// copying it verbatim never scores.
const Template = `{{- if or .System .Tools }}<|im_start|>system
{{ if .System }}{{ .System }}

{{ end }}
{{- if .Tools }}You have these tools:
{{- range .Tools }}
{{ .Function.Name }}({{ range $i, $a := .Function.Parameters.Required }}{{ if $i }}, {{ end }}{{ $a }}{{ end }}): {{ .Function.Description }}
{{- end }}

Call a tool by writing a JSON object with its name and arguments inside <tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>
{{- end }}<|im_end|>
<|im_start|>user
` + "`Half` in num/num.go does not behave as expected. What it should do, from its documentation:\n\nHalf divides x by 2.\n\nThese tests fail: TestHalf." + `<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "Read", "arguments": {"file_path": "num/num.go"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
1. package num
2. 
3. // Half divides x by 2.
4. func Half(x int) int { return x / 4 }
</tool_response><|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "Edit", "arguments": {"file_path": "num/num.go", "old_string": "return x / 4", "new_string": "return x / 2"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
Edited num/num.go: replaced 1 occurrence(s)
</tool_response><|im_end|>
<|im_start|>assistant
Half now divides x by 2.<|im_end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
{{ else if eq .Role "assistant" }}<|im_start|>assistant
{{ if .Content }}{{ .Content }}{{ end }}
{{- if .ToolCalls }}{{ if .Content }}
{{ end }}{{ range .ToolCalls }}<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>{{ end }}{{ end }}<|im_end|>
{{ else if eq .Role "tool" }}<|im_start|>user
<tool_response>
{{ .Content }}
</tool_response><|im_end|>
{{ end }}
{{- end }}<|im_start|>assistant
`

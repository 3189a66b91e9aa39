package learnbench

// Template is the chat format the benchmark imports SmolLM2-135M-Instruct with: plain
// ChatML (SmolLM2's own, without thinking: under FrogNano's renderer the prompt opens a
// <think> block that SmolLM2 never closes, and the agent sees only empty replies), each tool
// as one line (name, required arguments, description: the JSON schemas are about 500 more
// tokens to evaluate per episode on a CPU), calls as a bare JSON object that is the whole
// reply (Ollama's parser reads it, since the template renders calls so; the agent's
// text-call recovery too), results as a user turn "NAME result:", and one worked episode
// before the real conversation.
//
// Why this form, from tries on this machine with the calc fixture's tasks: with the Qwen
// form (tool schemas in <tools>, JSON inside <tool_call>, results in <tool_response>) and no
// example, SmolLM2 answered in prose (a made-up explanation ending in JavaScript); with the
// example added, it began its reply with "<tool_response>" and made up a file listing, at
// temperature 0 and 1 alike. With bare JSON it writes a call Ollama parses, copying the
// example's arguments. So the example reads and edits calc/calc.go, the file the fixture's
// tasks are in, with a function the fixture does not have (Half): a copied Read is right,
// a copied Edit finds nothing to replace and says so.
//
// The example is part of the template, not MESSAGE lines, because the loop imports every
// fine-tuned model with the template of the model in use (finetune/loop importModel) and
// nothing else of its Modelfile: it stays the same for the whole run, and the trainer
// renders it token-exact with Ollama's own template code (finetune/rollout).
const Template = `{{- if or .System .Tools }}<|im_start|>system
{{ if .System }}{{ .System }}

{{ end }}
{{- if .Tools }}You have these tools:
{{- range .Tools }}
{{ .Function.Name }}({{ range $i, $a := .Function.Parameters.Required }}{{ if $i }}, {{ end }}{{ $a }}{{ end }}): {{ .Function.Description }}
{{- end }}

Call a tool by answering with a JSON object of its name and arguments only:
{"name": <function-name>, "arguments": <args-json-object>}
{{- end }}<|im_end|>
<|im_start|>user
` + "`Half` in calc/calc.go does not behave as expected. What it should do, from its documentation:\n\nHalf divides x by 2.\n\nThese tests fail: TestHalf." + `<|im_end|>
<|im_start|>assistant
{"name": "Read", "arguments": {"file_path": "calc/calc.go"}}<|im_end|>
<|im_start|>user
Read result:
1. package calc
2. 
3. // Half divides x by 2.
4. func Half(x int) int { return x / 4 }<|im_end|>
<|im_start|>assistant
{"name": "Edit", "arguments": {"file_path": "calc/calc.go", "old_string": "return x / 4", "new_string": "return x / 2"}}<|im_end|>
<|im_start|>user
Edit result:
Edited calc/calc.go: replaced 1 occurrence(s)<|im_end|>
<|im_start|>assistant
Half now divides x by 2.<|im_end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
{{ else if eq .Role "assistant" }}<|im_start|>assistant
{{ if .Content }}{{ .Content }}{{ end }}
{{- if .ToolCalls }}{{ if .Content }}
{{ end }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}{{ end }}<|im_end|>
{{ else if eq .Role "tool" }}<|im_start|>user
{{ .ToolName }} result:
{{ .Content }}<|im_end|>
{{ end }}
{{- end }}<|im_start|>assistant
`

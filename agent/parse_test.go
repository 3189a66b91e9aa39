package agent

import (
	"fmt"
	"testing"
)

func TestRecoverCalls(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     string // fmt of the calls
		wantRest string
	}{
		{"<tool_call>\n<function=Read>\n<parameter=file_path>\na.go\n</parameter>\n</function>\n</tool_call>", "[{Read map[file_path:a.go] }]", ""},
		{"I'll edit.\n<function=Edit>\n<parameter=file_path>\nx.go\n</parameter>\n<parameter=old_string>\n\tif a {\n\n</parameter>\n<parameter=new_string>\nb\n</parameter>\n</function>", "[{Edit map[file_path:x.go new_string:b old_string:\tif a {\n] }]", "I'll edit."},
		{"<tool_call>\n{\"name\": \"Glob\", \"arguments\": {\"pattern\": \"*.go\"}}\n</tool_call>", "[{Glob map[pattern:*.go] }]", ""},
		{`{"name": "Bash", "arguments": "{\"command\": \"ls\"}"}`, "[{Bash map[command:ls] }]", ""},
		{"```json\n{\"name\": \"Bash\", \"parameters\": {\"command\": \"ls\"}}\n```", "[{Bash map[command:ls] }]", ""},
		{"<tool_call>{not json}</tool_call>", "[{ map[] a tool call in the text is not valid JSON: invalid character 'n' looking for beginning of object key string}]", ""},
		{"The answer is {x}.", "[]", "The answer is {x}."},
		{`{"result": 4}`, "[]", `{"result": 4}`},
	} {
		calls, rest := recoverCalls(tc.in)
		if got := fmt.Sprint(calls); got != tc.want && !(len(calls) == 0 && tc.want == "[]") {
			t.Errorf("recoverCalls(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if rest != tc.wantRest {
			t.Errorf("recoverCalls(%q) rest = %q, want %q", tc.in, rest, tc.wantRest)
		}
	}
}

func TestStripThinking(t *testing.T) {
	for in, want := range map[string]string{
		"<think>hmm</think>\n\nDone.":                     "Done.",
		"reasoning opened by the prompt\n</think>\nDone.": "Done.",
		"Done. <think>trailing, unclosed":                 "Done.",
		"<think>a</think>x<think>b</think>y":              "xy",
		"plain":                                           "plain",
	} {
		if got := stripThinking(in); got != want {
			t.Errorf("stripThinking(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckArgsTypes(t *testing.T) {
	edit := findTool(ToolEdit)
	a, err := checkArgs(edit, map[string]any{"file_path": "a", "old_string": "x", "new_string": 5.0, "replace_all": "true"})
	if err != nil || a.str("new_string") != "5" || !a.boolean("replace_all") {
		t.Errorf("conversion: %v %v", a, err)
	}
	if _, err := checkArgs(edit, map[string]any{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": "maybe"}); err == nil {
		t.Error("a non-boolean replace_all must be refused")
	}
	bash := findTool(ToolBash)
	a, err = checkArgs(bash, map[string]any{"command": "ls", "timeout": "2.5"})
	if err != nil || a.number("timeout") != 2.5 {
		t.Errorf("timeout: %v %v", a, err)
	}
	e := &episode{opts: Options{}.withDefaults()}
	for in, want := range map[float64]string{5: "5s", 2000: "2s", 0: "2m0s"} {
		if got := e.bashTimeout(args{"timeout": in}).String(); got != want {
			t.Errorf("bashTimeout(%v) = %s, want %s", in, got, want)
		}
	}
}

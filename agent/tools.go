package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
)

// The five tools FrogNano was trained with. Names and argument names are the interface the
// model learned and must not change; descriptions are ours.
const (
	ToolRead  = "Read"
	ToolWrite = "Write"
	ToolEdit  = "Edit"
	ToolGlob  = "Glob"
	ToolBash  = "Bash"
)

// Output caps from the harness.
const (
	readCap = 20000
	bashCap = 30000
	globCap = 1000
	// readDefaultLimit is how many lines Read returns without a limit.
	readDefaultLimit = 2000
)

type param struct {
	name, typ, desc string
	required        bool
}

// tool is one row of the tool table.
type tool struct {
	name   string
	desc   string
	params []param
	// title describes a call for people; run executes it.
	title func(args) string
	run   func(ctx context.Context, e *episode, a args) (string, error)
}

// tools is the table, in the order the model is told about them.
var tools []tool

func init() {
	tools = []tool{
		{ToolRead, "Read a file of the repository. Lines come back numbered (`N. text`), starting at offset (1-based) and at most limit lines.",
			[]param{{"file_path", "string", "path of the file, relative to the repository or absolute", true},
				{"offset", "integer", "first line to read, 1-based", false},
				{"limit", "integer", "how many lines to read", false}},
			func(a args) string { return "Reading " + a.str("file_path") }, runRead},
		{ToolWrite, "Write a whole file, creating it and its parent folders if needed, replacing it otherwise.",
			[]param{{"file_path", "string", "path of the file", true},
				{"content", "string", "the complete new content", true}},
			func(a args) string { return "Writing " + a.str("file_path") }, runWrite},
		{ToolEdit, "Replace an exact string in a file. old_string must match exactly once, unless replace_all is true.",
			[]param{{"file_path", "string", "path of the file", true},
				{"old_string", "string", "the exact text to replace", true},
				{"new_string", "string", "the replacement", true},
				{"replace_all", "boolean", "replace every occurrence", false}},
			func(a args) string { return "Editing " + a.str("file_path") }, runEdit},
		{ToolGlob, "Find files by glob pattern such as **/*.go; sorted, at most 1000.",
			[]param{{"pattern", "string", "the glob pattern", true},
				{"path", "string", "folder to search in (default: the repository)", false}},
			func(a args) string { return "Finding files matching " + a.str("pattern") }, runGlob},
		{ToolBash, "Run a bash command in the repository and get its exit code, stdout and stderr. Default timeout 120 seconds.",
			[]param{{"command", "string", "the command", true},
				{"description", "string", "what the command does, in a few words", false},
				{"timeout", "number", "timeout in seconds", false}},
			bashTitle, runBash},
	}
}

func findTool(name string) *tool {
	for i := range tools {
		if tools[i].name == name {
			return &tools[i]
		}
	}
	return nil
}

// apiTools describes the table to Ollama as function schemas.
func apiTools() api.Tools {
	var out api.Tools
	for _, t := range tools {
		props := api.NewToolPropertiesMap()
		var required []string
		for _, p := range t.params {
			props.Set(p.name, api.ToolProperty{Type: api.PropertyType{p.typ}, Description: p.desc})
			if p.required {
				required = append(required, p.name)
			}
		}
		out = append(out, api.Tool{Type: "function", Function: api.ToolFunction{
			Name: t.name, Description: t.desc,
			Parameters: api.ToolFunctionParameters{Type: "object", Required: required, Properties: props},
		}})
	}
	return out
}

// args are a call's arguments after checking against the tool's parameters.
type args map[string]any

func (a args) str(k string) string   { s, _ := a[k].(string); return s }
func (a args) has(k string) bool     { _, ok := a[k]; return ok }
func (a args) boolean(k string) bool { b, _ := a[k].(bool); return b }
func (a args) integer(k string) int  { n, _ := a[k].(int); return n }
func (a args) number(k string) float64 {
	f, _ := a[k].(float64)
	return f
}

// toolError is a mistake in a call: it goes back to the model as the tool's result so it
// can correct itself, and never ends the run.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func callErr(format string, a ...any) error { return &toolError{fmt.Sprintf(format, a...)} }

// checkArgs validates raw arguments against t's parameters and converts them to Go types
// (small models send "3" for 3 and "true" for true; both are accepted).
func checkArgs(t *tool, raw map[string]any) (args, error) {
	a := args{}
	known := map[string]bool{}
	for _, p := range t.params {
		known[p.name] = true
		v, ok := raw[p.name]
		if !ok || v == nil {
			if p.required {
				return nil, callErr("%s needs the argument %q (%s)", t.name, p.name, p.desc)
			}
			continue
		}
		cv, err := convert(v, p.typ)
		if err != nil {
			return nil, callErr("%s: argument %q %v", t.name, p.name, err)
		}
		a[p.name] = cv
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var names []string
		for _, p := range t.params {
			names = append(names, p.name)
		}
		return nil, callErr("%s has no argument %s; its arguments are %s", t.name, strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return a, nil
}

func convert(v any, typ string) (any, error) {
	switch typ {
	case "string":
		switch x := v.(type) {
		case string:
			return x, nil
		case float64, bool, int:
			return fmt.Sprint(x), nil
		}
		b, _ := json.Marshal(v)
		return nil, fmt.Errorf("must be a string, got %s", b)
	case "integer":
		switch x := v.(type) {
		case float64:
			if x != math.Trunc(x) {
				return nil, fmt.Errorf("must be a whole number, got %v", x)
			}
			return int(x), nil
		case int:
			return x, nil
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("must be a whole number, got %q", x)
			}
			return n, nil
		}
		return nil, fmt.Errorf("must be a whole number, got %v", v)
	case "number":
		switch x := v.(type) {
		case float64:
			return x, nil
		case int:
			return float64(x), nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, fmt.Errorf("must be a number, got %q", x)
			}
			return f, nil
		}
		return nil, fmt.Errorf("must be a number, got %v", v)
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("must be true or false, got %q", x)
			}
			return b, nil
		}
		return nil, fmt.Errorf("must be true or false, got %v", v)
	}
	return v, nil
}

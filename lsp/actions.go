package lsp

import (
	"fmt"
	"path/filepath"
	"strings"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/frognano/frognano/lsp/document"
	"github.com/frognano/frognano/lsp/source"
)

// actionData is everything a run needs, carried in CodeAction.data and as the argument of
// the frognano.run command, so listing actions needs no state and no model call.
type actionData struct {
	Action      string         `json:"action"`
	Title       string         `json:"title"`
	URI         string         `json:"uri"`
	Version     int32          `json:"version"`
	Range       document.Range `json:"range"`
	Diagnostic  string         `json:"diagnostic,omitempty"`
	Func        string         `json:"func,omitempty"`
	Test        string         `json:"test,omitempty"`
	TestCommand string         `json:"testCommand,omitempty"`
	Selection   string         `json:"selection,omitempty"`
	Instruction string         `json:"instruction,omitempty"`
}

// actionInput is what the producers look at: one document, a range, its diagnostics.
type actionInput struct {
	snap        document.Snapshot
	rel         string // the file relative to the workspace root
	lang        source.Lang
	rng         document.Range
	start, end  int // rng in bytes
	diagnostics []protocol.Diagnostic
	fn          *source.Func // the function around the range start, if any
}

// producer makes the actions of one kind for an input.
type producer struct {
	id   string                  // the action's id: actionData.Action, and the key in Settings.Actions
	kind protocol.CodeActionKind // its own kind, under the LSP kind it belongs to (see kinds below)
	make func(in *actionInput) []actionData
	// For the documentation (go generate writes it into the READMEs): the action's title,
	// and where it is offered.
	title, where string
}

// producers is the table, the one place actions are declared: its order is the order of the
// editor's menu. Each action has a kind of its own, in gopls's style (source.addTest): the LSP
// kind it belongs to, then "frognano", then the action, so that clients can ask for it alone
// (CodeActionContext.only, matched by prefix) and plugins pick it by kind, not by title.
// Explain changes nothing: it is a source action (as gopls's source.doc), not a refactoring.
var producers = []producer{
	{"fix", "quickfix.frognano.fixDiagnostic", fixDiagnostics,
		"Fix: *diagnostic*", "on each diagnostic in the request"},
	{"fixTest", "quickfix.frognano.fixTest", fixTest,
		"Fix failing test *Name*", "inside a test (Go, pytest, Jest/Vitest)"},
	{"implement", "refactor.rewrite.frognano.implement", implement,
		"Implement *func*", "on a function whose body is empty, a TODO, or a not-implemented panic/raise/throw"},
	{"tests", "source.frognano.writeTests", writeTests,
		"Write tests for *func*", "on a function"},
	{"explain", "source.frognano.explain", explain,
		"Explain *func* / this", "on a function or a selection; the answer opens as a Markdown document (or a message)"},
	{"ask", "refactor.rewrite.frognano.ask", ask,
		"Ask FrogNano…", "anywhere; runs command `frognano.ask` with `{uri, range, instruction}`"},
}

// kinds are the kinds the server offers, for its capabilities: each producer's own.
func kinds() []protocol.CodeActionKind {
	out := make([]protocol.CodeActionKind, len(producers))
	for i, p := range producers {
		out[i] = p.kind
	}
	return out
}

func kindOf(action string) protocol.CodeActionKind {
	for _, p := range producers {
		if p.id == action {
			return p.kind
		}
	}
	return protocol.CodeActionKindEmpty
}

// ActionDoc describes one code action for the editors and the documentation, which
// go generate writes from the table (lsp/internal/gendoc).
type ActionDoc struct {
	ID    string // the action's id: the key in the actions setting, and data.action
	Kind  string // its code action kind
	Title string // its title, with placeholders in italics (Markdown)
	Where string // where it is offered
}

// ActionDocs lists the actions in the table's order.
func ActionDocs() []ActionDoc {
	out := make([]ActionDoc, len(producers))
	for i, p := range producers {
		out[i] = ActionDoc{ID: p.id, Kind: string(p.kind), Title: p.title, Where: p.where}
	}
	return out
}

// listActions runs the producers, skipping those the settings turn off or the request's
// "only" filter excludes. A producer that fails is logged and the others still run.
func listActions(in *actionInput, s Settings, only []protocol.CodeActionKind, logf func(string, ...any)) []actionData {
	var out []actionData
	for _, p := range producers {
		if !s.enabled(p.id) || !kindWanted(p.kind, only) {
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					logf("code action %s: %v", p.id, r)
				}
			}()
			for _, d := range p.make(in) {
				d.Action, d.URI, d.Version = p.id, in.snap.URI, in.snap.Version
				if d.Range == (document.Range{}) {
					d.Range = in.rng
				}
				out = append(out, d)
			}
		}()
	}
	return out
}

// kindWanted implements CodeActionContext.only: a kind matches a filter entry equal to it
// or a parent of it ("refactor" covers "refactor.rewrite").
func kindWanted(k protocol.CodeActionKind, only []protocol.CodeActionKind) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if k == o || strings.HasPrefix(string(k), string(o)+".") {
			return true
		}
	}
	return false
}

func fixDiagnostics(in *actionInput) []actionData {
	var out []actionData
	for _, d := range in.diagnostics {
		msg := diagnosticText(d)
		if msg == "" {
			continue
		}
		out = append(out, actionData{Title: "Fix: " + shorten(firstLine(msg), 80), Diagnostic: msg, Range: fromRange(d.Range)})
	}
	return out
}

func fixTest(in *actionInput) []actionData {
	if in.fn == nil || in.fn.Test == nil {
		return nil
	}
	return []actionData{{Title: "Fix failing test " + in.fn.Test.Name, Func: in.fn.Name, Test: in.fn.Test.Name, TestCommand: in.fn.Test.Command}}
}

func implement(in *actionInput) []actionData {
	if in.fn == nil || !in.fn.Stub || in.fn.Test != nil {
		return nil
	}
	return []actionData{{Title: "Implement " + in.fn.Name, Func: in.fn.Name, Selection: in.fn.Signature}}
}

func writeTests(in *actionInput) []actionData {
	if in.fn == nil || in.fn.Test != nil || in.fn.Stub {
		return nil
	}
	return []actionData{{Title: "Write tests for " + in.fn.Name, Func: in.fn.Name, Selection: in.fn.Signature}}
}

func explain(in *actionInput) []actionData {
	d := actionData{Title: "Explain this"}
	switch {
	case in.end > in.start:
		d.Selection = in.snap.Text[in.start:in.end]
	case in.fn != nil:
		d.Title, d.Func = "Explain "+in.fn.Name, in.fn.Name
		d.Selection = in.snap.Text[in.fn.Start:in.fn.End]
	default:
		return nil
	}
	return []actionData{d}
}

func ask(in *actionInput) []actionData {
	d := actionData{Title: "Ask FrogNano…"}
	if in.end > in.start {
		d.Selection = in.snap.Text[in.start:in.end]
	}
	if in.fn != nil {
		d.Func = in.fn.Name
	}
	return []actionData{d}
}

func diagnosticText(d protocol.Diagnostic) string {
	switch m := d.Message.(type) {
	case protocol.String:
		return strings.TrimSpace(string(m))
	case *protocol.MarkupContent:
		return strings.TrimSpace(m.Value)
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// relPath is the file's path relative to root, or its absolute path outside it.
func relPath(root, u string) string {
	p := uri.URI(u).FsPath()
	if root != "" {
		if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
	}
	return p
}

// instruction turns an action into the task the agent receives: what to do, where, and how
// to check it, in the words of a colleague asking for help.
func instruction(d actionData, rel string) (string, error) {
	line := d.Range.Start.Line + 1
	switch d.Action {
	case "fix":
		return fmt.Sprintf("Fix this problem reported in %s at line %d:\n\n%s\n\nFind the cause, fix it in the code, and check that the project still builds and its tests pass.", rel, line, d.Diagnostic), nil
	case "fixTest":
		return fmt.Sprintf("The test %s in %s fails. Run it with `%s`, find out why, and fix the code under test (change the test only if the test itself is wrong). Run it again to confirm it passes.", d.Test, rel, d.TestCommand), nil
	case "implement":
		return fmt.Sprintf("Implement the function %s in %s (line %d); its body is only a placeholder:\n\n%s\n\nKeep its signature, follow the conventions of the surrounding code, and run the project's tests.", d.Func, rel, line, d.Selection), nil
	case "tests":
		return fmt.Sprintf("Write tests for the function %s in %s (line %d):\n\n%s\n\nPut them where this project keeps its tests, in its usual style, covering normal and edge cases, and run them.", d.Func, rel, line, d.Selection), nil
	case "explain":
		return fmt.Sprintf("Explain what this code from %s (line %d) does, how it fits into the project, and anything surprising about it. Read related files as needed, but do not change any files. Answer in Markdown.\n\n```\n%s\n```", rel, line, d.Selection), nil
	case "ask":
		if strings.TrimSpace(d.Instruction) == "" {
			return "", fmt.Errorf("Ask FrogNano needs an instruction: the FrogNano editor plugins ask for it; other editors pass it as the instruction field of the frognano.ask command")
		}
		task := d.Instruction + fmt.Sprintf("\n\n(The user is looking at %s, line %d", rel, line)
		if d.Func != "" {
			task += ", in " + d.Func
		}
		task += ".)"
		if d.Selection != "" {
			task += "\n\nSelected code:\n```\n" + d.Selection + "\n```"
		}
		return task, nil
	}
	return "", fmt.Errorf("unknown action %q", d.Action)
}

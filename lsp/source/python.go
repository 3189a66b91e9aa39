package source

import (
	"path"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
)

// pyScope is where a Python statement is: the classes and functions around it, which
// qualify its functions' names ("Calc.add", "outer.inner": Python's __qualname__ without
// "<locals>"), and whether all of them are classes named Test*, as pytest requires of
// the classes around a test.
type pyScope struct {
	qual   []string
	testOK bool
}

func (s pyScope) key() string {
	if s.testOK {
		return "T" + strings.Join(s.qual, ".")
	}
	return "F" + strings.Join(s.qual, ".")
}

func (s pyScope) enter(name string, class bool) pyScope {
	return pyScope{qual: append(s.qual[:len(s.qual):len(s.qual)], name), testOK: s.testOK && class && strings.HasPrefix(name, "Test")}
}

// pyStatements walks a module's or a block's statements.
func (w *walker) pyStatements(container syntax.Node, sc pyScope) {
	w.units(container, sc.key(), func(s syntax.Node) { w.pyStatement(s, sc) })
}

// pyStatement finds the functions in one statement: a def, a class's methods, or the defs
// in the blocks of an if, for, while, try, with or match.
func (w *walker) pyStatement(s syntax.Node, sc pyScope) {
	switch s.Kind() {
	case "decorated_definition":
		w.pyStatement(s.Field("definition"), sc)
	case "function_definition":
		w.pyDef(s, sc)
	case "class_definition":
		name := s.Field("name").Text()
		if body := s.Field("body"); name != "" && body.Valid() {
			w.pyStatements(body, sc.enter(name, true))
		}
	default:
		for _, c := range s.NamedChildren() {
			switch k := c.Kind(); {
			case k == "block":
				w.pyStatements(c, sc)
			case strings.HasSuffix(k, "_clause"), k == "ERROR":
				w.pyStatement(c, sc)
			}
		}
	}
}

// pyDef records a def and walks its body for nested ones.
func (w *walker) pyDef(fn syntax.Node, sc pyScope) {
	nameNode, body := fn.Field("name"), fn.Field("body")
	name := nameNode.Text()
	var colon syntax.Node
	for c := body.PrevSibling(); c.Valid(); c = c.PrevSibling() {
		if c.Kind() == ":" {
			colon = c
			break
		}
	}
	if name == "" || !body.Valid() || !colon.Valid() || colon.IsMissing() {
		return // a header still being typed
	}
	// The body: "def f(): pass" starts after the colon, else on the line after the header.
	bodyStart := body.Start()
	if nl := strings.IndexByte(w.text[colon.End():bodyStart], '\n'); nl >= 0 || body.ChildCount() == 0 {
		if nl < 0 {
			nl = strings.IndexByte(w.text[colon.End():], '\n')
		}
		bodyStart = len(w.text)
		if nl >= 0 {
			bodyStart = colon.End() + nl + 1
		}
	}
	qual := strings.Join(append(sc.qual[:len(sc.qual):len(sc.qual)], name), ".")
	r := w.add(qual, fn.Start(), bodyStart, body.End(), body.End(), colon.Start(), pyStub(fn, body, colon.End()))
	// pytest collects functions whose name starts with "test" (its python_functions
	// default), at module level or in classes named Test* (python_classes).
	if w.testFile && sc.testOK && strings.HasPrefix(name, "test") {
		id := strings.Join(append(sc.qual[:len(sc.qual):len(sc.qual)], name), "::")
		r.Test = &Test{Name: id, Command: pytestCommand(w.relPath, id)}
	}
	w.pyStatements(body, sc.enter(name, false))
}

// pyIsTestFile follows pytest's default python_files: test_*.py and *_test.py.
func pyIsTestFile(relPath string) bool {
	b := path.Base(relPath)
	return strings.HasSuffix(b, ".py") && (strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py"))
}

// pyStub applies the stub rule (stub.go) to a def's body. Placeholders are pass, ..., a
// docstring, raise and return of a literal; any other statement (a nested block
// included) is real code. Comments count from the end of the header's colon: tree-sitter
// puts a comment before the first statement into the def, not its block.
func pyStub(fn, body syntax.Node, after int) bool {
	var v stubVerdict
	for _, c := range fn.NamedChildren() {
		if c.Kind() == "comment" && c.Start() >= after {
			v.comments = true
			v.marker = v.marker || hasMarker(c.Text())
		}
	}
	first := true
	for _, st := range body.NamedChildren() {
		switch st.Kind() {
		case "comment":
			v.comments = true
			v.marker = v.marker || hasMarker(st.Text())
			continue
		case "pass_statement":
			v.inherent = true
		case "expression_statement":
			e := st.NamedChild(0)
			switch {
			case st.NamedChildCount() != 1:
				return false
			case first && (e.Kind() == "string" || e.Kind() == "concatenated_string"):
				v.inherent = true // a docstring
				v.marker = v.marker || hasMarker(e.Text())
			case e.Kind() == "ellipsis":
				v.inherent = true
			default:
				return false
			}
		case "raise_statement":
			v.marker = v.marker || hasMarker(st.Text())
		case "return_statement":
			if !pyPlaceholderValue(st.NamedChild(0)) {
				return false
			}
		default:
			return false
		}
		first = false
		v.statements = true
	}
	return v.stub()
}

// pyPlaceholderValue accepts what a stub returns: nothing, a literal, None/True/False,
// NotImplemented, an empty [], {} or (), or a negative number.
func pyPlaceholderValue(n syntax.Node) bool {
	if !n.Valid() {
		return true
	}
	switch n.Kind() {
	case "integer", "float", "string", "concatenated_string", "none", "true", "false":
		return true
	case "identifier":
		return n.Text() == "NotImplemented"
	case "list", "dictionary", "tuple":
		return n.NamedChildCount() == 0
	case "unary_operator":
		arg := n.Field("argument").Kind()
		return n.Field("operator").Kind() == "-" && (arg == "integer" || arg == "float")
	case "comment":
		return true
	}
	return false
}

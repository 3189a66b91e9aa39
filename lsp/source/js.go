package source

import (
	"path"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
)

// The JavaScript and TypeScript functions: function declarations and named function
// expressions, const/let/var bound to arrow or function expressions, class methods and
// arrow-valued class fields, object-literal methods and arrow-valued properties (named
// "obj.key" when the object is a variable's value), export default functions, and in
// test files the it()/test() blocks. Anonymous callbacks are not functions here (see
// Enclosing), but the functions inside them are found.

// jsIsTestFile: Jest's and Vitest's default patterns, *.test.* and *.spec.* files and
// anything under __tests__/.
func jsIsTestFile(relPath string) bool {
	b := path.Base(relPath)
	return strings.Contains(b, ".test.") || strings.Contains(b, ".spec.") ||
		strings.Contains("/"+relPath, "/__tests__/")
}

// jsStatements walks a program's or a block's statements as units; cls names the class
// whose body it is, or is "" (the other statements' functions are not qualified).
func (w *walker) jsStatements(container syntax.Node, cls string) {
	w.units(container, "js:"+cls, func(s syntax.Node) { w.js(s, -1) })
}

// jsSkip are the kinds that hold no function with a body: types, literals, names.
var jsSkip = map[string]bool{
	"comment": true, "identifier": true, "property_identifier": true, "string": true,
	"number": true, "regex": true, "template_string": true, "type_annotation": true,
	"type_arguments": true, "type_parameters": true, "interface_declaration": true,
	"type_alias_declaration": true, "ambient_declaration": true, "function_signature": true,
	"import_statement": true, "jsx_text": true, "enum_declaration": true,
}

// js finds the functions in n; start, when not -1, is where n's declaration starts (an
// export before it).
func (w *walker) js(n syntax.Node, start int) {
	kind := n.Kind()
	if jsSkip[kind] {
		return
	}
	if start < 0 {
		start = n.Start()
	}
	switch kind {
	case "function_declaration", "generator_function_declaration":
		w.jsFunc(n.Field("name").Text(), start, n)
		return
	case "function_expression", "function", "generator_function":
		if name := n.Field("name"); name.Valid() {
			w.jsFunc(name.Text(), start, n)
			return
		}
	case "class_declaration", "abstract_class_declaration", "class":
		w.jsClass(n, n.Field("name").Text())
		return
	case "lexical_declaration", "variable_declaration":
		w.jsVars(n, start)
		return
	case "export_statement":
		if d := n.Field("declaration"); d.Valid() {
			w.js(d, start)
			return
		}
		if v := n.Field("value"); v.Valid() && n.Child(1).Kind() == "default" {
			switch {
			case jsFnValue(v):
				w.jsFunc("default", start, v)
			case v.Kind() == "class":
				w.jsClass(v, "default")
			default:
				w.js(v, -1)
			}
			return
		}
	case "assignment_expression":
		// name = function () {...}, name = {...}: not obj.name = ...
		if left, right := n.Field("left"), n.Field("right"); left.Kind() == "identifier" {
			switch {
			case right.Kind() == "function_expression" || right.Kind() == "function":
				w.jsFunc(left.Text(), left.Start(), right)
				return
			case right.Kind() == "object":
				w.jsObject(right, left.Text())
				return
			}
		}
	case "call_expression":
		if w.testFile && w.jsTestCall(n) {
			return
		}
	case "object":
		w.jsObject(n, "")
		return
	case "statement_block":
		w.jsStatements(n, "")
		return
	}
	for _, c := range n.NamedChildren() {
		w.js(c, -1)
	}
}

// jsFnValue reports a function value: an arrow function or a function expression.
func jsFnValue(n syntax.Node) bool {
	switch n.Kind() {
	case "arrow_function", "function_expression", "function", "generator_function":
		return true
	}
	return false
}

// jsFunc records the function fn (a declaration, expression, arrow function or method)
// named name whose declaration starts at start, and walks its body.
func (w *walker) jsFunc(name string, start int, fn syntax.Node) *rec {
	body := fn.Field("body")
	if name == "" || !body.Valid() {
		return nil
	}
	var r *rec
	if body.Kind() == "statement_block" {
		bodyStart, bodyEnd := jsBraces(body)
		r = w.add(name, start, bodyStart, bodyEnd, body.End(), body.Start(), jsStub(body))
	} else { // an arrow function's expression
		r = w.add(name, start, body.Start(), body.End(), body.End(), body.Start(), false)
	}
	w.js(body, -1)
	return r
}

// jsBraces returns what lies between a block's braces (to its end when "}" is missing).
func jsBraces(block syntax.Node) (start, end int) {
	start, end = block.Start()+1, block.End()
	if last := block.Child(block.ChildCount() - 1); last.Kind() == "}" && !last.IsMissing() {
		end = last.Start()
	}
	return min(start, end), end
}

// jsVars records "const name[: T] = <function value>" (also let, var and exported), and
// walks the other values.
func (w *walker) jsVars(decl syntax.Node, start int) {
	first := true
	for _, d := range decl.NamedChildren() {
		if d.Kind() != "variable_declarator" {
			continue
		}
		name, value := d.Field("name"), d.Field("value")
		st := start
		if !first {
			st = d.Start()
		}
		first = false
		switch {
		case !value.Valid():
		case name.Kind() == "identifier" && jsFnValue(value):
			w.jsFunc(name.Text(), st, value)
		case name.Kind() == "identifier" && value.Kind() == "object":
			w.jsObject(value, name.Text())
		case name.Kind() == "identifier" && value.Kind() == "class":
			w.jsClass(value, cmpOr(value.Field("name").Text(), name.Text()))
		default:
			w.js(value, -1)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// jsClass walks a class body's members as units: methods, and fields whose value is a
// function. Overloads and abstract methods have no body and are left out.
func (w *walker) jsClass(class syntax.Node, name string) {
	body := class.Field("body")
	if !body.Valid() {
		return
	}
	w.units(body, "class:"+name, func(m syntax.Node) {
		switch m.Kind() {
		case "method_definition":
			w.jsFunc(name+"."+jsMemberName(m.Field("name")), jsMemberStart(m), m)
		case "public_field_definition", "field_definition":
			key := m.Field("name")
			if !key.Valid() {
				key = m.Field("property")
			}
			if v := m.Field("value"); jsFnValue(v) {
				w.jsFunc(name+"."+jsMemberName(key), jsMemberStart(m), v)
			} else if v.Valid() {
				w.js(v, -1)
			}
		}
	})
}

// jsMemberStart is where a member starts after its decorators (which JavaScript's grammar
// puts inside the member and TypeScript's before it).
func jsMemberStart(m syntax.Node) int {
	for _, c := range m.Children() {
		if c.Kind() != "decorator" && c.Kind() != "comment" {
			return c.Start()
		}
	}
	return m.Start()
}

// jsMemberName is a property name as written: identifier, #private, number or
// [computed]; a string's value.
func jsMemberName(n syntax.Node) string {
	if n.Kind() == "string" {
		return jsUnquote(n.Text())
	}
	return n.Text()
}

// jsObject records an object literal's methods and function-valued properties, named
// "v.key" when the object is the value of variable v.
func (w *walker) jsObject(obj syntax.Node, v string) {
	qual := func(key string) string {
		if v == "" {
			return key
		}
		return v + "." + key
	}
	for _, c := range obj.NamedChildren() {
		switch c.Kind() {
		case "method_definition":
			w.jsFunc(qual(jsMemberName(c.Field("name"))), c.Start(), c)
		case "pair":
			key, value := c.Field("key"), c.Field("value")
			if jsFnValue(value) {
				w.jsFunc(qual(jsMemberName(key)), key.Start(), value)
			} else {
				w.js(value, -1)
			}
		default:
			w.js(c, -1)
		}
	}
}

// jsImportsVitest reports an import of (or a require call for) "vitest" among the top
// level statements; files that use Vitest's globals without importing it are run with
// Jest, the more common default.
func jsImportsVitest(root syntax.Node, text string) bool {
	for _, s := range root.NamedChildren() {
		if !strings.Contains(text[s.Start():s.End()], "vitest") {
			continue
		}
		if s.Kind() == "import_statement" && jsUnquote(s.Field("source").Text()) == "vitest" {
			return true
		}
		for _, c := range s.Find("call_expression") {
			args := c.Field("arguments")
			if c.Field("function").Text() == "require" && args.NamedChildCount() == 1 && jsUnquote(args.NamedChild(0).Text()) == "vitest" {
				return true
			}
		}
	}
	return false
}

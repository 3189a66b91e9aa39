package synth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
)

// ScriptMutants are the candidates of every operator in one Python, JavaScript or
// TypeScript file, read with tree-sitter (internal/syntax): the same operators as
// GoMutants, inside functions and methods only (code at a module's top runs on import,
// where a change breaks everything at once). A file that does not parse cleanly is left
// alone, and so is every mutant after which it would not.
func ScriptMutants(file string, src []byte) ([]Mutant, error) {
	lang := syntax.LangOf(file)
	if lang == "" {
		return nil, fmt.Errorf("%s: not a Python, JavaScript or TypeScript file", file)
	}
	tree, err := syntax.Parse(lang, src)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	if tree.HasError() {
		return nil, nil
	}
	g := &tsGen{lang: lang, src: src, file: file}
	tree.Root().Walk(func(n syntax.Node) bool {
		if g.isFunc(n) {
			g.function(n)
			return false // nested functions are visited by function's own walk
		}
		return true
	})
	var out []Mutant
	for _, m := range g.out {
		if parses(lang, m.Apply(src)) {
			out = append(out, m)
		}
	}
	return out, nil
}

// parses reports whether src reads without a syntax error in lang.
func parses(lang syntax.Lang, src []byte) bool {
	t, err := syntax.Parse(lang, src)
	if err != nil {
		return false
	}
	defer t.Close()
	return !t.HasError()
}

type tsGen struct {
	lang syntax.Lang
	src  []byte
	file string
	out  []Mutant
	// the function being mutated
	fn   syntax.Node
	name string
	doc  string
}

func (g *tsGen) py() bool { return g.lang == syntax.Python }

func (g *tsGen) isFunc(n syntax.Node) bool {
	switch n.Kind() {
	case "function_definition": // Python
		return g.py()
	case "function_declaration", "method_definition", "function_expression", "function", "arrow_function",
		"generator_function_declaration", "generator_function":
		return !g.py()
	}
	return false
}

// function makes the mutants of one function (and of the functions nested in it, each
// under its own name).
func (g *tsGen) function(fn syntax.Node) {
	saved := *g
	g.fn, g.name, g.doc = fn, g.funcName(fn), g.docOf(fn)
	body := fn.Field("body")
	body.Walk(func(n syntax.Node) bool {
		if g.isFunc(n) {
			g.function(n)
			return false
		}
		g.node(n)
		return true
	})
	g.removal(body)
	saved.out = g.out
	*g = saved
}

// funcName is "name" or "Class.name" (for a function assigned to a variable, the variable).
func (g *tsGen) funcName(fn syntax.Node) string {
	name := fn.Field("name").Text()
	if name == "" {
		if p := fn.Parent(); p.Kind() == "variable_declarator" || p.Kind() == "pair" || p.Kind() == "assignment_expression" {
			name = p.Field("name").Text()
			if name == "" {
				name = p.Field("key").Text()
			}
			if name == "" {
				name = p.Field("left").Text()
			}
		}
	}
	if name == "" {
		name = "(anonymous)"
	}
	for p := fn.Parent(); p.Valid(); p = p.Parent() {
		if k := p.Kind(); k == "class_definition" || k == "class_declaration" || k == "class" {
			if c := p.Field("name").Text(); c != "" {
				return c + "." + name
			}
			break
		}
		if g.isFunc(p) {
			break
		}
	}
	return name
}

// docOf is the function's docstring (Python) or the comment right above it (JS/TS).
func (g *tsGen) docOf(fn syntax.Node) string {
	if g.py() {
		if first := fn.Field("body").NamedChild(0); first.Kind() == "expression_statement" && first.NamedChild(0).Kind() == "string" {
			return strings.TrimSpace(strings.Trim(first.NamedChild(0).Text(), `"'`))
		}
		return ""
	}
	at := fn
	for p := fn.Parent(); p.Valid() && (p.Kind() == "export_statement" || p.Kind() == "variable_declarator" || p.Kind() == "lexical_declaration"); p = p.Parent() {
		at = p
	}
	c := at.PrevSibling()
	if c.Kind() != "comment" {
		return ""
	}
	t := c.Text()
	t = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(t, "/**"), "//"), "*/")
	var lines []string
	for _, l := range strings.Split(t, "\n") {
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*")))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func (g *tsGen) add(op string, at syntax.Node, start, end int, repl, desc string) {
	synth := SynthMutation
	if op == OpRemoveBody {
		synth = SynthRemoval
	}
	g.out = append(g.out, Mutant{Synthesizer: synth, Operator: op, Package: g.file, File: g.file, Func: g.name,
		Line: at.Line() + 1, Desc: desc, Start: start, End: end, Repl: repl, FuncStart: g.fn.Start(), Doc: g.doc})
}

var (
	pyNegated  = map[string]string{"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not", "is not": "is"}
	jsNegated  = map[string]string{"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "==", "===": "!==", "!==": "==="}
	tsBoundary = map[string]string{"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
	pyLogical  = map[string]string{"and": "or", "or": "and"}
	jsLogical  = map[string]string{"&&": "||", "||": "&&"}
)

func (g *tsGen) node(n syntax.Node) {
	switch n.Kind() {
	case "comparison_operator": // Python: a < b, a not in b (a < b < c has two operators)
		for _, op := range n.FieldAll("operators") {
			g.operator(n, op, pyNegated, tsBoundary, nil)
		}
	case "boolean_operator": // Python: and, or
		g.operator(n, n.Field("operator"), nil, nil, pyLogical)
		g.dropCondition(n)
	case "binary_expression": // JS/TS
		op := n.Field("operator")
		g.operator(n, op, jsNegated, tsBoundary, jsLogical)
		if _, ok := jsLogical[op.Text()]; ok {
			g.dropCondition(n)
		}
	case "if_statement":
		g.earlyReturn(n)
	case "block", "statement_block":
		g.dropStatements(n)
	case "argument_list", "arguments":
		g.swap(n)
	case "integer", "number":
		g.constant(n)
	}
}

func (g *tsGen) operator(n, op syntax.Node, negated, boundary, logical map[string]string) {
	text := strings.Join(strings.Fields(op.Text()), " ")
	if to, ok := negated[text]; ok {
		g.add(OpFlipComparison, n, op.Start(), op.End(), to, fmt.Sprintf("%s became %s", text, to))
	}
	if to, ok := boundary[text]; ok {
		g.add(OpOffByOne, n, op.Start(), op.End(), to, fmt.Sprintf("%s became %s", text, to))
	}
	if to, ok := logical[text]; ok {
		g.add(OpFlipBoolean, n, op.Start(), op.End(), to, fmt.Sprintf("%s became %s", text, to))
	}
}

// dropCondition keeps one side of a && b (a or b) where it is a condition of an if, a
// while or an elif.
func (g *tsGen) dropCondition(n syntax.Node) {
	p := n.Parent()
	if p.Kind() == "parenthesized_expression" {
		p = p.Parent()
	}
	switch p.Kind() {
	case "if_statement", "while_statement", "elif_clause":
	default:
		return
	}
	left, right := n.Field("left"), n.Field("right")
	g.add(OpDropCondition, n, n.Start(), n.End(), left.Text(), "dropped the condition "+oneLine(right.Text()))
	g.add(OpDropCondition, n, n.Start(), n.End(), right.Text(), "dropped the condition "+oneLine(left.Text()))
}

// earlyReturn inverts the condition of an if without else whose branch ends in a return.
func (g *tsGen) earlyReturn(n syntax.Node) {
	if n.Field("alternative").Valid() {
		return
	}
	cons := n.Field("consequence")
	last := cons
	if k := cons.Kind(); k == "block" || k == "statement_block" {
		last = cons.NamedChild(cons.NamedChildCount() - 1)
	}
	if last.Kind() != "return_statement" {
		return
	}
	cond := n.Field("condition")
	if g.py() {
		g.add(OpInvertEarlyRetrn, n, cond.Start(), cond.End(), "not ("+cond.Text()+")", "inverted the condition of an early return")
		return
	}
	if cond.Kind() == "parenthesized_expression" {
		inner := cond.NamedChild(0)
		g.add(OpInvertEarlyRetrn, n, inner.Start(), inner.End(), "!("+inner.Text()+")", "inverted the condition of an early return")
	}
}

// dropStatements removes assignments, augmented assignments and calls standing as
// statements (Python: replaced by pass, which keeps a block that held one statement valid).
func (g *tsGen) dropStatements(block syntax.Node) {
	for _, st := range block.NamedChildren() {
		if st.Kind() != "expression_statement" {
			continue
		}
		e := st.NamedChild(0)
		switch e.Kind() {
		case "assignment", "augmented_assignment", "call", // Python
			"assignment_expression", "augmented_assignment_expression", "call_expression", "update_expression": // JS/TS
		case "await", "await_expression":
			if k := e.NamedChild(0).Kind(); k != "call" && k != "call_expression" {
				continue
			}
		default:
			continue
		}
		if g.py() && e.Kind() == "assignment" && e.Field("type").Valid() && !e.Field("right").Valid() {
			continue // an annotation without a value
		}
		repl := ""
		if g.py() {
			repl = "pass"
		}
		g.add(OpDropStatement, st, st.Start(), st.End(), repl, "removed `"+oneLine(st.Text())+"`")
	}
}

// swap exchanges the first two positional arguments of a call.
func (g *tsGen) swap(args syntax.Node) {
	list := args.NamedChildren()
	var pos []syntax.Node
	for _, a := range list {
		switch a.Kind() {
		case "comment":
			continue
		case "keyword_argument", "list_splat", "dictionary_splat", "spread_element", "parenthesized_expression_with_generator", "generator_expression":
			return
		}
		pos = append(pos, a)
	}
	if len(pos) < 2 {
		return
	}
	a, b := pos[0].Text(), pos[1].Text()
	if a == b {
		return
	}
	fn := args.Parent().Field("function").Text()
	g.add(OpSwapArguments, args, pos[0].Start(), pos[1].End(), b+", "+a, "swapped the arguments "+oneLine(a)+" and "+oneLine(b)+" of "+oneLine(fn))
}

// constant changes a small decimal integer: n → n+1, 1 → 0.
func (g *tsGen) constant(n syntax.Node) {
	text := n.Text()
	v, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64)
	if err != nil || v > 1<<20 || (len(text) > 1 && text[0] == '0') {
		return
	}
	to := v + 1
	if v == 1 {
		to = 0
	}
	g.add(OpChangeConstant, n, n.Start(), n.End(), strconv.FormatInt(to, 10), fmt.Sprintf("the constant %s became %d", text, to))
}

// removal deletes the body of a function with something to implement (two statements or
// more), keeping a Python docstring; what replaces it raises, whatever the function returns.
func (g *tsGen) removal(body syntax.Node) {
	n := 0
	body.Walk(func(x syntax.Node) bool {
		if strings.HasSuffix(x.Kind(), "_statement") || x.Kind() == "return_statement" {
			n++
		}
		return true
	})
	if g.doc != "" && g.py() {
		n-- // the docstring
	}
	if n < 2 || (!g.py() && body.Kind() != "statement_block") {
		return
	}
	desc := "removed the body of " + g.name
	if g.py() {
		stmts := body.NamedChildren()
		start := body.Start()
		if g.doc != "" && len(stmts) > 1 {
			start = stmts[1].Start()
		}
		g.add(OpRemoveBody, g.fn, start, body.End(), "raise NotImplementedError", desc)
		return
	}
	g.add(OpRemoveBody, g.fn, body.Start(), body.End(), "{\n  throw new Error(\"not implemented\");\n}", desc)
}

package synth

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// Synthesizers.
const (
	SynthMutation = "mutation" // a procedural change to an expression or statement
	SynthRemoval  = "removal"  // a function's body deleted: implement it again
)

// Mutation operators.
const (
	OpFlipComparison   = "flip-comparison"     // a < b → a >= b, == → !=
	OpOffByOne         = "off-by-one"          // a < b → a <= b
	OpFlipBoolean      = "flip-boolean"        // && ↔ ||
	OpDropCondition    = "drop-condition"      // if a && b → if a
	OpDropStatement    = "drop-statement"      // an assignment, increment or call removed
	OpSwapArguments    = "swap-arguments"      // f(a, b) → f(b, a)
	OpChangeConstant   = "change-constant"     // 3 → 4
	OpInvertEarlyRetrn = "invert-early-return" // if c { return } → if !(c) { return }
	OpIncDec           = "inc-dec"             // i++ → i--
	OpReturnValue      = "return-value"        // return true → return false, return err → return nil
	OpDropElse         = "drop-else"           // if c { a } else { b } → if c { a }
	OpSliceBound       = "slice-bound"         // s[lo:hi] → s[lo:hi-1], s[lo:] → s[lo+1:]
	OpGuardOrder       = "guard-order"         // p != nil && p.ok → p.ok && p != nil
	OpChangeString     = "change-string"       // "text" → ""
	OpRemoveBody       = "remove-body"         // the removal synthesizer's one operator
)

// Operators lists every operator, mutation ones first.
var Operators = []string{OpFlipComparison, OpOffByOne, OpFlipBoolean, OpDropCondition, OpDropStatement,
	OpSwapArguments, OpChangeConstant, OpInvertEarlyRetrn, OpIncDec, OpReturnValue, OpDropElse, OpSliceBound,
	OpGuardOrder, OpChangeString, OpRemoveBody}

// Mutant is one candidate change to one function of one file: the bytes [Start, End) of
// the file replaced by Repl.
type Mutant struct {
	ID          int    // unique within one synthesis run, never 0 (0 selects no mutant)
	Synthesizer string // SynthMutation or SynthRemoval
	Operator    string
	Package     string // import path
	File        string // slash path from the top of the repository
	Func        string // "Name" or "Recv.Name"
	Line        int
	Desc        string
	Start, End  int
	Repl        string
	// FuncStart is the offset of the function's declaration (after its doc comment): the
	// switch build copies the function from there.
	FuncStart int
	// Doc is the function's documentation (Python's docstring, the JS/TS comment above it;
	// Go's is read from the source at FuncStart).
	Doc string
}

// Apply is src with m's change.
func (m Mutant) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.Repl))
	out = append(out, src[:m.Start]...)
	out = append(out, m.Repl...)
	return append(out, src[m.End:]...)
}

// GoMutants are the candidates of every operator in one Go source file. Functions named
// init and generated files are left alone.
func GoMutants(pkg, file string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) || importsC(f) {
		return nil, nil
	}
	var out []Mutant
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || fd.Name.Name == "init" || fd.Name.Name == "_" {
			continue
		}
		g := &gen{fset: fset, src: src, pkg: pkg, file: file, fd: fd}
		g.walk()
		g.removal()
		out = append(out, g.out...)
	}
	return out, nil
}

func importsC(f *ast.File) bool {
	for _, im := range f.Imports {
		if im.Path.Value == `"C"` {
			return true
		}
	}
	return false
}

type gen struct {
	fset *token.FileSet
	src  []byte
	pkg  string
	file string
	fd   *ast.FuncDecl
	out  []Mutant
}

func (g *gen) off(p token.Pos) int { return g.fset.Position(p).Offset }

func (g *gen) text(n ast.Node) string { return string(g.src[g.off(n.Pos()):g.off(n.End())]) }

func (g *gen) add(op string, at ast.Node, start, end token.Pos, repl, desc string) {
	name := g.fd.Name.Name
	if g.fd.Recv != nil && len(g.fd.Recv.List) == 1 {
		name = recvType(g.fd.Recv.List[0].Type) + "." + name
	}
	synth := SynthMutation
	if op == OpRemoveBody {
		synth = SynthRemoval
	}
	g.out = append(g.out, Mutant{Synthesizer: synth, Operator: op, Package: g.pkg, File: g.file, Func: name,
		Line: g.fset.Position(at.Pos()).Line, Desc: desc, Start: g.off(start), End: g.off(end), Repl: repl,
		FuncStart: g.off(g.fd.Pos())})
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

var (
	negated  = map[token.Token]token.Token{token.LSS: token.GEQ, token.GEQ: token.LSS, token.GTR: token.LEQ, token.LEQ: token.GTR, token.EQL: token.NEQ, token.NEQ: token.EQL}
	boundary = map[token.Token]token.Token{token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR}
	logical  = map[token.Token]token.Token{token.LAND: token.LOR, token.LOR: token.LAND}
)

func (g *gen) walk() { ast.Inspect(g.fd.Body, g.visit) }

func (g *gen) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.BinaryExpr:
		g.binary(n)
	case *ast.IfStmt:
		g.ifStmt(n)
	case *ast.BlockStmt:
		g.dropStatements(n.List)
		g.dropElse(n.List)
	case *ast.CaseClause:
		g.dropStatements(n.Body)
		g.dropElse(n.Body)
		// The values of a case are left alone: two equal constants do not compile.
		for _, st := range n.Body {
			ast.Inspect(st, g.visit)
		}
		return false
	case *ast.CompositeLit:
		// So are a literal's keys (duplicate keys do not compile).
		for _, e := range n.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Value
			}
			ast.Inspect(e, g.visit)
		}
		return false
	case *ast.CallExpr:
		g.swap(n)
	case *ast.BasicLit:
		g.constant(n)
		g.str(n)
	case *ast.IncDecStmt:
		g.incDec(n)
	case *ast.ReturnStmt:
		g.returnValue(n)
	case *ast.SliceExpr:
		g.sliceBound(n)
	}
	return true
}

func (g *gen) binary(b *ast.BinaryExpr) {
	op := b.OpPos
	end := op + token.Pos(len(b.Op.String()))
	if to, ok := negated[b.Op]; ok {
		g.add(OpFlipComparison, b, op, end, to.String(), fmt.Sprintf("%s became %s", b.Op, to))
	}
	if to, ok := boundary[b.Op]; ok {
		g.add(OpOffByOne, b, op, end, to.String(), fmt.Sprintf("%s became %s", b.Op, to))
	}
	if to, ok := logical[b.Op]; ok {
		g.add(OpFlipBoolean, b, op, end, to.String(), fmt.Sprintf("%s became %s", b.Op, to))
	}
	g.guardOrder(b)
}

func (g *gen) ifStmt(s *ast.IfStmt) {
	if b, ok := ast.Unparen(s.Cond).(*ast.BinaryExpr); ok && (b.Op == token.LAND || b.Op == token.LOR) {
		g.add(OpDropCondition, s, s.Cond.Pos(), s.Cond.End(), g.text(b.X), "dropped the condition "+g.text(b.Y))
		g.add(OpDropCondition, s, s.Cond.Pos(), s.Cond.End(), g.text(b.Y), "dropped the condition "+g.text(b.X))
	}
	if s.Else == nil && len(s.Body.List) > 0 {
		if _, ok := s.Body.List[len(s.Body.List)-1].(*ast.ReturnStmt); ok {
			g.add(OpInvertEarlyRetrn, s, s.Cond.Pos(), s.Cond.End(), "!("+g.text(s.Cond)+")", "inverted the condition of an early return")
		}
	}
}

// dropStatements removes statements whose absence still compiles, mostly: updates of
// existing variables and calls. Declarations (:=) would leave names undefined.
func (g *gen) dropStatements(list []ast.Stmt) {
	for _, st := range list {
		ok := false
		switch s := st.(type) {
		case *ast.AssignStmt:
			ok = s.Tok != token.DEFINE
		case *ast.IncDecStmt:
			ok = true
		case *ast.ExprStmt:
			_, ok = s.X.(*ast.CallExpr)
		}
		if ok {
			g.add(OpDropStatement, st, st.Pos(), st.End(), "", "removed `"+oneLine(g.text(st))+"`")
		}
	}
}

func (g *gen) incDec(s *ast.IncDecStmt) {
	to := token.DEC
	if s.Tok == token.DEC {
		to = token.INC
	}
	g.add(OpIncDec, s, s.TokPos, s.TokPos+2, to.String(), fmt.Sprintf("%s became %s", s.Tok, to))
}

// returnValue flips a returned boolean constant and drops a returned error (return err →
// return nil): a failure passed over in silence.
func (g *gen) returnValue(r *ast.ReturnStmt) {
	for _, e := range r.Results {
		id, ok := e.(*ast.Ident)
		if !ok {
			continue
		}
		switch id.Name {
		case "true", "false":
			to := map[string]string{"true": "false", "false": "true"}[id.Name]
			g.add(OpReturnValue, r, id.Pos(), id.End(), to, "returns "+to+" instead of "+id.Name)
		case "err":
			g.add(OpReturnValue, r, id.Pos(), id.End(), "nil", "returns nil instead of the error err")
		}
	}
}

// dropElse removes an else branch, unless the if is the last statement of its block and
// the branch ends in a return (the function could then end without one).
func (g *gen) dropElse(list []ast.Stmt) {
	for i, st := range list {
		s, ok := st.(*ast.IfStmt)
		if !ok || s.Else == nil {
			continue
		}
		if i == len(list)-1 && endsInReturn(s.Else) {
			continue
		}
		g.add(OpDropElse, s, s.Body.End(), s.Else.End(), "", "dropped the else branch of `if "+oneLine(g.text(s.Cond))+"`")
	}
}

func endsInReturn(s ast.Stmt) bool {
	switch s := s.(type) {
	case *ast.BlockStmt:
		return len(s.List) > 0 && endsInReturn(s.List[len(s.List)-1])
	case *ast.IfStmt:
		return true // an else-if chain: leave it
	case *ast.ReturnStmt:
		return true
	case *ast.ExprStmt:
		c, ok := s.X.(*ast.CallExpr)
		if ok {
			id, ok := c.Fun.(*ast.Ident)
			return ok && id.Name == "panic"
		}
	}
	return false
}

// sliceBound moves a slice's end one back or its start one on.
func (g *gen) sliceBound(s *ast.SliceExpr) {
	if s.Slice3 {
		return
	}
	if s.High != nil {
		hi := g.text(s.High)
		if _, simple := s.High.(*ast.BinaryExpr); simple {
			hi = "(" + hi + ")"
		}
		g.add(OpSliceBound, s, s.High.Pos(), s.High.End(), hi+"-1", "the slice "+oneLine(g.text(s))+" ends one earlier")
	}
	if s.Low != nil {
		lo := g.text(s.Low)
		if _, simple := s.Low.(*ast.BinaryExpr); simple {
			lo = "(" + lo + ")"
		}
		g.add(OpSliceBound, s, s.Low.Pos(), s.Low.End(), lo+"+1", "the slice "+oneLine(g.text(s))+" starts one later")
	}
}

// guardOrder puts a guard after what it guards: in `p != nil && p.x > 0` or
// `i < len(s) && s[i] == c` the right side may then run unguarded.
func (g *gen) guardOrder(b *ast.BinaryExpr) {
	if b.Op != token.LAND && b.Op != token.LOR {
		return
	}
	x, ok := ast.Unparen(b.X).(*ast.BinaryExpr)
	if !ok || !isGuard(x) {
		return
	}
	g.add(OpGuardOrder, b, b.X.Pos(), b.Y.End(), g.text(b.Y)+" "+b.Op.String()+" "+g.text(b.X),
		"the guard "+oneLine(g.text(b.X))+" now comes after "+oneLine(g.text(b.Y)))
}

// isGuard: a comparison with nil, or one with a len().
func isGuard(x *ast.BinaryExpr) bool {
	if _, ok := negated[x.Op]; !ok {
		return false
	}
	for _, e := range []ast.Expr{x.X, x.Y} {
		switch e := ast.Unparen(e).(type) {
		case *ast.Ident:
			if e.Name == "nil" {
				return true
			}
		case *ast.CallExpr:
			if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "len" {
				return true
			}
		}
	}
	return false
}

// str empties a string constant (interpreted or raw) that holds text.
func (g *gen) str(l *ast.BasicLit) {
	if l.Kind != token.STRING || len(l.Value) <= 2 {
		return
	}
	g.add(OpChangeString, l, l.Pos(), l.End(), `""`, "the string "+oneLine(l.Value)+" became empty")
}

func (g *gen) swap(c *ast.CallExpr) {
	if len(c.Args) < 2 || c.Ellipsis.IsValid() {
		return
	}
	a, b := g.text(c.Args[0]), g.text(c.Args[1])
	if a == b {
		return
	}
	g.add(OpSwapArguments, c, c.Args[0].Pos(), c.Args[1].End(), b+", "+a, "swapped the arguments "+oneLine(a)+" and "+oneLine(b)+" of "+oneLine(g.text(c.Fun)))
}

func (g *gen) constant(l *ast.BasicLit) {
	if l.Kind != token.INT {
		return
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(l.Value, "_", ""), 0, 64)
	if err != nil || v > 1<<20 {
		return
	}
	to := v + 1
	if v == 1 {
		to = 0
	}
	g.add(OpChangeConstant, l, l.Pos(), l.End(), strconv.FormatInt(to, 10), fmt.Sprintf("the constant %s became %d", l.Value, to))
}

// removal deletes the body of a function with something to implement (two statements or
// more); the panic keeps it compiling whatever it returns.
func (g *gen) removal() {
	body := g.fd.Body
	n := 0
	ast.Inspect(body, func(x ast.Node) bool {
		if _, ok := x.(ast.Stmt); ok {
			n++
		}
		return true
	})
	if n < 3 { // the block itself and at least two statements
		return
	}
	g.add(OpRemoveBody, g.fd, body.Lbrace, body.End(), "{\n\tpanic(\"not implemented\")\n}", "removed the body of "+g.fd.Name.Name)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// compiles checks what the compiler of one file can tell alone: the mutant parses, and
// every import is still used (a dropped statement can leave one unused, which fails the
// build of the plain patch although the switch build, which keeps the original, compiles).
func compiles(file string, src []byte) bool {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, 0)
	if err != nil {
		return false
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	for _, im := range f.Imports {
		name := ""
		if im.Name != nil {
			name = im.Name.Name
		} else {
			p, _ := strconv.Unquote(im.Path.Value)
			name = p[strings.LastIndex(p, "/")+1:]
			// Paths like gopkg.in/yaml.v3 or foo/v2 name the package otherwise: trust them.
			if strings.ContainsAny(name, ".-") || (len(name) > 1 && name[0] == 'v' && isDigits(name[1:])) {
				continue
			}
		}
		if name == "_" || name == "." {
			continue
		}
		if !used[name] {
			return false
		}
	}
	return bytes.Count(src, []byte{0}) == 0
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

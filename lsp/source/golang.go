package source

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// goFuncs finds the function declarations of a Go file (function literals are part of
// their declaration's body). A file that does not parse is read again one top-level
// "func" at a time, because go/parser gives up on the declarations after a syntax error
// and the cursor is most often in the one function being edited.
//
// clean reports that the whole file parsed, so that each function came from one parse;
// testingName is the name under which the file imports "testing". [File.Update] needs both.
func goFuncs(relPath, text string) (fs []Func, clean bool, testingName string) {
	f, err := goParse(text)
	testingName = goTestingImport(f)
	if err == nil {
		return goDecls(f, 0, len(text), text, relPath, testingName), true, testingName
	}
	var out []Func
	for _, c := range goChunks(text) {
		cf, _ := goParse(text[c[0]:c[1]])
		out = append(out, goDecls(cf, c[0], c[1], text, relPath, testingName)...)
	}
	return out, false, testingName
}

// goPrefix lets fragments without a package clause parse; offsets are corrected for it.
const goPrefix = "package p;"

type goFile struct {
	*ast.File
	base int // token.Pos of the fragment's first byte (after goPrefix)
}

func goParse(src string) (*goFile, error) {
	fset := token.NewFileSet()
	prefix := ""
	if !strings.HasPrefix(strings.TrimLeft(goStripComments(src), " \t\r\n"), "package") {
		prefix = goPrefix
	}
	f, err := parser.ParseFile(fset, "", prefix+src, parser.ParseComments|parser.SkipObjectResolution)
	if f == nil {
		return nil, err
	}
	return &goFile{File: f, base: fset.File(f.FileStart).Base() + len(prefix)}, err
}

// goStripComments drops leading comments (a file's licence header) so that goParse can see
// whether a package clause follows.
func goStripComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "//"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return ""
			}
			s = s[i+2:]
		default:
			return s
		}
	}
}

// goChunks splits text at the lines that start with a top-level "func".
func goChunks(text string) [][2]int {
	var starts []int
	for off := 0; off < len(text); {
		if strings.HasPrefix(text[off:], "func ") || strings.HasPrefix(text[off:], "func(") {
			starts = append(starts, off)
		}
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	var out [][2]int
	for i, s := range starts {
		e := len(text)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		out = append(out, [2]int{s, e})
	}
	return out
}

// goTestingImport is the name under which the file imports "testing" ("." for a dot
// import); "testing" when the file cannot tell.
func goTestingImport(f *goFile) string {
	if f != nil {
		for _, imp := range f.Imports {
			if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == "testing" {
				if imp.Name != nil {
					return imp.Name.Name
				}
				return "testing"
			}
		}
	}
	return "testing"
}

// goDecls turns the FuncDecls of a (fragment) file into Funcs; the fragment is
// text[shift:fragEnd].
func goDecls(f *goFile, shift, fragEnd int, text, relPath, testingName string) []Func {
	if f == nil {
		return nil
	}
	off := func(p token.Pos) int { return int(p) - f.base + shift }
	var out []Func
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || !fd.Body.Lbrace.IsValid() {
			continue
		}
		lbrace := off(fd.Body.Lbrace)
		// An unterminated body (go/parser still gives one) runs to the end of its
		// fragment, less trailing space.
		rbrace := shift + len(strings.TrimRight(text[shift:fragEnd], " \t\r\n"))
		end := rbrace
		if r := off(fd.Body.Rbrace); fd.Body.Rbrace.IsValid() && r >= 0 && r < fragEnd && text[r] == '}' {
			rbrace, end = r, r+1
		}
		fn := newFunc(text, goFuncName(fd), off(fd.Pos()), lbrace+1, rbrace, end, lbrace)
		if strings.HasSuffix(relPath, "_test.go") && goIsTest(fd, testingName) {
			fn.Test = &Test{Name: fd.Name.Name, Command: goTestCommand(relPath, fd.Name.Name)}
		}
		fn.Stub = goStub(fd, f.Comments)
		out = append(out, fn)
	}
	return out
}

// goFuncName is "Name", or "Recv.Name" for a method (pointer and type parameters dropped).
func goFuncName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// goIsTest applies the go test rule: a function TestXxx (Xxx not starting with a lower-case
// letter) with one parameter of type *testing.T and no results, type parameters or
// receiver. Benchmarks, fuzz targets and examples are not tests a fix can be checked with.
func goIsTest(fd *ast.FuncDecl, testingName string) bool {
	name := fd.Name.Name
	if fd.Recv != nil || fd.Type.TypeParams != nil || !strings.HasPrefix(name, "Test") {
		return false
	}
	if rest := name[len("Test"):]; rest != "" {
		if r, _ := utf8.DecodeRuneInString(rest); unicode.IsLower(r) {
			return false
		}
	}
	if fd.Type.Results != nil && len(fd.Type.Results.List) > 0 {
		return false
	}
	ps := fd.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == testingName && x.Sel.Name == "T"
	case *ast.Ident:
		return testingName == "." && x.Name == "T"
	}
	return false
}

// goStub applies the stub rule (stub.go) to a Go body. Placeholders are panic(...) and
// return statements whose results are all literals, nil/true/false, empty composite
// literals, errors.New/fmt.Errorf calls or identifiers that name a "not implemented" error.
func goStub(fd *ast.FuncDecl, comments []*ast.CommentGroup) bool {
	var v stubVerdict
	body := fd.Body
	// The comments are in source order and do not overlap: the body's are a run of them,
	// found by binary search (a loop over all of them for every function is quadratic).
	first := sort.Search(len(comments), func(i int) bool { return comments[i].Pos() > body.Lbrace })
	for _, cg := range comments[first:] {
		if body.Rbrace.IsValid() && cg.End() > body.Rbrace {
			break
		}
		v.comments = true
		v.marker = v.marker || hasMarker(goCommentText(cg))
	}
	for _, s := range body.List {
		switch s := s.(type) {
		case *ast.EmptyStmt:
			continue
		case *ast.ExprStmt:
			call, ok := s.X.(*ast.CallExpr)
			if id, isID := goCallee(call); !ok || !isID || id != "panic" {
				return false
			}
		case *ast.ReturnStmt:
			for _, r := range s.Results {
				if !goPlaceholderValue(r) {
					return false
				}
			}
		default:
			return false
		}
		v.statements = true
		v.marker = v.marker || goMentionsMarker(s)
	}
	return v.stub()
}

// goCommentText is cg.Text(), except for a block comment that the end of the file cuts
// off ("/*" while typing), on which go/ast panics (it slices off "/*" and "*/"): the
// group's raw text stands in for it.
func goCommentText(cg *ast.CommentGroup) string {
	for _, c := range cg.List {
		if strings.HasPrefix(c.Text, "/*") && (len(c.Text) < 4 || !strings.HasSuffix(c.Text, "*/")) {
			var b strings.Builder
			for _, c := range cg.List {
				b.WriteString(c.Text)
				b.WriteByte('\n')
			}
			return b.String()
		}
	}
	return cg.Text()
}

// goCallee is the called function's name when it is a plain identifier.
func goCallee(call *ast.CallExpr) (string, bool) {
	if call == nil {
		return "", false
	}
	id, ok := call.Fun.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

func goPlaceholderValue(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.Ident:
		return x.Name == "nil" || x.Name == "true" || x.Name == "false" || hasMarker(x.Name)
	case *ast.CompositeLit:
		return len(x.Elts) == 0
	case *ast.UnaryExpr:
		return x.Op == token.AND && goPlaceholderValue(x.X) || x.Op == token.SUB && goPlaceholderValue(x.X)
	case *ast.SelectorExpr:
		return hasMarker(x.Sel.Name) // pkg.ErrNotImplemented
	case *ast.CallExpr:
		sel, ok := x.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && (pkg.Name == "errors" && sel.Sel.Name == "New" || pkg.Name == "fmt" && sel.Sel.Name == "Errorf")
	}
	return false
}

// goMentionsMarker looks for a marker in the strings and names of a placeholder statement.
func goMentionsMarker(s ast.Stmt) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				if u, err := strconv.Unquote(x.Value); err == nil && hasMarker(u) {
					found = true
				}
			}
		case *ast.Ident:
			found = found || hasMarker(x.Name)
		}
		return !found
	})
	return found
}

package source

import (
	"path"
	"strings"
)

// jsFuncs finds named functions in JavaScript and TypeScript: function declarations and
// named function expressions, const/let/var bound to arrow or function expressions, class
// methods and arrow-valued class fields, object-literal methods and arrow-valued
// properties, export default functions, and in test files the it()/test() blocks.
// Anonymous callbacks are not functions here (see Enclosing).
func jsFuncs(lang Lang, relPath, text string) []Func {
	toks, comments := jsLex(text, jsxAllowed(lang, relPath))
	f := &jsFile{
		text: text, toks: toks, comments: comments, relPath: relPath,
		claimed: map[int]bool{}, classBody: map[int]bool{},
		testFile: jsIsTestFile(relPath),
	}
	f.link()
	f.vitest = f.importsVitest()
	f.walk()
	return f.funcs
}

// jsxAllowed: TypeScript proper (.ts) uses "<" for type assertions, so only .tsx and the
// JavaScript extensions may hold JSX.
func jsxAllowed(lang Lang, relPath string) bool {
	switch strings.ToLower(path.Ext(relPath)) {
	case ".ts", ".mts", ".cts":
		return false
	case ".tsx", ".jsx", ".js", ".mjs", ".cjs":
		return true
	}
	return lang == JavaScript
}

// jsIsTestFile: Jest's and Vitest's default patterns, *.test.* and *.spec.* files and
// anything under __tests__/.
func jsIsTestFile(relPath string) bool {
	b := path.Base(relPath)
	return strings.Contains(b, ".test.") || strings.Contains(b, ".spec.") ||
		strings.Contains("/"+relPath, "/__tests__/")
}

type jsFile struct {
	text     string
	toks     []jsTok
	comments [][2]int
	relPath  string
	testFile bool
	vitest   bool

	match  []int // the matching bracket's index; -1 when unmatched or not a bracket
	parent []int // the innermost open bracket around a token; -1 at top level

	classBody map[int]bool // open braces of class bodies
	claimed   map[int]bool // bodies already recorded: a "{" index, or an expression's first token
	funcs     []Func
}

// link matches brackets. ")" and "]" never close across a "{", and "}" closes the nearest
// "{", so that a half-typed call inside a function does not take the function's braces.
func (f *jsFile) link() {
	f.match = make([]int, len(f.toks))
	f.parent = make([]int, len(f.toks))
	var stack []int
	top := func() int {
		if len(stack) == 0 {
			return -1
		}
		return stack[len(stack)-1]
	}
	for i := range f.toks {
		f.match[i] = -1
		f.parent[i] = top()
		if f.toks[i].kind != jsPunct {
			continue
		}
		s := f.s(i)
		var want string
		switch s {
		case "(", "[", "{":
			stack = append(stack, i)
			continue
		case ")":
			want = "("
		case "]":
			want = "["
		case "}":
			want = "{"
		default:
			continue
		}
		for k := len(stack) - 1; k >= 0; k-- {
			o := f.s(stack[k])
			if o == want {
				f.match[stack[k]], f.match[i] = i, stack[k]
				stack = stack[:k]
				f.parent[i] = top()
				break
			}
			if o == "{" {
				break
			}
		}
	}
}

func (f *jsFile) walk() {
	for i := range f.toks {
		if f.punct(i-1, ".") || f.punct(i-1, "?.") {
			continue // a property name, not a keyword
		}
		switch {
		case f.ident(i, "class"):
			f.class(i)
		case f.ident(i, "function"):
			f.functionKeyword(i)
		case f.ident(i, "const") || f.ident(i, "let") || f.ident(i, "var"):
			f.varDecl(i)
		case f.ident(i, "default") && f.ident(i-1, "export"):
			if fn, ok := f.fnValue(i + 1); ok {
				f.record("default", i-1, fn, fn.last())
			}
		case f.testFile && (f.ident(i, "it") || f.ident(i, "test") || f.ident(i, "specify")):
			f.testCall(i)
		case f.punct(i, "("):
			f.objectMethod(i)
		case f.punct(i, ":"):
			f.objectProperty(i)
		}
	}
}

// jsFn is a function value: a block body between braces open and close, or an
// expression body toks[from:to].
type jsFn struct {
	open, close int
	from, to    int
}

func (fn jsFn) last() int {
	if fn.open >= 0 {
		return fn.close
	}
	return fn.to - 1
}

// record adds a Func named name that starts at token start and ends with token endTok.
// It returns nil when the body was already recorded under another name.
func (f *jsFile) record(name string, start int, fn jsFn, endTok int) *Func {
	var bodyStart, bodyEnd, sigEnd int
	if fn.open >= 0 {
		if f.claimed[fn.open] {
			return nil
		}
		f.claimed[fn.open] = true
		bodyStart, bodyEnd, sigEnd = f.toks[fn.open].end, f.toks[fn.close].start, f.toks[fn.open].start
	} else {
		if f.claimed[fn.from] {
			return nil
		}
		f.claimed[fn.from] = true
		bodyStart, bodyEnd = f.toks[fn.from].start, f.toks[fn.to-1].end
		sigEnd = bodyStart
	}
	fc := newFunc(f.text, name, f.toks[start].start, bodyStart, bodyEnd, f.toks[endTok].end, sigEnd)
	fc.Stub = fn.open >= 0 && f.stub(fn.open, fn.close)
	f.funcs = append(f.funcs, fc)
	return &f.funcs[len(f.funcs)-1]
}

// Token predicates; out-of-range indices are simply false.

func (f *jsFile) s(i int) string {
	if i < 0 || i >= len(f.toks) {
		return ""
	}
	return f.text[f.toks[i].start:f.toks[i].end]
}

func (f *jsFile) kind(i int) (jsKind, bool) {
	if i < 0 || i >= len(f.toks) {
		return 0, false
	}
	return f.toks[i].kind, true
}

func (f *jsFile) punct(i int, p string) bool {
	k, ok := f.kind(i)
	return ok && k == jsPunct && f.s(i) == p
}

func (f *jsFile) ident(i int, w string) bool {
	k, ok := f.kind(i)
	return ok && k == jsIdent && f.s(i) == w
}

func (f *jsFile) isIdent(i int) bool {
	k, ok := f.kind(i)
	return ok && k == jsIdent
}

// group returns the index of the bracket closing the one at i, or -1.
func (f *jsFile) group(i int) int {
	if i < 0 || i >= len(f.toks) || f.match[i] < i {
		return -1
	}
	return f.match[i]
}

package source

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Func is one function, method or (for JavaScript and TypeScript) it()/test() block.
// Offsets are bytes into the text it was found in, with
// 0 <= Start <= BodyStart <= BodyEnd <= End <= len(text).
type Func struct {
	// Name is "Add", "Calc.Add" for a Go method (receiver type, then name), "Class.method"
	// for Python and TS/JS methods, "outer.inner" for a Python function inside another,
	// and the test's string for an it()/test() block.
	Name string
	// Start is where the declaration begins: the start of its line when only indentation
	// precedes it (so text[Start:End] can be replaced as whole lines), else the first token
	// of the declaration (the keyword, modifier or name). Doc comments and Python
	// decorators are not included. End is just after the closing brace (after the closing
	// parenthesis of an it()/test() call), or after the last line of a Python body.
	Start, End int
	// BodyStart and BodyEnd bound what is inside the braces, or for Python the indented
	// block: from the line after the header to the end of the last body line (a
	// one-line body "def f(): pass" starts after the colon). For an arrow function
	// with an expression body they bound the expression.
	BodyStart, BodyEnd int
	// Signature is the declaration up to its body, without the "{" or the Python ":",
	// trimmed: "func (c *Calc) Add(a, b int) int", "def add(self, a, b) -> int".
	Signature string
	// Test is set when the function is a test the language's test runner would run.
	Test *Test
	// Stub reports a body with nothing to keep: empty, only comments that say TODO, FIXME
	// or "not implemented", only a not-implemented panic/raise/throw, or (with such a
	// marker) only zero-value returns. See stub.go.
	Stub bool
}

// Test names a test the way its runner does and says how to run only it.
type Test struct {
	// Name is what the runner calls it: "TestAdd" (Go), "test_add" or "TestCalc::test_add"
	// (pytest node id without the file), the it()/test() string (Jest, Vitest, Mocha).
	Name string
	// Command runs just this test from the repository root, e.g.
	// go test -run '^TestAdd$' ./pkg/calc
	Command string
}

// ErrUnsupported is returned (wrapped, with the language) for a Lang this package does
// not know; callers that offer function-based actions only where possible can ignore it.
var ErrUnsupported = errors.New("unsupported language")

// Funcs returns the file's top-level functions and methods in source order: for Python and
// TS/JS, functions nested inside another function's body are left out, while methods of
// top-level classes and it()/test() blocks (also inside describe callbacks) are kept.
// Text that does not parse gives the functions that can still be found, and no error.
func Funcs(lang Lang, relPath, text string) ([]Func, error) {
	f, err := scanFile(lang, relPath, text, nil, false)
	if err != nil {
		return nil, err
	}
	return topLevel(f.all), nil
}

// Enclosing returns the innermost function whose [Start, End] range holds offset, nested
// functions included, or nil when there is none. Anonymous functions (callbacks, Go
// function literals, lambdas) are transparent: the named function around them is the
// answer, except for the callbacks of it()/test(), which stand for their test. An
// unsupported lang gives an error wrapping [ErrUnsupported]; so does an offset outside
// [0, len(text)].
func Enclosing(lang Lang, relPath, text string, offset int) (*Func, error) {
	all, err := scan(lang, relPath, text)
	if err != nil {
		return nil, err
	}
	if offset < 0 || offset > len(text) {
		return nil, fmt.Errorf("offset %d outside the text (0 to %d)", offset, len(text))
	}
	var best *Func
	for i := range all {
		f := &all[i]
		if f.Start <= offset && offset <= f.End && (best == nil || f.End-f.Start < best.End-best.Start) {
			best = f
		}
	}
	if best == nil {
		return nil, nil
	}
	f := *best
	return &f, nil
}

// scan finds every function, nested ones included, sorted by Start.
func scan(lang Lang, relPath, text string) ([]Func, error) {
	f, err := scanFile(lang, relPath, text, nil, false)
	if err != nil {
		return nil, err
	}
	return f.all, nil
}

// scanFile is scan, with what [File.Update] needs to know about the parse: for Python and
// TS/JS the syntax tree when keep is set (else it is closed), re-parsed from prev's when
// prev is not nil.
func scanFile(lang Lang, relPath, text string, prev *File, keep bool) (*File, error) {
	relPath = slash(relPath)
	var f *File
	switch lang {
	case Go:
		f = &File{lang: lang, relPath: relPath, text: text}
		f.all, f.goClean, f.goTesting = goFuncs(relPath, text)
	case Python, TypeScript, JavaScript:
		f = treeFuncs(lang, relPath, text, prev, keep)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, string(lang))
	}
	sortByStart(f.all)
	return f, nil
}

// sortByStart sorts fs by Start, keeping the order of functions that start together.
func sortByStart(fs []Func) {
	if !slices.IsSortedFunc(fs, func(a, b Func) int { return cmp.Compare(a.Start, b.Start) }) {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	}
}

// topLevel returns the functions of all (sorted by Start) that do not lie inside the body
// of another, larger function in all.
//
// Such a container g has g.BodyStart <= f.Start. Sweeping the functions by Start while
// taking in the candidate containers by BodyStart, the candidate whose body reaches
// furthest decides: if even its body ends before f does, no function holds f. Only when it
// is f itself or no larger than f (equal ranges) does f need a look at every function.
// The sweep is O(n log n) where comparing every pair was quadratic: a 10,000-line file
// has a thousand functions.
func topLevel(all []Func) []Func {
	byBody := make([]int, len(all))
	for i := range byBody {
		byBody[i] = i
	}
	byBodyStart := func(a, b int) int { return cmp.Compare(all[a].BodyStart, all[b].BodyStart) }
	if !slices.IsSortedFunc(byBody, byBodyStart) { // they mostly are: sorting costs more than the check
		slices.SortStableFunc(byBody, byBodyStart)
	}
	out := make([]Func, 0, len(all))
	far, k := -1, 0 // far: the candidate whose body ends last; byBody[:k]: the candidates
	for i, f := range all {
		for ; k < len(byBody) && all[byBody[k]].BodyStart <= f.Start; k++ {
			if far < 0 || all[byBody[k]].BodyEnd > all[far].BodyEnd {
				far = byBody[k]
			}
		}
		if far >= 0 && all[far].BodyEnd >= f.End {
			if far != i && holds(all[far], f) || nested(all, i) {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// holds reports whether f lies inside g's body and g is larger.
func holds(g, f Func) bool {
	return g.BodyStart <= f.Start && f.End <= g.BodyEnd && g.End-g.Start > f.End-f.Start
}

// nested reports whether all[i] lies inside the body of another function in all.
func nested(all []Func, i int) bool {
	for j, g := range all {
		if j != i && holds(g, all[i]) {
			return true
		}
	}
	return false
}

// declStart widens a declaration's first byte to the start of its line when only spaces
// and tabs come before it there.
func declStart(text string, off int) int {
	ls := strings.LastIndexByte(text[:off], '\n') + 1
	if strings.Trim(text[ls:off], " \t") == "" {
		return ls
	}
	return off
}

// newFunc fills a Func from its parts, clamping offsets so that a partial parse can never
// produce a range the caller cannot slice with.
func newFunc(text, name string, start, bodyStart, bodyEnd, end, sigEnd int) Func {
	clamp := func(v, lo, hi int) int { return max(lo, min(v, hi)) }
	start = clamp(start, 0, len(text))
	bodyStart = clamp(bodyStart, start, len(text))
	bodyEnd = clamp(bodyEnd, bodyStart, len(text))
	end = clamp(end, bodyEnd, len(text))
	sigEnd = clamp(sigEnd, start, bodyStart)
	s := declStart(text, start)
	return Func{
		Name: name, Start: s, End: end, BodyStart: bodyStart, BodyEnd: bodyEnd,
		// A copy: the Func may be kept for later versions of the text (see File.Update),
		// and a slice of this one would keep all of it alive.
		Signature: strings.Clone(strings.TrimSpace(text[start:sigEnd])),
	}
}

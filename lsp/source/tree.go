package source

import (
	"cmp"
	"slices"
	"strings"
	"unsafe"

	"github.com/frognano/frognano/internal/syntax"
	"github.com/frognano/frognano/lsp/document"
)

// Python, TypeScript and JavaScript are read from tree-sitter's syntax trees
// (internal/syntax). File.Update re-parses only the statement or class member an edit is
// in, with its neighbours, and splices what it finds into the previous version's memo
// (splice.go); where that cannot be proved right, tree-sitter re-parses the file
// incrementally from the tree a File keeps, and the functions are then found again only in
// the statements and class members the edit touched, the others are taken from the
// previous version (memo below). An update gives what a full walk of its re-parsed tree
// gives, and, where the text parses, what a fresh parse gives: the tests compare them
// after thousands of random edits (file_test.go, splice_test.go).

// syntaxLang is the grammar for a file: TSX only for .tsx files (in a .ts file "<T>x" is
// a type assertion, not JSX); JavaScript's grammar reads JSX in every file.
func syntaxLang(lang Lang, relPath string) syntax.Lang {
	switch lang {
	case Python:
		return syntax.Python
	case JavaScript:
		return syntax.JavaScript
	case TypeScript:
		if syntax.LangOf(relPath) == syntax.TSX {
			return syntax.TSX
		}
		return syntax.TypeScript
	}
	return ""
}

// rec is a Func as the walk finds it, with what reusing it in a later version needs.
type rec struct {
	Func
	// tok is the declaration's first byte: Start is tok widened to the start of its line
	// when only indentation precedes it, which depends on text outside the statement.
	tok int
	// For a JavaScript test: its name and -t pattern; the command also depends on whether
	// the file imports Vitest, so Test is made once the whole file was seen.
	testName, pattern string
}

// memo is what the walk found in one statement or class member (a unit): the functions
// and the units inside it, with offsets relative to its start. A unit of a new version
// that the edit did not touch, of the same kind and length at the same place (moved by
// the edit), and seen in the same context (ctx: the enclosing classes and functions that
// name its functions), gives the same functions: tree-sitter's changed ranges guarantee
// that the text outside them has the same syntax in both trees.
type memo struct {
	kind   string
	length int
	ctx    string
	recs   []rec // nil when viaSubs: then they are those of subs
	subs   []sub // the units inside, by start
	// count is the number of functions in the unit; viaSubs says they are all in its
	// units (a unit with a box, and the file's memo), and not kept in recs too.
	count   int
	viaSubs bool
	// box is set for a unit whose walk found no function of its own (only in its units)
	// and read exactly one list of units (a class's body, an if's block): where that list
	// lies, so that an edit inside it can be re-parsed without the rest (splice.go).
	box   *box
	boxes int // the lists of units read (box is kept only when it is 1)
}

// sub is a unit inside another, at a start relative to the other's.
type sub struct {
	at int
	m  *memo
}

// box is where a unit's list of units lies, relative to the unit's start: head is where
// the text to parse with it begins (the unit's start, or for Python the start of its
// line), open where the list begins (after "{", or for Python at the start of the line of
// its first statement), close where it ends (at "}", or for Python at the end of the
// block).
type box struct{ head, open, close int }

// find returns the unit that starts at off (relative to m's start), or nil.
func (m *memo) find(off int) *memo {
	i, ok := slices.BinarySearchFunc(m.subs, off, func(s sub, off int) int { return cmp.Compare(s.at, off) })
	if !ok {
		return nil
	}
	return m.subs[i].m
}

// walker finds the functions of one tree. Units are reused from old, the previous
// version's memo, where Changed allows it.
type walker struct {
	text     string
	relPath  string
	lang     Lang
	testFile bool
	out      []rec

	changed        []syntax.Range // nil on a full parse
	editEnd, delta int            // the edit's end in the new text, and the change in length

	old     *memo // the previous version's unit being walked through, or nil
	oldBase int   // its start in the previous version
	cur     *memo // the unit being built
	curBase int
	root    *memo // the memo of the whole file

	vitest bool // whether the file imports Vitest (set by walk)

	reused int // units taken from the previous version (for tests)
}

// oldPos maps an offset of the new text outside the edit to the old text.
func (w *walker) oldPos(p int) int {
	if p >= w.editEnd {
		return p - w.delta
	}
	return p
}

// untouched reports whether [start, end] neither overlaps nor touches a changed range.
func (w *walker) untouched(start, end int) bool {
	for _, r := range w.changed {
		if start <= r.End && r.Start <= end {
			return false
		}
	}
	return true
}

// units walks the named children of container (statements, class members) as units:
// each is taken from the previous version when it can be, else walked by fn.
func (w *walker) units(container syntax.Node, ctx string, fn func(syntax.Node)) {
	if w.cur != w.root {
		w.cur.boxes++
		w.cur.box = w.boxOf(container)
	}
	for _, c := range container.NamedChildren() {
		if c.IsExtra() {
			continue // comments: the stub rule reads them from the function's body
		}
		w.unit(c, ctx, fn)
	}
}

func (w *walker) unit(c syntax.Node, ctx string, fn func(syntax.Node)) {
	start, end, kind := c.Start(), c.End(), c.Kind()
	var old *memo
	if w.old != nil {
		old = w.old.find(w.oldPos(start) - w.oldBase)
	}
	if old != nil && old.kind == kind && old.length == end-start && old.ctx == ctx && w.untouched(start, end) {
		lo := len(w.out)
		w.out = old.emit(w.out, start)
		for i := lo; i < len(w.out); i++ {
			w.out[i].Start = declStart(w.text, w.out[i].tok)
		}
		w.cur.subs = append(w.cur.subs, sub{start - w.curBase, old})
		w.reused++
		return
	}
	m := &memo{kind: kind, length: end - start, ctx: ctx}
	old0, oldBase0, cur0, curBase0 := w.old, w.oldBase, w.cur, w.curBase
	w.old, w.oldBase, w.cur, w.curBase = old, w.oldPos(start), m, start
	lo := len(w.out)
	fn(c)
	for _, r := range w.out[lo:] {
		r.Start -= start
		r.BodyStart -= start
		r.BodyEnd -= start
		r.End -= start
		r.tok -= start
		m.recs = append(m.recs, r)
	}
	w.old, w.oldBase, w.cur, w.curBase = old0, oldBase0, cur0, curBase0
	w.cur.subs = append(w.cur.subs, sub{start - w.curBase, m})
	m.count = len(m.recs)
	if m.boxes != 1 || m.box == nil || m.count != subCount(m) {
		m.box = nil // not a unit an edit can be spliced into (splice.go)
		return
	}
	// Its functions are its units': a splice then rebuilds only the lists it is in.
	m.recs, m.viaSubs = nil, true
}

// subCount counts the functions m's units hold.
func subCount(m *memo) int {
	n := 0
	for _, s := range m.subs {
		n += s.m.count
	}
	return n
}

// emit appends m's functions to out, moved by shift (m's start).
func (m *memo) emit(out []rec, shift int) []rec {
	if m.viaSubs {
		for _, s := range m.subs {
			out = s.m.emit(out, shift+s.at)
		}
		return out
	}
	for _, r := range m.recs {
		r.Start += shift
		r.BodyStart += shift
		r.BodyEnd += shift
		r.End += shift
		r.tok += shift
		out = append(out, r)
	}
	return out
}

// boxOf is where container, a list of units in the unit being built (w.cur), lies; nil
// when a splice could not re-parse it alone: a Python block that starts on its header's
// line, a JavaScript one without both braces.
func (w *walker) boxOf(container syntax.Node) *box {
	base := w.curBase
	if w.lang == Python {
		open := lineStart(w.text, container.Start())
		head := lineStart(w.text, base)
		if open <= head || strings.Trim(w.text[head:base], " \t") != "" {
			return nil
		}
		return &box{head: head - base, open: open - base, close: container.End() - base}
	}
	s, e := container.Start(), container.End()
	if e-s < 2 || w.text[s] != '{' || w.text[e-1] != '}' || container.Child(container.ChildCount()-1).IsMissing() {
		return nil
	}
	return &box{head: 0, open: s + 1 - base, close: e - 1 - base}
}

// lineStart is the start of the line off is on.
func lineStart(text string, off int) int { return strings.LastIndexByte(text[:off], '\n') + 1 }

// add records a function found by the walk; see newFunc for the offsets.
func (w *walker) add(name string, start, bodyStart, bodyEnd, end, sigEnd int, stub bool) *rec {
	f := newFunc(w.text, name, start, bodyStart, bodyEnd, end, sigEnd)
	f.Stub = stub
	w.out = append(w.out, rec{Func: f, tok: max(0, min(start, len(w.text)))})
	return &w.out[len(w.out)-1]
}

// treeFuncs parses text, or (when prev is not nil) re-parses it from prev, a File of an
// earlier version, and returns the File with every function (in all) and the tree. keep
// says whether the tree is kept for later updates; else it is closed.
//
// An update first tries to re-parse only the statement or class member the edit is in,
// with its neighbours (splice.go); where that cannot be proved to give what a full parse
// gives, tree-sitter re-parses the file from prev's tree. In text with syntax errors,
// tree-sitter's incremental parse may recover from them otherwise than a fresh parse of
// the same text does (both are guesses about a file being typed); in text without errors
// the two agree. The walk of the re-parsed tree always gives what a full walk of that tree
// gives.
func treeFuncs(lang Lang, relPath, text string, prev *File, keep bool) *File {
	if prev != nil && keep {
		if f := splice(prev, text); f != nil {
			return f
		}
	}
	f := &File{lang: lang, relPath: relPath, text: text}
	src := bytesOf(text)
	var tree *syntax.Tree
	var err error
	w := &walker{text: text, relPath: relPath, lang: lang}
	if prev != nil {
		prev.treeMu.Lock()
		old := prev.tree
		prev.treeMu.Unlock()
		if old != nil {
			// old may be the tree of a version before prev's (splices keep the tree
			// they started from): Reparse finds the change from the texts.
			tree, err = old.Reparse(src) // ErrClosed when prev was closed meanwhile
		}
		if err != nil {
			tree = nil
		}
		if tree != nil {
			w.old = prev.memo
			start, oldEnd, newEnd := document.Changed(prev.text, text)
			w.editEnd, w.delta = newEnd, newEnd-oldEnd
			// Units are reused from prev's memo, so what changed since prev's text counts
			// too when the tree is older than prev.
			w.changed = append(slices.Clone(tree.Changed()), syntax.Range{Start: start, End: newEnd})
		}
	}
	if tree == nil {
		// A closed previous version (the caller moved on) is parsed afresh; so is a first
		// version. Parse fails only for a language without a grammar, which Lang excludes.
		tree, err = syntax.Parse(syntaxLang(lang, relPath), src)
		if err != nil {
			return f
		}
	}
	f.all = w.walk(tree)
	f.reused, f.vitest, f.clean = w.reused, w.vitest, !tree.HasError()
	if keep {
		f.tree, f.memo = tree, w.cur
	} else {
		tree.Close()
	}
	return f
}

// bytesOf is s's bytes without a copy: tree-sitter only reads them, and a Tree keeps
// what it parsed unchanged.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// walk finds the functions of tree, reusing what w.old allows, and leaves the new memo in
// w.cur.
func (w *walker) walk(tree *syntax.Tree) []Func {
	root := w.walkUnits(tree)
	w.vitest = w.lang != Python && jsImportsVitest(root, w.text)
	return w.funcs(w.out)
}

// walkUnits walks tree's units into w.out and w.cur, and returns its root.
func (w *walker) walkUnits(tree *syntax.Tree) syntax.Node {
	root := tree.Root()
	w.cur = &memo{kind: root.Kind(), length: len(w.text), viaSubs: true}
	w.root = w.cur
	switch w.lang {
	case Python:
		w.testFile = pyIsTestFile(w.relPath)
		w.pyStatements(root, pyScope{testOK: true})
	default:
		w.testFile = jsIsTestFile(w.relPath)
		w.jsStatements(root, "")
	}
	w.cur.count = len(w.out)
	return root
}

// funcs turns the walk's records into Funcs, with the test commands of JavaScript tests
// (which depend on w.vitest).
func (w *walker) funcs(recs []rec) []Func {
	all := make([]Func, len(recs))
	for i, r := range recs {
		all[i] = r.Func
		if r.pattern != "" || r.testName != "" {
			all[i].Test = &Test{Name: r.testName, Command: jsTestCommand(w.relPath, r.pattern, w.vitest)}
		}
	}
	return all
}

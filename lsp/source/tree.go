package source

import (
	"github.com/frognano/frognano/internal/syntax"
	"github.com/frognano/frognano/lsp/document"
)

// Python, TypeScript and JavaScript are read from tree-sitter's syntax trees
// (internal/syntax). A File keeps its tree, and File.Update re-parses only what an edit
// touched (tree-sitter's incremental parsing); the functions are then found again only
// in the statements and class members the edit touched, the others are taken from the
// previous version (memo below). An update gives what a full walk of its re-parsed tree
// gives, and, where the text parses, what a fresh parse gives: the tests compare them
// after thousands of random edits (file_test.go).

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
	recs   []rec
	subs   map[int]*memo // the units inside, by start relative to this one's
}

// walker finds the functions of one tree. Units are reused from old, the previous
// version's memo, where Changed allows it.
type walker struct {
	text     string
	relPath  string
	testFile bool
	out      []rec

	changed        []syntax.Range // nil on a full parse
	editEnd, delta int            // the edit's end in the new text, and the change in length

	old     *memo // the previous version's unit being walked through, or nil
	oldBase int   // its start in the previous version
	cur     *memo // the unit being built
	curBase int

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
		old = w.old.subs[w.oldPos(start)-w.oldBase]
	}
	if old != nil && old.kind == kind && old.length == end-start && old.ctx == ctx && w.untouched(start, end) {
		for _, r := range old.recs {
			r.Start += start
			r.BodyStart += start
			r.BodyEnd += start
			r.End += start
			r.tok += start
			r.Start = declStart(w.text, r.tok)
			w.out = append(w.out, r)
		}
		w.cur.subs[start-w.curBase] = old
		w.reused++
		return
	}
	m := &memo{kind: kind, length: end - start, ctx: ctx, subs: map[int]*memo{}}
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
	w.cur.subs[start-w.curBase] = m
}

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
// In text with syntax errors, tree-sitter's incremental parse may recover from them
// otherwise than a fresh parse of the same text does (both are guesses about a file
// being typed); in text without errors the two agree. The walk of the re-parsed tree
// always gives what a full walk of that tree gives.
func treeFuncs(lang Lang, relPath, text string, prev *File, keep bool) *File {
	f := &File{lang: lang, relPath: relPath, text: text}
	src := []byte(text)
	var tree *syntax.Tree
	var err error
	w := &walker{text: text, relPath: relPath}
	if prev != nil {
		prev.treeMu.Lock()
		old := prev.tree
		prev.treeMu.Unlock()
		if old != nil {
			tree, err = old.Reparse(src) // ErrClosed when prev was closed meanwhile
		}
		if err != nil {
			tree = nil
		}
		if tree != nil {
			w.changed = tree.Changed()
			w.old = prev.memo
			_, oldEnd, newEnd := document.Changed(prev.text, text)
			w.editEnd, w.delta = newEnd, newEnd-oldEnd
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
	f.all = w.walk(lang, tree)
	f.reused = w.reused
	if keep {
		f.tree, f.memo = tree, w.cur
	} else {
		tree.Close()
	}
	return f
}

// walk finds the functions of tree, reusing what w.old allows, and leaves the new memo in
// w.cur.
func (w *walker) walk(lang Lang, tree *syntax.Tree) []Func {
	root := tree.Root()
	w.cur = &memo{kind: root.Kind(), length: len(w.text), subs: map[int]*memo{}}
	switch lang {
	case Python:
		w.testFile = pyIsTestFile(w.relPath)
		w.pyStatements(root, pyScope{testOK: true})
	default:
		w.testFile = jsIsTestFile(w.relPath)
		w.jsStatements(root, "")
	}
	vitest := lang != Python && jsImportsVitest(root, w.text)
	all := make([]Func, len(w.out))
	for i, r := range w.out {
		all[i] = r.Func
		if r.pattern != "" || r.testName != "" {
			all[i].Test = &Test{Name: r.testName, Command: jsTestCommand(w.relPath, r.pattern, vitest)}
		}
	}
	return all
}

package source

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"sort"
	"sync"

	"github.com/frognano/frognano/internal/syntax"
	"github.com/frognano/frognano/lsp/document"
)

// File is one version of a source file with its functions. A language server keeps one per
// open document and, when the document changes, calls [File.Update] for the next version:
// in a Go file that changed inside one function (or between two), only that piece is parsed
// again: tens of microseconds, where parsing a 10,000-line file takes about ten milliseconds.
// In a Python, TypeScript or JavaScript file, only the statement or class member that
// changed is parsed again, with its neighbours (splice.go); the file keeps a syntax tree,
// which tree-sitter re-parses incrementally where that cannot be proved right (tree.go);
// [File.Close] frees it. A File is immutable, and its
// Funcs stay valid after Close.
type File struct {
	// top are the file's top-level functions, as [Funcs] returns them, in chunks shared
	// with the versions before and after (funclist.go); funcs is them in one slice, made
	// when first asked for.
	top       funcList
	funcsOnce sync.Once
	funcs     []Func

	lang    Lang
	relPath string // with forward slashes
	text    string
	all     []Func // every function, nested ones included, sorted by Start

	// For Go: goClean reports that the whole text parsed without an error, so that every
	// function came from one parse (after an error they come from chunks of the text);
	// goTesting is the name under which the file imports "testing".
	goClean   bool
	goTesting string

	// For Python and TS/JS: the syntax tree (nil once closed, or when Parse failed) and
	// what the walk found in each statement, for the next Update; reused counts the
	// statements and members taken from the previous version (for tests). The tree is
	// that of an earlier version when the File was spliced (splice.go): spliced says so.
	// clean: the text parses without an error, so that memo is what a fresh parse finds;
	// vitest: the file imports Vitest.
	treeMu  sync.Mutex // guards tree against Close during an Update
	tree    *syntax.Tree
	memo    *memo
	reused  int
	spliced bool
	clean   bool
	vitest  bool
}

// Parse finds the functions of text, as [Funcs] does. Close the File when done: for
// Python and TS/JS it holds a syntax tree in C memory for Update.
func Parse(lang Lang, relPath, text string) (*File, error) {
	f, err := scanFile(lang, relPath, text, nil, true)
	if err != nil {
		return nil, err
	}
	f.top = listOf(topLevel(f.all))
	return f, nil
}

// Funcs returns the file's top-level functions, as [Funcs] does. The first call on a File
// made by [File.Update] copies them into one slice; to find the function at a place,
// [File.FuncAt] does not.
func (f *File) Funcs() []Func {
	f.funcsOnce.Do(func() { f.funcs = f.top.slice() })
	return f.funcs
}

// FuncAt returns the narrowest top-level function whose [Start, End] range holds offset,
// and whether there is one.
func (f *File) FuncAt(offset int) (Func, bool) {
	return f.top.innermost(offset)
}

// Update returns the File of text, a later version of f's text: always what [Parse] would
// return for it, and found with less work where that can be proved to give the same
// answer. In a Go file that parsed cleanly, a change inside one function is checked by
// parsing that function alone, and a change between two functions (or before the first)
// by parsing what lies between them; the other functions are f's, moved by the change in
// length. Anything else in Go (a file with a syntax error, a change to the testing
// import, a piece that does not parse on its own) is parsed whole. In Python and TS/JS
// files the statement or class member the change is in is parsed alone with its
// neighbours where that can be proved to give a full parse's answer, else tree-sitter
// re-parses the file from f's tree; only the statements the change touched are walked
// again. f stays valid; the new File must be closed too.
func (f *File) Update(text string) *File {
	if text == f.text {
		return f
	}
	if f.lang == Go && f.goClean {
		if g := f.goUpdate(text); g != nil {
			return g
		}
	}
	if f.lang != Go {
		f.treeMu.Lock()
		tree := f.tree
		f.treeMu.Unlock()
		if tree != nil {
			// A Close between here and the re-parse makes Reparse fail, and the file
			// is parsed afresh.
			g, _ := scanFile(f.lang, f.relPath, text, f, true)
			if !g.spliced { // a splice made g.top from f's (splice.go)
				g.top = listOf(topLevel(g.all))
			}
			return g
		}
	}
	g, _ := Parse(f.lang, f.relPath, text) // f's lang is supported: no error
	return g
}

// Close frees the File's syntax tree; its Funcs stay valid, and a later Update parses
// afresh. Closing twice, or a Go File, is harmless.
func (f *File) Close() {
	if f == nil {
		return
	}
	f.treeMu.Lock()
	defer f.treeMu.Unlock()
	f.tree.Close()
	f.tree = nil
}

// goUpdate is Update for a Go file, or nil where it cannot prove its answer.
//
// Why a piece parsed alone gives what the whole parse would: a Go file is a package
// clause, imports and a sequence of top-level declarations each ended by a semicolon
// (written, or inserted by the scanner after a line-final "}"). In a file that parsed, a
// function runs from its "func" (or the indentation before it) to its closing "}", and
// before it the scanner has just produced a semicolon. If the changed function's new
// text is exactly one function declaration, still ending with a "}", then the file is the
// same declarations around one new one, with the same tokens at both of its edges, and it
// parses again; and a function's Func depends only on its own declaration, the text of
// its line before "func", the path and the testing import. The text between two functions
// is checked between two stand-in functions, which give the scanner and parser the same
// state at its edges as the real ones; it must hold no function with a body. So is the
// head of the file, before its first function, followed by a stand-in; there the testing
// import must also stay as it was.
func (f *File) goUpdate(text string) *File {
	fs := f.top
	if fs.n == 0 {
		return nil
	}
	start, oldEnd, newEnd := document.Changed(f.text, text)
	delta := newEnd - oldEnd
	// i: the first function that ends at or after the change's start.
	i := sort.Search(fs.n, func(i int) bool { return fs.at(i).End >= start })
	if i < fs.n {
		if fi := fs.at(i); fi.Start <= start && oldEnd <= fi.End {
			if fn, ok := f.goReparseFunc(text, fi.Start, fi.End+delta); ok {
				out := f.moved(text, i+1, delta)
				out.top = out.top.with(i, fn)
				return out
			}
		}
	}
	// The gap after function g, from its "}" to the next function's start or the end of
	// the file; g == -1 is the file's head.
	g := i - 1
	if i < fs.n && fs.at(i).End == start {
		g = i // an insertion right after function i's "}"
	}
	gapStart, gapEnd := 0, len(f.text)
	if g >= 0 {
		gapStart = fs.at(g).End
	}
	if g+1 < fs.n {
		gapEnd = fs.at(g + 1).Start
	}
	if start < gapStart || oldEnd > gapEnd {
		return nil // the change spans more than one function or gap
	}
	gap := text[gapStart : gapEnd+delta]
	if g < 0 && !f.goHeadClean(gap) || g >= 0 && !f.goGapClean(gap, g+1 < fs.n) {
		return nil
	}
	out := f.moved(text, g+1, delta)
	if g+1 < fs.n {
		// The next function's Start depends on what precedes its "func" on its line,
		// which may have changed. Its "func" is after the indentation Start may include.
		next := out.top.at(g + 1)
		funcPos := next.Start
		for funcPos < len(text) && (text[funcPos] == ' ' || text[funcPos] == '\t') {
			funcPos++
		}
		if s := declStart(text, funcPos); s != next.Start {
			next.Start = s
			out.top = out.top.with(g+1, next)
		}
	}
	return out
}

// moved returns a File for text, a new version of f's, with f's functions, those from
// from on moved by delta; the caller replaces what else changed. (Its all is left unset:
// only a fresh scan's is read.)
func (f *File) moved(text string, from, delta int) *File {
	return &File{top: f.top.moved(from, delta), lang: f.lang, relPath: f.relPath, text: text, goClean: true, goTesting: f.goTesting}
}

// goFragmentPrefix lets a piece of a file parse on its own; goStandIn stands for the
// function around a piece of text between functions.
const (
	goFragmentPrefix = "package p;"
	goStandIn        = "func _(){}"
)

// goReparseFunc parses text[start:end], the new text of one function, and returns its
// Func when the piece is exactly one function declaration that parses without error.
func (f *File) goReparseFunc(text string, start, end int) (Func, bool) {
	if end < start || end > len(text) {
		return Func{}, false
	}
	pf, err := goParseFragment(goFragmentPrefix, text[start:end], "")
	if err != nil || len(pf.Decls) != 1 {
		return Func{}, false
	}
	fs := goDecls(pf, start, end, text, f.relPath, f.goTesting)
	// The declaration must end with its "}" at the end of the piece, where the old one
	// ended, so that the scanner is in the same state for the text after it.
	if len(fs) != 1 || fs[0].End != end {
		return Func{}, false
	}
	return fs[0], true
}

// goGapClean reports whether gap, the new text between two functions (beforeFunc: and
// before the next one, else up to the end of the file), parses between stand-ins for them
// without an error and without holding a function with a body. (An import there is an
// error: the parser takes imports only before other declarations.)
func (f *File) goGapClean(gap string, beforeFunc bool) bool {
	suffix, standIns := "", []int{-len(goStandIn)}
	if beforeFunc {
		suffix, standIns = goStandIn, append(standIns, len(gap))
	}
	pf, err := goParseFragment(goFragmentPrefix+goStandIn, gap, suffix)
	return err == nil && goOnlyStandIns(pf, standIns)
}

// goHeadClean reports whether head, the new text before the first function (package
// clause, imports, declarations), parses before a stand-in for that function without an
// error, without a function with a body, and with the same testing import. It is parsed
// as goParse parses a whole file, with the package clause it has or the one goParse adds.
func (f *File) goHeadClean(head string) bool {
	pf, err := goParse(head + goStandIn)
	return err == nil && goTestingImport(pf) == f.goTesting && goOnlyStandIns(pf, []int{len(head)})
}

// goOnlyStandIns reports whether the functions with a body in pf are exactly those that
// start at the given offsets from pf's base: the stand-ins, each parsed as a declaration
// of its own, so that the text around them was parsed as declarations of its own too.
func goOnlyStandIns(pf *goFile, standIns []int) bool {
	var at []int
	for _, d := range pf.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			at = append(at, int(fd.Pos())-pf.base)
		}
	}
	return slices.Equal(at, standIns)
}

// goParseFragment parses prefix+src+suffix; the result's base is src's first byte.
func goParseFragment(prefix, src, suffix string) (*goFile, error) {
	fset := token.NewFileSet()
	pf, err := parser.ParseFile(fset, "", prefix+src+suffix, parser.ParseComments|parser.SkipObjectResolution)
	if pf == nil {
		return nil, err
	}
	return &goFile{File: pf, base: fset.File(pf.FileStart).Base() + len(prefix)}, err
}

package syntax

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	ts "github.com/tree-sitter/go-tree-sitter"
)

// Tree is the syntax tree of one text. Close it when done (see the package comment).
type Tree struct {
	lang    Lang
	g       *grammar
	src     []byte
	changed []Range // see Changed

	mu      sync.Mutex // guards inner and cleanup against a concurrent Close
	inner   *ts.Tree   // nil once closed
	closed  atomic.Bool
	cleanup runtime.Cleanup
}

// Range is a span of bytes [Start, End) of a text.
type Range struct{ Start, End int }

// open counts the C trees made and not yet freed (see Open).
var open atomic.Int64

// Open returns the number of trees made and not yet freed, by Close or by the garbage
// collector: a test that closes what it parses can check that it returns to where it was.
func Open() int { return int(open.Load()) }

// ErrClosed is returned by Reparse of a closed tree.
var ErrClosed = errors.New("syntax: tree already closed")

// ErrUnknownLang is returned (wrapped) for a Lang this package has no grammar for.
var ErrUnknownLang = errors.New("no grammar for this language")

// Parse parses src, which the Tree keeps (do not change it afterwards). Text with syntax
// errors still gives a tree, with ERROR and MISSING nodes where the grammar could not
// follow; the error is only for an unknown lang.
func Parse(lang Lang, src []byte) (*Tree, error) {
	g := grammarOf(lang)
	if g == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLang, string(lang))
	}
	return parse(lang, g, src, nil, nil)
}

// parse runs a parser over src, with old (already edited to match src) as the tree to
// reuse when it is not nil.
func parse(lang Lang, g *grammar, src []byte, old *ts.Tree, changed []Range) (*Tree, error) {
	p := ts.NewParser()
	defer p.Close()
	if err := p.SetLanguage(g.lang); err != nil {
		return nil, fmt.Errorf("tree-sitter %s grammar: %w", lang, err)
	}
	inner := parseBytes(p, old, src)
	if inner == nil {
		// Only a cancelled or timed-out parse returns no tree, and this one can be neither.
		return nil, fmt.Errorf("tree-sitter returned no tree for %s text of %d bytes", lang, len(src))
	}
	return newTree(lang, g, src, inner, changed), nil
}

func newTree(lang Lang, g *grammar, src []byte, inner *ts.Tree, changed []Range) *Tree {
	open.Add(1)
	t := &Tree{lang: lang, g: g, src: src, inner: inner, changed: changed}
	t.cleanup = runtime.AddCleanup(t, freeTree, inner)
	return t
}

func freeTree(inner *ts.Tree) {
	inner.Close()
	open.Add(-1)
}

// Close frees the tree. Nodes of a closed tree must not be used; closing twice is harmless.
func (t *Tree) Close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner == nil {
		return
	}
	t.closed.Store(true)
	t.cleanup.Stop()
	freeTree(t.inner)
	t.inner = nil
}

// Lang is the grammar the tree was parsed with.
func (t *Tree) Lang() Lang { return t.lang }

// Source is the text the tree was parsed from; callers must not change it.
func (t *Tree) Source() []byte { return t.src }

// Root is the tree's root node ("module" for Python, "program" for the others).
func (t *Tree) Root() Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live()
	return t.node(*t.inner.RootNode())
}

// HasError reports whether the parser had to skip or invent text anywhere.
func (t *Tree) HasError() bool { return t.Root().HasError() }

// live panics when the tree was closed: a clear failure instead of a read of freed memory.
func (t *Tree) live() {
	if t.closed.Load() {
		panic("syntax: use of a Tree after its Close")
	}
}

// Reparse returns the tree of src, a new version of t's text, reusing the parts of t that
// the change did not touch: typing a character in a 10,000-line TypeScript file costs a
// few milliseconds where a full parse costs tens. Python gains less (~11 ms of CPU against
// ~65 for a 10,000-line file): tree-sitter reuses no fragile node whole (one built where
// the parse table has a conflict), and tree-sitter-python's statements and blocks mostly
// are, so it walks down into every statement of the file and re-lexes their edges. The
// change is found by comparing the two texts (their common prefix and suffix), so any src
// may be given. t stays valid and unchanged; both must be closed. Reparse of a closed tree returns [ErrClosed] (a caller
// that closes an old version while another goroutine updates from it can parse afresh).
func (t *Tree) Reparse(src []byte) (*Tree, error) {
	start, oldEnd, newEnd := changed(t.src, src)
	t.mu.Lock()
	if t.inner == nil {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	// Edit changes the tree it is given: edit a copy (cheap: tree-sitter trees share
	// their nodes by reference counts), so that t stays what it was for other readers.
	old := t.inner.Clone()
	t.mu.Unlock()
	defer old.Close()
	old.Edit(&ts.InputEdit{
		StartByte: uint(start), OldEndByte: uint(oldEnd), NewEndByte: uint(newEnd),
		StartPosition: pointAt(t.src, start), OldEndPosition: pointAt(t.src, oldEnd), NewEndPosition: pointAt(src, newEnd),
	})
	nt, err := parse(t.lang, t.g, src, old, nil)
	if err != nil {
		return nil, err
	}
	// Where the structure changed, and the edited text itself: tree-sitter does not count
	// a token whose text changed but whose kind did not (a renamed identifier).
	rs := []Range{{start, newEnd}}
	for _, r := range old.ChangedRanges(nt.inner) {
		rs = append(rs, Range{int(r.StartByte), int(r.EndByte)})
	}
	nt.changed = merge(rs)
	return nt, nil
}

// Changed returns, for a tree made by Reparse, the ranges of its text (sorted, not
// overlapping) outside which its nodes are those of the tree it was reparsed from, moved
// by the edit: the edited text and where tree-sitter found the structure changed. It is
// nil for a tree made by Parse.
func (t *Tree) Changed() []Range { return t.changed }

// changed returns the one edit that turns a into b: bytes a[start:oldEnd] became
// b[start:newEnd].
func changed(a, b []byte) (start, oldEnd, newEnd int) {
	n := min(len(a), len(b))
	for start < n && a[start] == b[start] {
		start++
	}
	oldEnd, newEnd = len(a), len(b)
	for oldEnd > start && newEnd > start && a[oldEnd-1] == b[newEnd-1] {
		oldEnd--
		newEnd--
	}
	return start, oldEnd, newEnd
}

// pointAt is the row and the column (in bytes, as tree-sitter counts them) of offset.
func pointAt(src []byte, off int) ts.Point {
	row := bytes.Count(src[:off], []byte{'\n'})
	col := off - (bytes.LastIndexByte(src[:off], '\n') + 1)
	return ts.Point{Row: uint(row), Column: uint(col)}
}

// merge sorts ranges and joins those that overlap or touch.
func merge(rs []Range) []Range {
	for i := 1; i < len(rs); i++ { // insertion sort: a handful of ranges
		for j := i; j > 0 && rs[j].Start < rs[j-1].Start; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	var out []Range
	for _, r := range rs {
		if k := len(out) - 1; k >= 0 && r.Start <= out[k].End {
			out[k].End = max(out[k].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

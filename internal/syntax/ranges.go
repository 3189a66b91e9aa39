package syntax

import (
	"bytes"
	"fmt"

	ts "github.com/tree-sitter/go-tree-sitter"
)

// ParseRanges parses only the given ranges of src (sorted, not overlapping; empty ones are
// dropped), as if the text between them were not there: the nodes keep src's offsets.
// lsp/source uses it to re-parse one statement or class member of a large file with only
// the headers of the blocks around it ("class Calc:", "export class Calc {"), which costs
// what the piece costs, where tree-sitter's incremental re-parse of the whole file can
// cost what a tenth of a full parse does (see Reparse). The tree must be closed; it is not
// meant for Reparse.
func ParseRanges(lang Lang, src []byte, ranges []Range) (*Tree, error) {
	g := grammarOf(lang)
	if g == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLang, string(lang))
	}
	var rs []ts.Range
	row, at := 0, 0 // the row of offset at: the ranges' rows are counted in one pass
	point := func(off int) ts.Point {
		row += bytes.Count(src[at:off], []byte{'\n'})
		at = off
		return ts.Point{Row: uint(row), Column: uint(off - (bytes.LastIndexByte(src[:off], '\n') + 1))}
	}
	last := 0
	for _, r := range ranges {
		if r.Start < last || r.End < r.Start || r.End > len(src) {
			return nil, fmt.Errorf("syntax: ranges %v not sorted, overlapping or outside a text of %d bytes", ranges, len(src))
		}
		last = r.End
		if r.Start == r.End {
			continue
		}
		if k := len(rs) - 1; k >= 0 && int(rs[k].EndByte) == r.Start {
			rs[k].EndByte, rs[k].EndPoint = uint(r.End), point(r.End)
			continue
		}
		sp := point(r.Start)
		rs = append(rs, ts.Range{StartByte: uint(r.Start), EndByte: uint(r.End), StartPoint: sp, EndPoint: point(r.End)})
	}
	if len(rs) == 0 {
		// No range at all would mean the whole text to tree-sitter.
		rs = append(rs, ts.Range{})
	}
	p := ts.NewParser()
	defer p.Close()
	if err := p.SetLanguage(g.lang); err != nil {
		return nil, fmt.Errorf("tree-sitter %s grammar: %w", lang, err)
	}
	if err := p.SetIncludedRanges(rs); err != nil {
		return nil, fmt.Errorf("tree-sitter included ranges %v: %w", ranges, err)
	}
	inner := parseBytes(p, nil, src)
	if inner == nil {
		return nil, fmt.Errorf("tree-sitter returned no tree for %s text of %d bytes", lang, len(src))
	}
	return newTree(lang, g, src, inner, nil), nil
}

// Clone returns a second handle on t's tree, to be closed on its own: a copy that costs
// a reference count, not a parse. It returns nil when t was closed.
func (t *Tree) Clone() *Tree {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner == nil {
		return nil
	}
	return newTree(t.lang, t.g, t.src, t.inner.Clone(), t.changed)
}

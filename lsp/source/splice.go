package source

import (
	"sort"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
	"github.com/frognano/frognano/lsp/document"
)

// Splicing: after an edit, re-parse only the statement or class member it is in, and put
// what the walk finds there into the previous version's memo.
//
// Why: tree-sitter's incremental re-parse of a 10,000-line Python file costs ~11 ms of CPU
// wherever a one-letter edit is, because tree-sitter-python's statements and blocks are
// "fragile" nodes that tree-sitter never reuses whole: it descends into every method of a
// 1,000-method class and shifts ~13,000 tokens (README, Performance). A method is a few
// hundred bytes.
//
// How: the edit's unit is found in the memo, descending through units that hold only one
// list of units and no function of their own (a class, an if without else, a describe
// callback). In the innermost such list, the window is the units the edit touches (none,
// for an edit between two) with one untouched neighbour on each side. The window is parsed
// alone with syntax.ParseRanges, together with the real headers of the units around it
// ("class Calc:\n", "export class Calc {") and their closing text ("}"), and walked as a
// whole file would be. The result replaces the window's units in the memo, and the units
// after it move by the edit's change in length.
//
// Why the answer is a full parse's: the previous version parsed without an error (its memo
// is then a fresh parse's), the window parses without an error, the neighbours come out
// as the same units (same kind, length and context: the walk reuses their memo) at the
// same places, and the units around keep their places (for JavaScript, their closing
// braces are found where the edit moved them). The text outside the window is the
// previous version's, and the tokens at the window's edges are the neighbours' own, so
// the parser is in the same state there as before; what lies between is what the window
// parse found. Anything else is left to tree-sitter's incremental re-parse (tree.go):
// an edit across a list's edge (a class header, a Python block's dedent), a window that
// does not parse alone (an unclosed string, comment or bracket that would run into the
// next units), a file with errors, a window of more than a quarter of a large file, and
// for JavaScript an edit near "vitest" (the test commands depend on its import). The tests
// compare spliced updates with fresh parses after thousands of random edits
// (splice_test.go).

// level is a unit on the way down to the edit, with its start in the previous text.
type level struct {
	m    *memo
	base int
}

// splice returns the File of text, a new version of prev's, or nil when the edit cannot
// be spliced (see above).
func splice(prev *File, text string) *File {
	if prev.memo == nil || !prev.clean || prev.lang == Go {
		return nil
	}
	s, oe, ne := document.Changed(prev.text, text)
	delta := ne - oe
	// Down to the innermost list of units that holds the whole edit.
	var chain []level
	m, base := prev.memo, 0
	for {
		i := firstEndingAtOrAfter(m, base, s)
		if i == len(m.subs) {
			break
		}
		u := m.subs[i]
		us := base + u.at
		b := u.m.box
		if b == nil || us+b.open > s || oe > us+b.close {
			break
		}
		chain = append(chain, level{u.m, us})
		m, base = u.m, us
	}
	// The window: the units the edit touches, and a neighbour on each side.
	a := firstEndingAtOrAfter(m, base, s)
	b := a
	for b < len(m.subs) && base+m.subs[b].at <= oe {
		b++
	}
	// TypeScript's grammar makes a member's decorators units of their own: one is not a
	// neighbour that parses alone, so the window takes it with what it decorates.
	for b < len(m.subs) && m.subs[b].m.kind == "decorator" {
		b++
	}
	hasPrev, hasNext := a > 0, b < len(m.subs)
	var ws, we int // the window, in the previous text
	switch {
	case hasPrev:
		ws = base + m.subs[a-1].at
	case len(chain) > 0:
		ws = base + m.box.open
	}
	switch {
	case hasNext:
		we = base + m.subs[b].at + m.subs[b].m.length
	case len(chain) > 0:
		we = base + m.box.close
	default:
		we = len(prev.text)
	}
	if prev.lang == Python {
		// The window is whole lines: its first unit starts a line, and its last one ends
		// it (but for a comment).
		ls := lineStart(prev.text, ws)
		if strings.Trim(prev.text[ls:ws], " \t") != "" {
			return nil
		}
		ws = ls
		rest := prev.text[we:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[:nl]
		}
		if rest = strings.TrimLeft(rest, " \t\r"); rest != "" && rest[0] != '#' {
			return nil
		}
		if len(chain) > 0 && !hasNext {
			// The block's end, and those of the units around it, would move with the
			// last unit's, not with the edit.
			return nil
		}
		if hasNext {
			// The indentation of a block's lines is state that runs past the window:
			// the next unit must be indented as it was, so that the block's indentation
			// is its, and the lines after the window are read as before. (Indenting
			// only the first line of a block otherwise makes the window parse alone,
			// with the next unit in a deeper block than the units after it.)
			ns := base + m.subs[b].at
			if prev.text[lineStart(prev.text, ns):ns] != text[lineStart(text, ns+delta):ns+delta] {
				return nil
			}
		}
	}
	if n := we + delta - ws; n > 32<<10 && n*4 > len(text) {
		return nil // as costly as tree-sitter's re-parse of the file, or more
	}
	if prev.lang != Python && (strings.Contains(prev.text[ws:we], "vitest") || strings.Contains(text[ws:we+delta], "vitest")) {
		return nil
	}

	// The text to parse: the heads of the units around, the window, their tails.
	var ranges []syntax.Range
	for _, l := range chain {
		ranges = append(ranges, syntax.Range{Start: l.base + l.m.box.head, End: l.base + l.m.box.open})
	}
	ranges = append(ranges, syntax.Range{Start: ws, End: we + delta})
	for j := len(chain) - 1; j >= 0; j-- {
		l := chain[j]
		ranges = append(ranges, syntax.Range{Start: l.base + l.m.box.close + delta, End: l.base + l.m.length + delta})
	}
	tree, err := syntax.ParseRanges(syntaxLang(prev.lang, prev.relPath), bytesOf(text), ranges)
	if err != nil {
		return nil
	}
	defer tree.Close()
	if tree.HasError() {
		return nil
	}
	w := &walker{text: text, relPath: prev.relPath, lang: prev.lang, old: prev.memo,
		changed: []syntax.Range{{Start: s, End: ne}}, editEnd: ne, delta: delta}
	w.walkUnits(tree)

	// The same units around the window, each holding only the next one.
	nm, pb := w.cur, 0 // a unit of the window's tree, and its start
	for _, l := range chain {
		if len(nm.subs) != 1 || nm.subs[0].at != l.base-pb {
			return nil
		}
		n := nm.subs[0].m
		if n.kind != l.m.kind || n.ctx != l.m.ctx || n.box == nil || n.box.head != l.m.box.head {
			return nil
		}
		if prev.lang != Python && (n.length != l.m.length+delta || n.box.open != l.m.box.open || n.box.close != l.m.box.close+delta) {
			return nil
		}
		nm, pb = n, l.base
	}
	// The window's units, the neighbours among them as they were.
	win := nm.subs
	if hasPrev && (len(win) == 0 || win[0].m != m.subs[a-1].m || win[0].at != m.subs[a-1].at) {
		return nil
	}
	if hasNext && (len(win) == 0 || win[len(win)-1].m != m.subs[b].m || win[len(win)-1].at != m.subs[b].at+delta) {
		return nil
	}

	// Splice, from the innermost list out.
	lo, hi := a, b
	if hasPrev {
		lo--
	}
	if hasNext {
		hi++
	}
	subs := make([]sub, 0, len(m.subs)-(hi-lo)+len(win))
	subs = append(subs, m.subs[:lo]...)
	subs = append(subs, win...)
	subs = appendMoved(subs, m.subs[hi:], delta)
	inner := withSubs(m, subs, delta)
	for j := len(chain) - 2; j >= -1; j-- {
		outer := prev.memo
		if j >= 0 {
			outer = chain[j].m
		}
		child := chain[j+1]
		k := outer.indexOf(child.m)
		subs := make([]sub, 0, len(outer.subs))
		subs = append(subs, outer.subs[:k]...)
		subs = append(subs, sub{outer.subs[k].at, inner})
		subs = appendMoved(subs, outer.subs[k+1:], delta)
		inner = withSubs(outer, subs, delta)
	}
	root := inner
	root.length = len(text)

	old := prev.treeClone()
	if old == nil {
		return nil // prev was closed meanwhile: parse afresh
	}
	f := &File{lang: prev.lang, relPath: prev.relPath, text: text, tree: old, memo: root,
		spliced: true, clean: true, vitest: prev.vitest, reused: len(m.subs) - (hi - lo) + w.reused}
	w.vitest = prev.vitest
	// The functions: prev's before the window and after it (moved by delta), and those of
	// the window's units, found again; not a walk of every unit and a new list of all of
	// them (~0.4 ms for 1,000 methods). A function's body starts after its first token, in
	// its unit, and units do not overlap: prev's functions whose body starts by the
	// window's start come before it, those whose body starts after its end come after it
	// (a function's End can run past its unit's: a Python body's trailing blank lines).
	// The units around the window have no function of their own, so whether one of the
	// window's functions is top-level is decided by the window's alone; and the Start of a
	// function after the window, widened to its line's start, cannot reach back into the
	// window (its last unit, untouched, is there). The tests compare this with a fresh
	// parse; a window function whose body is not where this expects (none is known) makes
	// the list afresh.
	var fs []Func
	for _, s := range win {
		fs = w.emitFuncs(fs, s.m, base+s.at)
	}
	for _, fn := range fs {
		if fn.BodyStart <= ws || fn.BodyStart > we+delta {
			all := w.emitFuncs(make([]Func, 0, root.count), root, 0)
			sortByStart(all)
			f.top = listOf(topLevel(all))
			return f
		}
	}
	sortByStart(fs)
	p := sort.Search(prev.top.n, func(i int) bool { return prev.top.at(i).BodyStart > ws })
	q := sort.Search(prev.top.n, func(i int) bool { return prev.top.at(i).BodyStart > we })
	f.top = prev.top.replace(p, q, topLevel(fs), delta)
	return f
}

// firstEndingAtOrAfter is the index of m's first unit (m starting at base) that ends at
// or after off, or len(m.subs).
func firstEndingAtOrAfter(m *memo, base, off int) int {
	lo, hi := 0, len(m.subs)
	for lo < hi {
		mid := (lo + hi) / 2
		if s := m.subs[mid]; base+s.at+s.m.length < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// appendMoved appends subs moved by delta.
func appendMoved(out, subs []sub, delta int) []sub {
	for _, s := range subs {
		out = append(out, sub{s.at + delta, s.m})
	}
	return out
}

// indexOf is the index of unit u among m's units (it is there).
func (m *memo) indexOf(u *memo) int {
	for i, s := range m.subs {
		if s.m == u {
			return i
		}
	}
	panic("source: splice lost a unit")
}

// withSubs returns a copy of m, a unit holding the edit, with the given units (its
// functions are theirs: m has none of its own, see emit) and its length and list's end
// moved by delta. m itself is left as it was: the previous version's File still uses it.
func withSubs(m *memo, subs []sub, delta int) *memo {
	n := &memo{kind: m.kind, length: m.length + delta, ctx: m.ctx, subs: subs, boxes: m.boxes}
	if m.box != nil {
		b := *m.box
		b.close += delta
		n.box = &b
	}
	n.viaSubs, n.count = true, subCount(n)
	return n
}

// emitFuncs appends the functions of m (which starts at shift) to out, as walk would
// return them: in place, Start widened (declStart), JavaScript tests with their command.
func (w *walker) emitFuncs(out []Func, m *memo, shift int) []Func {
	if m.viaSubs {
		for _, s := range m.subs {
			out = w.emitFuncs(out, s.m, shift+s.at)
		}
		return out
	}
	for _, r := range m.recs {
		f := r.Func
		f.BodyStart += shift
		f.BodyEnd += shift
		f.End += shift
		f.Start = declStart(w.text, r.tok+shift)
		if r.pattern != "" || r.testName != "" {
			f.Test = &Test{Name: r.testName, Command: jsTestCommand(w.relPath, r.pattern, w.vitest)}
		}
		out = append(out, f)
	}
	return out
}

// treeClone is a handle on f's tree for a spliced File, or nil when f was closed.
func (f *File) treeClone() *syntax.Tree {
	f.treeMu.Lock()
	defer f.treeMu.Unlock()
	if f.tree == nil {
		return nil
	}
	return f.tree.Clone()
}

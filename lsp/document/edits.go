package document

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TextEdit replaces the text in Range, measured against the text before any edit, with
// NewText; LSP's TextEdit without the wire types.
type TextEdit struct {
	Range   Range
	NewText string
}

// ErrOverlap reports edits that overlap, which the spec forbids in one TextEdit array.
var ErrOverlap = errors.New("edits overlap")

// Edits returns edits that turn before into after: one per hunk of changed lines, in
// document order, never overlapping or touching, with ranges against before.
//
// It diffs whole lines (with their terminators, so a changed line ending is a changed line)
// because clients render line-granular edits well and a one-line change in a large file then
// stays one small edit, not a whole-document replacement that loses the cursor and folds.
func Edits(before, after string) []TextEdit {
	if before == after {
		return nil
	}
	la, lb := NewLines(before), NewLines(after)
	a, b := pieces(la), pieces(lb)

	// The common head and tail are cheap to skip on the strings themselves, and usually all
	// but a few lines; only the middle is interned and diffed.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ia, ib := intern(a[pre:len(a)-suf], b[pre:len(b)-suf])
	delA, insB := lineDiff(ia, ib, maxWork, minD)

	var edits []TextEdit
	for i, j := 0, 0; i < len(ia) || j < len(ib); {
		if i < len(ia) && j < len(ib) && !delA[i] && !insB[j] {
			i, j = i+1, j+1
			continue
		}
		i0, j0 := i, j
		for (i < len(ia) && delA[i]) || (j < len(ib) && insB[j]) {
			if i < len(ia) && delA[i] {
				i++
			}
			if j < len(ib) && insB[j] {
				j++
			}
		}
		if i == i0 && j == j0 {
			panic("document: line diff marks do not pair up") // a bug in lineDiff
		}
		edits = append(edits, TextEdit{
			Range: Range{
				Start: la.Position(la.pieceStart(pre + i0)),
				End:   la.Position(la.pieceStart(pre + i)),
			},
			NewText: after[lb.pieceStart(pre+j0):lb.pieceStart(pre+j)],
		})
	}
	return edits
}

// pieces returns the lines of l with their terminators; unlike l's lines, it has no empty
// last element when the text ends with a terminator, so equal texts give equal pieces.
func pieces(l Lines) []string {
	starts := l.all()
	p := make([]string, 0, len(starts))
	for i, s := range starts {
		e := len(l.text)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		if s < e {
			p = append(p, l.text[s:e])
		}
	}
	return p
}

// pieceStart returns the byte offset of piece i, or the text's length for i == len(pieces).
func (l Lines) pieceStart(i int) int {
	if i < l.n {
		return l.start(i)
	}
	return len(l.text)
}

// intern maps each distinct line of a and b to a small integer.
func intern(a, b []string) (ia, ib []int) {
	ids := make(map[string]int, len(a)+len(b))
	conv := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, s := range lines {
			id, ok := ids[s]
			if !ok {
				id = len(ids)
				ids[s] = id
			}
			out[i] = id
		}
		return out
	}
	return conv(a), conv(b)
}

// Apply returns text with edits applied. The edits may come in any order; their ranges are
// against text, and they must not overlap. Insertions at the same position keep their given
// order, as the spec requires.
func Apply(text string, edits []TextEdit) (string, error) {
	type span struct {
		start, end int
		text       string
	}
	l := NewLines(text)
	spans := make([]span, len(edits))
	for i, e := range edits {
		start, err := l.Offset(e.Range.Start)
		if err != nil {
			return "", fmt.Errorf("edit %d: start: %w", i, err)
		}
		end, err := l.Offset(e.Range.End)
		if err != nil {
			return "", fmt.Errorf("edit %d: end: %w", i, err)
		}
		if start > end {
			return "", fmt.Errorf("edit %d: %w: start %v is after end %v", i, ErrOutOfRange, e.Range.Start, e.Range.End)
		}
		spans[i] = span{start, end, e.NewText}
	}
	slices.SortStableFunc(spans, func(x, y span) int {
		return cmp.Or(cmp.Compare(x.start, y.start), cmp.Compare(x.end, y.end))
	})
	var sb strings.Builder
	sb.Grow(len(text))
	last := 0
	for _, s := range spans {
		if s.start < last {
			return "", fmt.Errorf("%w: one ends at byte %d, the next starts at %d", ErrOverlap, last, s.start)
		}
		sb.WriteString(text[last:s.start])
		sb.WriteString(s.text)
		last = s.end
	}
	sb.WriteString(text[last:])
	return sb.String(), nil
}

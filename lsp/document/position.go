package document

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Position is a place in a document as LSP counts it: a 0-based line and a 0-based column in
// UTF-16 code units. UTF-16 is the spec's default position encoding and the only one every
// client supports, so it is the only one this package speaks.
type Position struct {
	Line, Character uint32
}

// Range is the half-open span [Start, End).
type Range struct {
	Start, End Position
}

// ErrOutOfRange reports a position whose line is past the end of the document, or a range
// whose start comes after its end.
var ErrOutOfRange = errors.New("position out of range")

// OffsetOf returns the byte offset in text of p.
//
// It is lenient where editors rely on it: a Character past the end of its line means the
// line's end (the spec says so for textDocument positions, and clients send it after
// trimming), a Character inside a surrogate pair rounds down to the start of that rune, and
// the line one past the last one means the end of the document, because clients express
// "replace everything" as the range from {0,0} to {lineCount,0}. A line beyond that is an
// error: the client's copy of the document no longer matches ours.
func OffsetOf(text string, p Position) (int, error) {
	return indexLines(text, func(starts []int) bool { return len(starts) > int(p.Line)+1 }).offset(p)
}

// PositionOf returns the position of the byte offset in text. An offset outside the text is
// clamped to it; one inside a multi-byte rune, or between the '\r' and '\n' of a CRLF,
// rounds down, so the result always names a place a client can put a cursor.
func PositionOf(text string, offset int) Position {
	return indexLines(text, func(starts []int) bool { return starts[len(starts)-1] > offset }).position(offset)
}

// lines indexes where each line of a text starts, so that several conversions on one text
// (both ends of a change, every edit in Apply and Edits) share a single scan.
type lines struct {
	text string
	// starts[i] is the byte offset of line i. Lines end at "\n", "\r\n" or "\r", the three
	// terminators LSP recognises, so a text with k terminators has k+1 lines (the last one
	// empty when the text ends with a terminator).
	starts []int
}

func newLines(text string) lines { return indexLines(text, nil) }

// indexLines indexes line starts until enough reports that the index answers the question
// at hand (nil: the whole text). One conversion near the top of a large document then
// costs a scan of its first lines, not of all of it: textDocument/codeAction converts two
// positions per request and must stay well under a millisecond.
func indexLines(text string, enough func(starts []int) bool) lines {
	starts := []int{0}
	// A byte loop: the terminators are single bytes, and a '\r' needs a look at the next one.
	for i := 0; i < len(text); i++ {
		if enough != nil && enough(starts) {
			break
		}
		switch text[i] {
		case '\r':
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
			fallthrough
		case '\n':
			starts = append(starts, i+1)
		}
	}
	return lines{text: text, starts: starts}
}

// end returns the byte offset where the content of line i ends, before its terminator.
func (l lines) end(i int) int {
	if i+1 == len(l.starts) {
		return len(l.text)
	}
	e := l.starts[i+1]
	if e-2 >= l.starts[i] && l.text[e-2:e] == "\r\n" {
		return e - 2
	}
	return e - 1
}

func (l lines) offset(p Position) (int, error) {
	n := len(l.starts)
	switch line := int64(p.Line); {
	case line < int64(n):
		start := l.starts[line]
		return start + unitsToBytes(l.text[start:l.end(int(line))], p.Character), nil
	case line == int64(n):
		return len(l.text), nil
	default:
		return 0, fmt.Errorf("%w: line %d, but the document has %d lines", ErrOutOfRange, p.Line, n)
	}
}

func (l lines) position(offset int) Position {
	offset = max(0, min(offset, len(l.text)))
	if offset > 0 && offset < len(l.text) && l.text[offset-1] == '\r' && l.text[offset] == '\n' {
		offset--
	}
	line := sort.SearchInts(l.starts, offset+1) - 1 // the last line starting at or before offset
	start := l.starts[line]
	return Position{Line: uint32(line), Character: bytesToUnits(l.text[start:], offset-start)}
}

// unitsToBytes returns the byte length of the longest prefix of line that is at most units
// UTF-16 code units long: a column past the end clamps to the end, and a column inside a
// surrogate pair rounds down to the start of its rune.
func unitsToBytes(line string, units uint32) int {
	var u uint32
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		w := utf16Len(r)
		if u+w > units {
			return i
		}
		u += w
		i += size
	}
	return len(line)
}

// bytesToUnits returns the UTF-16 length of the runes of s that end within its first n
// bytes. It decodes s itself rather than s[:n], so that a rune cut by n is left out instead
// of being counted as invalid bytes.
func bytesToUnits(s string, n int) uint32 {
	var u uint32
	for i := 0; i < n; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if i+size > n {
			break
		}
		u += utf16Len(r)
		i += size
	}
	return u
}

// utf16Len is the number of UTF-16 code units of r. An invalid UTF-8 byte decodes as
// utf8.RuneError and counts as one unit, the width of the U+FFFD a client would show.
func utf16Len(r rune) uint32 {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

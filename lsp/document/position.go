package document

import (
	"errors"
	"fmt"
	"strings"
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
//
// It scans text up to the line it needs; to convert many positions in one text, index it
// once with [NewLines].
func OffsetOf(text string, p Position) (int, error) {
	start, skipped := seekLine(text, int64(p.Line))
	switch {
	case skipped == int64(p.Line):
		return start + unitsToBytes(text[start:start+contentLen(text[start:])], p.Character), nil
	case skipped+1 == int64(p.Line):
		return len(text), nil
	default:
		return 0, fmt.Errorf("%w: line %d, but the document has %d lines", ErrOutOfRange, p.Line, skipped+1)
	}
}

// seekChunk is how much text seekLine looks at at once.
const seekChunk = 4096

// seekLine returns the start of line n and n; or, when the text has fewer lines,
// len(text) and the number of line ends it found.
//
// It does not look at every byte: where a stretch of text has no '\r', its line ends are
// its '\n's, which strings.Count counts at vector speed, so whole stretches before the line
// sought are skipped. A keystroke near the end of a 10,000-line document then costs a few
// microseconds to place, not a scan of every line (didChange converts two positions).
func seekLine(text string, n int64) (start int, skipped int64) {
	i := 0
	for skipped < n && i < len(text) {
		end := min(len(text), i+seekChunk)
		if strings.IndexByte(text[i:end], '\r') < 0 {
			c := int64(strings.Count(text[i:end], "\n"))
			if skipped+c < n {
				skipped, i = skipped+c, end
				continue
			}
			// The line sought starts after one of this stretch's '\n's.
			for ; skipped < n; skipped++ {
				i += strings.IndexByte(text[i:end], '\n') + 1
			}
			return i, skipped
		}
		// A stretch with a '\r' in it: one line end at a time.
		for skipped < n && i < end {
			j := strings.IndexAny(text[i:end], "\r\n")
			if j < 0 {
				i = end
				break
			}
			i += j + 1
			if text[i-1] == '\r' && i < len(text) && text[i] == '\n' {
				i++
			}
			skipped++
		}
	}
	return i, skipped
}

// contentLen is the length of the first line of s without its terminator.
func contentLen(s string) int {
	if j := strings.IndexAny(s, "\r\n"); j >= 0 {
		return j
	}
	return len(s)
}

// PositionOf returns the position of the byte offset in text. An offset outside the text is
// clamped to it; one inside a multi-byte rune, or between the '\r' and '\n' of a CRLF,
// rounds down, so the result always names a place a client can put a cursor.
func PositionOf(text string, offset int) Position {
	return indexLines(text, func(starts []int) bool { return starts[len(starts)-1] > offset }, 16).Position(offset)
}

// Lines indexes where each line of a text starts, so that several conversions on one text
// (both ends of a change, every edit in Apply and Edits, every request on one version of a
// document) share a single scan. Make one with [NewLines]; it is immutable, so it can be
// shared between goroutines.
type Lines struct {
	text string
	// The line starts, in blocks (lines.go): line i starts at a byte offset. Lines end at
	// "\n", "\r\n" or "\r", the three terminators LSP recognises, so a text with k
	// terminators has k+1 lines (the last one empty when the text ends with a terminator).
	n      int
	blocks []lineBlock
}

// NewLines indexes every line of text.
func NewLines(text string) Lines {
	// Most texts end their lines with "\n": counting them first (a fast scan) sizes the
	// index in one allocation.
	return indexLines(text, nil, strings.Count(text, "\n")+1)
}

// indexLines indexes line starts until enough reports that the index answers the question
// at hand (nil: the whole text). One conversion near the top of a large document then
// costs a scan of its first lines, not of all of it. capacity is a guess of the number
// of lines it will index.
//
// It jumps from terminator to terminator with strings.IndexByte rather than looking at each
// byte: the server indexes 10,000-line files, and a request on one must stay well under a
// millisecond. The next '\n' is remembered across lines, and a
// '\r' is only looked for before it, so a text with only '\r' terminators (or only '\n')
// is still scanned once.
func indexLines(text string, enough func(starts []int) bool, capacity int) Lines {
	starts := make([]int, 1, max(1, capacity))
	nl := -1 // index of the first '\n' at or after i, or len(text) when there is none
	for i := 0; i < len(text); {
		if enough != nil && enough(starts) {
			break
		}
		if nl < i {
			if nl = strings.IndexByte(text[i:], '\n'); nl < 0 {
				nl = len(text)
			} else {
				nl += i
			}
		}
		next := nl + 1 // after "\n" or "\r\n"
		// A '\r' before the '\n' ends a line by itself unless it is the '\r' of "\r\n".
		if r := strings.IndexByte(text[i:nl], '\r'); r >= 0 && (i+r+1 < nl || nl == len(text)) {
			next = i + r + 1
		} else if nl == len(text) {
			break // the last line
		}
		starts = append(starts, next)
		i = next
	}
	return Lines{text: text, n: len(starts), blocks: chunk(make([]lineBlock, 0, len(starts)/lineBlockSize+1), starts, 0)}
}

// end returns the byte offset where the content of line i ends, before its terminator.
func (l Lines) end(i int) int {
	if i+1 == l.n {
		return len(l.text)
	}
	e := l.start(i + 1)
	if e-2 >= l.start(i) && l.text[e-2:e] == "\r\n" {
		return e - 2
	}
	return e - 1
}

// Offset returns the byte offset of p in the indexed text, as [OffsetOf] does.
func (l Lines) Offset(p Position) (int, error) {
	n := l.n
	switch line := int64(p.Line); {
	case line < int64(n):
		start := l.start(int(line))
		return start + unitsToBytes(l.text[start:l.end(int(line))], p.Character), nil
	case line == int64(n):
		return len(l.text), nil
	default:
		return 0, fmt.Errorf("%w: line %d, but the document has %d lines", ErrOutOfRange, p.Line, n)
	}
}

// Position returns the position of the byte offset in the indexed text, as [PositionOf]
// does.
func (l Lines) Position(offset int) Position {
	offset = max(0, min(offset, len(l.text)))
	if offset > 0 && offset < len(l.text) && l.text[offset-1] == '\r' && l.text[offset] == '\n' {
		offset--
	}
	line := l.lineAt(offset)
	start := l.start(line)
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

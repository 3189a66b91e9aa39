package document

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestOffsetOf(t *testing.T) {
	tests := []struct {
		name string
		text string
		pos  Position
		want int
		err  error
	}{
		{"ascii", "hello", Position{0, 3}, 3, nil},
		{"after é", "héllo", Position{0, 2}, 3, nil},
		{"é is one unit", "héllo", Position{0, 5}, 6, nil},
		{"CJK rune", "中文字", Position{0, 2}, 6, nil},
		{"before emoji", "a😀b", Position{0, 1}, 1, nil},
		{"mid surrogate pair rounds down", "a😀b", Position{0, 2}, 1, nil},
		{"after emoji is two units", "a😀b", Position{0, 3}, 5, nil},
		{"end of emoji line", "a😀b", Position{0, 4}, 6, nil},
		{"character past end clamps", "a😀b", Position{0, 99}, 6, nil},
		{"LF second line", "ab\ncd", Position{1, 1}, 4, nil},
		{"CRLF second line", "ab\r\ncd", Position{1, 1}, 5, nil},
		{"CRLF clamp stops before terminator", "ab\r\ncd", Position{0, 9}, 2, nil},
		{"CR alone ends a line", "ab\rcd", Position{1, 0}, 3, nil},
		{"mixed terminators", "a\r\n\rb\nc", Position{3, 0}, 6, nil},
		{"empty line between CRLFs", "a\r\n\r\nb", Position{1, 5}, 3, nil},
		{"non-ASCII on later CRLF line", "x\r\n中😀é\r\n", Position{1, 3}, 10, nil},
		{"last empty line", "ab\n", Position{1, 0}, 3, nil},
		{"one past last line is EOF", "ab\n", Position{2, 0}, 3, nil},
		{"one past last line, no newline", "ab", Position{1, 0}, 2, nil},
		{"two past last line", "ab\n", Position{3, 0}, 0, ErrOutOfRange},
		{"empty text", "", Position{0, 0}, 0, nil},
		{"empty text one past", "", Position{1, 4}, 0, nil},
		{"empty text two past", "", Position{2, 0}, 0, ErrOutOfRange},
		{"huge line", "a", Position{1 << 31, 0}, 0, ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OffsetOf(tt.text, tt.pos)
			if !errors.Is(err, tt.err) {
				t.Fatalf("OffsetOf(%q, %v) error = %v, want %v", tt.text, tt.pos, err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Errorf("OffsetOf(%q, %v) = %d, want %d", tt.text, tt.pos, got, tt.want)
			}
		})
	}
}

func TestPositionOf(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		offset int
		want   Position
	}{
		{"start", "héllo", 0, Position{0, 0}},
		{"after é", "héllo", 3, Position{0, 2}},
		{"inside é rounds down", "héllo", 2, Position{0, 1}},
		{"CJK", "中文字", 6, Position{0, 2}},
		{"inside CJK rune", "中文字", 4, Position{0, 1}},
		{"after emoji", "a😀b", 5, Position{0, 3}},
		{"inside emoji rounds down", "a😀b", 3, Position{0, 1}},
		{"end", "a😀b", 6, Position{0, 4}},
		{"past end clamps", "a😀b", 60, Position{0, 4}},
		{"negative clamps", "a😀b", -1, Position{0, 0}},
		{"at CR of CRLF", "ab\r\ncd", 2, Position{0, 2}},
		{"between CR and LF rounds down", "ab\r\ncd", 3, Position{0, 2}},
		{"after CRLF", "ab\r\ncd", 4, Position{1, 0}},
		{"after lone CR", "ab\rcd", 3, Position{1, 0}},
		{"after LF", "ab\ncd", 5, Position{1, 2}},
		{"EOF after newline", "ab\n", 3, Position{1, 0}},
		{"mixed terminators", "a\r\n\rb\nc", 5, Position{2, 1}},
		{"emoji on CRLF line", "x\r\n😀y", 7, Position{1, 2}},
		{"empty", "", 0, Position{0, 0}},
		{"invalid UTF-8 counts a unit per byte", "a\xff\xfeb", 3, Position{0, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PositionOf(tt.text, tt.offset); got != tt.want {
				t.Errorf("PositionOf(%q, %d) = %v, want %v", tt.text, tt.offset, got, tt.want)
			}
		})
	}
}

// TestOffsetPositionRoundTrip checks that the two conversions are inverse at every place a
// cursor can be: each rune boundary that is not inside a CRLF.
func TestOffsetPositionRoundTrip(t *testing.T) {
	texts := []string{
		"", "héllo", "a😀b\r\n中文\n\n😀😀\r\rz", "\r\n\r\n", "x\xffy\n\xe4\n", "no newline 字",
	}
	for _, text := range texts {
		for off := 0; off <= len(text); {
			if !(off > 0 && off < len(text) && text[off-1] == '\r' && text[off] == '\n') {
				p := PositionOf(text, off)
				got, err := OffsetOf(text, p)
				if err != nil || got != off {
					t.Errorf("text %q: OffsetOf(PositionOf(%d) = %v) = %d, %v", text, off, p, got, err)
				}
			}
			if off == len(text) {
				break
			}
			_, size := utf8.DecodeRuneInString(text[off:])
			off += size
		}
	}
}

// byteScanStarts is the obvious line index, one byte at a time: the reference for
// indexLines, which jumps from terminator to terminator.
func byteScanStarts(text string) []int {
	starts := []int{0}
	for i := 0; i < len(text); i++ {
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
	return starts
}

func TestNewLinesMatchesByteScan(t *testing.T) {
	texts := []string{"", "\n", "\r", "\r\n", "\n\r", "\r\r\n\n", "a", "a\rb\r", "a\r\nb\nc\rd", "\r\n\r", "x\r\r"}
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		texts = append(texts, strings.Join(randomText(r, r.IntN(20)), ""))
	}
	// Texts longer than OffsetOf's stretches, some with a "\r\n" across their edges.
	for range 10 {
		texts = append(texts, strings.Join(randomText(r, 500+r.IntN(1500)), ""))
	}
	for _, k := range []int{seekChunk - 2, seekChunk - 1, seekChunk, seekChunk + 1} {
		long := strings.Repeat("x", k) + "\r\n" + strings.Repeat("y\n", seekChunk)
		texts = append(texts, long, strings.ReplaceAll(long, "\n", "\r"), strings.ReplaceAll(long, "y\n", "y\r\n"))
	}
	for _, text := range texts {
		want := byteScanStarts(text)
		l := NewLines(text)
		if !slices.Equal(l.all(), want) {
			t.Fatalf("NewLines(%q) starts = %v, want %v", text, l.all(), want)
		}
		// A partial index, as OffsetOf and PositionOf build, is a prefix of the whole one
		// that answers their question the same way.
		for line := 0; line < len(want)+2; line++ {
			if len(want) > 200 && line > 2 && line < len(want)-2 {
				line += min(r.IntN(20), len(want)-3-line) // a sample of a long text's lines
			}
			p := Position{Line: uint32(line), Character: 2}
			got, err := OffsetOf(text, p)
			wantOff, wantErr := l.Offset(p)
			if (err == nil) != (wantErr == nil) || err == nil && got != wantOff {
				t.Fatalf("text %q: OffsetOf(%v) = %d, %v; Lines.Offset = %d, %v", text, p, got, err, wantOff, wantErr)
			}
		}
		for off := -1; off <= len(text)+1; off++ {
			if len(text) > 1000 && off > 1 && off < len(text)-1 {
				off += r.IntN(200) // enough to cover a long text's edges and some of its middle
			}
			if got, want := PositionOf(text, off), l.Position(off); got != want {
				t.Fatalf("text %q: PositionOf(%d) = %v, Lines.Position = %v", text, off, got, want)
			}
		}
	}
}

// TestIndexLinesLinear guards the scan's cost on texts whose lines all end in '\r', where
// looking for each line's '\n' afresh would scan the rest of the text once per line.
func TestIndexLinesLinear(t *testing.T) {
	for _, term := range []string{"\n", "\r\n", "\r"} {
		text := strings.Repeat("some text on a line"+term, 100_000)
		start := time.Now()
		l := NewLines(text)
		if l.n != 100_001 {
			t.Fatalf("%q lines: %d starts", term, l.n)
		}
		// Quadratic would take minutes; linear takes about a millisecond.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("indexing 100,000 %q lines took %v", term, d)
		}
	}
}

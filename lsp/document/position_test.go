package document

import (
	"errors"
	"testing"
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

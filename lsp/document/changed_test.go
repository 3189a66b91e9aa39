package document

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestChanged(t *testing.T) {
	tests := []struct {
		before, after     string
		start, bEnd, aEnd int
	}{
		{"", "", 0, 0, 0},
		{"abc", "abc", 3, 3, 3},
		{"abc", "abxc", 2, 2, 3},
		{"abc", "ac", 1, 2, 1},
		{"abc", "xyz", 0, 3, 3},
		{"", "new", 0, 0, 3},
		{"old", "", 0, 3, 0},
		// A repeated letter can be the changed one on either side; the head wins.
		{"aa", "aaa", 2, 2, 3},
		{"abab", "ab", 2, 4, 2},
	}
	for _, tt := range tests {
		s, b, a := Changed(tt.before, tt.after)
		if s != tt.start || b != tt.bEnd || a != tt.aEnd {
			t.Errorf("Changed(%q, %q) = %d, %d, %d; want %d, %d, %d", tt.before, tt.after, s, b, a, tt.start, tt.bEnd, tt.aEnd)
		}
	}
}

// TestChangedRandom checks Changed's contract on long texts (where its block comparisons
// matter) changed in one or several places.
func TestChangedRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		before := strings.Join(randomText(r, r.IntN(400)), "")
		after := before
		for range 1 + r.IntN(3) {
			after = randomEdit(r, after)
		}
		s, b, a := Changed(before, after)
		if before[:s] != after[:s] || before[b:] != after[a:] || s > b || s > a {
			t.Fatalf("Changed: %d, %d, %d does not split %q and %q", s, b, a, before, after)
		}
		// Smallest: the bytes just inside the span differ.
		if s < b && s < a && before[s] == after[s] {
			t.Fatalf("Changed(%q, %q): head could be longer than %d", before, after, s)
		}
		if s < b && s < a && before[b-1] == after[a-1] {
			t.Fatalf("Changed(%q, %q): tail could be longer (ends %d, %d)", before, after, b, a)
		}
	}
}

// randomEdit replaces a random span of text with a few random characters, often line
// terminators, so that edits split and join "\r\n" pairs.
func randomEdit(r *rand.Rand, text string) string {
	i := r.IntN(len(text) + 1)
	j := min(len(text), i+r.IntN(5))
	if r.IntN(10) == 0 {
		j = min(len(text), i+r.IntN(200))
	}
	pieces := []string{"\n", "\r", "\r\n", "x", "é", "😀", "", "\t"}
	var ins strings.Builder
	for range r.IntN(4) {
		ins.WriteString(pieces[r.IntN(len(pieces))])
	}
	return text[:i] + ins.String() + text[j:]
}

// TestLinesUpdate checks that updating an index for an edited text gives the index of the
// edited text, whatever the edit does to line terminators around it.
func TestLinesUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	texts := []string{"", "\r", "\n", "a\rb", "a\r\nb\r\n"}
	for range 300 {
		texts = append(texts, strings.Join(randomText(r, r.IntN(30)), ""))
	}
	for _, text := range texts {
		l := NewLines(text)
		for range 20 {
			next := randomEdit(r, l.text)
			if r.IntN(20) == 0 {
				next = strings.Join(randomText(r, r.IntN(5)), "")
			}
			got := l.Update(next)
			if want := NewLines(next); got.text != next || !slices.Equal(got.all(), want.all()) {
				t.Fatalf("NewLines(%q).Update(%q) starts = %v, want %v", l.text, next, got.all(), want.all())
			}
			l = got
		}
	}
	if got := (Lines{}).Update("a\nb"); !slices.Equal(got.all(), []int{0, 2}) {
		t.Errorf("zero Lines updated: starts %v", got.all())
	}
}

// TestLinesUpdateBlocks updates the index of texts long enough to span many blocks through
// long runs of random edits (line terminators of all three kinds split and joined,
// multi-byte runes, edits at either end, lines inserted and deleted by the hundred, the
// text emptied and refilled), and compares each version with a fresh index: its line
// starts, its blocks' bounds, and conversions both ways.
func TestLinesUpdateBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for round := range 12 {
		l := NewLines(strings.Join(randomText(r, r.IntN(3*lineBlockSize*(round+1))), ""))
		for step := range 400 {
			next := randomEdit(r, l.text)
			switch r.IntN(25) {
			case 0: // many lines at once, in or out
				i := r.IntN(len(next) + 1)
				if r.IntN(2) == 0 {
					next = next[:i] + strings.Join(randomText(r, r.IntN(2*lineBlockSize)), "") + next[i:]
				} else {
					next = next[:i] + next[min(len(next), i+r.IntN(8000)):]
				}
			case 1:
				next = "é\r" + next
			case 2:
				next += "\n😀"
			case 3:
				if r.IntN(4) == 0 {
					next = ""
				}
			}
			got, want := l.Update(next), NewLines(next)
			if got.text != next || got.n != want.n || !slices.Equal(got.all(), want.all()) {
				t.Fatalf("round %d step %d: starts %v, want %v", round, step, got.all(), want.all())
			}
			line := 0
			for k, b := range got.blocks {
				if b.line != line || len(b.starts) == 0 || len(b.starts) >= lineBlockSize*3/2 {
					t.Fatalf("round %d step %d: block %d: line %d (want %d), %d starts", round, step, k, b.line, line, len(b.starts))
				}
				line += len(b.starts)
			}
			for range 20 {
				off := r.IntN(len(next) + 1)
				if p, wp := got.Position(off), want.Position(off); p != wp {
					t.Fatalf("round %d step %d: Position(%d) = %v, want %v", round, step, off, p, wp)
				}
				p := Position{Line: uint32(r.IntN(want.n + 2)), Character: uint32(r.IntN(8))}
				o, err := got.Offset(p)
				wo, werr := want.Offset(p)
				if o != wo || (err == nil) != (werr == nil) {
					t.Fatalf("round %d step %d: Offset(%v) = %d, %v, want %d, %v", round, step, p, o, err, wo, werr)
				}
			}
			l = got
		}
	}
}

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
			if want := NewLines(next); got.text != next || !slices.Equal(got.starts, want.starts) {
				t.Fatalf("NewLines(%q).Update(%q) starts = %v, want %v", l.text, next, got.starts, want.starts)
			}
			l = got
		}
	}
	if got := (Lines{}).Update("a\nb"); !slices.Equal(got.starts, []int{0, 2}) {
		t.Errorf("zero Lines updated: starts %v", got.starts)
	}
}

package document

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func edit(l1, c1, l2, c2 uint32, text string) TextEdit {
	return TextEdit{Range: *rng(l1, c1, l2, c2), NewText: text}
}

func TestEdits(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		want          []TextEdit
	}{
		{"identical", "a\nb\n", "a\nb\n", nil},
		{"both empty", "", "", nil},
		{"from empty", "", "a\nb", []TextEdit{edit(0, 0, 0, 0, "a\nb")}},
		{"to empty", "a\nb\n", "", []TextEdit{edit(0, 0, 2, 0, "")}},
		{"one line", "a\nb\nc\n", "a\nB\nc\n", []TextEdit{edit(1, 0, 2, 0, "B\n")}},
		{"insert a line", "a\nc\n", "a\nb\nc\n", []TextEdit{edit(1, 0, 1, 0, "b\n")}},
		{"delete a line", "a\nb\nc\n", "a\nc\n", []TextEdit{edit(1, 0, 2, 0, "")}},
		{"run of lines is one edit", "a\nb\nc\nd\n", "a\nX\nY\nZ\nd\n", []TextEdit{edit(1, 0, 3, 0, "X\nY\nZ\n")}},
		{"two hunks", "a\nb\nc\nd\ne\n", "a\nB\nc\nD\ne\n", []TextEdit{edit(1, 0, 2, 0, "B\n"), edit(3, 0, 4, 0, "D\n")}},
		{"last line without newline", "a\nb", "a\nc", []TextEdit{edit(1, 0, 1, 1, "c")}},
		{"newline added at end", "a\nb", "a\nb\n", []TextEdit{edit(1, 0, 1, 1, "b\n")}},
		{"newline removed at end", "a\nb\n", "a\nb", []TextEdit{edit(1, 0, 2, 0, "b")}},
		{"CRLF", "a\r\nb\r\nc\r\n", "a\r\nx\r\nc\r\n", []TextEdit{edit(1, 0, 2, 0, "x\r\n")}},
		{"line ending changed", "a\r\nb\r\nc\r\n", "a\r\nb\nc\r\n", []TextEdit{edit(1, 0, 2, 0, "b\n")}},
		{"CR only", "a\rb\rc", "a\rx\rc", []TextEdit{edit(1, 0, 2, 0, "x\r")}},
		{"UTF-16 end of last line", "x\n😀é", "x\n😀éz", []TextEdit{edit(1, 0, 1, 3, "😀éz")}},
		{"CJK lines", "中\n文\n字\n", "中\n国\n字\n", []TextEdit{edit(1, 0, 2, 0, "国\n")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Edits(tt.before, tt.after)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Edits(%q, %q) =\n%v\nwant\n%v", tt.before, tt.after, got, tt.want)
			}
			checkEdits(t, tt.before, tt.after, got)
		})
	}
}

// checkEdits checks the contract of Edits: applying them gives after, and they are in
// document order with at least one unchanged line between two of them, and none is a no-op.
func checkEdits(t testing.TB, before, after string, edits []TextEdit) {
	t.Helper()
	got, err := Apply(before, edits)
	if err != nil {
		t.Fatalf("Apply(%q, Edits) error: %v; edits %v", before, err, edits)
	}
	if got != after {
		t.Fatalf("Apply(%q, Edits(…, %q)) = %q; edits %v", before, after, got, edits)
	}
	prevEnd := -1
	for i, e := range edits {
		start, err1 := OffsetOf(before, e.Range.Start)
		end, err2 := OffsetOf(before, e.Range.End)
		if err1 != nil || err2 != nil {
			t.Fatalf("edit %d %v: %v %v", i, e, err1, err2)
		}
		if start <= prevEnd {
			t.Fatalf("edit %d %v starts at %d, not after the previous edit's end %d", i, e, start, prevEnd)
		}
		if before[start:end] == e.NewText {
			t.Fatalf("edit %d %v changes nothing", i, e)
		}
		if PositionOf(before, start) != e.Range.Start || PositionOf(before, end) != e.Range.End {
			t.Fatalf("edit %d %v: range is not in canonical UTF-16 form", i, e)
		}
		prevEnd = end
	}
}

func TestEditsOneLineInLargeFile(t *testing.T) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, "line %d: héllo 😀\n", i)
	}
	before := sb.String()
	for _, line := range []uint32{0, 500, 999} {
		after := strings.Replace(before, fmt.Sprintf("line %d: ", line), fmt.Sprintf("line %d changed: ", line), 1)
		got := Edits(before, after)
		want := []TextEdit{edit(line, 0, line+1, 0, fmt.Sprintf("line %d changed: héllo 😀\n", line))}
		if !slices.Equal(got, want) {
			t.Errorf("line %d changed: Edits = %v, want %v", line, got, want)
		}
		checkEdits(t, before, after, got)
	}
}

// Vocabulary for random texts: repeated lines make the diff's choices ambiguous, non-ASCII
// lines test the UTF-16 ranges, and every terminator appears.
var (
	words       = []string{"a", "b", "x := 1", "héllo", "中文", "😀", "a😀b", "", "}", "\tfunc f() {"}
	terminators = []string{"\n", "\n", "\n", "\r\n", "\r"}
)

func randomLine(r *rand.Rand, term string) string {
	var sb strings.Builder
	for range r.IntN(3) + 1 {
		sb.WriteString(words[r.IntN(len(words))])
	}
	return sb.String() + term
}

// randomText returns n random lines; each text uses one terminator, except that one in four
// mixes them, and one in three lacks the final terminator.
func randomText(r *rand.Rand, n int) []string {
	term := terminators[r.IntN(len(terminators))]
	mixed := r.IntN(4) == 0
	lines := make([]string, n)
	for i := range lines {
		if mixed {
			term = terminators[r.IntN(len(terminators))]
		}
		lines[i] = randomLine(r, term)
	}
	if n > 0 && r.IntN(3) == 0 {
		lines[n-1] = strings.TrimRight(lines[n-1], "\r\n")
	}
	return lines
}

// mutate applies k random line edits (insert, delete, replace, move) to lines.
func mutate(r *rand.Rand, lines []string, k int) []string {
	lines = slices.Clone(lines)
	for range k {
		i := r.IntN(len(lines) + 1)
		switch op := r.IntN(4); {
		case op == 0 || len(lines) == 0 || i == len(lines):
			lines = slices.Insert(lines, i, randomLine(r, "\n"))
		case op == 1:
			lines = slices.Delete(lines, i, i+1)
		case op == 2:
			lines[i] = randomLine(r, "\r\n")
		default:
			l := lines[i]
			lines = slices.Delete(lines, i, i+1)
			j := r.IntN(len(lines) + 1)
			lines = slices.Insert(lines, j, l)
		}
	}
	return lines
}

func TestEditsRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		before := randomText(r, r.IntN(40))
		k := r.IntN(6)
		after := mutate(r, before, k)
		b, a := strings.Join(before, ""), strings.Join(after, "")
		edits := Edits(b, a)
		checkEdits(t, b, a, edits)
		// Each hunk holds at least one line operation, and k mutations cost at most 2k of
		// them (a move is a delete and an insert), so a shortest script has at most 2k hunks.
		if len(edits) > 2*k {
			t.Fatalf("case %d: %d mutations gave %d edits: %v", i, k, len(edits), edits)
		}
	}
}

// TestLineDiff checks the Myers implementation against a dynamic-programming LCS: unmarked
// elements must pair up equal and in order, and with the work bound out of reach the number
// of marks must be the minimum, len(a)+len(b)-2·LCS. With tiny bounds the fallback must still
// produce a valid (longer) script.
func TestLineDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		a, b := randomInts(r, r.IntN(30), 4), randomInts(r, r.IntN(30), 4)
		if i%2 == 0 { // similar sequences, the common case
			b = slices.Clone(a)
			for range r.IntN(5) {
				j := r.IntN(len(b) + 1)
				b = slices.Insert(b, j, r.IntN(6))
			}
		}
		delA, insB := lineDiff(a, b, maxWork, minD)
		checkMarks(t, a, b, delA, insB)
		marks := count(delA) + count(insB)
		if want := len(a) + len(b) - 2*lcs(a, b); marks != want {
			t.Fatalf("lineDiff(%v, %v) marks %d elements, a shortest script has %d", a, b, marks, want)
		}
		delA, insB = lineDiff(a, b, 0, r.IntN(3))
		checkMarks(t, a, b, delA, insB)
	}
}

func randomInts(r *rand.Rand, n, k int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = r.IntN(k)
	}
	return s
}

func checkMarks(t *testing.T, a, b []int, delA, insB []bool) {
	t.Helper()
	var keptA, keptB []int
	for i, v := range a {
		if !delA[i] {
			keptA = append(keptA, v)
		}
	}
	for j, v := range b {
		if !insB[j] {
			keptB = append(keptB, v)
		}
	}
	if !slices.Equal(keptA, keptB) {
		t.Fatalf("lineDiff(%v, %v): kept %v and %v differ", a, b, keptA, keptB)
	}
}

func count(marks []bool) int {
	n := 0
	for _, m := range marks {
		if m {
			n++
		}
	}
	return n
}

func lcs(a, b []int) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestEditsUnrelatedLargeTexts runs into the work bound: two unrelated texts that share
// many lines in scattered places still give correct edits, and promptly.
func TestEditsUnrelatedLargeTexts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var a, b strings.Builder
	for range 20000 {
		fmt.Fprintf(&a, "%d\n", r.IntN(3000))
		fmt.Fprintf(&b, "%d\n", r.IntN(3000))
	}
	checkEdits(t, a.String(), b.String(), Edits(a.String(), b.String()))
}

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		edits []TextEdit
		want  string
		err   error
	}{
		{"none", "abc", nil, "abc", nil},
		{"any order", "a\nb\nc\n", []TextEdit{edit(2, 0, 2, 1, "C"), edit(0, 0, 0, 1, "A")}, "A\nb\nC\n", nil},
		{"insertions at one place keep their order", "ab", []TextEdit{edit(0, 1, 0, 1, "1"), edit(0, 1, 0, 1, "2")}, "a12b", nil},
		{"insert before a replacement at the same place", "ab", []TextEdit{edit(0, 0, 0, 1, "X"), edit(0, 0, 0, 0, "i")}, "iXb", nil},
		{"adjacent replacements", "abcd", []TextEdit{edit(0, 2, 0, 4, "Z"), edit(0, 0, 0, 2, "Y")}, "YZ", nil},
		{"UTF-16 ranges", "a😀b\n中", []TextEdit{edit(0, 1, 0, 3, "-"), edit(1, 0, 1, 1, "文")}, "a-b\n文", nil},
		{"overlap", "abcd", []TextEdit{edit(0, 0, 0, 2, "x"), edit(0, 1, 0, 3, "y")}, "", ErrOverlap},
		{"insertion inside a replacement", "abcd", []TextEdit{edit(0, 0, 0, 3, "x"), edit(0, 1, 0, 1, "y")}, "", ErrOverlap},
		{"line out of range", "ab", []TextEdit{edit(2, 0, 2, 0, "x")}, "", ErrOutOfRange},
		{"start after end", "ab\ncd", []TextEdit{edit(1, 0, 0, 0, "x")}, "", ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Apply(tt.text, tt.edits)
			if !errors.Is(err, tt.err) {
				t.Fatalf("Apply error = %v, want %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Errorf("Apply = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzEdits(f *testing.F) {
	f.Add("", "")
	f.Add("a\nb\nc\n", "a\nB\nc\n")
	f.Add("a\r\nb", "a\r\nb\r\n")
	f.Add("héllo\n😀\n中文", "héllo\n😀x\n中文\n")
	f.Add("a\rb\rc", "a\r\nb\nc")
	f.Add("x\xff\n\xe4\n", "\xff\n")
	f.Add("\r\n\r\n\n\r", "\r\r\n\n")
	f.Fuzz(func(t *testing.T, before, after string) {
		checkEdits(t, before, after, Edits(before, after))
	})
}

// BenchmarkEdits measures the common case: a 5,000-line file with three scattered lines
// changed, as after a formatter or an agent edit.
func BenchmarkEdits(b *testing.B) {
	var sb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&sb, "\tx%d := compute(%d) // héllo\n", i, i)
	}
	before := sb.String()
	after := before
	for _, i := range []int{700, 2500, 4300} {
		after = strings.Replace(after, fmt.Sprintf("compute(%d)", i), fmt.Sprintf("compute2(%d)", i), 1)
	}
	if n := len(Edits(before, after)); n != 3 {
		b.Fatalf("%d edits, want 3", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		Edits(before, after)
	}
}

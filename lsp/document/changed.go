package document

import "sort"

// Changed returns the span where two versions of a text differ: after is before with
// before[start:beforeEnd] replaced by after[start:afterEnd]. The span is the smallest one,
// found from the common head and tail, so a text that changed in one place gives exactly
// that place. It is what lets the server update what it derived from one version (a line
// index, a file's functions) for the next instead of deriving it again from scratch.
func Changed(before, after string) (start, beforeEnd, afterEnd int) {
	n := min(len(before), len(after))
	start = commonLen(n, func(i, size int) bool { return before[i:i+size] == after[i:i+size] })
	tail := commonLen(n-start, func(i, size int) bool {
		return before[len(before)-i-size:len(before)-i] == after[len(after)-i-size:len(after)-i]
	})
	return start, len(before) - tail, len(after) - tail
}

// commonLen returns the largest k <= n for which eq(0, k) holds, given that eq(i, size)
// compares the two texts' pieces of that size at i (from the start or from the end). It
// compares blocks that double while they match and halve when they do not, so that a
// long common head costs a few calls of string comparison (a vectorised memequal), not a
// loop over its bytes: the server does this on every keystroke in files of 300 kB.
func commonLen(n int, eq func(i, size int) bool) int {
	i := 0
	for size := 64; size > 0; {
		if i+size <= n && eq(i, size) {
			i += size
			size *= 2
		} else {
			size /= 2
		}
	}
	return i
}

// Update returns the index of text, a later version of the text l indexes. Whether a place
// starts a line depends only on the two bytes around it, so the lines before the change
// are l's, those after it are l's moved by the change in length, and only the changed
// bytes are looked at again.
func (l Lines) Update(text string) Lines {
	if len(l.starts) == 0 { // the zero Lines
		return NewLines(text)
	}
	start, oldEnd, newEnd := Changed(l.text, text)
	if start == len(l.text) && start == len(text) {
		return Lines{text: text, starts: l.starts}
	}
	// Old starts at or before start-1 stand; those from oldEnd+1 on move. A place t in
	// between starts a line when text[t-1] ends one: a '\n', or a '\r' not followed by '\n'.
	head := sort.SearchInts(l.starts, max(start, 1))
	tail := sort.SearchInts(l.starts, oldEnd+1)
	var mid []int
	for t := max(start, 1); t <= newEnd; t++ {
		if c := text[t-1]; c == '\n' || c == '\r' && (t == len(text) || text[t] != '\n') {
			mid = append(mid, t)
		}
	}
	starts := make([]int, head+len(mid)+len(l.starts)-tail)
	copy(starts, l.starts[:head])
	copy(starts[head:], mid)
	moved := starts[head+len(mid):]
	delta := len(text) - len(l.text)
	for i, s := range l.starts[tail:] {
		moved[i] = s + delta
	}
	return Lines{text: text, starts: starts}
}

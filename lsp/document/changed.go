package document

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

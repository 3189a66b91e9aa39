package document

// The line diff behind Edits: Myers' O(ND) algorithm in its linear-space form ("An O(ND)
// Difference Algorithm and Its Variations", 1986, section 4b), which finds the middle snake of
// the shortest edit script and recurses on both sides of it. Elements are line ids, so the
// comparisons are integer compares whatever the lines' lengths.

// Work bounds for one middle-snake search. The search costs about d·(n+m) steps for an edit
// distance d; two unrelated 100,000-line texts would take minutes. A language server must
// answer a formatting or code-action request promptly, so past the bound the region being
// searched is reported as wholly replaced: still a correct edit, only a coarser one.
const (
	maxWork = 1 << 26 // steps per search, about a tenth of a second
	minD    = 256     // the edit distance always searched, however long the texts
)

// differ marks the elements of a and b that are not in a common subsequence of them: the
// deleted lines of a and the inserted lines of b. Unmarked elements pair up in order.
type differ struct {
	a, b       []int
	delA, insB []bool
	vf, vb     []int // furthest-reaching x per diagonal, forward and backward; reused
	work, minD int
}

// lineDiff returns the deletion and insertion marks of a shortest edit script from a to b,
// or of a longer one where the search exceeded work (see maxWork).
func lineDiff(a, b []int, work, minD int) (delA, insB []bool) {
	d := &differ{a: a, b: b, delA: make([]bool, len(a)), insB: make([]bool, len(b)), work: work, minD: minD}
	d.compare(0, len(a), 0, len(b))
	return d.delA, d.insB
}

func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo, bLo = aLo+1, bLo+1
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi, bHi = aHi-1, bHi-1
	}
	if aLo == aHi || bLo == bHi {
		d.replace(aLo, aHi, bLo, bHi)
		return
	}
	x, y, ok := d.bisect(aLo, aHi, bLo, bHi)
	// The split is strictly inside the region when the search works; the check keeps a bug
	// there from becoming endless recursion.
	if !ok || (x == aLo && y == bLo) || (x == aHi && y == bHi) {
		d.replace(aLo, aHi, bLo, bHi)
		return
	}
	d.compare(aLo, x, bLo, y)
	d.compare(x, aHi, y, bHi)
}

func (d *differ) replace(aLo, aHi, bLo, bHi int) {
	for i := aLo; i < aHi; i++ {
		d.delA[i] = true
	}
	for j := bLo; j < bHi; j++ {
		d.insB[j] = true
	}
}

// bisect finds a point (x, y) on a shortest path through the edit graph of a[aLo:aHi] and
// b[bLo:bHi] near its middle, by running the search forward from the start and backward from
// the end until the two meet. ok is false when the work bound stopped it first.
func (d *differ) bisect(aLo, aHi, bLo, bHi int) (x, y int, ok bool) {
	a, b := d.a[aLo:aHi], d.b[bLo:bHi]
	n, m := len(a), len(b)
	maxD := (n + m + 1) / 2
	limit := max(d.minD, d.work/(n+m))
	off := maxD
	size := 2*maxD + 2
	if cap(d.vf) < size {
		d.vf, d.vb = make([]int, size), make([]int, size)
	}
	vf, vb := d.vf[:size], d.vb[:size]
	for i := range vf {
		vf[i], vb[i] = -1, -1
	}
	vf[off+1], vb[off+1] = 0, 0
	delta := n - m
	// With an odd delta the paths can first meet on a forward step, with an even one on a
	// backward step; checking only there finds the meeting at the least total distance.
	front := delta%2 != 0
	// Diagonals that ran off the edge of the graph are skipped from then on.
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for dist := 0; dist < maxD && dist <= limit; dist++ {
		for k1 := -dist + k1start; k1 <= dist-k1end; k1 += 2 {
			i := off + k1
			var x1 int
			if k1 == -dist || (k1 != dist && vf[i-1] < vf[i+1]) {
				x1 = vf[i+1] // step down: insert b[y]
			} else {
				x1 = vf[i-1] + 1 // step right: delete a[x]
			}
			y1 := x1 - k1
			for x1 < n && y1 < m && a[x1] == b[y1] {
				x1, y1 = x1+1, y1+1
			}
			vf[i] = x1
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				j := off + delta - k1
				if j >= 0 && j < size && vb[j] != -1 && x1 >= n-vb[j] {
					return aLo + x1, bLo + y1, true
				}
			}
		}
		for k2 := -dist + k2start; k2 <= dist-k2end; k2 += 2 {
			i := off + k2
			var x2 int
			if k2 == -dist || (k2 != dist && vb[i-1] < vb[i+1]) {
				x2 = vb[i+1]
			} else {
				x2 = vb[i-1] + 1
			}
			y2 := x2 - k2
			for x2 < n && y2 < m && a[n-x2-1] == b[m-y2-1] {
				x2, y2 = x2+1, y2+1
			}
			vb[i] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				j := off + delta - k2
				if j >= 0 && j < size && vf[j] != -1 {
					x1 := vf[j]
					y1 := x1 - (j - off)
					if x1 >= n-x2 {
						return aLo + x1, bLo + y1, true
					}
				}
			}
		}
	}
	return 0, 0, false
}

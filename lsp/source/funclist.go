package source

import "sort"

// funcChunkSize is how many functions a chunk of a funcList holds when made.
const funcChunkSize = 32

// funcList is a File's top-level functions in chunks that later versions share, so that
// moving every function after an edit by its change in length costs a chunk header each,
// not a copy of every Func (80 bytes each: 78 KB for a 10,000-line Go file, on every
// keystroke; README, Performance). A funcList is immutable.
type funcList struct {
	n      int
	chunks []funcChunk
}

// funcChunk is a run of functions; each one's positions are fs's plus shift. fs is shared
// between versions, so it is never written once made.
type funcChunk struct {
	first int // the index of fs[0] in the list
	shift int
	fs    []Func
}

// listOf makes a funcList of fs, sharing its array.
func listOf(fs []Func) funcList {
	l := funcList{n: len(fs), chunks: make([]funcChunk, 0, len(fs)/funcChunkSize+1)}
	for i := 0; i < len(fs); i += funcChunkSize {
		j := min(len(fs), i+funcChunkSize)
		l.chunks = append(l.chunks, funcChunk{first: i, fs: fs[i:j:j]})
	}
	return l
}

// chunk returns the index of the chunk holding function i (0 <= i < l.n).
func (l funcList) chunk(i int) int {
	return sort.Search(len(l.chunks), func(c int) bool { return l.chunks[c].first > i }) - 1
}

// at returns function i.
func (l funcList) at(i int) Func {
	c := &l.chunks[l.chunk(i)]
	return shifted(c.fs[i-c.first], c.shift)
}

func shifted(f Func, d int) Func {
	f.Start += d
	f.BodyStart += d
	f.BodyEnd += d
	f.End += d
	return f
}

// slice returns every function, in a new slice.
func (l funcList) slice() []Func {
	out := make([]Func, 0, l.n)
	for _, c := range l.chunks {
		for _, f := range c.fs {
			out = append(out, shifted(f, c.shift))
		}
	}
	return out
}

// moved returns l with the functions from from on moved by delta.
func (l funcList) moved(from, delta int) funcList {
	if from >= l.n || delta == 0 {
		return l
	}
	return l.replace(from, from, nil, delta)
}

// with returns l with function i replaced by f.
func (l funcList) with(i int, f Func) funcList {
	return l.replace(i, i+1, []Func{f}, 0)
}

// replace returns l with functions [p, q) replaced by mid and those after moved by delta.
// The chunks that hold p and q are copied (with mid, into new chunks); those before are
// l's, those after are l's with their shift moved: a few chunks' worth of copying and the
// chunks' headers, whatever the list's length.
func (l funcList) replace(p, q int, mid []Func, delta int) funcList {
	if len(l.chunks) > 2*(l.n/funcChunkSize)+8 {
		// Chunks left small by deletions: past this many, start again from one array.
		l = listOf(l.slice())
	}
	cp, cq := len(l.chunks), len(l.chunks) // the chunks holding p and q, or len
	if p < l.n {
		cp = l.chunk(p)
	}
	if q < l.n {
		cq = l.chunk(q)
	}
	lo, hi := l.n, l.n // the functions copied: [lo, hi), the chunks cp to cq
	if cp < len(l.chunks) {
		lo = l.chunks[cp].first
	}
	if cq < len(l.chunks) {
		hi = l.chunks[cq].first + len(l.chunks[cq].fs)
	}
	flat := make([]Func, 0, (p-lo)+len(mid)+(hi-q))
	for i := lo; i < p; i++ {
		flat = append(flat, l.at(i))
	}
	flat = append(flat, mid...)
	for i := q; i < hi; i++ {
		flat = append(flat, shifted(l.at(i), delta))
	}
	out := funcList{n: l.n + len(mid) - (q - p), chunks: make([]funcChunk, cp, len(l.chunks)+len(flat)/funcChunkSize+1)}
	copy(out.chunks, l.chunks[:cp])
	for i := 0; i < len(flat); {
		n := min(len(flat)-i, funcChunkSize)
		if len(flat)-i-n < funcChunkSize/2 {
			n = len(flat) - i // no chunk much smaller than the others
		}
		out.chunks = append(out.chunks, funcChunk{first: lo + i, fs: flat[i : i+n : i+n]})
		i += n
	}
	if cq < len(l.chunks) {
		for _, c := range l.chunks[cq+1:] {
			c.first += len(mid) - (q - p)
			c.shift += delta
			out.chunks = append(out.chunks, c)
		}
	}
	return out
}

// innermost returns the narrowest function whose [Start, End] holds offset, and whether
// there is one.
func (l funcList) innermost(offset int) (Func, bool) {
	var best Func
	found := false
	for _, c := range l.chunks {
		o := offset - c.shift
		for _, f := range c.fs {
			if f.Start <= o && o <= f.End && (!found || f.End-f.Start < best.End-best.Start) {
				best, found = shifted(f, c.shift), true
			}
		}
	}
	return best, found
}

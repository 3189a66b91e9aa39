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
	if len(l.chunks) > 2*(l.n/funcChunkSize)+8 {
		// Each move can split a chunk: past this many, start again from one array (a copy
		// of the list once every few dozen edits).
		l = listOf(l.slice())
	}
	out := funcList{n: l.n, chunks: make([]funcChunk, 0, len(l.chunks)+1)}
	for _, c := range l.chunks {
		switch end := c.first + len(c.fs); {
		case end <= from:
			out.chunks = append(out.chunks, c)
		case c.first >= from:
			c.shift += delta
			out.chunks = append(out.chunks, c)
		default: // split at from, both halves sharing c's array
			k := from - c.first
			out.chunks = append(out.chunks,
				funcChunk{first: c.first, shift: c.shift, fs: c.fs[:k:k]},
				funcChunk{first: from, shift: c.shift + delta, fs: c.fs[k:]})
		}
	}
	return out
}

// with returns l with function i replaced by f: a copy of i's chunk, not of the list.
func (l funcList) with(i int, f Func) funcList {
	k := l.chunk(i)
	chunks := make([]funcChunk, len(l.chunks))
	copy(chunks, l.chunks)
	c := &chunks[k]
	fs := make([]Func, len(c.fs))
	copy(fs, c.fs)
	fs[i-c.first] = shifted(f, -c.shift)
	c.fs = fs
	return funcList{n: l.n, chunks: chunks}
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

package document

import "sort"

// lineBlockSize is how many line starts a block of a Lines index holds (a block made by
// Update may hold up to half as many again, see Update). Small enough that rebuilding the
// blocks an edit touches is cheap, large enough that the blocks' headers, which every
// version copies, stay a few kilobytes for a 10,000-line text.
const lineBlockSize = 128

// lineBlock is a run of consecutive line starts. Its starts array is shared by every later
// version of the index that did not touch it, so it is never written once made; a later
// version moves the whole block with shift instead (the edit's change in length).
type lineBlock struct {
	line   int   // the index of the block's first line
	shift  int   // added to each of starts
	starts []int // line starts, before shift; never empty
}

// chunk splits flat, line starts beginning with line, into blocks that share its array.
func chunk(blocks []lineBlock, flat []int, line int) []lineBlock {
	for len(flat) > 0 {
		n := min(len(flat), lineBlockSize)
		if len(flat)-n < lineBlockSize/2 {
			n = len(flat) // no block much smaller than the others
		}
		blocks = append(blocks, lineBlock{line: line, starts: flat[:n:n]})
		flat, line = flat[n:], line+n
	}
	return blocks
}

// block returns the index of the block holding line i (0 <= i < l.n).
func (l Lines) block(i int) int {
	return sort.Search(len(l.blocks), func(b int) bool { return l.blocks[b].line > i }) - 1
}

// start returns the byte offset of line i (0 <= i < l.n).
func (l Lines) start(i int) int {
	b := &l.blocks[l.block(i)]
	return b.starts[i-b.line] + b.shift
}

// lineAt returns the last line that starts at or before offset.
func (l Lines) lineAt(offset int) int {
	k := sort.Search(len(l.blocks), func(b int) bool { return l.blocks[b].starts[0]+l.blocks[b].shift > offset }) - 1
	b := &l.blocks[k]
	return b.line + sort.SearchInts(b.starts, offset-b.shift+1) - 1
}

// all returns every line start, in one new slice.
func (l Lines) all() []int {
	out := make([]int, 0, l.n)
	for _, b := range l.blocks {
		for _, s := range b.starts {
			out = append(out, s+b.shift)
		}
	}
	return out
}

// Update returns the index of text, a later version of the text l indexes. Whether a place
// starts a line depends only on the two bytes around it, so the lines before the change
// are l's, those after it are l's moved by the change in length, and only the changed
// bytes are looked at again. The blocks the change touches are rebuilt; the others are
// l's, those after the change with their shift moved: a keystroke costs the changed
// bytes, a block or two and the blocks' headers, not a copy of every line start (a
// 10,000-line file's index is 78 KB, and the garbage of copying it on every keystroke
// drove the server's latency tail; README, Performance).
func (l Lines) Update(text string) Lines {
	if len(l.blocks) == 0 { // the zero Lines
		return NewLines(text)
	}
	start, oldEnd, newEnd := Changed(l.text, text)
	if start == len(l.text) && start == len(text) {
		return Lines{text: text, n: l.n, blocks: l.blocks}
	}
	// Old lines before head stand; those from tail on move. A place t in between starts a
	// line when text[t-1] ends one: a '\n', or a '\r' not followed by '\n'. Line 0 always
	// stands, so head >= 1.
	head := l.lineAt(max(start, 1)-1) + 1
	tail := l.lineAt(oldEnd) + 1
	delta := len(text) - len(l.text)
	// Rebuilt: the blocks from the one holding line head-1 to the one holding line tail
	// (or the last), and the next one too when the rebuilt lines would end in a small block.
	bi := l.block(head - 1)
	bj := len(l.blocks) - 1
	if tail < l.n {
		bj = l.block(tail)
	}
	if bj+1 < len(l.blocks) && rebuiltEnd(l, bj)-l.blocks[bi].line < lineBlockSize/2 {
		bj++
	}
	end := rebuiltEnd(l, bj) // old lines [blocks[bi].line, end) are rebuilt
	flat := make([]int, 0, end-l.blocks[bi].line+(newEnd-start)/8+1)
	for i := l.blocks[bi].line; i < head; i++ {
		flat = append(flat, l.start(i))
	}
	for t := max(start, 1); t <= newEnd; t++ {
		if c := text[t-1]; c == '\n' || c == '\r' && (t == len(text) || text[t] != '\n') {
			flat = append(flat, t)
		}
	}
	for i := tail; i < end; i++ {
		flat = append(flat, l.start(i)+delta)
	}
	dLines := len(flat) - (end - l.blocks[bi].line)
	blocks := make([]lineBlock, bi, len(l.blocks)+len(flat)/lineBlockSize+1)
	copy(blocks, l.blocks[:bi])
	blocks = chunk(blocks, flat, l.blocks[bi].line)
	for _, b := range l.blocks[bj+1:] {
		b.line += dLines
		b.shift += delta
		blocks = append(blocks, b)
	}
	return Lines{text: text, n: l.n + dLines, blocks: blocks}
}

// rebuiltEnd is the line after block b.
func rebuiltEnd(l Lines, b int) int {
	return l.blocks[b].line + len(l.blocks[b].starts)
}

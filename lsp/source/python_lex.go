package source

import "strings"

// A Python reader that knows exactly as much of the tokenizer (Python reference, "Lexical
// analysis") as finding blocks needs: logical lines joined across brackets and backslashes,
// strings of every prefix and quoting (f-strings with nested quotes, PEP 701), comments,
// and indentation. Anything else is an operator or a name.

type pyKind uint8

const (
	pyName pyKind = iota
	pyNumber
	pyString
	pyOp
)

type pyTok struct {
	kind       pyKind
	start, end int
}

// pyLine is one logical line, or one line holding only a comment (toks empty).
type pyLine struct {
	start    int // first byte of its first physical line
	indent   int // columns, tabs to the next multiple of 8 as CPython does
	toks     []pyTok
	comments [][2]int
	end      int // the newline that ends it, or len(src)
}

func pyLex(src string) []pyLine {
	var lines []pyLine
	i := 0
	for i < len(src) {
		ln := pyLine{start: i}
		for ; i < len(src); i++ {
			switch src[i] {
			case ' ':
				ln.indent++
				continue
			case '\t':
				ln.indent = ln.indent/8*8 + 8
				continue
			case '\f':
				ln.indent = 0
				continue
			case '\r':
				continue
			}
			break
		}
		if i >= len(src) {
			break
		}
		if src[i] == '\n' { // blank line
			i++
			continue
		}
		if src[i] == '#' {
			j := lineEnd(src, i)
			ln.comments = append(ln.comments, [2]int{i, j})
			ln.end = j
			lines = append(lines, ln)
			i = j + 1
			continue
		}
		i = pyLexLogical(src, i, &ln)
		lines = append(lines, ln)
	}
	return lines
}

// pyLexLogical reads tokens from i to the end of the logical line and returns the offset
// after its newline.
func pyLexLogical(src string, i int, ln *pyLine) int {
	depth := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 {
				ln.end = i
				return i + 1
			}
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '#':
			j := lineEnd(src, i)
			ln.comments = append(ln.comments, [2]int{i, j})
			i = j
		case c == '\\':
			i++
			if i < len(src) && src[i] == '\r' {
				i++
			}
			if i < len(src) && src[i] == '\n' {
				i++
			}
		case c == '"' || c == '\'':
			j := pyScanString(src, i, false)
			ln.toks = append(ln.toks, pyTok{pyString, i, j})
			i = j
		case isIdentByte(c):
			j := i
			for j < len(src) && (isIdentByte(src[j]) || isDigit(src[j])) {
				j++
			}
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && pyStringPrefix(src[i:j]) {
				f := strings.ContainsAny(src[i:j], "fFtT")
				k := pyScanString(src, j, f)
				ln.toks = append(ln.toks, pyTok{pyString, i, k})
				i = k
				continue
			}
			ln.toks = append(ln.toks, pyTok{pyName, i, j})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			j := i + 1
			for j < len(src) && (isIdentByte(src[j]) || isDigit(src[j]) || src[j] == '.') {
				j++
			}
			ln.toks = append(ln.toks, pyTok{pyNumber, i, j})
			i = j
		default:
			n := 1
			if strings.HasPrefix(src[i:], "...") {
				n = 3
			} else if strings.HasPrefix(src[i:], "->") {
				n = 2
			}
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(0, depth-1)
			}
			ln.toks = append(ln.toks, pyTok{pyOp, i, i + n})
			i += n
		}
	}
	ln.end = len(src)
	return len(src)
}

// pyStringPrefix reports a string prefix: r, u, b, f, t (3.14) and their two-letter
// combinations, in any case.
func pyStringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt":
		return true
	}
	return false
}

// pyScanString returns the offset after the string whose quote is at src[i]. A string
// left open at the end of its line (one quote) or of the file (three) ends there, which is
// how far a broken string should spoil the rest.
func pyScanString(src string, i int, fstring bool) int {
	q := src[i]
	triple := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	if triple {
		i += 3
	} else {
		i++
	}
	for i < len(src) {
		switch c := src[i]; {
		case c == '\\':
			i += 2
		case c == q:
			if !triple {
				return i + 1
			}
			if strings.HasPrefix(src[i:], strings.Repeat(string(q), 3)) {
				return i + 3
			}
			i++
		case c == '\n' && !triple:
			return i
		case c == '{' && fstring:
			if i+1 < len(src) && src[i+1] == '{' {
				i += 2
				continue
			}
			i = pyScanReplacement(src, i+1, triple)
		default:
			i++
		}
	}
	return len(src)
}

// pyScanReplacement skips an f-string replacement field from just after its "{" to just
// after its "}". Since Python 3.12 the expression may hold strings in the same quotes as
// the f-string, so strings inside are scanned as strings.
func pyScanReplacement(src string, i int, triple bool) int {
	depth := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n' && !triple:
			return i
		case c == '"' || c == '\'':
			i = pyScanString(src, i, false)
			continue
		case isIdentByte(c):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && pyStringPrefix(src[i:j]) {
				i = pyScanString(src, j, strings.ContainsAny(src[i:j], "fFtT"))
				continue
			}
			i = j
			continue
		case c == '{' || c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth = max(0, depth-1)
		case c == '}':
			if depth == 0 {
				return i + 1
			}
			depth--
		}
		i++
	}
	return len(src)
}

func lineEnd(src string, i int) int {
	if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(src)
}

// isIdentByte accepts ASCII letters, "_" and every byte of a multi-byte UTF-8 sequence, so
// that non-ASCII identifiers stay whole without decoding.
func isIdentByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

package source

import "strings"

// JSX is skipped as one token: the scanner only needs to know where an element ends,
// which matters because text between tags ("Don't") is not a string.

// scanJSX reads the element or fragment whose "<" is at src[i]. It fails (and "<" is
// then an operator) on anything that is not well-formed JSX, including the TSX generic
// arrows <T,>(x) => x and <T extends U>(x) => x.
func (sc *jsScan) scanJSX(i int) (int, bool) {
	e, ok := sc.jsxEnd[i]
	if !ok {
		e = -1
		if sc.guessing() {
			if end, isJSX := sc.scanJSXOnce(i); isJSX {
				e = end
			}
		}
		sc.jsxEnd[i] = e
	}
	return e, e >= 0
}

func (sc *jsScan) scanJSXOnce(i int) (int, bool) {
	sc.guesses++
	defer func() { sc.guesses-- }()
	src := sc.src
	j := skipSpace(src, i+1)
	if j < len(src) && src[j] == '>' {
		return sc.scanChildren(j + 1)
	}
	k := j
	for k < len(src) && jsxNameByte(src[k]) {
		k++
	}
	if k == j {
		return 0, false
	}
	first := true
	for j = skipSpace(src, k); j < len(src); j = skipSpace(src, j) {
		sc.budget--
		switch c := src[j]; {
		case strings.HasPrefix(src[j:], "/>"):
			return j + 2, true
		case c == '>':
			return sc.scanChildren(j + 1)
		case c == '{': // {...spread}
			j = sc.skipBraces(j + 1)
		case isIdentByte(c) || c == '$':
			k := j
			for k < len(src) && jsxNameByte(src[k]) {
				k++
			}
			if first && src[j:k] == "extends" {
				return 0, false
			}
			j = skipSpace(src, k)
			if j < len(src) && src[j] == '=' {
				end, ok := sc.scanAttrValue(skipSpace(src, j+1))
				if !ok {
					return 0, false
				}
				j = end
			}
		default:
			return 0, false
		}
		first = false
	}
	return 0, false
}

func (sc *jsScan) scanAttrValue(j int) (int, bool) {
	src := sc.src
	if j >= len(src) {
		return 0, false
	}
	switch src[j] {
	case '"', '\'': // JSX attribute strings have no escapes and may span lines
		if k := strings.IndexByte(src[j+1:], src[j]); k >= 0 {
			return j + 1 + k + 1, true
		}
	case '{':
		return sc.skipBraces(j + 1), true
	case '<':
		return sc.scanJSX(j)
	}
	return 0, false
}

// scanChildren reads children up to and including the closing tag.
func (sc *jsScan) scanChildren(j int) (int, bool) {
	src := sc.src
	for j < len(src) {
		sc.budget--
		switch src[j] {
		case '{':
			j = sc.skipBraces(j + 1)
		case '<':
			if k := skipSpace(src, j+1); k < len(src) && src[k] == '/' {
				if e := strings.IndexByte(src[k:], '>'); e >= 0 {
					return k + e + 1, true
				}
				return 0, false
			}
			e, ok := sc.scanJSX(j)
			if !ok {
				return 0, false
			}
			j = e
		default:
			j++
		}
	}
	return 0, false
}

func jsxNameByte(c byte) bool {
	return isIdentByte(c) || isDigit(c) || c == '$' || c == '-' || c == ':' || c == '.'
}

func skipSpace(src string, j int) int {
	for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
		j++
	}
	return j
}

package source

import "strings"

// A JavaScript/TypeScript tokenizer that is exact about what can hide a brace: strings,
// template literals (with ${} nested to any depth), comments, regular expression literals
// and, where the file may hold JSX, JSX elements (whose text may hold any quote). Each of
// those is one token; braces, parentheses and brackets elsewhere are single punctuators.

type jsKind uint8

const (
	jsIdent jsKind = iota // identifiers, keywords and #private names
	jsNum
	jsStr
	jsTmpl
	jsRegex
	jsJSX
	jsPunct
)

type jsTok struct {
	kind       jsKind
	start, end int
	nl         bool // a line break (or a comment holding one) comes before it
}

type jsLexer struct {
	*jsScan
	pos      int
	prev     *jsTok // the last token, for the regex and JSX decisions
	nl       bool
	comments [][2]int
}

// jsScan is shared by a file's lexer and the sub-lexers it starts for ${...} and JSX
// expressions. It remembers where the JSX element and the brace group starting at an
// offset end, so that a guess that failed is not made again (nested "<a>{" made that
// exponential), and it holds a budget of bytes and tokens for guessing: past it, "/" and
// "<" are operators, so no input costs more than a few passes over the file.
type jsScan struct {
	src      string
	jsx      bool
	jsxEnd   map[int]int // -1: not JSX
	braceEnd map[int]int
	budget   int
	guesses  int // JSX guesses in progress: a brace group inside one may give up
}

func newJSScan(src string, jsx bool) *jsScan {
	return &jsScan{src: src, jsx: jsx, jsxEnd: map[int]int{}, braceEnd: map[int]int{}, budget: 4*len(src) + 1<<16}
}

func (sc *jsScan) guessing() bool { return sc.budget > 0 }

func jsLex(src string, jsx bool) ([]jsTok, [][2]int) {
	lx := &jsLexer{jsScan: newJSScan(src, jsx)}
	if strings.HasPrefix(src, "#!") {
		lx.pos = lineEnd(src, 0)
	}
	var toks []jsTok
	for {
		t, ok := lx.next()
		if !ok {
			return toks, lx.comments
		}
		toks = append(toks, t)
	}
}

func (lx *jsLexer) next() (jsTok, bool) {
	src := lx.src
	for lx.pos < len(src) {
		i := lx.pos
		switch c := src[i]; {
		case c == '\n':
			lx.nl = true
			lx.pos++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			lx.pos++
			continue
		case strings.HasPrefix(src[i:], "//"):
			lx.pos = lineEnd(src, i)
			lx.comments = append(lx.comments, [2]int{i, lx.pos})
			continue
		case strings.HasPrefix(src[i:], "/*"):
			lx.pos = len(src)
			if j := strings.Index(src[i+2:], "*/"); j >= 0 {
				lx.pos = i + 2 + j + 2
			}
			lx.nl = lx.nl || strings.Contains(src[i:lx.pos], "\n")
			lx.comments = append(lx.comments, [2]int{i, lx.pos})
			continue
		}
		end, kind := lx.scan(i)
		t := jsTok{kind: kind, start: i, end: end, nl: lx.nl}
		lx.nl, lx.prev, lx.pos = false, &t, end
		return t, true
	}
	return jsTok{}, false
}

func (lx *jsLexer) scan(i int) (int, jsKind) {
	src := lx.src
	c := src[i]
	switch {
	case c == '\'' || c == '"':
		return jsScanString(src, i), jsStr
	case c == '`':
		return lx.scanTemplate(i), jsTmpl
	case isIdentByte(c) || c == '$' || c == '#' && i+1 < len(src) && (isIdentByte(src[i+1]) || src[i+1] == '$'):
		j := i + 1
		for j < len(src) && (isIdentByte(src[j]) || isDigit(src[j]) || src[j] == '$') {
			j++
		}
		return j, jsIdent
	case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
		j := i + 1
		for j < len(src) && (isIdentByte(src[j]) || isDigit(src[j]) || src[j] == '.') {
			j++
		}
		return j, jsNum
	case c == '/' && lx.guessing() && lx.operandNext():
		if j, ok := lx.scanRegex(i); ok {
			return j, jsRegex
		}
	case c == '<' && lx.jsx && lx.guessing() && lx.operandNext():
		if j, ok := lx.scanJSX(i); ok {
			return j, jsJSX
		}
	}
	return i + jsPunctLen(src[i:]), jsPunct
}

// operandKeywords are the keywords after which an expression starts, so that "/" opens a
// regular expression (and "<" a JSX element) rather than dividing (or comparing).
var operandKeywords = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true,
}

// operandNext reports whether an operand, not an operator, may come next: the standard
// heuristic (the grammar decides by context the tokenizer lacks). A wrong guess costs
// little because a regex must close on its line and JSX must close at all.
func (lx *jsLexer) operandNext() bool {
	p := lx.prev
	if p == nil {
		return true
	}
	s := lx.src[p.start:p.end]
	switch p.kind {
	case jsIdent:
		return operandKeywords[s]
	case jsPunct:
		return s != ")" && s != "]" && s != "}" && s != "++" && s != "--"
	}
	return false
}

// jsPuncts are the punctuators longer than one byte that matter for telling "=" and "=>"
// apart from the rest. ">>" is left as two ">" so that nested type arguments
// (Array<Array<T>>) close one at a time.
var jsPuncts = []string{
	"===", "!==", "**=", "&&=", "||=", "??=", "<<=", "...",
	"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=",
	"/=", "%=", "&=", "|=", "^=", "**", "<<",
}

func jsPunctLen(s string) int {
	if len(s) < 2 || !strings.ContainsRune("=!*&|?<.+-/%^", rune(s[0])) {
		return 1
	}
	for _, p := range jsPuncts {
		if strings.HasPrefix(s, p) {
			if p == "?." && len(s) > 2 && isDigit(s[2]) {
				break // "a ?.5 : b" is a conditional
			}
			return len(p)
		}
	}
	return 1
}

// jsScanString ends a quoted string after its closing quote, or at the end of the line for
// an unterminated one (a backslash-newline continues it).
func jsScanString(src string, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(src)
}

func (sc *jsScan) scanTemplate(i int) int {
	src := sc.src
	for j := i + 1; j < len(src); j++ {
		switch {
		case src[j] == '\\':
			j++
		case src[j] == '`':
			return j + 1
		case src[j] == '$' && j+1 < len(src) && src[j+1] == '{':
			j = sc.skipBraces(j+2) - 1
		}
	}
	return len(src)
}

// skipBraces reads tokens from i (just after a "{") and returns the offset after the
// matching "}": template substitutions and JSX expressions are code, with their own
// strings, templates and comments.
func (sc *jsScan) skipBraces(i int) int {
	if e, ok := sc.braceEnd[i]; ok {
		return e
	}
	e, complete := sc.skipBracesOnce(i)
	if complete {
		sc.braceEnd[i] = e
	}
	return e
}

// skipBracesOnce gives up (returning the end of the text, which fails the guess) when
// the budget runs out inside a JSX guess: the guesses nest, and each would otherwise
// read on to the end of the file.
func (sc *jsScan) skipBracesOnce(i int) (int, bool) {
	sub := &jsLexer{jsScan: sc, pos: i}
	depth := 0
	for {
		if sc.guesses > 0 && !sc.guessing() {
			return len(sc.src), false
		}
		t, ok := sub.next()
		if !ok {
			return len(sc.src), true
		}
		sc.budget--
		if t.kind != jsPunct {
			continue
		}
		switch sc.src[t.start] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return t.end, true
			}
			depth--
		}
	}
}

// scanRegex reads /body/flags; a literal must end on its line, so a "/" that was a
// division after all fails here and becomes a punctuator.
func (sc *jsScan) scanRegex(i int) (int, bool) {
	src := sc.src
	inClass := false
	for j := i + 1; j < len(src); j++ {
		sc.budget--
		switch src[j] {
		case '\\':
			if j+1 < len(src) && src[j+1] == '\n' {
				return 0, false
			}
			j++
		case '\n':
			return 0, false
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '/':
			if !inClass {
				j++
				for j < len(src) && (isIdentByte(src[j]) || isDigit(src[j])) {
					j++
				}
				return j, true
			}
		}
	}
	return 0, false
}

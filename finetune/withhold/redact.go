package withhold

import (
	"go/ast"
	"go/token"
	"sort"
	"strconv"
	"strings"

	"github.com/frognano/frognano/internal/syntax"
)

// The issue text of a task at hint level 1 is what its failing tests printed (and at level
// 2 a model's report written from it): Go's "Add(2, 3) = -1, want 5", pytest's long
// traceback with the test's source ("assert add(2, 3) == 5"). With the tests withheld from
// the copy, that text is where the answer key is left, and a model trained with RL learns
// to special-case it (if a == 2 && b == 3 { return 5 }). So the literals of what was
// withheld (its numbers and strings, the golden files' text) are taken out of the issue
// the agent is given (Redact): the output's shape, the names, and the values the buggy
// code computed that no withheld code holds, stay.

// redacted stands in for a withheld literal in the issue text.
const redacted = "…"

// addLiteral notes a literal of withheld code: its source text and its value.
func (r *Result) addLiteral(src, value string) {
	if r.literals == nil {
		r.literals = map[string]bool{}
	}
	for _, s := range []string{src, value} {
		if t := strings.TrimSpace(s); t != "" {
			r.literals[t] = true
		}
	}
}

// goLiterals notes the literals of gf inside rs.
func (r *Result) goLiterals(gf *goFile, rs [][2]int) {
	ast.Inspect(gf.f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || !inRanges(rs, gf.offset(lit.Pos())) {
			return true
		}
		v := lit.Value
		if lit.Kind == token.STRING || lit.Kind == token.CHAR {
			if u, err := strconv.Unquote(lit.Value); err == nil {
				v = u
				if lit.Kind == token.STRING {
					// A subtest's name as go test prints it: spaces made underscores.
					r.addLiteral(strconv.Quote(u), strings.ReplaceAll(u, " ", "_"))
				}
			}
		}
		r.addLiteral(lit.Value, v)
		return true
	})
}

// fileLiterals notes a withheld file's text: whole, quoted, and line by line.
func (r *Result) fileLiterals(b []byte) {
	s := string(b)
	r.addLiteral(s, strconv.Quote(s))
	for _, l := range strings.Split(s, "\n") {
		r.addLiteral(l, "")
	}
}

// pyLiterals notes the numbers and strings inside n.
func (r *Result) pyLiterals(n syntax.Node) {
	n.Walk(func(c syntax.Node) bool {
		switch c.Kind() {
		case "integer", "float":
			r.addLiteral(c.Text(), "")
			return false
		case "string":
			var content strings.Builder
			for _, p := range c.NamedChildren() {
				if p.Kind() == "string_content" {
					content.WriteString(p.Text())
				}
			}
			r.addLiteral(c.Text(), content.String())
			return true // an f-string's interpolations hold literals too
		}
		return true
	})
}

// Redact is text (a task's issue) with each literal of the withheld code replaced by "…":
// a number where it stands alone (not part of a longer number or name), a string of two
// characters or more wherever it is.
func (r *Result) Redact(text string) string {
	if r == nil || len(r.literals) == 0 {
		return text
	}
	lits := make([]string, 0, len(r.literals))
	for l := range r.literals {
		if len([]rune(l)) >= 2 || isNumber(l) {
			lits = append(lits, l)
		}
	}
	// The longest first: a string that holds a number goes whole.
	sort.Slice(lits, func(i, j int) bool {
		if len(lits[i]) != len(lits[j]) {
			return len(lits[i]) > len(lits[j])
		}
		return lits[i] < lits[j]
	})
	for _, l := range lits {
		text = replaceToken(text, l)
	}
	return text
}

// replaceToken replaces each occurrence of tok in text that does not continue a word or a
// number on a side where tok itself begins or ends with one. A number may stand between
// underscores (a subtest's name: TestAdd/20_plus_22).
func replaceToken(text, tok string) string {
	joins := wordByte
	if isNumber(tok) {
		joins = func(b byte) bool { return b != '_' && wordByte(b) }
	}
	var b strings.Builder
	for {
		i := strings.Index(text, tok)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		j := i + len(tok)
		if (i > 0 && wordByte(tok[0]) && joins(text[i-1])) || (j < len(text) && wordByte(tok[len(tok)-1]) && joins(text[j])) {
			b.WriteString(text[:i+1])
			text = text[i+1:]
			continue
		}
		b.WriteString(text[:i])
		b.WriteString(redacted)
		text = text[j:]
	}
}

// wordByte: b continues an identifier or a number (a decimal point too: 5 is not 0.5).
func wordByte(b byte) bool {
	return b == '_' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9') {
			return false
		}
	}
	return s != ""
}

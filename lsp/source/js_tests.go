package source

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/frognano/frognano/internal/syntax"
)

// jsTestCall records it("name", fn) / test("name", fn), also through modifiers (it.only,
// test.skip, test.concurrent) and tables (it.each([...])("name %s", fn), it.each`...`).
// The Func spans the whole call; its body is the callback's. It reports whether call was
// such a test (and its callback walked).
func (w *walker) jsTestCall(call syntax.Node) bool {
	each := false
	callee := call.Field("function")
	for {
		switch callee.Kind() {
		case "member_expression":
			each = each || callee.Field("property").Text() == "each"
			callee = callee.Field("object")
			continue
		case "call_expression":
			callee = callee.Field("function")
			continue
		}
		break
	}
	if callee.Kind() != "identifier" {
		return false
	}
	switch callee.Text() {
	case "it", "test", "specify":
	default:
		return false
	}
	var args []syntax.Node
	for _, a := range call.Field("arguments").NamedChildren() {
		if a.Kind() != "comment" {
			args = append(args, a)
		}
	}
	if len(args) < 2 || args[0].Kind() != "string" && args[0].Kind() != "template_string" || !jsFnValue(args[1]) {
		return false
	}
	body := args[1].Field("body")
	if body.Kind() != "statement_block" {
		return false
	}
	name, pattern := w.testName(args[0], each)
	bodyStart, bodyEnd := jsBraces(body)
	r := w.add(name, call.Start(), bodyStart, bodyEnd, call.End(), body.Start(), jsStub(body))
	r.testName, r.pattern = name, pattern
	w.js(body, -1)
	return true
}

// testName returns the test's name as written and a -t pattern that matches it: literal
// text quoted, and what is only known when the test runs (${...} in a template, the
// %s/$name placeholders of .each) as ".*".
func (w *walker) testName(arg syntax.Node, each bool) (name, pattern string) {
	src := arg.Text()
	var parts []string // literal text; a substitution between each two
	if arg.Kind() == "string" {
		name = jsUnquote(src)
		parts = []string{name}
	} else {
		name = src[1:]
		if len(src) >= 2 && strings.HasSuffix(src, "`") {
			name = src[1 : len(src)-1]
		}
		from := arg.Start() + 1
		for _, c := range arg.NamedChildren() {
			if c.Kind() == "template_substitution" {
				parts = append(parts, jsUnescape(w.text[from:c.Start()]))
				from = c.End()
			}
		}
		end := arg.End()
		if strings.HasSuffix(src, "`") && len(src) >= 2 {
			end--
		}
		parts = append(parts, jsUnescape(w.text[min(from, end):end]))
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(".*")
		}
		if each {
			p = eachPlaceholder.ReplaceAllString(p, "\x00")
		}
		for j, lit := range strings.Split(p, "\x00") {
			if j > 0 {
				b.WriteString(".*")
			}
			b.WriteString(regexp.QuoteMeta(lit))
		}
	}
	return name, b.String()
}

// eachPlaceholder matches the printf-style (%s, %d, %#, ...) and $variable placeholders
// that Jest and Vitest fill in test.each names.
var eachPlaceholder = regexp.MustCompile(`%[sdifjopPco#$]|\$[A-Za-z_][\w.]*`)

// jsUnquote returns the value of a quoted string token (quotes included in s).
func jsUnquote(s string) string {
	if len(s) < 2 || s[len(s)-1] != s[0] {
		if len(s) > 0 {
			return jsUnescape(s[1:]) // unterminated
		}
		return ""
	}
	return jsUnescape(s[1 : len(s)-1])
}

// jsUnescape resolves the escape sequences of JavaScript string literals.
func jsUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0':
			b.WriteByte(0)
		case '\n': // line continuation
		case 'x', 'u':
			r, n := jsHexEscape(s[i:])
			if n == 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteRune(r)
			i += n - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// jsHexEscape decodes xHH, uHHHH or u{H...} at the start of s; n is the bytes used.
func jsHexEscape(s string) (r rune, n int) {
	var digits string
	switch {
	case s[0] == 'x' && len(s) >= 3:
		digits, n = s[1:3], 3
	case strings.HasPrefix(s, "u{"):
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return 0, 0
		}
		digits, n = s[2:end], end+1
	case s[0] == 'u' && len(s) >= 5:
		digits, n = s[1:5], 5
	default:
		return 0, 0
	}
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, 0
	}
	return rune(v), n
}

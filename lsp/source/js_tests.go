package source

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// testCall records it("name", fn) / test("name", fn), also through modifiers (it.only,
// test.skip, test.concurrent) and tables (it.each([...])("name %s", fn), it.each`...`).
// The Func spans the whole call; its body is the callback's.
func (f *jsFile) testCall(i int) {
	if f.ident(i-1, "function") {
		return // a function named test
	}
	k := i + 1
	each := false
	for f.punct(k, ".") && f.isIdent(k+1) {
		m := f.s(k + 1)
		k += 2
		if m != "each" {
			continue
		}
		each = true
		if g := f.group(k); f.punct(k, "(") && g > 0 {
			k = g + 1
		} else if kd, _ := f.kind(k); kd == jsTmpl {
			k++
		} else {
			return
		}
	}
	call := f.group(k)
	if !f.punct(k, "(") || call < 0 {
		return
	}
	arg := k + 1
	if kd, ok := f.kind(arg); !ok || (kd != jsStr && kd != jsTmpl) || !f.punct(arg+1, ",") {
		return
	}
	fn, ok := f.fnValue(arg + 2)
	if !ok || fn.open < 0 || fn.close >= call {
		return
	}
	name, pattern := f.testName(arg, each)
	if fc := f.record(name, i, fn, call); fc != nil {
		fc.Test = &Test{Name: name, Command: jsTestCommand(f.relPath, pattern, f.vitest)}
	}
}

// testName returns the test's name as written and a -t pattern that matches it: literal
// text quoted, and what is only known when the test runs (${...} in a template, the
// %s/$name placeholders of .each) as ".*".
func (f *jsFile) testName(arg int, each bool) (name, pattern string) {
	tok := f.toks[arg]
	var parts []string // literal text; a substitution between each two
	if tok.kind == jsStr {
		name = jsUnquote(f.s(arg))
		parts = []string{name}
	} else {
		inner := f.text[tok.start+1 : max(tok.start+1, tok.end-1)]
		if strings.HasSuffix(f.s(arg), "`") && tok.end-tok.start >= 2 {
			name = inner
		} else {
			name = f.text[tok.start+1 : tok.end] // unterminated
		}
		parts = templateParts(f.text, tok.start)
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

// templateParts returns the literal pieces of the template literal at src[i] == '`',
// unescaped, in order; a ${...} substitution lies between each two.
func templateParts(src string, i int) []string {
	var parts []string
	sc := newJSScan(src, false)
	from := i + 1
	for j := i + 1; j < len(src); j++ {
		switch {
		case src[j] == '\\':
			j++
		case src[j] == '`':
			return append(parts, jsUnescape(src[from:j]))
		case src[j] == '$' && j+1 < len(src) && src[j+1] == '{':
			parts = append(parts, jsUnescape(src[from:j]))
			j = sc.skipBraces(j+2) - 1
			from = j + 1
		}
	}
	return append(parts, jsUnescape(src[min(from, len(src)):]))
}

// importsVitest reports an import of (or require call for) "vitest"; files that use
// Vitest's globals without importing it are run with Jest, the more common default.
func (f *jsFile) importsVitest() bool {
	for i, t := range f.toks {
		if t.kind == jsStr && jsUnquote(f.s(i)) == "vitest" &&
			(f.ident(i-1, "from") || f.ident(i-1, "import") || f.punct(i-1, "(") && f.ident(i-2, "require")) {
			return true
		}
	}
	return false
}

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

package source

import (
	"path"
	"strings"
)

// pyFuncs finds every def (nested ones too) by indentation. Names are qualified by the
// enclosing classes and functions ("Calc.add", "outer.inner"; Python's __qualname__
// without "<locals>").
func pyFuncs(relPath, text string) []Func {
	lines := pyLex(text)
	testFile := pyIsTestFile(relPath)
	type scope struct {
		indent int
		name   string
		class  bool
	}
	var stack []scope
	var out []Func
	for i, ln := range lines {
		if len(ln.toks) == 0 {
			continue // comments do not open or close blocks
		}
		for len(stack) > 0 && ln.indent <= stack[len(stack)-1].indent {
			stack = stack[:len(stack)-1]
		}
		kw, name, ok := pyHeader(text, ln.toks)
		if !ok {
			continue
		}
		var qual, testIDs []string
		inTestClasses := true
		for _, s := range stack {
			qual = append(qual, s.name)
			testIDs = append(testIDs, s.name)
			inTestClasses = inTestClasses && s.class && strings.HasPrefix(s.name, "Test")
		}
		stack = append(stack, scope{ln.indent, name, kw == "class"})
		if kw == "class" {
			continue
		}
		fn, ok := pyDef(text, lines, i, strings.Join(append(qual, name), "."))
		if !ok {
			continue
		}
		// pytest collects functions whose name starts with "test" (its python_functions
		// default), at module level or in classes named Test* (python_classes).
		if testFile && inTestClasses && strings.HasPrefix(name, "test") {
			id := strings.Join(append(testIDs, name), "::")
			fn.Test = &Test{Name: id, Command: pytestCommand(relPath, id)}
		}
		out = append(out, fn)
	}
	return out
}

// pyIsTestFile follows pytest's default python_files: test_*.py and *_test.py.
func pyIsTestFile(relPath string) bool {
	b := path.Base(relPath)
	return strings.HasSuffix(b, ".py") && (strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py"))
}

// pyHeader recognises "def NAME", "async def NAME" and "class NAME" at a line's start.
func pyHeader(text string, toks []pyTok) (kw, name string, ok bool) {
	word := func(i int) string {
		if i < len(toks) && toks[i].kind == pyName {
			return text[toks[i].start:toks[i].end]
		}
		return ""
	}
	i := 0
	if word(0) == "async" {
		i = 1
	}
	kw = word(i)
	if kw != "def" && (kw != "class" || i == 1) {
		return "", "", false
	}
	name = word(i + 1)
	return kw, name, name != ""
}

// pyDef builds the Func for the def on lines[i].
func pyDef(text string, lines []pyLine, i int, name string) (Func, bool) {
	hdr := lines[i]
	colon := -1
	depth := 0
	for k, t := range hdr.toks {
		if t.kind != pyOp {
			continue
		}
		switch text[t.start] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ':':
			if depth == 0 && colon < 0 {
				colon = k
			}
		}
	}
	if colon < 0 {
		return Func{}, false // a header still being typed
	}
	start := hdr.toks[0].start
	sigEnd := hdr.toks[colon].start
	var body pyBody
	body.comments = hdr.comments
	var bodyStart, bodyEnd int
	if colon+1 < len(hdr.toks) {
		// "def f(): pass": the body is the rest of the logical line.
		bodyStart = hdr.toks[colon+1].start
		bodyEnd = hdr.toks[len(hdr.toks)-1].end
		body.lines = []pyLine{{indent: hdr.indent + 1, toks: hdr.toks[colon+1:]}}
	} else {
		bodyStart = min(hdr.end+1, len(text))
		bodyEnd = hdr.end
		last := -1
		for j := i + 1; j < len(lines); j++ {
			l := lines[j]
			if l.indent <= hdr.indent {
				if len(l.toks) > 0 {
					break
				}
				continue // a dedented comment inside or after the block
			}
			last = j
		}
		for j := i + 1; j <= last; j++ {
			if lines[j].indent > hdr.indent && len(lines[j].toks) > 0 {
				body.lines = append(body.lines, lines[j])
			}
			body.comments = append(body.comments, lines[j].comments...)
		}
		if last >= 0 {
			bodyEnd = len(strings.TrimRight(text[:lines[last].end], " \t\r"))
		}
	}
	fn := newFunc(text, name, start, bodyStart, bodyEnd, bodyEnd, sigEnd)
	fn.Stub = body.stub(text)
	return fn, true
}

// pyBody is a def's block: its code lines and every comment in it.
type pyBody struct {
	lines    []pyLine
	comments [][2]int
}

// stub applies the stub rule (stub.go). Placeholders are pass, ..., a docstring, raise and
// return of a literal; a body with a nested block (any line indented deeper than the
// first) is not a stub.
func (b pyBody) stub(text string) bool {
	var v stubVerdict
	for _, c := range b.comments {
		v.comments = true
		v.marker = v.marker || hasMarker(text[c[0]:c[1]])
	}
	for li, ln := range b.lines {
		if ln.indent != b.lines[0].indent {
			return false
		}
		for si, st := range splitStatements(text, ln.toks) {
			word := text[st[0].start:st[0].end]
			switch {
			case li == 0 && si == 0 && allKind(st, pyString):
				v.inherent = true // a docstring
				v.marker = v.marker || hasMarker(text[st[0].start:st[len(st)-1].end])
			case len(st) == 1 && (word == "pass" || word == "..."):
				v.inherent = true
			case word == "raise" && st[0].kind == pyName:
				for _, t := range st[1:] {
					if t.kind == pyName || t.kind == pyString {
						v.marker = v.marker || hasMarker(text[t.start:t.end])
					}
				}
			case word == "return" && st[0].kind == pyName:
				if !pyPlaceholderValue(text, st[1:]) {
					return false
				}
			default:
				return false
			}
			v.statements = true
		}
	}
	return v.stub()
}

// splitStatements splits a logical line at its top-level semicolons.
func splitStatements(text string, toks []pyTok) [][]pyTok {
	var out [][]pyTok
	depth, from := 0, 0
	for k, t := range toks {
		if t.kind != pyOp {
			continue
		}
		switch text[t.start] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ';':
			if depth == 0 {
				if k > from {
					out = append(out, toks[from:k])
				}
				from = k + 1
			}
		}
	}
	if from < len(toks) {
		out = append(out, toks[from:])
	}
	return out
}

func allKind(toks []pyTok, k pyKind) bool {
	for _, t := range toks {
		if t.kind != k {
			return false
		}
	}
	return len(toks) > 0
}

// pyPlaceholderValue accepts what a stub returns: nothing, a literal, None/True/False,
// NotImplemented, an empty [], {} or (), or a negative number.
func pyPlaceholderValue(text string, toks []pyTok) bool {
	switch len(toks) {
	case 0:
		return true
	case 1:
		t := toks[0]
		switch t.kind {
		case pyNumber, pyString:
			return true
		case pyName:
			switch text[t.start:t.end] {
			case "None", "True", "False", "NotImplemented":
				return true
			}
		}
	case 2:
		pair := text[toks[0].start:toks[0].end] + text[toks[1].start:toks[1].end]
		return pair == "[]" || pair == "{}" || pair == "()" || pair[0] == '-' && toks[1].kind == pyNumber
	}
	return allKind(toks, pyString) // implicitly concatenated literals
}

package source

// Skimming: finding where a function value, a type annotation or an expression ends
// without parsing it. Bracketed groups are skipped whole through f.match.

// fnValue reads a function value at token k: [async] function [*] [name] (...) {...},
// or an arrow function [async] [<T>] (...) [: T] => body, or [async] x => body.
func (f *jsFile) fnValue(k int) (jsFn, bool) {
	if f.ident(k, "async") && !f.punct(k+1, "=>") {
		k++ // "async => 1" is an arrow with a parameter named async
	}
	if f.ident(k, "function") {
		k++
		if f.punct(k, "*") {
			k++
		}
		if f.isIdent(k) {
			k++
		}
		k = f.skipGenerics(k)
		if g := f.group(k); f.punct(k, "(") && g > 0 {
			return f.bodyAfterParams(g, false)
		}
		return jsFn{}, false
	}
	k = f.skipGenerics(k)
	if g := f.group(k); f.punct(k, "(") && g > 0 {
		return f.bodyAfterParams(g, true)
	}
	if f.isIdent(k) && f.punct(k+1, "=>") {
		return f.arrowBody(k + 2)
	}
	return jsFn{}, false
}

// bodyAfterParams reads what follows a parameter list closing at close: for an arrow
// "[: T] => body", else "[: T] {".
func (f *jsFile) bodyAfterParams(close int, arrow bool) (jsFn, bool) {
	if close < 0 {
		return jsFn{}, false
	}
	k := close + 1
	if f.punct(k, ":") {
		k = f.skipType(k+1, arrow)
	}
	if arrow {
		if !f.punct(k, "=>") {
			return jsFn{}, false
		}
		return f.arrowBody(k + 1)
	}
	if g := f.group(k); f.punct(k, "{") && g > 0 {
		return jsFn{open: k, close: g}, true
	}
	return jsFn{}, false
}

func (f *jsFile) arrowBody(k int) (jsFn, bool) {
	if f.punct(k, "{") {
		if g := f.group(k); g > 0 {
			return jsFn{open: k, close: g}, true
		}
		return jsFn{}, false
	}
	if e := f.skipExpr(k); e > k {
		return jsFn{open: -1, close: -1, from: k, to: e}, true
	}
	return jsFn{}, false
}

// skipGenerics skips type parameters "<...>" at k, or returns k when there are none.
func (f *jsFile) skipGenerics(k int) int {
	if !f.punct(k, "<") {
		return k
	}
	depth := 0
	for j := k; j < len(f.toks); j++ {
		switch f.s(j) {
		case "<":
			depth++
		case ">":
			if depth--; depth == 0 {
				return j + 1
			}
		case "(", "[", "{":
			if f.group(j) < 0 {
				return k
			}
			j = f.group(j)
		case ";", ")", "]", "}":
			return k
		}
	}
	return k
}

// skipType returns the index of the token after a type annotation that starts at k. The
// type ends at a top-level ";", ",", "=", a closing bracket, a line break before what
// must be a new statement or member, or a "{" that cannot start an object type (a
// function's body). In an arrow's return type (arrow) it also ends at "=>", unless that
// "=>" belongs to a function type written as the whole annotation: (): () => T => body.
func (f *jsFile) skipType(k int, arrow bool) int {
	angle := 0
	for j := k; j < len(f.toks); j++ {
		t := f.toks[j]
		if j > k && t.nl && angle == 0 && f.endsOperand(j-1) && f.startsStatement(j) {
			return j
		}
		if t.kind != jsPunct {
			continue
		}
		switch s := f.s(j); s {
		case "<":
			angle++
		case ">":
			angle = max(0, angle-1)
		case "(", "[":
			if f.group(j) < 0 {
				return j
			}
			j = f.group(j)
		case "{":
			if j == k || angle > 0 || f.typeJoin(j-1) {
				if f.group(j) < 0 {
					return j
				}
				j = f.group(j)
				continue
			}
			return j
		case "=>":
			if arrow && angle == 0 && !(f.punct(j-1, ")") && f.match[j-1] == k) {
				return j
			}
		case ";", ",", "=", ")", "]", "}":
			if angle == 0 || s != "," {
				return j
			}
		}
	}
	return len(f.toks)
}

// typeJoin reports a token after which a "{" starts an object type.
func (f *jsFile) typeJoin(i int) bool {
	switch f.s(i) {
	case ":", "|", "&", "<", ",", "=>", "(", "[", "?":
		k, _ := f.kind(i)
		return k == jsPunct
	case "keyof", "typeof", "extends", "is", "infer", "readonly":
		return f.isIdent(i)
	}
	return false
}

// skipExpr returns the index of the token after an expression starting at k: it stops
// at a top-level ";" or "," or a closing bracket, and at a line break where automatic
// semicolon insertion ends the statement (an operand ends the line and one begins the
// next).
func (f *jsFile) skipExpr(k int) int {
	for j := k; j < len(f.toks); j++ {
		if j > k && f.toks[j].nl && f.endsOperand(j-1) && f.startsStatement(j) {
			return j
		}
		if f.toks[j].kind != jsPunct {
			continue
		}
		switch f.s(j) {
		case "(", "[", "{":
			if f.group(j) < 0 {
				return j
			}
			j = f.group(j)
		case ")", "]", "}", ";", ",":
			return j
		}
	}
	return len(f.toks)
}

// binaryWords are keywords that continue an expression on the next line.
var binaryWords = map[string]bool{
	"instanceof": true, "in": true, "of": true, "as": true, "satisfies": true,
	"extends": true, "implements": true, "is": true, "keyof": true,
}

func (f *jsFile) endsOperand(i int) bool {
	k, ok := f.kind(i)
	if !ok {
		return false
	}
	switch k {
	case jsIdent:
		return !binaryWords[f.s(i)] && !operandKeywords[f.s(i)]
	case jsPunct:
		switch f.s(i) {
		case ")", "]", "}", "++", "--", "!":
			return true
		}
		return false
	}
	return true
}

func (f *jsFile) startsStatement(i int) bool {
	k, ok := f.kind(i)
	if !ok {
		return false
	}
	switch k {
	case jsIdent:
		return !binaryWords[f.s(i)]
	case jsNum, jsStr, jsJSX:
		return true
	case jsPunct:
		return f.s(i) == "@"
	}
	return false
}

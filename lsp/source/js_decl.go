package source

// The declaration shapes jsFuncs recognises, one method each. Each is called at the token
// that identifies it and looks only forward, except for a name just before it.

// class records the methods of "class Name ... {": its heritage clause may hold type
// arguments and calls, so the body is the first "{" outside them.
func (f *jsFile) class(i int) {
	if f.punct(i+1, ":") || f.punct(i+1, ",") || f.punct(i+1, "=") || f.punct(i+1, "(") {
		return // a property named class
	}
	k := i + 1
	name := ""
	if f.isIdent(k) && !f.ident(k, "extends") && !f.ident(k, "implements") {
		name = f.s(k)
		k++
	} else if f.punct(i-1, "=") && f.isIdent(i-2) {
		name = f.s(i - 2) // const Name = class { ... }
	} else if f.ident(i-1, "default") {
		name = "default"
	}
	angle := 0
	for ; k < len(f.toks); k++ {
		switch f.s(k) {
		case "<":
			angle++
			continue
		case ">":
			angle--
			continue
		case ";", "}", ")":
			return
		case "(", "[":
			if f.group(k) < 0 {
				return
			}
			k = f.group(k)
			continue
		case "{":
			if angle > 0 && f.group(k) > 0 {
				k = f.group(k)
				continue
			}
		default:
			continue
		}
		break
	}
	if f.group(k) < 0 || !f.punct(k, "{") {
		return
	}
	f.classBody[k] = true
	f.members(k, name)
}

// classModifiers may precede a member's name; each may also be a name itself.
var classModifiers = map[string]bool{
	"static": true, "public": true, "private": true, "protected": true, "readonly": true,
	"abstract": true, "override": true, "declare": true, "async": true, "accessor": true,
	"get": true, "set": true,
}

// members walks a class body member by member: decorators, modifiers, a name, then a
// method's parameters and body, or a field's type and initializer.
func (f *jsFile) members(open int, cls string) {
	end := f.group(open)
	for j := open + 1; j < end; {
		from := j
		for f.punct(j, "@") { // decorators: @a.b(...)
			j++
			for f.isIdent(j) && f.punct(j+1, ".") {
				j += 2
			}
			if f.isIdent(j) {
				j++
			}
			if g := f.group(j); f.punct(j, "(") && g > 0 {
				j = g + 1
			}
		}
		if f.ident(j, "static") && f.punct(j+1, "{") && f.group(j+1) > 0 {
			j = f.group(j+1) + 1 // static initialization block
			continue
		}
		start := j
		for f.isIdent(j) && classModifiers[f.s(j)] && !f.nameEnds(j+1) {
			j++
		}
		if f.punct(j, "*") {
			j++
		}
		name, next := f.memberName(j)
		if next < 0 {
			j = max(j, from) + 1
			continue
		}
		j = next
		if f.punct(j, "?") || f.punct(j, "!") {
			j++
		}
		j = f.skipGenerics(j)
		switch {
		case f.punct(j, "(") && f.group(j) > 0:
			if fn, ok := f.bodyAfterParams(f.group(j), false); ok {
				f.record(cls+"."+name, start, fn, fn.close)
				j = fn.close + 1
				continue
			}
			j = f.group(j) + 1 // an overload or abstract method: a signature only
			if f.punct(j, ":") {
				j = f.skipType(j+1, false)
			}
		case f.punct(j, ":") || f.punct(j, "="):
			if f.punct(j, ":") {
				j = f.skipType(j+1, false)
			}
			if f.punct(j, "=") {
				if fn, ok := f.fnValue(j + 1); ok {
					f.record(cls+"."+name, start, fn, fn.last())
					j = fn.last() + 1
					continue
				}
				j = f.skipExpr(j + 1)
			}
		}
		if j <= from {
			j = from + 1
		}
	}
}

// nameEnds reports a token that can follow a member's name, which makes a modifier-like
// word before it ("get", "static") the name itself.
func (f *jsFile) nameEnds(i int) bool {
	if i >= len(f.toks) {
		return true
	}
	if f.toks[i].kind != jsPunct {
		return false
	}
	switch f.s(i) {
	case "(", "=", ":", ";", "?", "!", "<", "}", "{", ",":
		return true
	}
	return false
}

// memberName reads a property name: identifier, #private, string, number or [computed].
func (f *jsFile) memberName(j int) (string, int) {
	k, ok := f.kind(j)
	if !ok {
		return "", -1
	}
	switch k {
	case jsIdent, jsNum:
		return f.s(j), j + 1
	case jsStr:
		return jsUnquote(f.s(j)), j + 1
	case jsPunct:
		if g := f.group(j); f.punct(j, "[") && g > 0 {
			return f.text[f.toks[j].start:f.toks[g].end], g + 1
		}
	}
	return "", -1
}

// functionKeyword records "function name(...) {...}", or an anonymous function expression
// whose name comes from "name = function" or "export default function".
func (f *jsFile) functionKeyword(i int) {
	start := i
	if f.ident(i-1, "async") {
		start = i - 1
	}
	k := i + 1
	if f.punct(k, "*") {
		k++
	}
	var name string
	switch {
	case f.isIdent(k):
		name = f.s(k)
		k++
		for f.ident(start-1, "export") || f.ident(start-1, "default") || f.ident(start-1, "declare") {
			start--
		}
	case f.ident(start-1, "default") && f.ident(start-2, "export"):
		name, start = "default", start-2
	case f.punct(start-1, "=") && f.isIdent(start-2) && !f.punct(start-3, "."):
		name, start = f.s(start-2), start-2
	default:
		return // a callback
	}
	k = f.skipGenerics(k)
	if g := f.group(k); f.punct(k, "(") && g > 0 {
		if fn, ok := f.bodyAfterParams(g, false); ok {
			f.record(name, start, fn, fn.close)
		}
	}
}

// varDecl records "const name[: T] = <function value>" (also let, var, export).
func (f *jsFile) varDecl(i int) {
	k := i + 1
	if !f.isIdent(k) {
		return // destructuring
	}
	name := f.s(k)
	k++
	if f.punct(k, "!") {
		k++
	}
	if f.punct(k, ":") {
		k = f.skipType(k+1, false)
	}
	if !f.punct(k, "=") {
		return
	}
	fn, ok := f.fnValue(k + 1)
	if !ok {
		return
	}
	start := i
	for f.ident(start-1, "export") || f.ident(start-1, "declare") {
		start--
	}
	f.record(name, start, fn, fn.last())
}

// objectMethod records the shorthand method "name(...) {...}" of an object literal; i is
// its "(".
func (f *jsFile) objectMethod(i int) {
	p := f.parent[i]
	if p < 0 || !f.punct(p, "{") || f.classBody[p] {
		return
	}
	name, nameTok := f.nameBefore(i)
	if nameTok < 0 || jsNotNames[name] {
		return
	}
	start, b := nameTok, nameTok-1
	for f.ident(b, "async") || f.ident(b, "get") || f.ident(b, "set") || f.punct(b, "*") {
		start, b = b, b-1
	}
	if b != p && !f.punct(b, ",") {
		return
	}
	if fn, ok := f.bodyAfterParams(f.group(i), false); ok && f.group(i) > 0 {
		f.record(f.objectName(p, name), start, fn, fn.close)
	}
}

// objectProperty records "name: <function value>" in an object literal; i is the ":".
func (f *jsFile) objectProperty(i int) {
	p := f.parent[i]
	if p < 0 || !f.punct(p, "{") || !f.objectBrace(p) {
		return
	}
	name, nameTok := f.nameBefore(i)
	if nameTok < 0 || (nameTok-1 != p && !f.punct(nameTok-1, ",")) {
		return
	}
	if fn, ok := f.fnValue(i + 1); ok {
		f.record(f.objectName(p, name), nameTok, fn, fn.last())
	}
}

// jsNotNames are the keywords that put parentheses before a block.
var jsNotNames = map[string]bool{
	"if": true, "for": true, "while": true, "switch": true, "catch": true, "with": true,
	"function": true, "return": true, "typeof": true, "await": true, "yield": true, "new": true,
}

// nameBefore reads the property name that ends just before token i.
func (f *jsFile) nameBefore(i int) (string, int) {
	n := i - 1
	if f.punct(n, "]") && f.match[n] >= 0 {
		m := f.match[n]
		return f.text[f.toks[m].start:f.toks[n].end], m
	}
	k, ok := f.kind(n)
	if !ok {
		return "", -1
	}
	switch k {
	case jsIdent, jsNum:
		return f.s(n), n
	case jsStr:
		return jsUnquote(f.s(n)), n
	}
	return "", -1
}

// objectBrace reports whether the "{" at p opens an object literal (not a block, a class
// body or a type): it follows "=", "(", ",", "return" and the like, or it is the value of
// a property of another object literal.
func (f *jsFile) objectBrace(p int) bool {
	b := p - 1
	if f.punct(b, ":") {
		q := f.parent[b]
		return q >= 0 && f.punct(q, "{") && q != p && f.objectBrace(q)
	}
	if f.punct(b, "=") && f.isIdent(b-1) && f.ident(b-2, "type") {
		return false
	}
	k, ok := f.kind(b)
	if !ok {
		return false
	}
	switch f.s(b) {
	case "=", "(", ",", "[", "?", "||", "&&", "??", "...":
		return k == jsPunct
	case "return", "default", "yield", "await":
		return k == jsIdent
	}
	return false
}

// objectName qualifies a property by the variable holding its object: "api.get".
func (f *jsFile) objectName(p int, name string) string {
	if f.punct(p-1, "=") && f.isIdent(p-2) && !f.punct(p-3, ".") {
		return f.s(p-2) + "." + name
	}
	return name
}

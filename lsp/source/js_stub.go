package source

// stub applies the stub rule (stub.go) to the block between the braces at open and
// close. Placeholders are throw statements and returns of a literal (with an optional
// TypeScript "as T" or "!").
func (f *jsFile) stub(open, close int) bool {
	var v stubVerdict
	lo, hi := f.toks[open].end, f.toks[close].start
	for _, c := range f.comments {
		if c[0] >= lo && c[1] <= hi {
			v.comments = true
			v.marker = v.marker || hasMarker(f.text[c[0]:c[1]])
		}
	}
	for j := open + 1; j < close; {
		var e int
		switch {
		case f.punct(j, ";"):
			j++
			continue
		case f.ident(j, "throw"):
			e = min(f.skipExpr(j+1), close)
		case f.ident(j, "return"):
			e = j + 1
			if e < close && !f.toks[e].nl && !f.punct(e, ";") {
				e = min(f.skipExpr(j+1), close)
				if !f.placeholderValue(j+1, e) {
					return false
				}
			}
		default:
			return false
		}
		for k := j + 1; k < e; k++ {
			if kd := f.toks[k].kind; kd == jsStr || kd == jsTmpl || kd == jsIdent {
				v.marker = v.marker || hasMarker(f.s(k))
			}
		}
		v.statements = true
		j = max(e, j+1)
	}
	return v.stub()
}

func (f *jsFile) placeholderValue(from, to int) bool {
	for k := from + 1; k < to; k++ { // drop "as T", "satisfies T" and "!"
		if f.ident(k, "as") || f.ident(k, "satisfies") || f.punct(k, "!") && k == to-1 {
			to = k
			break
		}
	}
	switch to - from {
	case 1:
		kd, _ := f.kind(from)
		switch kd {
		case jsNum, jsStr, jsTmpl:
			return true
		case jsIdent:
			switch f.s(from) {
			case "null", "undefined", "true", "false", "NaN":
				return true
			}
			return hasMarker(f.s(from))
		}
	case 2:
		pair := f.s(from) + f.s(from+1)
		if pair == "[]" || pair == "{}" {
			return true
		}
		kd, _ := f.kind(from + 1)
		return f.punct(from, "-") && kd == jsNum
	}
	return false
}

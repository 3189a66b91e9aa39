package source

import "github.com/frognano/frognano/internal/syntax"

// jsStub applies the stub rule (stub.go) to a block. Placeholders are throw statements
// and returns of a literal (with an optional TypeScript "as T", "satisfies T" or "!").
func jsStub(block syntax.Node) bool {
	var v stubVerdict
	for _, st := range block.NamedChildren() {
		switch st.Kind() {
		case "comment":
			v.comments = true
			v.marker = v.marker || hasMarker(st.Text())
			continue
		case "empty_statement":
			continue
		case "throw_statement":
			v.marker = v.marker || hasMarker(st.Text())
		case "return_statement":
			var value syntax.Node
			for _, c := range st.NamedChildren() {
				if c.Kind() != "comment" {
					value = c
					break
				}
			}
			if value.Valid() && !jsPlaceholderValue(value) {
				return false
			}
			v.marker = v.marker || value.Valid() && hasMarker(value.Text())
		default:
			return false
		}
		v.statements = true
	}
	return v.stub()
}

func jsPlaceholderValue(n syntax.Node) bool {
	switch n.Kind() {
	case "as_expression", "satisfies_expression", "non_null_expression":
		return jsPlaceholderValue(n.NamedChild(0))
	case "number", "string", "template_string", "null", "undefined", "true", "false":
		return true
	case "identifier":
		return n.Text() == "NaN" || n.Text() == "undefined" || hasMarker(n.Text())
	case "array", "object":
		return n.NamedChildCount() == 0
	case "unary_expression":
		return n.Field("operator").Kind() == "-" && n.Field("argument").Kind() == "number"
	}
	return false
}

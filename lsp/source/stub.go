package source

import "regexp"

// The stub rule, shared by all languages so that "Implement" appears for the same shapes
// everywhere. A body is a stub when every statement in it is a placeholder (a panic, raise
// or throw; a return of a literal or zero value; Python's pass, ... and a docstring) and
// one of these holds:
//   - it has no statements and no comments (an empty body);
//   - a marker appears in one of its comments or in a placeholder's strings or names
//     (panic("not implemented"), raise NotImplementedError, // TODO: implement);
//   - the language itself says "nothing here" (Python's pass, ... or docstring only).
//
// So panic("unreachable") or "return 0" alone are not stubs, "return 0 // TODO" is,
// and a comment-only body needs a marker.

// stubMarker matches the words that mark unfinished code, case-insensitively, in comments,
// messages and identifiers (ErrNotImplemented, NotImplementedError, not_implemented).
var stubMarker = regexp.MustCompile(`(?i)\btodo\b|\bfixme\b|not[\s_-]*(yet[\s_-]*)?implemented|unimplemented|implement[\s_-]*me\b`)

// stubVerdict gathers what a language's body walk saw.
type stubVerdict struct {
	statements bool // at least one placeholder statement
	comments   bool // at least one comment in the body
	marker     bool // a marker word in a comment or a placeholder
	inherent   bool // a language-level "nothing here" (pass, ..., docstring)
}

func (v stubVerdict) stub() bool {
	return (!v.statements && !v.comments) || v.marker || v.inherent
}

func hasMarker(s string) bool { return stubMarker.MatchString(s) }

package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// The diff, the answer and file names printed by `frognano agent` are the model's text. On
// a terminal, escape sequences in them could move the cursor and erase lines, hiding part
// of a change from the person who is about to --apply it; there they are shown as visible
// \xNN escapes instead. Piped output (to `git apply`, say) stays byte for byte.

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// visible writes s to w with control characters other than tab and newline escaped when w
// is a terminal.
func visible(w io.Writer, s string) string {
	if !isTerminal(w) {
		return s
	}
	return escapeControls(s)
}

// escapeControls replaces control characters other than tab and newline (C0, DEL, and C1,
// which some terminals obey too, as characters or as single bytes) with \xNN or \uNNNN.
func escapeControls(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i]) // a byte that is not UTF-8
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

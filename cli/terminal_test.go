package cli

import (
	"bytes"
	"os"
	"testing"
)

func TestEscapeControls(t *testing.T) {
	in := "+ok\tline\n+\x1b[1A\x1b[2Khidden\r\x9bX\x7f\u009b"
	want := "+ok\tline\n+\\x1b[1A\\x1b[2Khidden\\x0d\\x9bX\\x7f\\u009b"
	if got := escapeControls(in); got != want {
		t.Errorf("escapeControls = %q, want %q", got, want)
	}
	// Not a terminal: byte for byte, so the diff can be piped to git apply.
	var buf bytes.Buffer
	if got := visible(&buf, in); got != in {
		t.Errorf("visible on a pipe changed the text: %q", got)
	}
	tty, err := os.Open("/dev/tty")
	if err == nil {
		defer tty.Close()
		if got := visible(tty, in); got != want {
			t.Errorf("visible on a terminal = %q", got)
		}
	}
}

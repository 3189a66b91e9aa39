package cli

import (
	"bytes"
	"os"
	"testing"

	"github.com/frognano/frognano/agent/workspace"
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

func TestToolSettings(t *testing.T) {
	c := &workspace.Changes{Files: []workspace.FileChange{{Path: "main.go"}, {Path: ".vscode/settings.json"}, {Path: ".envrc"}, {Path: "a/.vscode/x"}}}
	if got := toolSettings(c); len(got) != 2 || got[0] != ".vscode/settings.json" || got[1] != ".envrc" {
		t.Errorf("toolSettings = %v", got)
	}
}

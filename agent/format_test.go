package agent

import (
	"strings"
	"testing"

	"github.com/frognano/frognano/agent/sandbox"
)

// A command killed for flooding its output says so: a bare "Exit code: 137" leaves the
// model guessing.
func TestFormatBashSaysWhyItWasKilled(t *testing.T) {
	out := formatBash(sandbox.Output{ExitCode: 137, Flooded: true, Stdout: "y\ny\n"})
	if !strings.Contains(out, "killed: it printed more than 64 MiB") {
		t.Errorf("flooded: %q", out)
	}
	if out := formatBash(sandbox.Output{ExitCode: 124, TimedOut: true, ProcessCap: true}); !strings.Contains(out, "reached the cap on processes") {
		t.Errorf("process cap: %q", out)
	}
	if out := formatBash(sandbox.Output{ExitCode: 0, Stdout: "ok\n"}); strings.Contains(out, "killed") || strings.Contains(out, "cap") {
		t.Errorf("a normal command: %q", out)
	}
}

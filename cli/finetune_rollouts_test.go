package cli

import (
	"strings"
	"testing"
)

// TestFinetuneRolloutsSaysWhatIsMissing: no model, or no tasks, is told in words that say
// what to do, before any episode runs.
func TestFinetuneRolloutsSaysWhatIsMissing(t *testing.T) {
	if out, _, code := frognano(t, nil, "finetune", "rollouts", "--help"); code != exitOK || !strings.Contains(out, "-g int") {
		t.Errorf("--help: code %d, %q", code, out)
	}
	if _, errOut, code := frognano(t, nil, "finetune", "rollouts", "--repo", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "--model") {
		t.Errorf("no model: code %d, %q", code, errOut)
	}
	_, errOut, code := frognano(t, map[string]string{"FROGNANO_MODEL": "m"}, "finetune", "rollouts", "--repo", t.TempDir(), "--store", t.TempDir())
	if code != exitFailed || !strings.Contains(errOut, "frognano finetune synth") {
		t.Errorf("no tasks: code %d, %q", code, errOut)
	}
}

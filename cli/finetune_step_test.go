package cli

import (
	"strings"
	"testing"
)

// TestFinetuneStepUsage: the step refuses to start without what the trainer needs, and
// says what to pass (its iteration itself is finetune/loop's end-to-end test).
func TestFinetuneStepUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"finetune", "step", "--repo", t.TempDir()}, "--model NAME"},
		{[]string{"finetune", "step", "--repo", t.TempDir(), "--model", "m"}, "--weights DIR"},
		{[]string{"finetune", "step", "--repo", t.TempDir(), "--model", "m", "--weights", "/nonexistent/w"}, "--weights: stat /nonexistent/w"},
	} {
		if _, errOut, code := frognano(t, nil, c.args...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: code %d, %q; want usage error naming %q", c.args, code, errOut, c.want)
		}
	}
}

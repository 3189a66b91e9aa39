package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/report"
)

// TestFinetuneReportNotStarted: on a repository never fine-tuned the report is a page that
// says how to start, its path printed, and --json a Summary with started false.
func TestFinetuneReportNotStarted(t *testing.T) {
	env := map[string]string{"FROGNANO_CACHE": t.TempDir()}
	t.Setenv("FROGNANO_CACHE", env["FROGNANO_CACHE"])
	repo, out := t.TempDir(), t.TempDir()
	stdout, errOut, code := frognano(t, env, "finetune", "report", "--repo", repo, "--out", out)
	if code != exitOK || strings.TrimSpace(stdout) != filepath.Join(out, report.Index) || !strings.Contains(errOut, "frognano finetune step") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, errOut)
	}
	page, err := os.ReadFile(filepath.Join(out, report.Index))
	if err != nil || !strings.Contains(string(page), "has not run on this repository yet") {
		t.Fatalf("page: %v\n%s", err, page)
	}
	stdout, _, code = frognano(t, env, "finetune", "report", "--repo", repo, "--json")
	var s report.Summary
	if err := json.Unmarshal([]byte(stdout), &s); code != exitOK || err != nil || s.Started {
		t.Fatalf("--json: code %d, %v: %s", code, err, stdout)
	}
}

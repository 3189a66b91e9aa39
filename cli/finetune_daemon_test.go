package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/finetune/daemon"
)

// TestFinetuneDaemonCommands: start refuses what step refuses and a bad schedule, before
// detaching anything; status and stop of a repository never started say so. (The daemon
// itself, killed and restarted, is finetune/daemon's TestKill9.)
func TestFinetuneDaemonCommands(t *testing.T) {
	t.Setenv("FROGNANO_CACHE", t.TempDir())
	repo := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"finetune", "start", "--repo", repo}, "--model NAME"},
		{[]string{"finetune", "start", "--repo", repo, "--model", "m", "--weights", repo, "--hours", "7-7"}, "--hours \"7-7\": the window is empty"},
	} {
		if _, errOut, code := frognano(t, nil, c.args...); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: code %d, %q; want usage error naming %q", c.args, code, errOut, c.want)
		}
	}
	if _, err := daemon.LoadConfig(daemon.Dir(repo)); err == nil {
		t.Error("a refused start saved its settings")
	}
	out, _, code := frognano(t, nil, "finetune", "status", "--repo", repo)
	if code != exitOK || !strings.Contains(out, "not running, never started") || !strings.Contains(out, "no iteration yet") {
		t.Errorf("status: %d %q", code, out)
	}
	out, _, code = frognano(t, nil, "finetune", "status", "--repo", repo, "--json")
	var o daemon.Overview
	if err := json.Unmarshal([]byte(out), &o); code != exitOK || err != nil || o.Running || o.Repo == "" || len(o.Problems) > 0 {
		t.Errorf("status --json: %d %q %v", code, out, err)
	}
	if out, _, code := frognano(t, nil, "finetune", "stop", "--repo", repo); code != exitOK || !strings.Contains(out, "is not running") {
		t.Errorf("stop: %d %q", code, out)
	}
}

// TestWithSaved: a start reuses the saved settings, and flags given now win.
func TestWithSaved(t *testing.T) {
	fs := newFlags(Env{Getenv: func(string) string { return "" }}, "finetune start", "", "")
	s := addStepFlags(fs, Env{Getenv: func(string) string { return "" }})
	ds := addDaemonFlags(fs)
	if err := fs.Parse([]string{"--g", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := withSaved(fs, map[string]string{"g": "8", "model": "m", "hours": "22-7", "pause": "5m0s", "gone": "x"}); err != nil {
		t.Fatal(err)
	}
	if *s.g != 4 || *s.model != "m" || *ds.hours != "22-7" || *ds.pause != 5*time.Minute {
		t.Fatalf("g %d model %q hours %q pause %v", *s.g, *s.model, *ds.hours, *ds.pause)
	}
	if err := withSaved(fs, map[string]string{"target": "many"}); err == nil || !strings.Contains(err.Error(), "give --target again") {
		t.Fatalf("a bad saved value: %v", err)
	}
}

func TestBar(t *testing.T) {
	for f, want := range map[float64]string{0: "[----]", 0.5: "[##--]", 1: "[####]", 1.7: "[####]", -1: "[----]"} {
		if got := bar(f, 4); got != want {
			t.Errorf("bar(%v) = %q, want %q", f, got, want)
		}
	}
}

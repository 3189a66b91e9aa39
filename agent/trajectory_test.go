package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestTrajectoryNames: runs that start in the same second get files of their own, and a
// named trajectory that exists is never overwritten.
func TestTrajectoryNames(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	a, err := openTrajectory("", dir, start)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := openTrajectory("", dir, start)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	if a.path == b.path || !strings.HasPrefix(filepath.Base(a.path), "20261201-050000-") {
		t.Errorf("two runs in the same second: %s and %s", a.path, b.path)
	}
	a.write(map[string]int{"a": 1})
	if _, err := openTrajectory(a.path, "", start); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("an existing trajectory was opened again: %v", err)
	}
	if got, _ := os.ReadFile(a.path); string(got) != "{\"a\":1}\n" {
		t.Errorf("the existing trajectory changed: %q", got)
	}
}

// TestLogprobsOfAnEmptyReply: with logprobs asked for, a reply with no token but the end of
// turn is recorded with an empty list, not with none. Fine-tuning drops a turn recorded
// without logprobs (it cannot be made token-exact), and it dropped such a reply's episode:
// omitempty wrote the empty list as no list at all.
func TestLogprobsOfAnEmptyReply(t *testing.T) {
	srv := ollamatest.Shared(t)
	srv.Scripted("silent", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: ""}}})
	steps := func(logprobs bool) []string {
		traj := filepath.Join(t.TempDir(), "t.jsonl")
		res, err := Run(context.Background(), srv.Client, Task{Dir: t.TempDir(), Instruction: "x"}, Options{
			Model: "silent", NumCtx: 8192, Logprobs: logprobs, Trajectory: traj})
		if err != nil {
			t.Fatal(err)
		}
		if res.TrajectoryError != "" {
			t.Fatal(res.TrajectoryError)
		}
		b, err := os.ReadFile(traj)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"type":"step"`) {
				out = append(out, line)
			}
		}
		if len(out) == 0 {
			t.Fatalf("no step recorded:\n%s", b)
		}
		return out
	}
	for _, line := range steps(true) {
		if !strings.Contains(line, `"logprobs":[`) {
			t.Errorf("logprobs asked for, a step recorded without them: %s", line)
		}
	}
	for _, line := range steps(false) {
		if strings.Contains(line, `"logprobs"`) {
			t.Errorf("logprobs not asked for, a step recorded with them: %s", line)
		}
	}
}

// TestTrajectoryWriteFails: a trajectory that cannot be written (a full disk: /dev/full)
// is told to the user as it happens and in the result, and the episode still ends normally.
func TestTrajectoryWriteFails(t *testing.T) {
	// Not parallel: it replaces createTrajectory for the whole package.
	srv := ollamatest.Shared(t)
	srv.Scripted("full", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: "done"}}})
	old := createTrajectory
	createTrajectory = func(string) (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }
	defer func() { createTrajectory = old }()
	var notices []string
	res, err := Run(context.Background(), srv.Client, Task{Dir: t.TempDir(), Instruction: "x"}, Options{
		Model: "full", NumCtx: 8192, Trajectory: filepath.Join(t.TempDir(), "t.jsonl"),
		OnEvent: func(ev Event) {
			if ev.Kind == EventNotice {
				notices = append(notices, ev.Text)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != ExitDone {
		t.Errorf("exit %s: %s", res.Exit, res.Error)
	}
	if !strings.Contains(res.TrajectoryError, "no space left") || !strings.Contains(res.TrajectoryError, "do not train on it") {
		t.Errorf("result does not say the trajectory failed: %q", res.TrajectoryError)
	}
	n := 0
	for _, s := range notices {
		if strings.Contains(s, "Writing the trajectory") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("want one notice of the failed trajectory, got %q", notices)
	}
}

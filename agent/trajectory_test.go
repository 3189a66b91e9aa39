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

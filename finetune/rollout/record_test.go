package rollout

import (
	"testing"
)

// TestSummaryLeavesErrorsOut: a failed episode is a null reward and an error in the
// summary, never a 0 in the mean or in whether the rewards vary; a group with a missing
// record has no summary yet.
func TestSummaryLeavesErrorsOut(t *testing.T) {
	out := t.TempDir()
	one, zero := 1.0, 0.0
	put := func(i int, reward *float64, errText string) {
		t.Helper()
		r := &Record{Version: RecordVersion, Task: "t1", Episode: i, Model: "m", Reward: reward, Error: errText}
		if err := writeJSON(recordPath(out, "t1", i), r); err != nil {
			t.Fatal(err)
		}
	}
	put(0, &one, "")
	put(2, &one, "")
	if s, err := summarize(out, "t1", "m", 3); s != nil || err != nil {
		t.Fatalf("a group missing episode 1 was summarized: %+v, %v", s, err)
	}
	put(1, nil, "the episode failed (llm_error): connection refused")
	s, err := summarize(out, "t1", "m", 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Errors != 1 || s.Rewards[1] != nil || s.Mean != 1 || s.Varied {
		t.Fatalf("errors %d, rewards %v, mean %v, varied %v: the failed episode counted as a reward", s.Errors, s.Rewards, s.Mean, s.Varied)
	}
	put(2, &zero, "")
	if s, _ = summarize(out, "t1", "m", 3); s.Mean != 0.5 || !s.Varied {
		t.Fatalf("rewards 1 and 0: mean %v, varied %v", s.Mean, s.Varied)
	}
	if got, err := ReadSummary(out, "t1"); err != nil || got.Mean != 0.5 {
		t.Fatalf("group.json: %+v, %v", got, err)
	}
}

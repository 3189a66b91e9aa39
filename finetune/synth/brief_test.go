package synth

import "testing"

func TestBrief(t *testing.T) {
	t.Parallel()
	s := &Summary{Commit: "0123456789abcdef", Candidates: map[string]int{SynthMutation: 5, SynthCombined: 2}, Valid: 1,
		Rejected: map[string]int{"timeout": 2, "no_failing_test": 4}, Notes: []string{"a go.work below the top is not used"}}
	s.Tests.Passing, s.Tests.Hung = 3, 1
	want := "tests at 0123456789ab: 3 passing, 0 failing, 0 flaky, 1 hung; 7 candidates, 1 valid; " +
		"rejected: no_failing_test 4, timeout 2; a go.work below the top is not used"
	if got := s.Brief(); got != want {
		t.Errorf("Brief:\n got %s\nwant %s", got, want)
	}
}

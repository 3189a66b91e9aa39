package loop

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/frognano/frognano/finetune/frontier"
)

// TestParameters: Show's parameter text becomes Create's map again, so that the candidate
// is served with the sampling and stop tokens of the model it was trained from.
func TestParameters(t *testing.T) {
	got := parameters("stop \"<|im_end|>\"\nstop \"<|endoftext|>\"\nnum_ctx 8192\ntemperature 0.6\npenalize_newline false\n")
	want := map[string]any{"stop": []string{"<|im_end|>", "<|endoftext|>"}, "num_ctx": 8192.0, "temperature": 0.6, "penalize_newline": false}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parameters: %#v, want %#v", got, want)
	}
	if parameters("") != nil {
		t.Fatal("no parameters: want nil (the export's own)")
	}
}

// TestStateRoundTrip: the state file is read back as written, and a file of another
// version or without a frontier is refused rather than half understood.
func TestStateRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "loop.json")
	s := &State{Version: Version, Repo: "/r", Base: "b", Iteration: 3, Phase: PhaseTrain, Tasks: []string{"a"}, Frontier: frontier.New(frontier.Config{})}
	if err := s.save(p); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil || got.Phase != PhaseTrain || got.Iteration != 3 || len(got.Tasks) != 1 {
		t.Fatalf("Load: %+v, %v", got, err)
	}
	for _, bad := range []string{`{"version":2,"frontier":{}}`, `{"version":1}`, `{`} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%s): %v, want an error naming the file", bad, err)
		}
	}
}

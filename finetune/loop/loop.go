// Package loop runs one iteration of online fine-tuning as a resumable state machine:
// the core that the daemon runs again and again. Entry point: Step.
//
// An iteration goes through these phases, each recorded in one versioned JSON state file
// (written atomically) before the next begins:
//
//	synth     top up the task store (finetune/synth), steered by the frontier's controller
//	rollouts  run groups of the chosen training tasks on the model in use (finetune/rollout)
//	observe   give the groups' rewards to the frontier (finetune/frontier)
//	train     GRPO on the groups whose rewards differ (finetune/trainer), merged export
//	import    the export into Ollama under the registry's name for (repo, step)
//	gate      candidate and model in use on the held-out tasks, the gate's rule (finetune/gate)
//	done      the registry switched (accepted) or kept the candidate for inspection
//
// A process killed at any point and started again resumes the iteration where it stopped:
// the frontier lives inside the state file, so its evidence is updated in the same write
// that records the phase as done (never twice); rollouts resume from their output folders
// (rollout.Run skips episodes with a record); a killed training is redone from its start
// (its export is written only once it is whole); the Ollama model is made once through the
// registry (Registry.Import reconciles a crash between making and recording); judging is
// idempotent in the registry.
package loop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/frognano/frognano/finetune/frontier"
	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/internal/atomicfile"
)

// Version of the State's JSON form.
const Version = 1

// Phase is where an iteration stands: the next thing to do.
type Phase string

// The phases, in order.
const (
	PhaseSynth    Phase = "synth"
	PhaseRollouts Phase = "rollouts"
	PhaseObserve  Phase = "observe"
	PhaseTrain    Phase = "train"
	PhaseImport   Phase = "import"
	PhaseGate     Phase = "gate"
	PhaseDone     Phase = "done"
)

// Phases lists the phases in order, for a progress display.
var Phases = []Phase{PhaseSynth, PhaseRollouts, PhaseObserve, PhaseTrain, PhaseImport, PhaseGate, PhaseDone}

// State is the loop's file, <Dir>/loop.json:
//
//	{"version":1, "repo", "base", "iteration":N, "phase":"…", "serving":"model the rollouts ran on",
//	 "tasks":[…], "held_out":[…], "trained":{…}, "export":"dir", "model":"ollama name",
//	 "verdict":{…}, "outcome":"…", "frontier":{…}, "history":[{…}]}
type State struct {
	Version   int    `json:"version"`
	Repo      string `json:"repo"`
	Base      string `json:"base"`
	Iteration int    `json:"iteration"` // the registry's step of the model it makes
	Phase     Phase  `json:"phase"`
	// Serving is the model in use when the iteration began: its rollouts and the gate's
	// comparison run on it.
	Serving string `json:"serving,omitempty"`
	// Tasks are the training tasks chosen for this iteration's rollouts; HeldOut the gate's.
	Tasks   []string `json:"tasks,omitempty"`
	HeldOut []string `json:"held_out,omitempty"`
	// Trained says what the train phase did (nil before it).
	Trained *Trained `json:"trained,omitempty"`
	// Export is the merged model folder the train phase wrote.
	Export string `json:"export,omitempty"`
	// Model is the candidate's Ollama name, once imported.
	Model    string          `json:"model,omitempty"`
	Verdict  *gate.Verdict   `json:"verdict,omitempty"`
	Outcome  string          `json:"outcome,omitempty"` // in words, once done
	Frontier *frontier.State `json:"frontier"`
	// History is one line per finished iteration, oldest first.
	History []Summary `json:"history,omitempty"`
}

// Trained is the train phase's outcome.
type Trained struct {
	Groups   int      `json:"groups"`   // groups trained on
	Rollouts int      `json:"rollouts"` // sequences
	Dropped  []string `json:"dropped,omitempty"`
	Steps    int      `json:"steps"`
	Loss     *float64 `json:"loss,omitempty"`
	// Seconds is the trainer's wall clock, from its start to the export written: loading the
	// weights, building the rollouts, the update and the merge (on the GPU when there is
	// one). Absent in states written before it was recorded.
	Seconds float64 `json:"seconds,omitempty"`
}

// Summary is a finished iteration.
type Summary struct {
	Iteration  int     `json:"iteration"`
	Serving    string  `json:"serving"`
	Model      string  `json:"model,omitempty"`
	Accepted   bool    `json:"accepted"`
	Outcome    string  `json:"outcome"`
	MeanReward float64 `json:"mean_reward"`
	// Trained is the train phase's outcome (nil when no group's rewards differed, and in
	// states written before it was kept here); Verdict the gate's (nil when no model was
	// made). The registry forgets the verdicts of the models it prunes; the report keeps
	// them here.
	Trained *Trained      `json:"trained,omitempty"`
	Verdict *gate.Verdict `json:"verdict,omitempty"`
}

// Load reads a state file; a missing file is an error satisfying errors.Is(err,
// fs.ErrNotExist).
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("loop state %s: %w (remove it to start the loop afresh: the task store, the rollouts and the models stay; the pass-rate estimates of the tasks start again)", path, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("loop state %s: version %d, this frognano reads %d (remove it to start the loop afresh: the task store, the rollouts and the models stay; the pass-rate estimates of the tasks start again)", path, s.Version, Version)
	}
	if s.Frontier == nil {
		return nil, fmt.Errorf("loop state %s: no frontier", path)
	}
	return &s, nil
}

// save writes the state atomically: a crash leaves the old file or the new one.
func (s *State) save(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

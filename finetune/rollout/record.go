package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/withhold"
	"github.com/frognano/frognano/internal/atomicfile"
)

// RecordVersion is the version of the episode records and group summaries [Run] writes.
const RecordVersion = 1

// Record is one finished episode, written atomically to <out>/<task id>/<episode>.json
// once its trajectory is closed and its reward known: a record that exists is whole, and
// its trajectory complete.
type Record struct {
	Version int    `json:"version"`
	Task    string `json:"task"`
	Episode int    `json:"episode"` // 0 … G-1 within the task's group
	Model   string `json:"model"`
	Host    string `json:"host"` // the Ollama server it ran on
	// Trajectory is the agent's JSON Lines file, relative to the output folder; empty when
	// the episode failed before it began.
	Trajectory string     `json:"trajectory"`
	Exit       agent.Exit `json:"exit,omitempty"`
	Steps      int        `json:"steps"`
	// Reward is the scorer's, null when Error is set: such an episode says nothing about
	// the model (Ollama died, the sandbox failed, the trajectory could not be written) and
	// must not be trained on, where a reward of 0 would teach it that its work was wrong.
	Reward *float64 `json:"reward"`
	Reason string   `json:"reason,omitempty"` // the scorer's words on the reward
	// Scoring is the scorer's details (finetune/reward's Result: the hidden tests passed
	// and failed, the changes left out, its timings).
	Scoring json.RawMessage `json:"scoring,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Withheld are the task's failing tests taken out of the agent's copy, and those that
	// could not be (Kept: the agent could read what they assert), and the declarations
	// they used that stay for other tests (Shared: what those hold stays readable).
	Withheld *withhold.Result `json:"withheld,omitempty"`
	Tokens   struct {
		Prompt int `json:"prompt"`
		Output int `json:"output"`
	} `json:"tokens"`
	Timings Timings   `json:"timings"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
}

// Timings say where an episode's time went, in seconds.
type Timings struct {
	Setup float64 `json:"setup_s"` // waiting for the task's export (and its Go build cache)
	Agent float64 `json:"agent_s"` // agent.Run, wall clock
	Model float64 `json:"model_s"` // of which in Ollama
	Tools float64 `json:"tools_s"` // of which in tool calls
	Score float64 `json:"score_s"`
	Total float64 `json:"total_s"`
}

// Trainable is whether the episode may be trained on: it has a reward.
func (r *Record) Trainable() bool { return r.Error == "" && r.Reward != nil }

// Summary is a task's group once every one of its G episodes has a record, written to
// <out>/<task id>/group.json.
type Summary struct {
	Version  int    `json:"version"`
	Task     string `json:"task"`
	Model    string `json:"model"`
	Episodes int    `json:"episodes"` // G
	// Rewards are by episode, null where the episode failed (Record.Error).
	Rewards []*float64 `json:"rewards"`
	Errors  int        `json:"errors"`
	// Mean is over the episodes with a reward (0 when none has one).
	Mean float64 `json:"mean"`
	// Varied is whether the rewards differ: only then does the group teach anything
	// (GRPO's advantages are rewards minus the group's mean).
	Varied bool `json:"varied"`
}

func recordPath(out, taskID string, i int) string {
	return filepath.Join(out, taskID, strconv.Itoa(i)+".json")
}

func trajectoryName(taskID string, i int) string {
	return filepath.Join(taskID, strconv.Itoa(i)+".jsonl")
}

func summaryPath(out, taskID string) string { return filepath.Join(out, taskID, "group.json") }

// ReadRecord reads an episode's record; fs.ErrNotExist when the episode is not finished.
func ReadRecord(out, taskID string, i int) (*Record, error) {
	p := recordPath(out, taskID, i)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if r.Version != RecordVersion {
		return nil, fmt.Errorf("%s: record version %d, this frognano reads %d", p, r.Version, RecordVersion)
	}
	return &r, nil
}

// ReadSummary reads a task's group summary; fs.ErrNotExist when the group is not finished.
func ReadSummary(out, taskID string) (*Summary, error) {
	p := summaryPath(out, taskID)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &s, nil
}

func writeJSON(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(p, append(b, '\n'), 0o644)
}

// summarize writes the group summary of taskID when all g episodes have records, and
// returns it; nil when some are missing.
func summarize(out, taskID, model string, g int) (*Summary, error) {
	s := &Summary{Version: RecordVersion, Task: taskID, Model: model, Episodes: g}
	var sum float64
	scored := 0
	for i := range g {
		r, err := ReadRecord(out, taskID, i)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !r.Trainable() {
			s.Errors++
			s.Rewards = append(s.Rewards, nil)
			continue
		}
		if scored > 0 && *r.Reward != *s.Rewards[firstScored(s.Rewards)] {
			s.Varied = true
		}
		s.Rewards = append(s.Rewards, r.Reward)
		sum += *r.Reward
		scored++
	}
	if scored > 0 {
		s.Mean = sum / float64(scored)
	}
	return s, writeJSON(summaryPath(out, taskID), s)
}

func firstScored(rs []*float64) int {
	for i, r := range rs {
		if r != nil {
			return i
		}
	}
	return -1
}

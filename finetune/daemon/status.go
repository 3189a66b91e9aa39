package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/frognano/frognano/finetune/loop"
	"github.com/frognano/frognano/internal/atomicfile"
)

// Status is the daemon's status file, status.json, rewritten (atomically) as the loop
// goes. It is true of the daemon that last ran; whether one runs now is the lock's to say
// (Running), never this file's: a daemon killed with kill -9 leaves it as it was.
type Status struct {
	Version int       `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	// Iteration, Phase, Fraction and Detail are the loop's progress.
	Iteration int        `json:"iteration"`
	Phase     loop.Phase `json:"phase,omitempty"`
	Fraction  float64    `json:"fraction"`
	Detail    string     `json:"detail,omitempty"`
	// Waiting says what the daemon waits for, while it waits: the schedule, the GPU lock,
	// another program on the GPU, the pause between iterations.
	Waiting string `json:"waiting,omitempty"`
	// GPUSeconds is the wall time spent in the train phase holding the GPU lock, over all
	// of the daemon's runs (on a machine without a GPU, the trainer's time on the CPU); a
	// training cut short by a kill is not counted (it is counted when it is redone).
	GPUSeconds float64 `json:"gpu_seconds"`
	// GPU says how the daemon sees other programs on the GPU (or that it cannot).
	GPU string `json:"gpu,omitempty"`
	// LastError is the latest iteration's failure, with its time; the daemon tries again
	// after the pause.
	LastError string    `json:"last_error,omitempty"`
	ErrorAt   time.Time `json:"error_at,omitzero"`
	// Model is the model in use (the registry's), Base the base model.
	Model string `json:"model,omitempty"`
	// Head is the commit the latest synthesis worked on: a different HEAD at the start of an
	// iteration asks it for new tasks (loop.Config.Fresh).
	Head string `json:"head,omitempty"`
	// Iterations counts the iterations this daemon finished; Outcome is the latest's.
	Iterations int    `json:"iterations"`
	Outcome    string `json:"outcome,omitempty"`
	// Ended says why the daemon stopped, once it did of its own accord or when told to.
	Ended string `json:"ended,omitempty"`
}

const statusVersion = 1

// ReadStatus reads dir's status file; a missing one is an error satisfying
// errors.Is(err, fs.ErrNotExist).
func ReadStatus(dir string) (*Status, error) {
	p := filepath.Join(dir, statusFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("daemon status %s: %w (remove it: the daemon writes it again)", p, err)
	}
	if s.Version != statusVersion {
		return nil, fmt.Errorf("daemon status %s: version %d, this frognano reads %d (remove it: the daemon writes it again)", p, s.Version, statusVersion)
	}
	return &s, nil
}

func (s *Status) write(dir string) error {
	s.Version = statusVersion
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, statusFile), append(b, '\n'), 0o644)
}

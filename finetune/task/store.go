package task

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/internal/cachedir"
)

// Store is a folder of task files.
type Store struct{ Dir string }

// DefaultDir is where the tasks of repo (absolute, links resolved) go by default.
func DefaultDir(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return filepath.Join(cachedir.Dir(), "finetune", "tasks", hex.EncodeToString(sum[:8]))
}

// Open is the store in dir, made if missing.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Store{Dir: dir}, nil
}

// Put writes t atomically as <id>.json, replacing a task with the same id. A screened
// candidate is refused: it goes to PutScreened.
func (s *Store) Put(t *Task) error {
	if t.Status != "" {
		return fmt.Errorf("task %s: status %q: only a confirmed task goes in the store", t.ID, t.Status)
	}
	return write(s.Dir, t)
}

func write(dir string, t *Task) error {
	if t.ID == "" || strings.ContainsAny(t.ID, `/\.`) {
		return fmt.Errorf("task: bad id %q", t.ID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, t.ID+".json"), append(b, '\n'), 0o644)
}

// ScreenedDir is the subfolder of screened, unconfirmed candidates.
const ScreenedDir = "screened"

// PutScreened writes a candidate the switch accepted, not yet confirmed, to screened/.
func (s *Store) PutScreened(t *Task) error {
	if t.Status != StatusScreened {
		return fmt.Errorf("task %s: status %q, want %q", t.ID, t.Status, StatusScreened)
	}
	return write(filepath.Join(s.Dir, ScreenedDir), t)
}

// ListScreened reads the screened candidates, sorted by id.
func (s *Store) ListScreened() ([]*Task, error) {
	ts, err := list(filepath.Join(s.Dir, ScreenedDir), StatusScreened)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return ts, err
}

// RemoveScreened deletes the screened candidate id (confirmed or refuted).
func (s *Store) RemoveScreened(id string) error {
	if id == "" || strings.ContainsAny(id, `/\.`) {
		return fmt.Errorf("task: bad id %q", id)
	}
	err := os.Remove(filepath.Join(s.Dir, ScreenedDir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// ErrVersion is a task file of a format version this reader does not know.
var ErrVersion = errors.New("task: unknown format version")

// Get reads the task with id (never a screened candidate).
func (s *Store) Get(id string) (*Task, error) { return get(s.Dir, id, "") }

func get(dir, id, status string) (*Task, error) {
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if err != nil {
		return nil, err
	}
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	if t.Version != Version {
		return nil, fmt.Errorf("task %s: %w %d", id, ErrVersion, t.Version)
	}
	if t.Status != status {
		return nil, fmt.Errorf("task %s: status %q", id, t.Status)
	}
	return &t, nil
}

// List reads every task of a known version, sorted by id; files it cannot read are
// skipped (temporary files of a writer, other versions).
func (s *Store) List() ([]*Task, error) { return list(s.Dir, "") }

func list(dir, status string) ([]*Task, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*Task
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		t, err := get(dir, strings.TrimSuffix(name, ".json"), status)
		if err != nil {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

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

// Put writes t atomically as <id>.json, replacing a task with the same id.
func (s *Store) Put(t *Task) error {
	if t.ID == "" || strings.ContainsAny(t.ID, `/\.`) {
		return fmt.Errorf("task: bad id %q", t.ID)
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.Dir, t.ID+".json"), append(b, '\n'), 0o644)
}

// ErrVersion is a task file of a format version this reader does not know.
var ErrVersion = errors.New("task: unknown format version")

// Get reads the task with id.
func (s *Store) Get(id string) (*Task, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, id+".json"))
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
	return &t, nil
}

// List reads every task of a known version, sorted by id; files it cannot read are
// skipped (temporary files of a writer, other versions).
func (s *Store) List() ([]*Task, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, err
	}
	var out []*Task
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		t, err := s.Get(strings.TrimSuffix(name, ".json"))
		if err != nil {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

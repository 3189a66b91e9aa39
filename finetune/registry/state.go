// Package registry keeps the books of the models fine-tuning makes for a repository: their
// names and Ollama digests, the one the language server should use, the ones it used before
// (for rollback), and the ones the held-out gate rejected (kept for inspection). Entry
// points: [Open] for the daemon and the CLI (they change things, with Ollama at hand), and
// [Find] for the language server (it only reads).
//
// The state is one versioned JSON file per repository in frognano's cache folder, replaced
// atomically (internal/atomicfile: a rename), so a switch of model is one rename: a reader
// sees the old model or the new, and a crash leaves one of the two. Writers take a lock on
// a file beside it, since the daemon and a `frognano finetune rollback` may write at once.
//
// Its promises about Ollama's models:
//   - it deletes only a model it made and whose digest is still the one it recorded: a
//     model the user made, even under a name of its form, or one of its models the user
//     replaced, is never deleted (the record is dropped instead);
//   - it keeps the model in use, the one a rollback would go back to, every model not yet
//     judged, and the Keep most recent of the others;
//   - every change first reconciles the books with Ollama's list, so a crash between
//     making a model and recording it leaves nothing lost or unaccounted (see [Registry.Begin]).
package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/frognano/frognano/finetune/gate"
	"github.com/frognano/frognano/internal/atomicfile"
	"github.com/frognano/frognano/internal/cachedir"
)

// Version of the State's JSON form. Fields may be added within a version; a field's meaning
// never changes without a new one.
const Version = 1

// DefaultKeep is how many of its models, besides the one in use, the rollback target and the
// ones not yet judged, the registry keeps when none is configured: each is a whole model
// (about 2.8 GB for FrogNano at Q4_K_M), so a few are enough to inspect and to go back.
const DefaultKeep = 3

// Status is where a model stands.
type Status string

const (
	// Pending: the registry gave out the name and the model is being made; a crash leaves
	// it so, and the next change resolves it (adopted when Ollama has the model, dropped
	// when not).
	Pending Status = "pending"
	// Candidate: made and recorded, not yet judged by the gate.
	Candidate Status = "candidate"
	// Accepted: the gate let it through; it is, or was, the model in use.
	Accepted Status = "accepted"
	// Rejected: the gate stopped it; kept for inspection until pruned.
	Rejected Status = "rejected"
	// RolledBack: it was in use and the user went back from it.
	RolledBack Status = "rolled-back"
)

// Model is one model the registry made.
type Model struct {
	Name string `json:"name"`
	// Digest is Ollama's digest of the model when it was recorded; a model under Name with
	// another digest is no longer this one.
	Digest string    `json:"digest,omitempty"`
	Step   int       `json:"step"`
	Status Status    `json:"status"`
	Made   time.Time `json:"made"`
	// Verdict is the gate's, once judged; HeldOut its results per held-out task (kept so
	// that, once it serves, the next candidate is compared on the same tasks without running
	// them again).
	Verdict *gate.Verdict          `json:"verdict,omitempty"`
	HeldOut map[string]gate.Result `json:"held_out,omitempty"`
	// Owner is the process making a pending model: while it lives, nobody else resolves the
	// record (another process's reconcile would otherwise forget a model being imported).
	Owner *Owner `json:"owner,omitempty"`
}

// verdictReason is v's reason, or says there is none.
func verdictReason(v *gate.Verdict) string {
	if v == nil {
		return "no verdict recorded"
	}
	return v.Reason
}

// Owner names a process by its PID and its start time (so that a PID reused after a
// restart is not taken for the owner).
type Owner struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

func self() *Owner { return &Owner{PID: os.Getpid(), Start: procStart(os.Getpid())} }

func (o *Owner) isSelf() bool { return o != nil && *o == *self() }

// alive says the owner is still running (nil: nobody owns the record).
func (o *Owner) alive() bool { return o != nil && o.Start != "" && procStart(o.PID) == o.Start }

// procStart is a process's start time in clock ticks since boot (field 22 of
// /proc/PID/stat), "" when there is no such process.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// the command name (field 2) may hold spaces and parentheses: count from the last ')'
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// Switch is one change of the model in use ("" is the base model).
type Switch struct {
	Time time.Time `json:"time"`
	From string    `json:"from"`
	To   string    `json:"to"`
	Why  string    `json:"why"`
}

// State is the registry's file.
//
//	{"version":1, "repo":"/abs/repo", "host":"http://127.0.0.1:11434", "base":"frognano:4b",
//	 "in_use":"frognano-ft-…:step-3", "keep":3, "models":[{…}], "switches":[{…}]}
type State struct {
	Version int `json:"version"`
	// Repo is the repository (absolute, links resolved, the top of its work tree).
	Repo string `json:"repo"`
	// Host is the Ollama server the models live in (its base URL): a language server talking
	// to another one does not use them.
	Host string `json:"host"`
	// Base is the model fine-tuning started from (the user's, never touched); it serves while
	// InUse is empty. BaseHeldOut are its held-out results.
	Base        string                 `json:"base"`
	BaseHeldOut map[string]gate.Result `json:"base_held_out,omitempty"`
	// InUse is the model the language server should use; empty: Base.
	InUse string `json:"in_use,omitempty"`
	// Keep is how many other models to keep (DefaultKeep when 0 is written by an old file;
	// a State made by Open always has it set).
	Keep int `json:"keep"`
	// Models are the models it made, in the order it made them.
	Models []*Model `json:"models"`
	// Switches is the history of the model in use, oldest first.
	Switches []Switch `json:"switches,omitempty"`
	// Notes are what reconciling with Ollama found (a model gone, replaced, adopted after a
	// crash), newest last, the last 50.
	Notes []string `json:"notes,omitempty"`
}

// Serving is the model the language server should use: InUse, else Base.
func (s *State) Serving() string {
	if s.InUse != "" {
		return s.InUse
	}
	return s.Base
}

// Model returns the record of name, or nil.
func (s *State) Model(name string) *Model {
	for _, m := range s.Models {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// DefaultDir is where the states are kept: finetune/models in frognano's cache folder.
func DefaultDir() string { return filepath.Join(cachedir.Dir(), "finetune", "models") }

// Key is a short, stable name for repo: the first 12 hex digits of its path's SHA-256.
func Key(repo string) string {
	sum := sha256.Sum256([]byte(repo))
	return hex.EncodeToString(sum[:6])
}

// Name is the Ollama name of the model made for repo at a training step:
// frognano-ft-<Key>:step-<step>.
func Name(repo string, step int) string {
	return "frognano-ft-" + Key(repo) + ":step-" + strconv.Itoa(step)
}

// Path is the state file of repo in dir ("" is DefaultDir).
func Path(dir, repo string) string {
	if dir == "" {
		dir = DefaultDir()
	}
	return filepath.Join(dir, Key(repo)+".json")
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
		return nil, fmt.Errorf("model registry %s: %w (remove it to forget the fine-tuned models; they stay in Ollama)", path, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("model registry %s has version %d; this frognano reads version %d (update frognano, or remove the file to forget the fine-tuned models; they stay in Ollama)", path, s.Version, Version)
	}
	if s.Keep <= 0 {
		s.Keep = DefaultKeep
	}
	return &s, nil
}

func (s *State) save(path string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// ErrNoState: fine-tuning has made no model registry for the folder or any folder above it.
var ErrNoState = errors.New("fine-tuning has no models for this repository")

// Find returns the state of the repository that holds dir: the first of dir and its parents
// with a state in stateDir ("" is DefaultDir). It reads one small file and runs nothing, so
// the language server may call it before every run.
func Find(stateDir, dir string) (*State, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	for d := abs; ; d = filepath.Dir(d) {
		p := Path(stateDir, d)
		s, err := Load(p)
		if err == nil {
			return s, p, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, p, err
		}
		if d == filepath.Dir(d) {
			return nil, "", fmt.Errorf("%s: %w", dir, ErrNoState)
		}
	}
}

// SameName says whether a and b name the same Ollama model (case aside, a missing tag
// being "latest").
func SameName(a, b string) bool { return NameKey(a) == NameKey(b) }

// NameKey is the form of a model name to look it up by in Ollama's list: lower case, a
// missing tag being "latest".
func NameKey(name string) string {
	name = strings.ToLower(name)
	if !strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		name += ":latest"
	}
	return name
}

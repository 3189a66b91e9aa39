package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent/workspace"
)

// TrajectoryVersion is the schema version of the trajectory format. Fine-tuning reads it;
// bump it on any incompatible change.
//
// The file is JSON Lines, one record per line, written as the episode goes (a crash leaves
// every finished step on disk). A file without an end record was cut short: by a crash, or
// by a failed write (a full disk), after which nothing more is written and the run's
// Result.TrajectoryError says so:
//
//	{"type":"start", "version":1, "time", "model", "task":{dir, instruction}, "options", "tools":[…], "messages":[system, user]}
//	{"type":"step", "step":N, "assistant":Message, "tools":[ToolRecord], "tokens":{prompt,output},
//	 "timing_ms":{model,tools,overhead}, "done_reason", "logprobs":[…] (when asked), "notes":[…]}
//	{"type":"end", "exit", "error", "answer", "steps", "diff", "files":[{kind,path,old_path,base_hash}], "usage"}
//
// Messages are Ollama's api.Message; tools are the api.Tools sent with every request (the
// prompts cannot be rebuilt without them). The conversation is start.messages followed by,
// for each step, the assistant message and then one "tool" message per ToolRecord.
//
// Notes, one line each, say where the conversation the model saw differs from that rule:
//   - "shortened tool output I (NAME) from A to B characters …": message I was replaced by
//     [ShortenedToolOutput] of it before this step's request.
//   - "empty reply N of M: … sent the user message: TEXT": the reply had tokens but no text
//     and no tool call (Ollama drops a call to a tool it was not offered); the conversation
//     goes on with a "user" message whose content is TEXT, after this step's assistant
//     message. "empty reply M of M: … ended the episode": nothing was sent.
const TrajectoryVersion = 1

// ToolRecord is one executed call.
type ToolRecord struct {
	Name   string         `json:"name"`
	Args   map[string]any `json:"args"`
	Title  string         `json:"title"`
	Result string         `json:"result"`
	// Failed: the call was refused or failed; Result says why (that is what the model saw).
	Failed bool  `json:"failed,omitempty"`
	Ms     int64 `json:"ms"`
	// Recovered: the call arrived as text and was parsed by the agent.
	Recovered bool `json:"recovered,omitempty"`
}

type startRecord struct {
	Type     string        `json:"type"`
	Version  int           `json:"version"`
	Time     time.Time     `json:"time"`
	Model    string        `json:"model"`
	Task     taskRecord    `json:"task"`
	Options  optionsRecord `json:"options"`
	Tools    api.Tools     `json:"tools"`
	Messages []api.Message `json:"messages"`
}

type taskRecord struct {
	Dir         string   `json:"dir"`
	Instruction string   `json:"instruction"`
	Overlays    []string `json:"overlays,omitempty"`
}

type optionsRecord struct {
	NumCtx           int     `json:"num_ctx"`
	MaxSteps         int     `json:"max_steps"`
	MaxTokensPerTurn int     `json:"max_tokens_per_turn"`
	MaxTimeS         float64 `json:"max_time_s"`
	Temperature      float64 `json:"temperature"`
	TopP             float64 `json:"top_p"`
	TopK             int     `json:"top_k"`
	Think            bool    `json:"think"`
}

// stepRecord is one step. Logprobs is a pointer so that a reader can tell "not asked for"
// (nil, no field) from "none there" (an empty list: a reply of no token but the end of
// turn); omitempty drops an empty slice as it drops a nil one.
type stepRecord struct {
	Type       string         `json:"type"`
	Step       int            `json:"step"`
	Assistant  api.Message    `json:"assistant"`
	Tools      []ToolRecord   `json:"tools,omitempty"`
	Tokens     tokenCounts    `json:"tokens"`
	TimingMs   timings        `json:"timing_ms"`
	DoneReason string         `json:"done_reason,omitempty"`
	Logprobs   *[]api.Logprob `json:"logprobs,omitempty"`
	Notes      []string       `json:"notes,omitempty"`
	Extra      map[string]any `json:"extra,omitempty"`
}

type tokenCounts struct {
	Prompt int `json:"prompt"`
	Output int `json:"output"`
	// PromptEvalMs is how long the prompt took to evaluate: with Ollama's prefix cache only
	// the new tokens are evaluated, although Prompt always counts the whole prompt.
	PromptEvalMs float64 `json:"prompt_eval_ms"`
}

type timings struct {
	Model    float64 `json:"model"`
	Tools    float64 `json:"tools"`
	Overhead float64 `json:"overhead"`
}

type endRecord struct {
	Type    string                 `json:"type"`
	Exit    Exit                   `json:"exit"`
	Error   string                 `json:"error,omitempty"`
	Answer  string                 `json:"answer"`
	Steps   int                    `json:"steps"`
	Diff    string                 `json:"diff"`
	Files   []workspace.FileChange `json:"files"`
	Usage   Usage                  `json:"usage"`
	EndTime time.Time              `json:"time"`
}

// trajectory appends records to a file; a nil *trajectory writes nothing. mu guards f, size
// and err.
type trajectory struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64 // bytes of whole records written
	// err is the first failed write: nothing is written after it, so the file stays a
	// prefix of whole records that a reader can tell is cut short (no end record).
	err error
}

// createTrajectory opens a new file for writing, failing if it exists. A variable so that
// tests can hand the episode a file whose writes fail, as on a full disk.
var createTrajectory = func(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
}

// openTrajectory creates path, or when it is empty a new file in dir named for start (UTC)
// and a random part; both empty means no trajectory. O_EXCL: two runs in the same second
// never write into one file, and a named file that exists is never overwritten.
func openTrajectory(path, dir string, start time.Time) (*trajectory, error) {
	if path == "" && dir == "" {
		return nil, nil
	}
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err := createTrajectory(path)
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s exists already; name a new file (a run never overwrites another's trajectory)", path)
		}
		if err != nil {
			return nil, err
		}
		return &trajectory{path: path, f: f}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	stamp := start.UTC().Format("20060102-150405")
	for range 100 {
		var rnd [4]byte
		rand.Read(rnd[:])
		p := filepath.Join(dir, stamp+"-"+hex.EncodeToString(rnd[:])+".jsonl")
		f, err := createTrajectory(p)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &trajectory{path: p, f: f}, nil
	}
	return nil, fmt.Errorf("no new file name found in %s", dir)
}

// write appends one record and syncs it, so a reader (or a crash) sees whole steps. After
// a failure it writes nothing more and returns that first error again; a record that went
// in half is cut off.
func (t *trajectory) write(rec any) error {
	if t == nil {
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if _, err := t.f.Write(append(b, '\n')); err != nil {
		t.fail(err)
		return t.err
	}
	if err := t.f.Sync(); err != nil {
		t.fail(err)
		return t.err
	}
	t.size += int64(len(b) + 1)
	return nil
}

// fail records err and cuts the file back to its whole records (best effort: on a full
// disk truncating still works, since it frees space).
func (t *trajectory) fail(err error) {
	t.err = err
	t.f.Truncate(t.size)
}

// failure is the first failed write, or nil.
func (t *trajectory) failure() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *trajectory) close() error {
	if t == nil {
		return nil
	}
	return t.f.Close()
}

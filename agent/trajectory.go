package agent

import (
	"encoding/json"
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
// every finished step on disk):
//
//	{"type":"start", "version":1, "time", "model", "task":{dir, instruction}, "options", "messages":[system, user]}
//	{"type":"step", "step":N, "assistant":Message, "tools":[ToolRecord], "tokens":{prompt,output},
//	 "timing_ms":{model,tools,overhead}, "done_reason", "logprobs":[…] (when asked), "notes":[…]}
//	{"type":"end", "exit", "error", "answer", "steps", "diff", "files":[{kind,path,old_path,base_hash}], "usage"}
//
// Messages are Ollama's api.Message. The conversation is start.messages followed by, for
// each step, the assistant message and then one "tool" message per ToolRecord.
//
// Notes, one line each, say where the conversation the model saw differs from that rule:
//   - "shortened tool output I (NAME) from A to B characters …": message I was cut to B
//     characters before this step's request.
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

type stepRecord struct {
	Type       string         `json:"type"`
	Step       int            `json:"step"`
	Assistant  api.Message    `json:"assistant"`
	Tools      []ToolRecord   `json:"tools,omitempty"`
	Tokens     tokenCounts    `json:"tokens"`
	TimingMs   timings        `json:"timing_ms"`
	DoneReason string         `json:"done_reason,omitempty"`
	Logprobs   []api.Logprob  `json:"logprobs,omitempty"`
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

// trajectory appends records to a file; a nil *trajectory writes nothing. mu guards f.
type trajectory struct {
	mu sync.Mutex
	f  *os.File
}

func openTrajectory(path string) (*trajectory, error) {
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &trajectory{f: f}, nil
}

// write appends one record and syncs it, so a reader (or a crash) sees whole steps.
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
	if _, err := t.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return t.f.Sync()
}

func (t *trajectory) close() error {
	if t == nil {
		return nil
	}
	return t.f.Close()
}

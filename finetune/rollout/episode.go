package rollout

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
)

// Episode is a trajectory read back as what the model was asked and answered, turn by turn.
type Episode struct {
	Model string
	Think bool // the agent sent think:true
	Tools api.Tools
	Turns []Turn
	Exit  string // the end record's exit ("" when the episode did not finish writing)
}

// Turn is one request to the model and its reply.
type Turn struct {
	Step int
	// Messages is the conversation sent with the request, rebuilt from the trajectory by the
	// agent's rule (agent/trajectory.go): shortened tool outputs and reminders included.
	Messages []api.Message
	Reply    api.Message
	// Pieces are the text of each output token as Ollama's logprobs reported it, the end of
	// turn excluded; nil when the turn was recorded without logprobs.
	Pieces       []string
	PromptTokens int // Ollama's prompt_eval_count
	OutputTokens int // its eval_count, the end-of-turn token included
	DoneReason   string
}

// The records of a trajectory, as the agent writes them (agent/trajectory.go): the fields
// read here.
type (
	startRecord struct {
		Version int    `json:"version"`
		Model   string `json:"model"`
		Options struct {
			Think bool `json:"think"`
		} `json:"options"`
		Tools    api.Tools     `json:"tools"`
		Messages []api.Message `json:"messages"`
	}
	stepRecord struct {
		Step      int         `json:"step"`
		Assistant api.Message `json:"assistant"`
		Tools     []struct {
			Name   string `json:"name"`
			Result string `json:"result"`
		} `json:"tools"`
		Tokens struct {
			Prompt int `json:"prompt"`
			Output int `json:"output"`
		} `json:"tokens"`
		DoneReason string        `json:"done_reason"`
		Logprobs   []api.Logprob `json:"logprobs"`
		Notes      []string      `json:"notes"`
	}
	endRecord struct {
		Exit string `json:"exit"`
	}
)

const (
	shortenedPrefix = "shortened tool output "
	reminderMarker  = "sent the user message: "
)

// Read reads a trajectory file written by agent.Run.
func Read(path string) (*Episode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	var ep *Episode
	var msgs []api.Message
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &kind); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if kind.Type != "start" && ep == nil {
			return nil, fmt.Errorf("%s:%d: a %q record before the start record", path, n, kind.Type)
		}
		switch kind.Type {
		case "start":
			var r startRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			if r.Version != agent.TrajectoryVersion {
				return nil, fmt.Errorf("%s: trajectory version %d, this frognano reads %d", path, r.Version, agent.TrajectoryVersion)
			}
			if len(r.Tools) == 0 {
				return nil, fmt.Errorf("%s: the start record has no tools (written by an older frognano): the prompts cannot be rebuilt", path)
			}
			ep = &Episode{Model: r.Model, Think: r.Options.Think, Tools: r.Tools}
			msgs = r.Messages
		case "step":
			var r stepRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			for _, note := range r.Notes {
				if i, ok := shortened(note); ok {
					if i < 0 || i >= len(msgs) {
						return nil, fmt.Errorf("%s:%d: note %q names no message", path, n, note)
					}
					msgs[i].Content = agent.ShortenedToolOutput(msgs[i].Content)
				}
			}
			if r.Assistant.Role == "" {
				continue // the step ended before the model answered (context full, model error)
			}
			t := Turn{Step: r.Step, Messages: append([]api.Message(nil), msgs...), Reply: r.Assistant,
				PromptTokens: r.Tokens.Prompt, OutputTokens: r.Tokens.Output, DoneReason: r.DoneReason}
			for _, lp := range r.Logprobs {
				t.Pieces = append(t.Pieces, lp.Token)
			}
			if r.Logprobs == nil {
				t.Pieces = nil
			} else if t.Pieces == nil {
				t.Pieces = []string{}
			}
			ep.Turns = append(ep.Turns, t)
			msgs = append(msgs, r.Assistant)
			for _, note := range r.Notes {
				if _, text, ok := strings.Cut(note, reminderMarker); ok && strings.HasPrefix(note, "empty reply ") {
					msgs = append(msgs, api.Message{Role: "user", Content: text})
				}
			}
			for _, tr := range r.Tools {
				msgs = append(msgs, api.Message{Role: "tool", ToolName: tr.Name, Content: tr.Result})
			}
		case "end":
			var r endRecord
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			ep.Exit = r.Exit
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if ep == nil {
		return nil, fmt.Errorf("%s: no start record", path)
	}
	return ep, nil
}

// shortened parses "shortened tool output I (NAME) from …" into I.
func shortened(note string) (int, bool) {
	rest, ok := strings.CutPrefix(note, shortenedPrefix)
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, " ")
	i, err := strconv.Atoi(num)
	return i, err == nil
}

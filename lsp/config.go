package lsp

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/frognano/frognano/ollama"
)

//go:generate go run ./internal/gendoc

// Settings are the user's configuration, from initializationOptions, the
// workspace/configuration section "frognano", and workspace/didChangeConfiguration (in
// that order of arrival, later ones winning). Every field has a default that works. Each is
// declared for users in SettingDocs, from which go generate writes the editors' declarations
// and the READMEs' tables.
type Settings struct {
	// OllamaHost is Ollama's address (default $OLLAMA_HOST, else 127.0.0.1:11434).
	OllamaHost string `json:"ollamaHost,omitempty"`
	// Model is the Ollama model (default $FROGNANO_MODEL, else frognano:4b).
	Model string `json:"model,omitempty"`
	// NumCtx is sent as num_ctx (default $FROGNANO_NUM_CTX, else 65536).
	NumCtx int `json:"numCtx,omitempty"`
	// MaxSteps bounds one agent run (default 100).
	MaxSteps int `json:"maxSteps,omitempty"`
	// MaxMinutes bounds one agent run's time (default 30).
	MaxMinutes float64 `json:"maxMinutes,omitempty"`
	// Actions turns offered actions off by id: fix, fixTest, implement, tests, explain, ask.
	Actions map[string]bool `json:"actions,omitempty"`
	// WhenBusy is "reject" (default: say a run is in progress) or "queue" (wait for it).
	WhenBusy string `json:"whenBusy,omitempty"`
	// Preview asks editors that can to show the change for confirmation (default true).
	Preview *bool `json:"preview,omitempty"`
	// Watch keeps the next run's private copy of the workspace ready and watches the folder
	// to keep it fresh (default true). Off: every run copies the folder when it starts.
	Watch *bool `json:"watch,omitempty"`
	// FinetuneWeights is the base model's weights for fine-tuning's trainer (a safetensors
	// folder or a .gguf file): the one thing `frognano finetune start` needs that the server
	// cannot guess. Start fine-tuning fails without it, naming it.
	FinetuneWeights string `json:"finetune.weights,omitempty"`
	// FinetuneHours is the daemon's schedule, FROM-TO in hours of local time (daemon.ParseHours).
	FinetuneHours string `json:"finetune.hours,omitempty"`
}

// merge overlays the fields set in raw (a JSON object, or one with a "frognano" key).
func (s *Settings) merge(raw []byte) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var wrapped struct {
		Frognano json.RawMessage `json:"frognano"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && len(wrapped.Frognano) > 0 {
		raw = wrapped.Frognano
	}
	// Readers hold copies of Settings that share the map and the pointer: decode into fresh
	// ones, since json.Unmarshal adds to an existing map and writes through a set pointer.
	s.Actions = maps.Clone(s.Actions)
	if s.Preview != nil {
		p := *s.Preview
		s.Preview = &p
	}
	if s.Watch != nil {
		w := *s.Watch
		s.Watch = &w
	}
	return json.Unmarshal(raw, s)
}

func (s Settings) ollamaConfig(env ollama.Config) ollama.Config {
	c := env
	if s.OllamaHost != "" {
		c.Host = s.OllamaHost
	}
	if s.Model != "" {
		c.Model = s.Model
	}
	if s.NumCtx > 0 {
		c.NumCtx = s.NumCtx
	}
	return c.WithDefaults()
}

func (s Settings) maxTime() time.Duration {
	if s.MaxMinutes > 0 {
		return time.Duration(s.MaxMinutes * float64(time.Minute))
	}
	return 30 * time.Minute
}

func (s Settings) watch() bool { return s.Watch == nil || *s.Watch }

func (s Settings) enabled(action string) bool {
	on, set := s.Actions[action]
	return !set || on
}

func (s Settings) preview() bool { return s.Preview == nil || *s.Preview }

// SettingDoc declares one setting for users. go generate (lsp/internal/gendoc) writes from
// SettingDocs the VS Code extension's package.json (contributes.configuration and the settings
// restricted in untrusted workspaces), its src/server.gen.ts, Neovim's
// lua/frognano/server.lua, and the settings tables of the READMEs; a test fails when one of
// them is stale. The server's settings are the fields of Settings, found by their JSON key,
// which also gives their type; every field has exactly one SettingDoc (the generator checks).
type SettingDoc struct {
	Key string
	// Editor is "" for the server's settings, else the one editor whose own setting it is
	// (never sent to the server): "vscode".
	Editor string
	// Type is the JSON type of an editor's own setting; a server setting's comes from its field.
	Type string
	// Default is what editors show. For the server, an unset, empty or zero value means its
	// own default, which Doc names; DefaultText says it in a word for the README's table.
	Default     any
	DefaultText string
	Doc         string // Markdown, one paragraph
	Enum        []EnumDoc
	Minimum     *float64
	// Machine settings are read from the user's settings only, never a workspace's (VS Code's
	// scope "machine"): the binary that runs and the host the code goes to must not be chosen
	// by a repository, since the agent itself writes into the workspace.
	Machine bool
	// Restricted settings are not read from an untrusted workspace (VS Code's Restricted Mode).
	Restricted bool
}

// EnumDoc is one allowed value of a setting.
type EnumDoc struct{ Value, Doc string }

func minimum(v float64) *float64 { return &v }

// SettingDocs are the settings in the order editors list them.
var SettingDocs = []SettingDoc{
	{Key: "path", Editor: "vscode", Type: "string", Default: "frognano", Machine: true, Restricted: true,
		Doc: "The frognano binary; the extension runs `<path> lsp`. A bare name is looked up on PATH. Set in your user settings only: a workspace's value is ignored, since the agent writes files into the workspace."},
	{Key: "trace.server", Editor: "vscode", Type: "string", Default: "off",
		Enum: []EnumDoc{{"off", ""}, {"messages", ""}, {"verbose", ""}},
		Doc:  "Traces the messages between VS Code and the FrogNano server in the \"FrogNano\" output channel."},
	{Key: "ollamaHost", Default: "", DefaultText: "`$OLLAMA_HOST`, else `127.0.0.1:11434`", Machine: true, Restricted: true,
		Doc: "Ollama's address, e.g. 127.0.0.1:11434; the agent sends your code there. Empty: the server's `$OLLAMA_HOST`, else 127.0.0.1:11434. Set in your user settings only: a workspace's value is ignored."},
	{Key: "model", Default: "", DefaultText: "`$FROGNANO_MODEL`, else `frognano:4b`",
		Doc: "The Ollama model the agent uses. Empty: the server's `$FROGNANO_MODEL`, else frognano:4b."},
	{Key: "numCtx", Default: 0, DefaultText: "`$FROGNANO_NUM_CTX`, else 65536", Minimum: minimum(0),
		Doc: "Context size sent to Ollama as num_ctx. 0: the server's `$FROGNANO_NUM_CTX`, else 65536."},
	{Key: "maxSteps", Default: 100, Minimum: minimum(0),
		Doc: "The most model turns one agent run may take."},
	{Key: "maxMinutes", Default: 30, Minimum: minimum(0),
		Doc: "The longest one agent run may take, in minutes."},
	{Key: "actions", Default: map[string]bool{}, DefaultText: "all on",
		Doc: "Turns offered code actions off by id, e.g. `{\"explain\": false}`. All are on by default."},
	{Key: "whenBusy", Default: "reject",
		Enum: []EnumDoc{{"reject", "Say that a run is in progress."}, {"queue", "Wait for the run in progress to finish, then start."}},
		Doc:  "What a new request does while the agent is already working."},
	{Key: "preview", Default: true, Restricted: true,
		Doc: "Show the agent's change for confirmation before it lands in your files (VS Code: the refactor preview). In Restricted Mode (an untrusted folder) the workspace's value is ignored."},
	{Key: "watch", Default: true,
		Doc: "Watch the workspace folder and keep the agent's next private copy of it ready, so a run starts at once instead of copying the folder first (costs one extra copy of the folder on disk while the server runs). Off: every run copies the folder when it starts."},
	{Key: "finetune.weights", Default: "", DefaultText: "none", Machine: true, Restricted: true,
		Doc: "The weights of `frognano.model` for fine-tuning's trainer: a safetensors folder or a .gguf file (the same model as Ollama serves). Needed by \"Start fine-tuning\" (`frognano finetune start --weights`). Set in your user settings only: a workspace's value is ignored."},
	{Key: "finetune.hours", Default: "", DefaultText: "any hour",
		Doc: "When fine-tuning may work, FROM-TO in whole hours of local time, e.g. `22-7` for nights (`frognano finetune start --hours`). Empty: the last start's, else any hour; `0-24`: any hour."},
}

package lsp

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/frognano/frognano/ollama"
)

// Settings are the user's configuration, from initializationOptions, the
// workspace/configuration section "frognano", and workspace/didChangeConfiguration (in
// that order of arrival, later ones winning). Every field has a default that works; the
// README documents them all.
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

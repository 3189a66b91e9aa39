package ollama

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/ollama/ollama/api"
)

// Kind classifies what went wrong talking to Ollama, so callers can react (offer a pull,
// retry later) without parsing messages.
type Kind int

const (
	KindOther Kind = iota
	KindUnreachable
	KindModelMissing
	KindNoTools
	KindNoThinking
)

// Problem is an Ollama error explained for a person: what happened and what to do next.
type Problem struct {
	Kind Kind
	What string
	Fix  string
	Err  error
}

func (p *Problem) Error() string {
	if p.Fix == "" {
		return p.What
	}
	return p.What + ". " + p.Fix
}

func (p *Problem) Unwrap() error { return p.Err }

// Explain turns an error from api.Client into a Problem that names cfg's host and model.
// The one place where runtime errors become user-facing text.
func Explain(err error, cfg Config) *Problem {
	if err == nil {
		return nil
	}
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	cfg = cfg.WithDefaults()
	host := cfg.Host
	if u, uerr := cfg.BaseURL(); uerr == nil {
		host = u.String()
	}

	var status api.StatusError
	var urlErr *url.Error
	var opErr *net.OpError
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &opErr) ||
		(errors.As(err, &urlErr) && !urlErr.Timeout()):
		return &Problem{Kind: KindUnreachable, Err: err,
			What: fmt.Sprintf("Ollama is not reachable at %s", host),
			Fix:  "Start it with `ollama serve`, or set OLLAMA_HOST to the address it listens on"}
	case errors.As(err, &status) && status.StatusCode == 404,
		strings.Contains(msg, "not found, try pulling it first"):
		return &Problem{Kind: KindModelMissing, Err: err,
			What: fmt.Sprintf("Model %q is not installed in Ollama at %s", cfg.Model, host),
			Fix:  "Import a FrogNano GGUF with `frognano model import FILE.gguf`, pull one with `ollama pull NAME`, or set FROGNANO_MODEL to a model that `frognano model list` shows"}
	case strings.Contains(msg, "does not support tools"):
		return &Problem{Kind: KindNoTools, Err: err,
			What: fmt.Sprintf("Model %q has no tool-calling support in Ollama", cfg.Model),
			Fix:  "Use a FrogNano model imported with `frognano model import` (it sets the tool parser), or another model whose template declares tools"}
	case strings.Contains(msg, "does not support thinking"):
		return &Problem{Kind: KindNoThinking, Err: err,
			What: fmt.Sprintf("Model %q does not support thinking", cfg.Model),
			Fix:  "Turn thinking off in frognano's settings, or import the model with `frognano model import`"}
	}
	return &Problem{Kind: KindOther, Err: err, What: "Ollama: " + msg}
}

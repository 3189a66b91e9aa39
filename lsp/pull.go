package lsp

import (
	"context"
	"fmt"

	"github.com/ollama/ollama/api"
	"go.lsp.dev/protocol"

	"github.com/frognano/frognano/ollama"
)

// offerPull asks the user whether to pull a missing model and, if they agree, pulls it with
// progress. It reports whether the model is now there (the caller then runs the action).
func (s *server) offerPull(ctx context.Context, caps clientCaps, cfg ollama.Config, title string) bool {
	pull := "Pull " + cfg.Model
	choice, err := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
		Type:    protocol.MessageTypeWarning,
		Message: fmt.Sprintf("FrogNano: the model %s is not installed in Ollama at %s. Pull it now? (For a FrogNano GGUF file use `frognano model import FILE.gguf` instead.)", cfg.Model, cfg.Host),
		Actions: []protocol.MessageActionItem{{Title: pull}, {Title: "Not now"}},
	})
	if err != nil || choice == nil || choice.Title != pull {
		return false
	}
	client, err := cfg.Client()
	if err != nil {
		return false
	}
	r := s.register("pulling "+cfg.Model, func() {})
	defer s.unregister(r)
	prog := s.beginProgress(ctx, caps, r.token, "Pulling "+cfg.Model, true)
	last := ""
	err = client.Pull(ctx, &api.PullRequest{Model: cfg.Model}, func(p api.ProgressResponse) error {
		msg := p.Status
		if p.Total > 0 {
			msg = fmt.Sprintf("%s %d%%", p.Status, p.Completed*100/p.Total)
		}
		if msg != last {
			last = msg
			prog.send(protocol.WorkDoneProgressReport{Kind: "report", Message: &msg})
		}
		return nil
	})
	if err != nil {
		prog.end("failed")
		s.show(ctx, protocol.MessageTypeError, "FrogNano: pulling %s failed: %v. Import a GGUF with `frognano model import FILE.gguf`, or set frognano.model to an installed model.", cfg.Model, err)
		return false
	}
	prog.end("pulled")
	s.show(ctx, protocol.MessageTypeInfo, "FrogNano: pulled %s; running %s now.", cfg.Model, title)
	return true
}

package lsp

import (
	"context"
	"errors"
	"fmt"

	"github.com/frognano/frognano/finetune/registry"
	"github.com/frognano/frognano/ollama"
)

// FineTuned names the fine-tuned model the server uses for the workspace in place of the
// configured one, its base.
type FineTuned struct {
	// Model is the fine-tuned model's Ollama name; Step the training step that made it.
	Model string `json:"model"`
	Step  int    `json:"step"`
	// Base is the configured model it was fine-tuned from.
	Base string `json:"base"`
}

// chooseModel returns cfg with the model to use for the workspace at root: the model in
// use in fine-tuning's registry (finetune/registry) when the configured model is that
// registry's base and the Ollama server is the one the fine-tuned models live in; else cfg
// unchanged (the user who names another model, or another server, gets exactly that). It
// reads one small file, so it runs once per agent run and per status request: a switch made
// by the gate or a rollback is picked up by the next run without a restart. A registry that
// cannot be read never fails an action: it is logged once (per problem) and the configured
// model is used.
func (s *server) chooseModel(cfg ollama.Config, root string) (ollama.Config, *FineTuned) {
	if root == "" {
		return cfg, nil
	}
	st, path, err := registry.Find(s.opts.RegistryDir, root)
	switch {
	case errors.Is(err, registry.ErrNoState):
		return cfg, nil
	case err != nil:
		s.warnOnce(fmt.Sprintf("FrogNano: cannot read the fine-tuned models' registry %s, so the configured model %s is used: %v", path, cfg.Model, err))
		return cfg, nil
	case st.InUse == "" || !registry.SameName(cfg.Model, st.Base):
		return cfg, nil
	}
	if !ollama.SameServer(cfg.Host, st.Host) {
		return cfg, nil
	}
	ft := &FineTuned{Model: st.InUse, Base: cfg.Model}
	if m := st.Model(st.InUse); m != nil {
		ft.Step = m.Step
	}
	cfg.Model = st.InUse
	return cfg, ft
}

// warnOnce writes msg to the log the first time it comes: a registry that stays unreadable
// would otherwise repeat it on every run and status request.
func (s *server) warnOnce(msg string) {
	s.mu.Lock()
	seen := s.warned[msg]
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	s.warned[msg] = true
	s.mu.Unlock()
	if !seen {
		s.logf(context.Background(), "%s", msg)
	}
}

// describe is how the log and progress name the model of a run.
func (ft *FineTuned) describe() string {
	return fmt.Sprintf("fine-tuned model %s (step %d, from %s)", ft.Model, ft.Step, ft.Base)
}

package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/frognano/frognano/finetune/trainer"
)

// Tokenizer is the trainer's tokenize request ([*trainer.Process] has it).
type Tokenizer interface {
	Tokenize(ctx context.Context, req trainer.TokenizeRequest) (*trainer.Tokenized, error)
}

// Mismatch says why an episode's rollouts cannot be trusted to be what the model saw and
// produced; the episode is not trained on.
type Mismatch struct {
	Step int
	Why  string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("rollout: step %d is not token-exact, so the episode is dropped: %s", m.Step, m.Why)
}

// Stats describe what [Build] made of an episode.
type Stats struct {
	Turns int
	// Sequences is the number of rollouts: one per run of turns whose every prompt extends
	// the previous prompt and output token for token, a new one where a prompt rewrites
	// the past (e.g. a renderer that drops earlier thinking).
	Sequences int
	// PromptTokens and OutputTokens are the totals checked against Ollama's counts.
	PromptTokens, OutputTokens int
}

// Build turns an episode into rollouts for the trainer, every one with reward and group:
// each turn's prompt rendered by f and tokenized whole (as Ollama did), the output as the
// model's own tokens (one per logprob piece) and the end-of-turn token, the mask set on
// output tokens only. It checks, per turn, the prompt's token count against Ollama's
// prompt_eval_count (which counts the whole prompt, cached prefix included: measured) and
// the output's against eval_count, and that the pieces spell the parsed reply. Any
// disagreement returns a *Mismatch; other errors come from the tokenizer.
func Build(ctx context.Context, tok Tokenizer, f *Format, ep *Episode, reward float64, group string) ([]trainer.Rollout, Stats, error) {
	st := Stats{Turns: len(ep.Turns)}
	if len(ep.Turns) == 0 {
		return nil, st, &Mismatch{Why: "the episode has no answered turn"}
	}
	req := trainer.TokenizeRequest{Pieces: [][]string{{f.EndOfTurn}}}
	for _, t := range ep.Turns {
		if err := checkPieces(t); err != nil {
			return nil, st, &Mismatch{Step: t.Step, Why: err.Error()}
		}
		p, err := f.Prompt(t.Messages, ep.Tools, ep.Think)
		if err != nil {
			return nil, st, &Mismatch{Step: t.Step, Why: "rendering the prompt: " + err.Error()}
		}
		req.Texts = append(req.Texts, p)
		req.Pieces = append(req.Pieces, t.Pieces)
	}
	ids, err := tok.Tokenize(ctx, req)
	if err != nil {
		return nil, st, err
	}
	if len(ids.Texts) != len(ep.Turns) || len(ids.Pieces) != len(ep.Turns)+1 {
		return nil, st, fmt.Errorf("rollout: the tokenizer answered %d texts and %d piece lists for %d turns", len(ids.Texts), len(ids.Pieces), len(ep.Turns))
	}
	if eot := ids.Pieces[0]; len(eot) != 1 || eot[0] < 0 {
		return nil, st, &Mismatch{Why: fmt.Sprintf("the end of turn %q is not one token of the model's tokenizer", f.EndOfTurn)}
	}
	eot := ids.Pieces[0][0]

	var out []trainer.Rollout
	var seq trainer.Rollout
	flush := func() {
		if slices.Contains(seq.Mask, true) {
			out = append(out, seq)
		}
		seq = trainer.Rollout{}
	}
	for i, t := range ep.Turns {
		prompt, output := ids.Texts[i], ids.Pieces[i+1]
		if len(prompt) != t.PromptTokens {
			return nil, st, &Mismatch{Step: t.Step, Why: fmt.Sprintf("the prompt is %d tokens here, Ollama evaluated %d", len(prompt), t.PromptTokens)}
		}
		if j := slices.Index(output, -1); j >= 0 {
			return nil, st, &Mismatch{Step: t.Step, Why: fmt.Sprintf("output piece %d %q is no single token of the model's tokenizer", j, t.Pieces[j])}
		}
		if t.DoneReason == "stop" {
			output = append(output, eot)
		}
		if len(output) != t.OutputTokens {
			return nil, st, &Mismatch{Step: t.Step, Why: fmt.Sprintf("%d output tokens rebuilt (done_reason %q), Ollama generated %d", len(output), t.DoneReason, t.OutputTokens)}
		}
		st.PromptTokens += len(prompt)
		st.OutputTokens += len(output)
		if len(seq.Tokens) == 0 || !hasPrefix(prompt, seq.Tokens) {
			flush()
			seq = trainer.Rollout{Reward: reward, Group: group}
		}
		for _, id := range prompt[len(seq.Tokens):] {
			seq.Tokens = append(seq.Tokens, id)
			seq.Mask = append(seq.Mask, false)
		}
		for _, id := range output {
			seq.Tokens = append(seq.Tokens, id)
			seq.Mask = append(seq.Mask, true)
		}
	}
	flush()
	st.Sequences = len(out)
	return out, st, nil
}

// checkPieces refuses a turn whose pieces cannot be its output: recorded without logprobs,
// a piece whose bytes Ollama lost (not whole UTF-8: it reports U+FFFD), or pieces that do
// not spell the reply Ollama parsed from them.
func checkPieces(t Turn) error {
	if t.Pieces == nil {
		return fmt.Errorf("recorded without logprobs (run the agent with Options.Logprobs)")
	}
	for j, p := range t.Pieces {
		if strings.ContainsRune(p, utf8.RuneError) {
			return fmt.Errorf("output piece %d is not whole UTF-8 (Ollama reports U+FFFD; its bytes are lost)", j)
		}
	}
	raw := strings.Join(t.Pieces, "")
	for _, part := range []struct{ what, text string }{
		{"thinking", t.Reply.Thinking}, {"content", t.Reply.Content},
	} {
		if s := strings.TrimSpace(part.text); !strings.Contains(raw, s) {
			return fmt.Errorf("the logprob pieces %.200q do not contain the reply's %s %.200q", raw, part.what, s)
		}
	}
	for _, c := range t.Reply.ToolCalls {
		if !strings.Contains(raw, c.Function.Name) {
			return fmt.Errorf("the logprob pieces %.200q do not contain the call of %s", raw, c.Function.Name)
		}
	}
	return nil
}

func hasPrefix(s, prefix []int) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}

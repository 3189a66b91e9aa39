package agent

import (
	"encoding/json"
	"fmt"
)

// Context management. The prompt prefix stays byte-identical from turn to turn so Ollama
// reuses its cache; only when the conversation nears num_ctx are old tool outputs shortened
// — in one batch, down to well below the limit, so the prefix changes rarely. The system
// prompt and the task are never touched.

const (
	shortenAbove   = 0.80 // start shortening when the estimate passes this share of num_ctx
	shortenTo      = 0.60 // and shorten down to this share
	keepRecent     = 4    // the newest messages are never shortened
	shortenedHead  = 400  // characters kept of a shortened output
	shortenedNote  = "\n[output shortened by frognano to fit the context window; run the tool again if you need it]"
	templateTokens = 2000 // tool schemas and chat markup, roughly
)

// estimateTokens is a conservative count: about three characters a token for code and logs.
func estimateTokens(msgs []messageSize) int {
	n := templateTokens
	for _, m := range msgs {
		n += m.chars/3 + 4
	}
	return n
}

type messageSize struct{ chars int }

func (e *episode) sizes() []messageSize {
	out := make([]messageSize, len(e.msgs))
	for i, m := range e.msgs {
		c := len(m.Content) + len(m.Thinking)
		for _, tc := range m.ToolCalls {
			b, _ := json.Marshal(tc.Function.Arguments.ToMap())
			c += len(tc.Function.Name) + len(b)
		}
		out[i] = messageSize{c}
	}
	return out
}

// fitContext shortens old tool outputs when the conversation nears num_ctx. It returns
// notes for the trajectory, and false when even the shortened conversation cannot fit
// with room for a reply.
func (e *episode) fitContext() ([]string, bool) {
	limit := e.opts.NumCtx
	est := estimateTokens(e.sizes())
	if est <= int(shortenAbove*float64(limit)) {
		return nil, true
	}
	var notes []string
	for i := 2; i < len(e.msgs)-keepRecent && est > int(shortenTo*float64(limit)); i++ {
		m := &e.msgs[i]
		if m.Role != "tool" || len(m.Content) <= shortenedHead+len(shortenedNote) {
			continue
		}
		before := len(m.Content)
		m.Content = m.Content[:shortenedHead] + shortenedNote
		est -= (before - len(m.Content)) / 3
		notes = append(notes, fmt.Sprintf("shortened tool output %d (%s) from %d to %d characters to fit num_ctx=%d", i, m.ToolName, before, len(m.Content), limit))
	}
	if len(notes) > 0 {
		e.notice(fmt.Sprintf("Shortened %d old tool outputs to fit the context window (num_ctx %d).", len(notes), limit))
	}
	return notes, est < limit-1024
}

package agent

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Context management. The prompt prefix stays byte-identical from turn to turn so Ollama
// reuses its cache; only when the conversation nears num_ctx are old tool outputs shortened
// — in one batch, down to well below the limit, so the prefix changes rarely. The system
// prompt and the task are never touched.

const (
	shortenAbove  = 0.80 // start shortening when the estimate passes this share of num_ctx
	shortenTo     = 0.60 // and shorten down to this share
	keepRecent    = 4    // the newest messages are never shortened
	shortenedHead = 400  // characters kept of a shortened output
	shortenedNote = "\n[output shortened by frognano to fit the context window; run the tool again if you need it]"
	// replyRoom is what must stay free for the model's next turn, at least.
	replyRoom = 1024
)

// tokensPerChar converts characters to tokens. It starts at a conservative 1/3 (code and
// logs in a BPE vocabulary) and is calibrated on every reply from the server's own count of
// the prompt, so it fits whatever tokenizer the model has.
func (e *episode) tokensPerChar() float64 {
	if e.ratio > 0 {
		return e.ratio
	}
	return 1.0 / 3
}

// promptChars counts the characters of the conversation plus the fixed part of every
// prompt (the tool schemas; chat markup is small and absorbed by the calibration).
func (e *episode) promptChars() int {
	n := len(toolsJSON())
	for _, m := range e.msgs {
		n += len(m.Role) + len(m.Content) + len(m.Thinking)
		for _, tc := range m.ToolCalls {
			b, _ := json.Marshal(tc.Function.Arguments.ToMap())
			n += len(tc.Function.Name) + len(b)
		}
	}
	return n
}

// calibrate records the server's prompt token count for the conversation just sent.
func (e *episode) calibrate(chars, promptTokens int) {
	if chars > 0 && promptTokens > 0 {
		e.ratio = float64(promptTokens) / float64(chars)
	}
}

// toolsJSON is computed on first use: the tool table is filled in by an init function,
// after package variables are initialized.
var toolsJSON = sync.OnceValue(func() []byte { b, _ := json.Marshal(apiTools()); return b })

func (e *episode) estimate() int { return int(float64(e.promptChars()) * e.tokensPerChar()) }

// ShortenedToolOutput is what an old tool output becomes when the conversation nears
// num_ctx (the trajectory's "shortened tool output" notes say which): its head and a note.
// Fine-tuning applies it again to rebuild the prompt the model saw.
func ShortenedToolOutput(s string) string {
	if len(s) <= shortenedHead+len(shortenedNote) {
		return s
	}
	return s[:shortenedHead] + shortenedNote
}

// fitContext shortens old tool outputs when the conversation nears num_ctx. It returns
// notes for the trajectory, and false when even the shortened conversation cannot fit
// with room for a reply.
func (e *episode) fitContext() ([]string, bool) {
	limit := e.opts.NumCtx
	est := e.estimate()
	if est <= int(shortenAbove*float64(limit)) {
		return nil, est < limit-replyRoom
	}
	var notes []string
	for i := 2; i < len(e.msgs)-keepRecent && est > int(shortenTo*float64(limit)); i++ {
		m := &e.msgs[i]
		if m.Role != "tool" || len(m.Content) <= shortenedHead+len(shortenedNote) {
			continue
		}
		before := len(m.Content)
		m.Content = ShortenedToolOutput(m.Content)
		est = e.estimate()
		notes = append(notes, fmt.Sprintf("shortened tool output %d (%s) from %d to %d characters to fit num_ctx=%d", i, m.ToolName, before, len(m.Content), limit))
	}
	if len(notes) > 0 {
		e.notice(fmt.Sprintf("Shortened %d old tool outputs to fit the context window (num_ctx %d).", len(notes), limit))
	}
	return notes, est < limit-replyRoom
}

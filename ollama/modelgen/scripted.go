package modelgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/frognano/frognano/ollama/modelgen/script"
)

// Turn, ToolCall and Script are package script's: the shipped frognano binary describes
// the demo's episode with them without linking the GGUF writer.
type (
	Turn     = script.Turn
	ToolCall = script.ToolCall
	Script   = script.Script
)

// triggerWord is what the template writes at the end of the prompt for the step-th turn
// (0-based): "zq" and then one "q" per assistant message already in the history. BPE merges
// make each such word a single token, so the prompt's last token names the step, and a
// bigram model can map it to that turn's first output token.
func triggerWord(step int) string { return "zq" + strings.Repeat("q", step) }

// Scripted writes a model to path that makes a real Ollama server reply with script.Turns
// in order, deterministically, at any sampling temperature.
//
// How: every layer weight is zero, so the residual stream carries only the token
// embedding and the model is a bigram table. Each token that takes part in the script gets
// a one-hot embedding slot of its own, and the output row of its successor a large weight
// in that slot. A turn's text is a few output-only tokens that BPE never produces from a
// prompt; turns are told apart by the trigger word the template ends the prompt with.
// Past the last turn the model answers with an empty message.
func Scripted(path string, arch Arch, script Script) (*Model, error) {
	v := newVocab()
	specials := map[string]int32{}
	for _, s := range []string{EndOfText, ImStart, ImEnd} {
		specials[s] = v.add(s, tokenControl)
	}
	// successor[t] = the token that follows token t; t absent means "end the message".
	successor := map[int32]int32{}
	var triggers []int32
	if script.Renderer != "" {
		if len(script.Turns) != 1 {
			return nil, fmt.Errorf("modelgen: a script for a built-in renderer has exactly one turn, not %d", len(script.Turns))
		}
		triggers = append(triggers, v.byteID('\n'))
	}
	for step := range script.Turns {
		if script.Renderer != "" {
			break
		}
		w := triggerWord(step)
		if step == 0 {
			v.merges = append(v.merges, "z q")
			triggers = append(triggers, v.add(w, tokenNormal))
			continue
		}
		triggers = append(triggers, v.addWord(w))
	}
	var chain []int32 // every token with a successor, each needs a slot
	for step, turn := range script.Turns {
		pieces, err := turnPieces(turn)
		if err != nil {
			return nil, fmt.Errorf("modelgen: turn %d: %w", step+1, err)
		}
		prev := triggers[step]
		chain = append(chain, prev)
		for _, p := range pieces {
			ids, err := v.addPiece(p)
			if err != nil {
				return nil, fmt.Errorf("modelgen: turn %d: %w", step+1, err)
			}
			for _, id := range ids {
				successor[prev] = id
				prev = id
				chain = append(chain, id)
			}
		}
		successor[prev] = specials[ImEnd]
	}

	// Slot 0 is shared by every token outside the script; it leads to <|im_end|>.
	hidden := 64 * ((len(chain) + 1 + 63) / 64)
	s := shapeFor(hidden)
	slot := map[int32]int{}
	for i, id := range chain {
		slot[id] = i + 1
	}
	n := len(v.tokens)
	embd, out := newMatrix(n, hidden), newMatrix(n, hidden)
	for id := 0; id < n; id++ {
		embd.set(id, slot[int32(id)], 1)
	}
	// After RMS norm a one-hot slot holds sqrt(hidden); aim for a logit margin of 60 so the
	// chosen token keeps probability ~1 whatever the temperature, top_k or top_p.
	w := float32(60 / math.Sqrt(float64(hidden)))
	out.set(int(specials[ImEnd]), 0, w)
	for from, to := range successor {
		out.set(int(to), slot[from], w)
	}

	if err := writeGGUF(path, arch, s, v, embd, out, func(*matrix) {}); err != nil {
		return nil, err
	}
	tmpl := chatTemplate(!script.NoTools, !script.NoThinking, true)
	if script.Renderer != "" {
		tmpl = ""
	}
	return &Model{
		Path:          path,
		Template:      tmpl,
		Renderer:      script.Renderer,
		Parser:        script.Parser,
		Parameters:    map[string]any{"stop": []string{ImEnd}},
		ContextLength: s.context,
	}, nil
}

// turnPieces splits a turn into the texts that must start on a token of their own: the
// server's tool parser drops a call whose chunk also carries text before <tool_call>.
func turnPieces(t Turn) ([]string, error) {
	var pieces []string
	if t.Thinking != "" {
		pieces = append(pieces, "<think>"+t.Thinking+"</think>\n")
	}
	if t.Content != "" {
		pieces = append(pieces, t.Content)
	}
	for _, c := range t.ToolCalls {
		call, err := FormatToolCall(c)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, call)
	}
	return pieces, nil
}

// FormatToolCall renders a call the way the scripted template describes them: JSON with the
// name first (the server's parser takes the first tool name it sees) inside <tool_call>.
func FormatToolCall(c ToolCall) (string, error) {
	name, err := marshal(c.Name)
	if err != nil {
		return "", err
	}
	args := c.Arguments
	if args == nil {
		args = map[string]any{}
	}
	a, err := marshal(args)
	if err != nil {
		return "", fmt.Errorf("tool call %s: %w", c.Name, err)
	}
	return "<tool_call>\n{\"name\": " + name + ", \"arguments\": " + a + "}\n</tool_call>", nil
}

func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

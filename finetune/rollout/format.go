// Package rollout runs the agent on training tasks and turns its trajectories into the
// trainer's rollouts.
//
// [Run] (runner.go) is the rollout runner: a group of G episodes of agent.Run per task,
// each on a private copy of the task's base commit with its patch, over one or more Ollama
// hosts, rewarded by a [Scorer]; one record per episode under an output folder (record.go),
// resumable.
//
// It turns the agent's trajectories into the trainer's rollouts, token-exact:
// every turn's prompt is rendered as Ollama rendered it, with Ollama's own renderer or
// template code, and every output is the model's own tokens, taken from the per-token
// logprobs recorded with the turn. Both are checked against Ollama's token counts for the
// turn; an episode that disagrees anywhere is refused with a [*Mismatch] that says where.
//
// Entry points: [Run], [FormatOf] (the chat format of a model, from Ollama's Show), [Read] (a
// trajectory file), [Build] (its rollouts, tokenized by the trainer) and [BuildGroup] (a
// finished group of Run's).
package rollout

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
	"github.com/ollama/ollama/template"
	"github.com/ollama/ollama/thinking"
	"github.com/ollama/ollama/types/model"
)

// Format is how Ollama (v0.17.4) turns a chat request for one model into its prompt text.
type Format struct {
	// Renderer is the built-in renderer's name (FrogNano: "nemotron-3-nano"); when empty,
	// Template renders.
	Renderer string
	Template *template.Template
	// System and Messages are the model's own SYSTEM and MESSAGE lines, which the server
	// puts before a request's messages.
	System   string
	Messages []api.Message
	// Family is the model family; "qwen3" makes the server strip <think> blocks from the
	// content of assistant messages before the last user message.
	Family string
	// Thinking: the model has the thinking capability, so a request without think is
	// rendered with think on.
	Thinking bool
	// EndOfTurn is the text of the token that ends the model's turn. Ollama reports no
	// logprob for it but counts it in eval_count; it is taken to be the model's first stop
	// parameter (every format registered here is ChatML: "<|im_end|>").
	EndOfTurn string
}

// FormatOf reads a model's format from Ollama's answer to Show.
func FormatOf(show *api.ShowResponse) (*Format, error) {
	f := &Format{
		Renderer:  cmp.Or(show.Renderer, modelfileLine(show.Modelfile, "RENDERER")),
		System:    show.System,
		Messages:  show.Messages,
		Family:    show.Details.Family,
		EndOfTurn: firstStop(show.Parameters),
	}
	for _, c := range show.Capabilities {
		f.Thinking = f.Thinking || c == model.CapabilityThinking
	}
	if f.Renderer == "" {
		t, err := template.Parse(show.Template)
		if err != nil {
			return nil, fmt.Errorf("rollout: the model's template does not parse: %w", err)
		}
		f.Template = t
	}
	if f.EndOfTurn == "" {
		f.EndOfTurn = "<|im_end|>"
	}
	return f, nil
}

// modelfileLine is the value of a Modelfile command: v0.17.4's Show reports the renderer
// only there.
func modelfileLine(mf, cmd string) string {
	for _, line := range strings.Split(mf, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.EqualFold(k, cmd) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// firstStop is the first `stop` value in Show's parameters text (`stop "<|im_end|>"`).
func firstStop(params string) string {
	for _, line := range strings.Split(params, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == "stop" {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

// Prompt renders the prompt Ollama builds for a chat request with these messages, tools
// and think setting (the agent sends think:true or nothing), as the server's ChatHandler
// and chatPrompt do: the model's messages first, its system message unless the request
// starts with one, <think> stripped from earlier turns for the qwen3 family, think on for
// a thinking model, then the renderer or the template. The server's truncation of a prompt
// longer than num_ctx is not reproduced: the count check catches it.
func (f *Format) Prompt(msgs []api.Message, tools api.Tools, think bool) (string, error) {
	all := append(append([]api.Message{}, f.Messages...), msgs...)
	if len(msgs) > 0 && msgs[0].Role != "system" && f.System != "" {
		all = append([]api.Message{{Role: "system", Content: f.System}}, all...)
	}
	if f.Family == "qwen3" {
		all = stripThinkTags(all)
	}
	var tv *api.ThinkValue
	if think || f.Thinking {
		tv = &api.ThinkValue{Value: true}
	}
	// The built-in parsers the formats here use (nemotron-3-nano, qwen3-coder) hand the
	// tools to the renderer unchanged (their Init).
	if f.Renderer != "" {
		return renderers.RenderWithRenderer(f.Renderer, all, tools, tv)
	}
	var b bytes.Buffer
	err := f.Template.Execute(&b, template.Values{Messages: all, Tools: tools, Think: tv != nil && tv.Bool(),
		ThinkLevel: tv.String(), IsThinkSet: tv != nil})
	return b.String(), err
}

// stripThinkTags is the server's filterThinkTags: the thinking of assistant messages before
// the last user message is dropped from their content.
func stripThinkTags(msgs []api.Message) []api.Message {
	last := -1
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	for i, m := range msgs {
		if m.Role == "assistant" && i < last {
			p := &thinking.Parser{OpeningTag: "<think>", ClosingTag: "</think>"}
			_, msgs[i].Content = p.AddContent(m.Content)
		}
	}
	return msgs
}

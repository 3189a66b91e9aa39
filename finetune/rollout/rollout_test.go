package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/template"

	"github.com/frognano/frognano/finetune/trainer"
)

// byteTokenizer is one token per byte, "|" (the end of turn) as token 0: enough to check
// Build's bookkeeping; the real tokenizer is the trainer's (e2e_test.go).
type byteTokenizer struct{}

func (byteTokenizer) Tokenize(_ context.Context, req trainer.TokenizeRequest) (*trainer.Tokenized, error) {
	var out trainer.Tokenized
	for _, s := range req.Texts {
		var ids []int
		for _, b := range []byte(s) {
			if b == '|' { // a special token, parsed in text as Ollama does
				b = 0
			}
			ids = append(ids, int(b))
		}
		out.Texts = append(out.Texts, ids)
	}
	for _, ps := range req.Pieces {
		var ids []int
		for _, p := range ps {
			switch {
			case p == "|":
				ids = append(ids, 0)
			case len(p) == 1:
				ids = append(ids, int(p[0]))
			default:
				ids = append(ids, -1)
			}
		}
		out.Pieces = append(out.Pieces, ids)
	}
	return &out, nil
}

func testFormat(t *testing.T, keepHistory bool) *Format {
	t.Helper()
	// "[role]content|" per message, the assistant's as "[a]content|" as it produced it
	// after the prompt's "[a]"; without keepHistory, earlier assistant messages are rendered
	// as "[assistant]…|" (history rewritten).
	src := `{{ range .Messages }}{{ if eq .Role "assistant" }}[a]{{ else }}[{{ .Role }}]{{ end }}{{ .Content }}|{{ end }}[a]`
	if !keepHistory {
		src = `{{ range .Messages }}{{ if eq .Role "assistant" }}[assistant]…|{{ else }}[{{ .Role }}]{{ .Content }}|{{ end }}{{ end }}[a]`
	}
	tmpl, err := template.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return &Format{Template: tmpl, EndOfTurn: "|"}
}

func pieces(s string) []string { return strings.Split(s, "") }

// episode is two turns: "hi" with a tool call's result after it, then "ok".
func episode() *Episode {
	sys := []api.Message{{Role: "user", Content: "go"}}
	first := api.Message{Role: "assistant", Content: "hi"}
	second := append(append([]api.Message{}, sys...), first, api.Message{Role: "tool", Content: "r"})
	return &Episode{Turns: []Turn{
		{Step: 1, Messages: sys, Reply: first, Pieces: pieces("hi"), PromptTokens: len("[user]go|[a]"), OutputTokens: 3, DoneReason: "stop"},
		{Step: 2, Messages: second, Reply: api.Message{Role: "assistant", Content: "ok"}, Pieces: pieces("ok"),
			PromptTokens: len("[user]go|[assistant]hi|[tool]r|[a]"), OutputTokens: 3, DoneReason: "stop"},
	}}
}

func TestBuildJoinsTurnsThatExtend(t *testing.T) {
	ep := episode()
	ep.Turns[1].PromptTokens = len("[user]go|[a]hi|[tool]r|[a]")
	rs, st, err := Build(context.Background(), byteTokenizer{}, testFormat(t, true), ep, 1, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || st.Sequences != 1 || st.Turns != 2 {
		t.Fatalf("%d rollouts, stats %+v", len(rs), st)
	}
	var text, masked strings.Builder
	for i, id := range rs[0].Tokens {
		c := string(rune(id))
		if id == 0 {
			c = "|"
		}
		text.WriteString(c)
		if rs[0].Mask[i] {
			masked.WriteString(c)
		}
	}
	if text.String() != "[user]go|[a]hi|[tool]r|[a]ok|" || masked.String() != "hi|ok|" {
		t.Fatalf("tokens %q, trained %q", text.String(), masked.String())
	}
	if rs[0].Reward != 1 || rs[0].Group != "g" {
		t.Fatalf("rollout %+v", rs[0])
	}
}

func TestBuildSplitsWhereHistoryIsRewritten(t *testing.T) {
	ep := episode()
	ep.Turns[1].PromptTokens = len("[user]go|[assistant]…|[tool]r|[a]")
	rs, st, err := Build(context.Background(), byteTokenizer{}, testFormat(t, false), ep, 0, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || st.Sequences != 2 || st.OutputTokens != 6 {
		t.Fatalf("%d rollouts, stats %+v", len(rs), st)
	}
}

func TestBuildDropsWhatDisagrees(t *testing.T) {
	for _, c := range []struct {
		name, want string
		edit       func(*Episode)
	}{
		{"prompt count", "Ollama evaluated 99", func(e *Episode) { e.Turns[1].PromptTokens = 99 }},
		{"output count", "Ollama generated 4", func(e *Episode) { e.Turns[0].OutputTokens = 4 }},
		{"no end of turn at length", "Ollama generated 3", func(e *Episode) { e.Turns[0].DoneReason = "length" }},
		{"lost bytes", "not whole UTF-8", func(e *Episode) { e.Turns[0].Pieces = []string{"h", "\uFFFD"} }},
		{"not one token", "no single token", func(e *Episode) { e.Turns[0].Pieces = []string{"hi"} }},
		{"no logprobs", "without logprobs", func(e *Episode) { e.Turns[1].Pieces = nil }},
		{"pieces are not the reply", "do not contain the reply's content", func(e *Episode) { e.Turns[0].Reply.Content = "hello" }},
		{"call not in the pieces", "do not contain the call of Read", func(e *Episode) {
			e.Turns[0].Reply.ToolCalls = []api.ToolCall{{Function: api.ToolCallFunction{Name: "Read"}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep := episode()
			c.edit(ep)
			_, _, err := Build(context.Background(), byteTokenizer{}, testFormat(t, false), ep, 0, "g")
			var mm *Mismatch
			if !errors.As(err, &mm) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a mismatch saying %q", err, c.want)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	f, err := FormatOf(&api.ShowResponse{Modelfile: "FROM x\nRENDERER nemotron-3-nano\nPARSER nemotron-3-nano\n",
		Parameters: "num_ctx 8192\nstop \"<|im_end|>\"\nstop \"<|endoftext|>\"", Details: api.ModelDetails{Family: "qwen35"}})
	if err != nil || f.Renderer != "nemotron-3-nano" || f.EndOfTurn != "<|im_end|>" || f.Family != "qwen35" {
		t.Fatalf("%+v, %v", f, err)
	}
	if _, err := FormatOf(&api.ShowResponse{Template: "{{ .Nope"}); err == nil {
		t.Fatal("a broken template was accepted")
	}
}

package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/frognano/frognano/ollama/ollamatest"
	"github.com/ollama/ollama/api"
)

// chatML is the Go template registered for the byte tokenizer's ChatML (tokenizer.py).
const chatML = "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"

// exportTolerance bounds |Ollama's logprob - transformers'| for an f16 export (measured:
// README.md); a wrong RoPE base moves them by far more.
const exportTolerance = 0.02

// agreement compares Ollama's next-token distribution after a prompt with the trainer's.
type agreement struct {
	maxDiff float64
	matched int
	skipped bool // Ollama reported nothing for the most likely next token (see compare)
}

// compare asks Ollama (raw prompt, no template; or a chat through the template) and the
// trainer (the same text tokenized, or the same messages rendered) for the top next tokens
// and matches them by their text. The prompt counts must agree: the same tokens were seen.
func compare(ctx context.Context, t *testing.T, c *api.Client, p *Process, model, text string, chat bool) (agreement, error) {
	const k = 5
	req := LogprobsRequest{Text: text, TopK: k}
	if chat {
		req = LogprobsRequest{Messages: []Message{{Role: "user", Content: text}}, TopK: k}
	}
	want, err := p.Logprobs(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string]any{"temperature": 0, "num_predict": 1, "num_ctx": 256, "seed": 1}
	var got []api.Logprob
	var promptCount int
	if chat {
		err = c.Chat(ctx, &api.ChatRequest{Model: model, Messages: []api.Message{{Role: "user", Content: text}},
			Logprobs: true, TopLogprobs: k, Options: opts, Stream: new(bool)}, func(r api.ChatResponse) error {
			got = append(got, r.Logprobs...)
			promptCount = max(promptCount, r.PromptEvalCount)
			return nil
		})
	} else {
		err = c.Generate(ctx, &api.GenerateRequest{Model: model, Prompt: text, Raw: true,
			Logprobs: true, TopLogprobs: k, Options: opts, Stream: new(bool)}, func(r api.GenerateResponse) error {
			got = append(got, r.Logprobs...)
			promptCount = max(promptCount, r.PromptEvalCount)
			return nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if promptCount != len(want.Tokens) {
		return agreement{}, fmt.Errorf("%q: Ollama evaluated %d prompt tokens, transformers %d", text, promptCount, len(want.Tokens))
	}
	top := want.Top[0].Token
	if len(got) == 0 && (strings.HasPrefix(top, "<|") && strings.HasSuffix(top, "|>") ||
		!utf8.Valid(toBytes(want.Top[0].Bytes))) {
		// Greedy decoding stopped at once, or its one token is a control token or part of a
		// UTF-8 character, which Ollama does not show: it reports nothing to compare.
		return agreement{skipped: true}, nil
	}
	if len(got) == 0 || len(got[0].TopLogprobs) == 0 {
		return agreement{}, fmt.Errorf("%q: Ollama returned no top logprobs (transformers' top: %v)", text, want.Top)
	}
	var a agreement
	for _, o := range got[0].TopLogprobs {
		// Ollama spells a piece that is not whole UTF-8 as U+FFFD (its bytes are lost): such a
		// piece matches any transformers piece that is not valid UTF-8, the closest in logprob.
		lossy := strings.ContainsRune(o.Token, utf8.RuneError)
		best := math.Inf(1)
		for _, w := range want.Top {
			b := toBytes(w.Bytes)
			if lossy && !utf8.Valid(b) || !lossy && string(b) == o.Token {
				best = min(best, math.Abs(o.Logprob-w.Logprob))
			}
		}
		if !math.IsInf(best, 1) {
			a.matched++
			a.maxDiff = max(a.maxDiff, best)
		}
	}
	// The top tokens are the same ones, up to a near-tie at the k-th place.
	if a.matched < k-1 {
		return a, fmt.Errorf("%q: only %d of Ollama's top %d tokens are in transformers' (Ollama %v, transformers %v)",
			text, a.matched, k, got[0].TopLogprobs, want.Top)
	}
	if a.maxDiff > exportTolerance {
		return a, fmt.Errorf("%q: logprobs differ by up to %.4f (tolerance %.3f)", text, a.maxDiff, exportTolerance)
	}
	return a, nil
}

func toBytes(b []int) []byte {
	out := make([]byte, len(b))
	for i, x := range b {
		out[i] = byte(x)
	}
	return out
}

var prompts = []string{
	"Hello, world!",
	"The tests in ./finetune pass on two cores.",
	"The quick brown fox jumps over the lazy dog.",
	"func main() { fmt.Println(\"hi\") }",
	"Once upon a time, in a repository far away, a test failed because",
	"1, 2, 3, 5, 8, 13, 21,",
}

// TestExportIsProvenRight is issue 11's "an export is proven right": a tiny random model,
// trained so that its adapter is non-zero, merged and exported in f16, imported into the real
// Ollama, and served next-token log probabilities compared with transformers' on the same
// tokens; then the same export with a wrong RoPE base must fail the comparison. For a Llama
// (llama.cpp runner) and a Qwen3.5 (Ollama's Go engine).
func TestExportIsProvenRight(t *testing.T) {
	py := python(t)
	srv := ollamatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, _, err := Start(ctx, Options{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	for _, arch := range []string{"llama", "qwen3_5"} {
		t.Run(arch, func(t *testing.T) { proveExport(ctx, t, srv, p, arch) })
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func proveExport(ctx context.Context, t *testing.T, srv *ollamatest.Server, p *Process, arch string) {
	// A vocabulary the byte tokenizer fits (256 bytes + ChatML + reserved), and weights
	// large enough for sharp, position-dependent next-token distributions.
	if _, err := p.Load(ctx, Load{Random: &RandomModel{Arch: arch, VocabSize: 320, InitializerRange: 0.2},
		LR: 1e-2, Device: "cpu"}); err != nil {
		t.Fatal(err)
	}
	before, err := p.Logprobs(ctx, LogprobsRequest{Text: prompts[0]})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if tr, err := p.Train(ctx, rollouts()); err != nil || tr.Steps != 1 {
			t.Fatalf("train: %+v, %v", tr, err)
		}
	}
	after, err := p.Logprobs(ctx, LogprobsRequest{Text: prompts[0]})
	if err != nil {
		t.Fatal(err)
	}
	if before.Top[0].Logprob == after.Top[0].Logprob {
		t.Fatal("two train steps left the model's distribution unchanged: the adapter is zero")
	}
	dir := filepath.Join(t.TempDir(), "merged")
	ex, err := p.MergeExport(ctx, dir, "float16")
	if err != nil || len(ex.Problems) != 0 {
		t.Fatalf("merge_export: %+v, %v", ex, err)
	}

	name := "tiny-" + arch + "-ft:1"
	start := time.Now()
	req := ImportRequest{Name: name, Dir: dir, Template: chatML,
		Parameters: map[string]any{"stop": []string{"<|im_end|>", "<|endoftext|>"}, "num_ctx": 256}}
	if err := Import(ctx, srv.Client, req, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("import: %v", time.Since(start))
	if err := Import(ctx, srv.Client, req, nil); !errors.Is(err, ErrModelExists) {
		t.Fatalf("a second import under the same name: %v", err)
	}
	show, err := srv.Client.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil || show.Template != chatML || !strings.Contains(show.Parameters, "<|im_end|>") {
		t.Fatalf("show: template %q parameters %q, %v", show.Template, show.Parameters, err)
	}

	var worst agreement
	for _, chat := range []bool{false, true} {
		compared := 0
		for _, text := range prompts {
			a, err := compare(ctx, t, srv.Client, p, name, text, chat)
			if err != nil {
				t.Fatalf("chat=%v: %v", chat, err)
			}
			if !a.skipped {
				compared++
			}
			worst.maxDiff = max(worst.maxDiff, a.maxDiff)
		}
		t.Logf("%s chat=%v: %d of %d prompts compared", arch, chat, compared, len(prompts))
		if compared < 3 {
			t.Fatalf("chat=%v: only %d prompts compared (see agreement.skipped)", chat, compared)
		}
	}
	t.Logf("%s f16 export: max |logprob difference| %.5f over the top 5 after %d prompts, raw and through the chat template", arch, worst.maxDiff, len(prompts))

	// q8_0, as for real use on widths that are not multiples of 256: imported and served.
	q8 := "tiny-" + arch + "-ft:1-q8_0"
	// The base's SYSTEM prompt and MESSAGE lines come along (the loop passes Show's).
	msgs := []api.Message{{Role: "user", Content: "What is 2+2?"}, {Role: "assistant", Content: "4"}}
	if err := Import(ctx, srv.Client, ImportRequest{Name: q8, Dir: dir, Template: chatML, Quantize: "q8_0", System: "You fix Go code.", Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	if s, err := srv.Client.Show(ctx, &api.ShowRequest{Model: q8}); err != nil || s.System != "You fix Go code." || len(s.Messages) != 2 || s.Messages[1].Content != "4" {
		t.Fatalf("show %s: system %q messages %+v, %v", q8, s.System, s.Messages, err)
	}
	if s, err := srv.Client.Show(ctx, &api.ShowRequest{Model: q8}); err != nil || s.Details.QuantizationLevel != "Q8_0" {
		t.Fatalf("q8_0 import: %+v, %v", s, err)
	}
	if err := srv.Client.Generate(ctx, &api.GenerateRequest{Model: q8, Prompt: prompts[0], Raw: true, Stream: new(bool),
		Options: map[string]any{"num_predict": 2, "num_ctx": 256}}, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatalf("q8_0 model: %v", err)
	}
	if err := Import(ctx, srv.Client, ImportRequest{Name: "x", Dir: dir, Quantize: "q3_K"}, nil); err == nil {
		t.Fatal("an unknown quantization was accepted")
	}

	// The same weights with a wrong RoPE base must fail the comparison.
	bad := filepath.Join(t.TempDir(), "bad-rope")
	copyDir(t, dir, bad)
	editJSON(t, filepath.Join(bad, "config.json"), func(m map[string]any) {
		// 100 instead of 10,000: Qwen3.5 rotates only a quarter of a head (4 of 16 dimensions
		// here), and 1e6 moved its logprobs by only 0.03 on 2 of 6 prompts
		m["rope_theta"] = 100
		m["rope_parameters"].(map[string]any)["rope_theta"] = 100
	})
	if err := Import(ctx, srv.Client, ImportRequest{Name: "tiny-" + arch + "-ft:bad-rope", Dir: bad, Template: chatML}, nil); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, chat := range []bool{false, true} {
		for _, text := range prompts {
			if _, err := compare(ctx, t, srv.Client, p, "tiny-"+arch+"-ft:bad-rope", text, chat); err != nil {
				t.Logf("wrong RoPE base, as it should: %v", err)
				failed++
			}
		}
	}
	// One failing prompt fails the proof; Qwen3.5 rotates a quarter of each head in one
	// layer of two, so fewer prompts show it than for the Llama.
	if failed == 0 {
		t.Fatal("an export with a wrong RoPE base passed the comparison: the check proves nothing")
	}
	t.Logf("%s with a wrong RoPE base: %d of %d comparisons fail", arch, failed, 2*len(prompts))

	// The same export with its chat template lost (a bare prompt) fails the chat comparison.
	lost := "tiny-" + arch + "-ft:lost-template"
	if err := Import(ctx, srv.Client, ImportRequest{Name: lost, Dir: dir, Template: "{{ .Prompt }}"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := compare(ctx, t, srv.Client, p, lost, prompts[0], true); err == nil {
		t.Fatal("an export with a lost chat template passed the chat comparison")
	} else {
		t.Logf("lost template, as it should: %v", err)
	}
}

// TestCheckExportRefuses: what Ollama would crash on, or load silently wrong, is refused
// before anything reaches the server.
func TestCheckExportRefuses(t *testing.T) {
	good := func(t *testing.T) string {
		d := t.TempDir()
		writeJSON(t, filepath.Join(d, "config.json"), map[string]any{
			"architectures": []string{"LlamaForCausalLM"}, "num_hidden_layers": 2, "num_attention_heads": 4,
			"num_key_value_heads": 2, "hidden_size": 64, "intermediate_size": 128, "vocab_size": 320,
			"rope_theta": 10000, "rope_parameters": map[string]any{"rope_theta": 10000}})
		writeJSON(t, filepath.Join(d, "tokenizer.json"), map[string]any{})
		writeJSON(t, filepath.Join(d, "tokenizer_config.json"), map[string]any{"chat_template": "x", "eos_token": "<|im_end|>"})
		return d
	}
	if err := CheckExport(good(t)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file, want string
		edit             func(map[string]any)
	}{
		{"architecture", "config.json", `"Qwen3ForCausalLM" is not one`, func(m map[string]any) { m["architectures"] = []string{"Qwen3ForCausalLM"} }},
		{"layers", "config.json", "lacks num_hidden_layers", func(m map[string]any) { delete(m, "num_hidden_layers") }},
		{"rope", "config.json", "top-level rope_theta", func(m map[string]any) { delete(m, "rope_theta") }},
		{"template", "tokenizer_config.json", "no chat_template", func(m map[string]any) { delete(m, "chat_template") }},
		{"eos", "tokenizer_config.json", "no eos_token", func(m map[string]any) { delete(m, "eos_token") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := good(t)
			editJSON(t, filepath.Join(d, c.file), c.edit)
			if err := CheckExport(d); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := readJSON(path, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	writeJSON(t, path, m)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

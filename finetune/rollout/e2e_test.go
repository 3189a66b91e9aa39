package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/finetune/rollout"
	"github.com/frognano/frognano/finetune/trainer"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// trainerPython returns the trainer's interpreter, or skips the test when its virtual
// environment has not been built, except under CI, where that is a failure (as the
// trainer package's own tests do).
func trainerPython(t *testing.T) string {
	t.Helper()
	p := trainer.Python()
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no trainer Python at %s under CI: scripts/setup.sh should have run `frognano finetune setup`", p)
		}
		t.Skipf("no trainer Python at %s: run `go run ./cmd/frognano finetune setup` to run this test", p)
	}
	return p
}

// chatFormat is one way the project registers a model's chat format with Ollama.
type chatFormat struct {
	name     string
	template string
	renderer string // with the parser of the same name (FrogNano's pair)
	params   map[string]any
}

var (
	frogNanoFormat = chatFormat{name: "frognano", renderer: ollama.FrogNanoRenderer, params: ollama.FrogNanoParameters(8192)}
	// the template registered for SmolLM2 and the random test models, and its thinking form
	chatMLFormat         = chatFormat{name: "chatml", template: modelgen.ChatMLTemplate(true, false), params: stopIMEnd}
	chatMLThinkingFormat = chatFormat{name: "chatml-thinking", template: modelgen.ChatMLTemplate(true, true), params: stopIMEnd}
	stopIMEnd            = map[string]any{"stop": []string{"<|im_end|>"}, "num_ctx": 8192}
)

func importAs(ctx context.Context, t *testing.T, c *api.Client, name, dir string, f chatFormat) {
	t.Helper()
	req := trainer.ImportRequest{Name: name, Dir: dir, Template: f.template, Parameters: f.params}
	if f.renderer != "" {
		req.Renderer, req.Parser = f.renderer, f.renderer
	}
	if err := trainer.Import(ctx, c, req, nil); err != nil {
		t.Fatal(err)
	}
}

// TestTrainOnAgentRollouts is issue 11's end-to-end test on CPU, for a tiny random
// Qwen3.5 (Ollama's Go engine, imported with FrogNano's renderer and parser) and a tiny
// Llama (llama.cpp, imported with the ChatML templates): the model, exported by the trainer
// and imported into the real Ollama, runs a group of agent episodes with logprobs; every
// episode becomes rollouts token-exactly (each turn's prompt count equal to Ollama's
// prompt_eval_count, each output token one of Ollama's logprob pieces, their count equal
// to eval_count); the test gives the episodes different rewards; GRPO steps change the
// adapter; the merged export is imported as a new tag and answers a chat.
func TestTrainOnAgentRollouts(t *testing.T) {
	py := trainerPython(t)
	srv := ollamatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // 6 minutes at load 25
	defer cancel()
	p, _, err := trainer.Start(ctx, trainer.Options{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	for _, c := range []struct {
		arch    string
		formats []chatFormat // the first is trained on; every one is checked token-exact
	}{
		{"llama", []chatFormat{chatMLFormat, chatMLThinkingFormat}},
		{"qwen3_5", []chatFormat{frogNanoFormat}},
	} {
		t.Run(c.arch, func(t *testing.T) { trainOnRollouts(ctx, t, srv, p, c.arch, c.formats) })
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func trainOnRollouts(ctx context.Context, t *testing.T, srv *ollamatest.Server, p *trainer.Process, arch string, formats []chatFormat) {
	start := time.Now()
	if _, err := p.Load(ctx, trainer.Load{Random: &trainer.RandomModel{Arch: arch, VocabSize: 320, InitializerRange: 0.2, TextOutput: true},
		LR: 1e-2, Device: "cpu"}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base")
	if ex, err := p.MergeExport(ctx, base, "float16"); err != nil || len(ex.Problems) > 0 {
		t.Fatalf("merge_export: %+v, %v", ex, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var batch trainer.Batch
	for _, f := range formats {
		name := fmt.Sprintf("tiny-%s-%s:0", arch, f.name)
		importAs(ctx, t, srv.Client, name, base, f)
		format := formatOf(t, srv.Client, name)
		episodes := 1 // for a format only checked
		if f.name == formats[0].name {
			episodes = 2 // a group, for the format trained on
		}
		for i := range episodes {
			t0 := time.Now()
			traj := filepath.Join(t.TempDir(), "traj.jsonl")
			res, err := agent.Run(ctx, srv.Client, agent.Task{Dir: dir, Instruction: "Say hello."}, agent.Options{
				Model: name, Logprobs: true, Trajectory: traj, NumCtx: 8192, MaxSteps: 2, MaxTokensPerTurn: 24,
				Temperature: agent.Temp(1), TopP: 1, TopK: 100})
			if err != nil {
				t.Fatal(err)
			}
			ep, err := rollout.Read(traj)
			if err != nil {
				t.Fatal(err)
			}
			// The test's rewards differ within the group: the second episode "solved" it.
			reward := float64(i % 2)
			rs, st, err := rollout.Build(ctx, p, format, ep, reward, "say-hello")
			var mm *rollout.Mismatch
			if errors.As(err, &mm) {
				t.Fatalf("%s episode %d (exit %s): %v", f.name, i, res.Exit, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s episode %d: exit %s, %d turns -> %d sequences, %d prompt and %d output tokens equal to Ollama's counts (%v)",
				f.name, i, res.Exit, st.Turns, st.Sequences, st.PromptTokens, st.OutputTokens, time.Since(t0).Round(time.Millisecond))
			if f.name == formats[0].name {
				batch.Rollouts = append(batch.Rollouts, rs...)
			}
		}
	}

	cachedPromptCount(ctx, t, srv.Client, p, fmt.Sprintf("tiny-%s-%s:0", arch, formats[0].name))

	probe := trainer.LogprobsRequest{Tokens: batch.Rollouts[0].Tokens[:len(batch.Rollouts[0].Tokens)-1]}
	before, err := p.Logprobs(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := p.MetricsDigest(ctx)
	if err != nil || len(digest.AdapterDigests) != 1 {
		t.Fatalf("adapter digest: %+v, %v", digest, err)
	}
	t.Logf("%s: load, export, import and %d episodes: %v", arch, len(batch.Rollouts), time.Since(start).Round(time.Millisecond))
	tr, err := p.Train(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	steps := tr.Steps
	after, err := p.Logprobs(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	// The adapter itself must change; the probe's top logprob may not show it when the
	// random model is already sure of its next token (0 before and after, seen once in CI).
	changed, err := p.MetricsDigest(ctx)
	if err != nil || len(changed.AdapterDigests) != 1 {
		t.Fatalf("adapter digest: %+v, %v", changed, err)
	}
	if steps == 0 || changed.AdapterDigests[0] == digest.AdapterDigests[0] {
		t.Fatalf("%d GRPO steps left the adapter unchanged (top next token %+v -> %+v)", steps, before.Top[0], after.Top[0])
	}

	t.Logf("%s: a train request: %v", arch, time.Since(start).Round(time.Millisecond))
	trained := filepath.Join(t.TempDir(), "trained")
	if ex, err := p.MergeExport(ctx, trained, "float16"); err != nil || len(ex.Problems) > 0 {
		t.Fatalf("merge_export: %+v, %v", ex, err)
	}
	name := fmt.Sprintf("tiny-%s-%s:1", arch, formats[0].name)
	importAs(ctx, t, srv.Client, name, trained, formats[0])
	var resp api.ChatResponse
	err = srv.Client.Chat(ctx, &api.ChatRequest{Model: name, Stream: new(bool),
		Messages: []api.Message{{Role: "user", Content: "Hello?"}},
		Options:  map[string]any{"num_predict": 8, "num_ctx": 512}}, func(r api.ChatResponse) error { resp = r; return nil })
	if err != nil || !resp.Done || resp.EvalCount == 0 {
		t.Fatalf("the trained model did not answer: %+v, %v", resp, err)
	}
	if !slices.Contains([]string{"stop", "length"}, resp.DoneReason) {
		t.Fatalf("done reason %q", resp.DoneReason)
	}
	t.Logf("%s: %d rollouts, %d GRPO steps, next-token logprob %.4f -> %.4f; %s answered %q (%d tokens); %v in all",
		arch, len(batch.Rollouts), steps, before.Top[0].Logprob, after.Top[0].Logprob, name,
		resp.Message.Thinking+resp.Message.Content, resp.EvalCount, time.Since(start).Round(time.Millisecond))
}

// cachedPromptCount measures what prompt_eval_count counts when Ollama can reuse its cache:
// a second request that extends the first (its reply and a new user message; the runner
// holds the first prompt's prefix) must report the whole prompt's token count, not only
// the tokens evaluated after the cached prefix. (The reuse itself does not show in the
// prompt eval times of so tiny a model on a loaded machine; both runners count
// numPromptInputs, the tokenized prompt, before the cache is consulted.)
func cachedPromptCount(ctx context.Context, t *testing.T, c *api.Client, p *trainer.Process, model string) {
	t.Helper()
	f := formatOf(t, c, model)
	msgs := []api.Message{{Role: "user", Content: "Count the files in this repository, please."}}
	opts := map[string]any{"num_predict": 6, "num_ctx": 1024, "temperature": 0}
	var counts []int
	var evalMs []float64
	for range 2 {
		var resp api.ChatResponse
		if err := c.Chat(ctx, &api.ChatRequest{Model: model, Messages: msgs, Stream: new(bool), Options: opts},
			func(r api.ChatResponse) error { resp = r; return nil }); err != nil {
			t.Fatal(err)
		}
		prompt, err := f.Prompt(msgs, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := p.Tokenize(ctx, trainer.TokenizeRequest{Texts: []string{prompt}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ids.Texts[0]) != resp.PromptEvalCount {
			t.Fatalf("request %d: prompt_eval_count %d, the prompt is %d tokens", len(counts)+1, resp.PromptEvalCount, len(ids.Texts[0]))
		}
		counts = append(counts, resp.PromptEvalCount)
		evalMs = append(evalMs, float64(resp.PromptEvalDuration.Microseconds())/1000)
		msgs = append(msgs, resp.Message, api.Message{Role: "user", Content: "And again?"})
	}
	t.Logf("%s: prompt_eval_count %v = the whole prompts' token counts (prompt eval %v ms)", model, counts, evalMs)
}

package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// BenchmarkEpisode20Steps runs a scripted 20-step episode (19 turns of cheap tool calls
// and an answer) through agent.Run against a real Ollama server, on each engine, and
// reports from the trajectory where the time goes and whether the prompt cache works:
//
//	overhead-ms/step     scaffold time per step that is neither the model nor the tools
//	overhead-%-of-wall   those overheads summed, over the episode's wall time
//	untracked-ms/ep      wall time in no step at all: copy, sandbox, diff, trajectory syncs
//	model-ms/step, tools-ms/step
//	prompt-eval-ms-late  prompt evaluation time of the last 5 turns (mean)
//	prompt-tokens-late   their prompt size as Ollama reports it: always the whole prompt
//	new-tokens-late      how much each of them added to the previous prompt (mean)
//	prompt-eval-ms-cold  the last turn's prompt sent again (after the first episode) with
//	prompt-tokens-cold   its system message changed, so nothing comes from the cache
//	cold/late-x          prompt-eval-ms-cold over prompt-eval-ms-late
//
// With the cache working, prompt-eval-ms-late tracks new-tokens-late, not
// prompt-tokens-late, and is far below prompt-eval-ms-cold.
//
//	go test -run '^$' -bench Episode -benchtime 3x ./agent/
func BenchmarkEpisode20Steps(b *testing.B) {
	srv := ollamatest.Start(b)
	for _, arch := range modelgen.Arches {
		b.Run(string(arch), func(b *testing.B) { benchEpisode(b, srv, arch) })
	}
}

const benchNumCtx = 16384

// benchRecorder passes requests on to the server and keeps the latest one.
type benchRecorder struct {
	*api.Client
	mu   sync.Mutex
	last api.ChatRequest
}

func (r *benchRecorder) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	r.mu.Lock()
	r.last = *req
	r.last.Messages = slices.Clone(req.Messages)
	r.mu.Unlock()
	return r.Client.Chat(ctx, req, fn)
}

type benchStep struct {
	Type   string `json:"type"`
	Step   int    `json:"step"`
	Tokens struct {
		Prompt       int     `json:"prompt"`
		Output       int     `json:"output"`
		PromptEvalMs float64 `json:"prompt_eval_ms"`
	} `json:"tokens"`
	TimingMs struct {
		Model, Tools, Overhead float64
	} `json:"timing_ms"`
	Tools []agent.ToolRecord `json:"tools"`
}

func benchCall(name string, args map[string]any) modelgen.Turn {
	return modelgen.Turn{ToolCalls: []modelgen.ToolCall{{Name: name, Arguments: args}}}
}

// benchRepo is a small Go project: eight files of 7 lines and a README.
func benchRepo(b *testing.B) string {
	dir := b.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("go.mod", "module example.com/bench\n\ngo 1.22\n")
	write("README.md", "# bench\n\nA small package for the agent benchmark.\n\nStatus: draft\n")
	for i := range 8 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "package pkg\n\n// marker %d\n", i)
		for j := range 1 {
			fmt.Fprintf(&sb, "\n// F%d_%d returns its argument plus %d.\nfunc F%d_%d(x int) int {\n\treturn x + %d\n}\n", i, j, j, i, j, j)
		}
		write(fmt.Sprintf("pkg/f%d.go", i), sb.String())
	}
	return dir
}

// benchScript is 19 tool turns (Read, Glob, Edit and two Bash `true`) and an answer.
func benchScript() modelgen.Script {
	read := func(p string) modelgen.Turn { return benchCall("Read", map[string]any{"file_path": p}) }
	edit := func(p string, i int) modelgen.Turn {
		return benchCall("Edit", map[string]any{"file_path": p, "old_string": fmt.Sprintf("// marker %d\n", i), "new_string": fmt.Sprintf("// marker %d, reviewed\n", i)})
	}
	return modelgen.Script{Turns: []modelgen.Turn{
		benchCall("Glob", map[string]any{"pattern": "**/*.go"}),
		read("pkg/f0.go"),
		read("pkg/f1.go"),
		edit("pkg/f0.go", 0),
		read("pkg/f2.go"),
		benchCall("Bash", map[string]any{"command": "true", "description": "Check the shell"}),
		benchCall("Glob", map[string]any{"pattern": "pkg/*.go"}),
		read("pkg/f3.go"),
		edit("pkg/f1.go", 1),
		read("pkg/f4.go"),
		benchCall("Read", map[string]any{"file_path": "pkg/f0.go", "offset": 1, "limit": 10}),
		edit("pkg/f2.go", 2),
		benchCall("Glob", map[string]any{"pattern": "**/*.md"}),
		read("README.md"),
		read("pkg/f5.go"),
		edit("pkg/f3.go", 3),
		benchCall("Bash", map[string]any{"command": "true", "description": "Check the shell again"}),
		read("pkg/f6.go"),
		benchCall("Edit", map[string]any{"file_path": "README.md", "old_string": "Status: draft", "new_string": "Status: reviewed"}),
		{Content: "Marked four files and the README as reviewed."},
	}}
}

func benchEpisode(b *testing.B, srv *ollamatest.Server, arch modelgen.Arch) {
	name := "bench-" + string(arch)
	srv.Scripted(name, arch, benchScript())
	dir := benchRepo(b)
	trajDir := b.TempDir()
	rec := &benchRecorder{Client: srv.Client}
	ctx := context.Background()

	// Load the runner with the episode's num_ctx (another value would reload it).
	stream := false
	if err := srv.Client.Chat(ctx, &api.ChatRequest{Model: name, Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "warm up"}},
		Options:  map[string]any{"num_ctx": benchNumCtx}}, func(api.ChatResponse) error { return nil }); err != nil {
		b.Fatal(err)
	}

	var (
		episodes, steps                          int
		overhead, model, tools, untracked, ohPct float64
		lateMs, lateTokens, lateNew, late        float64
		coldMs, coldTokens                       float64
	)
	for b.Loop() {
		episodes++
		traj := filepath.Join(trajDir, fmt.Sprintf("traj-%d.jsonl", episodes))
		res, err := agent.Run(ctx, rec, agent.Task{Dir: dir, Instruction: "Mark the package files as reviewed."},
			agent.Options{Model: name, NumCtx: benchNumCtx, Trajectory: traj})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if res.Exit != agent.ExitDone || res.Steps != 20 {
			b.Fatalf("exit %s after %d steps: %s", res.Exit, res.Steps, res.Error)
		}
		recs := benchSteps(b, traj)
		if len(recs) != 20 {
			b.Fatalf("%d step records, want 20", len(recs))
		}
		if episodes == 1 {
			var sb strings.Builder
			for _, r := range recs {
				fmt.Fprintf(&sb, " %d:%d/%.0f", r.Step, r.Tokens.Prompt, r.Tokens.PromptEvalMs)
			}
			b.Logf("episode 1, step:prompt tokens/prompt eval ms:%s", sb.String())
		}
		var epOverhead, epTracked float64
		for _, r := range recs {
			for _, t := range r.Tools {
				if t.Failed {
					b.Fatalf("step %d: %s failed: %s", r.Step, t.Name, t.Result)
				}
			}
			steps++
			overhead += r.TimingMs.Overhead
			model += r.TimingMs.Model
			tools += r.TimingMs.Tools
			epOverhead += r.TimingMs.Overhead
			epTracked += r.TimingMs.Model + r.TimingMs.Tools + r.TimingMs.Overhead
		}
		wall := float64(res.Usage.WallTime.Microseconds()) / 1000
		ohPct += 100 * epOverhead / wall
		untracked += wall - epTracked
		for i := len(recs) - 5; i < len(recs); i++ {
			late++
			lateMs += recs[i].Tokens.PromptEvalMs
			lateTokens += float64(recs[i].Tokens.Prompt)
			lateNew += float64(recs[i].Tokens.Prompt - recs[i-1].Tokens.Prompt)
		}

		if episodes > 1 {
			b.StartTimer()
			continue
		}
		// Once: the last turn's request again, with the system message changed at its start.
		rec.mu.Lock()
		cold := rec.last
		rec.mu.Unlock()
		cold.Messages = slices.Clone(cold.Messages)
		cold.Messages[0].Content = "Cold. " + cold.Messages[0].Content
		cold.Stream = &stream
		var final api.ChatResponse
		if err := srv.Client.Chat(ctx, &cold, func(r api.ChatResponse) error { final = r; return nil }); err != nil {
			b.Fatal(err)
		}
		coldMs = float64(final.PromptEvalDuration.Microseconds()) / 1000
		coldTokens = float64(final.PromptEvalCount)
		b.StartTimer()
	}

	n, e := float64(steps), float64(episodes)
	b.ReportMetric(overhead/n, "overhead-ms/step")
	b.ReportMetric(ohPct/e, "overhead-%-of-wall")
	b.ReportMetric(untracked/e, "untracked-ms/ep")
	b.ReportMetric(model/n, "model-ms/step")
	b.ReportMetric(tools/n, "tools-ms/step")
	b.ReportMetric(lateMs/late, "prompt-eval-ms-late")
	b.ReportMetric(lateTokens/late, "prompt-tokens-late")
	b.ReportMetric(lateNew/late, "new-tokens-late")
	b.ReportMetric(coldMs, "prompt-eval-ms-cold")
	b.ReportMetric(coldTokens, "prompt-tokens-cold")
	b.ReportMetric(coldMs/(lateMs/late), "cold/late-x")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/e, "ms/episode")
}

// benchSteps reads the step records of a trajectory.
func benchSteps(b *testing.B, path string) []benchStep {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []benchStep
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r benchStep
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatalf("trajectory line is not JSON: %v", err)
		}
		if r.Type == "step" {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

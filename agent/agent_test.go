package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// episode runs a scripted model through agent.Run on dir.
type episode struct {
	t      *testing.T
	srv    *ollamatest.Server
	dir    string
	events []agent.Event
	traj   string
}

func newEpisode(t *testing.T, srv *ollamatest.Server, files map[string]string) *episode {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// srv bound to t: a subtest's model that fails to register fails the subtest.
	return &episode{t: t, srv: srv.For(t), dir: dir, traj: filepath.Join(t.TempDir(), "traj.jsonl")}
}

func (e *episode) run(ctx context.Context, name string, arch modelgen.Arch, script modelgen.Script, opts agent.Options) *agent.Result {
	e.t.Helper()
	e.srv.Scripted(name, arch, script)
	opts.Model = name
	if opts.NumCtx == 0 {
		opts.NumCtx = 16384
	}
	opts.Trajectory = e.traj
	opts.OnEvent = func(ev agent.Event) { e.events = append(e.events, ev) }
	res, err := agent.Run(ctx, e.srv.Client, agent.Task{Dir: e.dir, Instruction: "do the task"}, opts)
	if err != nil {
		e.t.Fatalf("agent.Run: %v", err)
	}
	return res
}

// records reads the trajectory back.
func (e *episode) records() []map[string]any {
	e.t.Helper()
	f, err := os.Open(e.traj)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			e.t.Fatalf("trajectory line is not JSON: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// toolResults returns what the model was told after each call, in order.
func (e *episode) toolResults() []string {
	var out []string
	for _, r := range e.records() {
		if r["type"] != "step" {
			continue
		}
		tools, _ := r["tools"].([]any)
		for _, t := range tools {
			out = append(out, t.(map[string]any)["result"].(string))
		}
	}
	return out
}

func call(name string, args map[string]any) modelgen.ToolCall {
	return modelgen.ToolCall{Name: name, Arguments: args}
}

func turn(calls ...modelgen.ToolCall) modelgen.Turn { return modelgen.Turn{ToolCalls: calls} }

func sampleFiles() map[string]string {
	files := map[string]string{}
	for _, f := range demo.Sample().Files {
		files[f.Name] = string(f.Data)
	}
	return files
}

// TestFixesFailingGoTest is the end-to-end episode: the scripted model runs the tests,
// reads the file, edits it, runs the tests again and finishes, on the real server and with
// real commands; the diff is right and the user's folder is untouched.
func TestFixesFailingGoTest(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	for _, arch := range modelgen.Arches {
		t.Run(string(arch), func(t *testing.T) {
			t.Parallel()
			e := newEpisode(t, srv, sampleFiles())
			res := e.run(context.Background(), "fix-"+string(arch), arch, demo.Script(), agent.Options{})
			if res.Exit != agent.ExitDone {
				t.Fatalf("exit %s: %s", res.Exit, res.Error)
			}
			if res.Steps != 5 {
				t.Errorf("steps = %d, want 5", res.Steps)
			}
			if !strings.Contains(res.Answer, "passes now") {
				t.Errorf("answer = %q", res.Answer)
			}
			if len(res.Changes.Files) != 1 || res.Changes.Files[0].Path != "calc.go" || res.Changes.Files[0].Kind != "modified" {
				t.Fatalf("changes = %+v", res.Changes.Files)
			}
			if !strings.Contains(res.Changes.Diff, "-\treturn a - b\n+\treturn a + b") {
				t.Errorf("diff:\n%s", res.Changes.Diff)
			}
			results := e.toolResults()
			if len(results) != 4 || !strings.HasPrefix(results[0], "Exit code: 1") || !strings.Contains(results[0], "FAIL") {
				t.Fatalf("first go test should fail: %q", results)
			}
			if !strings.Contains(results[1], "6. \treturn a - b") {
				t.Errorf("Read result should number lines: %q", results[1])
			}
			if !strings.HasPrefix(results[3], "Exit code: 0") || !strings.Contains(results[3], "ok") {
				t.Errorf("second go test should pass: %q", results[3])
			}
			b, _ := os.ReadFile(filepath.Join(e.dir, "calc.go"))
			if !strings.Contains(string(b), "return a - b") {
				t.Error("the user's folder was modified")
			}
			if _, err := os.Stat(filepath.Join(e.dir, ".git")); err == nil {
				t.Error("the agent created a repository in the user's folder")
			}
			var titles []string
			for _, ev := range e.events {
				if ev.Kind == agent.EventToolStart {
					titles = append(titles, ev.Title)
				}
			}
			want := "Run the tests|Reading calc.go|Editing calc.go|Run the tests again"
			if strings.Join(titles, "|") != want {
				t.Errorf("titles %q, want %q", titles, want)
			}
			if last := e.events[len(e.events)-1]; last.Kind != agent.EventDone || last.Exit != agent.ExitDone {
				t.Errorf("last event %+v", last)
			}
		})
	}
}

// TestTrajectorySchema checks the records fine-tuning will read.
func TestTrajectorySchema(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	e := newEpisode(t, srv, map[string]string{"a.txt": "alpha\n"})
	e.run(context.Background(), "traj", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		turn(call("Read", map[string]any{"file_path": "a.txt"})),
		{Content: "It says alpha."},
	}}, agent.Options{})
	recs := e.records()
	if len(recs) != 4 {
		t.Fatalf("want start, 2 steps, end; got %d records", len(recs))
	}
	if recs[0]["type"] != "start" || recs[0]["version"] != float64(agent.TrajectoryVersion) || recs[0]["model"] != "traj" {
		t.Errorf("start = %v", recs[0])
	}
	if msgs := recs[0]["messages"].([]any); len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "do the task" {
		t.Errorf("start messages = %v", msgs)
	}
	step := recs[1]
	tools := step["tools"].([]any)
	if step["type"] != "step" || len(tools) != 1 || tools[0].(map[string]any)["result"] != "1. alpha\n" {
		t.Errorf("step 1 = %v", step)
	}
	tok := step["tokens"].(map[string]any)
	if tok["prompt"].(float64) <= 0 || tok["output"].(float64) <= 0 {
		t.Errorf("token counts missing: %v", tok)
	}
	timing := step["timing_ms"].(map[string]any)
	if timing["model"].(float64) <= 0 {
		t.Errorf("timings missing: %v", timing)
	}
	end := recs[3]
	if end["type"] != "end" || end["exit"] != "done" || end["answer"] != "It says alpha." || end["steps"] != float64(2) {
		t.Errorf("end = %v", end)
	}
}

// TestCancelStopsCommand: cancelling during a long command ends the episode within a
// second, with nothing left running.
func TestCancelStopsCommand(t *testing.T) {
	srv := ollamatest.Shared(t)
	e := newEpisode(t, srv, map[string]string{"a.txt": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	var cancelledAt time.Time
	go func() {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			if out, _ := exec.Command("pgrep", "-f", "sleep 97").Output(); len(out) > 0 {
				cancelledAt = time.Now()
				cancel()
				return
			}
		}
		cancel()
	}()
	res := e.run(ctx, "cancel", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		turn(call("Bash", map[string]any{"command": "sleep 97"})),
		{Content: "never reached"},
	}}, agent.Options{})
	if res.Exit != agent.ExitCancelled {
		t.Fatalf("exit = %s (%s)", res.Exit, res.Error)
	}
	if d := time.Since(cancelledAt); d > time.Second {
		t.Errorf("cancel took %s", d)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 97").Output(); len(out) > 0 {
		t.Errorf("the command survived the cancel: %s", out)
	}
}

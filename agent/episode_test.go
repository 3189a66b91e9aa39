package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestThinkingFollowsTheModel: think is sent to a model that supports it (its reasoning is
// recorded, not answered) and never to one that does not (Ollama would answer 400).
func TestThinkingFollowsTheModel(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	turns := []modelgen.Turn{{Thinking: "the user wants a greeting", Content: "Hello there."}}
	t.Run("supported", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a": "a"})
		res := e.run(context.Background(), "thinker", modelgen.Qwen3, modelgen.Script{Turns: turns}, agent.Options{})
		if res.Exit != agent.ExitDone || res.Answer != "Hello there." {
			t.Fatalf("exit %s, answer %q", res.Exit, res.Answer)
		}
		recs := e.records()
		if recs[0]["options"].(map[string]any)["think"] != true {
			t.Error("think was not requested from a thinking model")
		}
		if th := recs[1]["assistant"].(map[string]any)["thinking"]; th != "the user wants a greeting" {
			t.Errorf("thinking recorded as %v", th)
		}
		var thinking string
		for _, ev := range e.events {
			if ev.Kind == agent.EventThinking {
				thinking += ev.Text
			}
		}
		if thinking != "the user wants a greeting" {
			t.Errorf("thinking events %q", thinking)
		}
	})
	t.Run("unsupported", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a": "a"})
		res := e.run(context.Background(), "plain", modelgen.Qwen3, modelgen.Script{NoThinking: true, Turns: turns}, agent.Options{})
		if res.Exit != agent.ExitDone {
			t.Fatalf("exit %s: %s", res.Exit, res.Error)
		}
		// Without think the server leaves the block in the text; it must not reach the answer.
		if res.Answer != "Hello there." {
			t.Errorf("answer %q", res.Answer)
		}
	})
}

// TestModelErrors: a model without tools cannot start an episode; a server that dies
// mid-episode ends it with llm_error instead of hanging.
func TestModelErrors(t *testing.T) {
	t.Parallel()
	// A server of its own: the test stops it mid-episode.
	srv := ollamatest.Start(t)
	srv.Scripted("no-tools", modelgen.Llama, modelgen.Script{NoTools: true, Turns: []modelgen.Turn{{Content: "hi there"}}})
	_, err := agent.Run(context.Background(), srv.Client, agent.Task{Dir: t.TempDir(), Instruction: "x"}, agent.Options{Model: "no-tools"})
	if err == nil || !strings.Contains(err.Error(), "does not support tool calling") {
		t.Errorf("no tools: %v", err)
	}
	_, err = agent.Run(context.Background(), srv.Client, agent.Task{Dir: t.TempDir(), Instruction: "x"}, agent.Options{Model: "missing"})
	var status api.StatusError
	if err == nil || !(strings.Contains(err.Error(), "not found") || asStatus(err, &status)) {
		t.Errorf("missing model: %v", err)
	}

	e := newEpisode(t, srv, map[string]string{"a.txt": "a\n"})
	stopped := false
	srv.Scripted("dies", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		turn(call("Read", map[string]any{"file_path": "a.txt"})), {Content: "end"},
	}})
	res, err := agent.Run(context.Background(), srv.Client, agent.Task{Dir: e.dir, Instruction: "x"}, agent.Options{Model: "dies", NumCtx: 8192,
		OnEvent: func(ev agent.Event) {
			if ev.Kind == agent.EventToolStart && !stopped {
				stopped = true
				srv.Stop()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != agent.ExitModelError || res.Steps != 2 {
		t.Errorf("exit %s after %d steps (%s)", res.Exit, res.Steps, res.Error)
	}
}

func asStatus(err error, target *api.StatusError) bool {
	s, ok := err.(api.StatusError)
	if ok {
		*target = s
	}
	return ok
}

// TestContextIsShortened: when the conversation nears num_ctx, old tool outputs are
// shortened (and the trajectory says so) and the episode goes on; the real server then
// still sees every turn, or the scripted model would lose its place.
func TestContextIsShortened(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	files := map[string]string{}
	var turns []modelgen.Turn
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		files[name+".txt"] = strings.Repeat(name+"0123456789 ", 90) + "\n"
		turns = append(turns, turn(call("Read", map[string]any{"file_path": name + ".txt"})))
	}
	turns = append(turns, modelgen.Turn{Content: "read them all"})
	e := newEpisode(t, srv, files)
	res := e.run(context.Background(), "ctx", modelgen.Qwen3, modelgen.Script{Turns: turns}, agent.Options{NumCtx: 8192})
	if res.Exit != agent.ExitDone || res.Answer != "read them all" {
		t.Fatalf("exit %s (%s), answer %q", res.Exit, res.Error, res.Answer)
	}
	var notes []string
	for _, r := range e.records() {
		if ns, ok := r["notes"].([]any); ok {
			for _, n := range ns {
				notes = append(notes, n.(string))
			}
		}
	}
	if len(notes) == 0 || !strings.Contains(notes[0], "shortened tool output") {
		t.Fatalf("no shortening recorded: %v", notes)
	}
	noticed := false
	for _, ev := range e.events {
		noticed = noticed || (ev.Kind == agent.EventNotice && strings.Contains(ev.Text, "Shortened"))
	}
	if !noticed {
		t.Error("the user was not told about the shortening")
	}
}

// TestLogprobs: when asked, per-token log probabilities are in the trajectory.
func TestLogprobs(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	e := newEpisode(t, srv, map[string]string{"a": "a"})
	e.run(context.Background(), "lp", modelgen.Llama, modelgen.Script{Turns: []modelgen.Turn{{Content: "Hello there."}}}, agent.Options{Logprobs: true})
	lps, _ := e.records()[1]["logprobs"].([]any)
	if len(lps) == 0 {
		t.Fatal("no logprobs recorded")
	}
	first := lps[0].(map[string]any)
	if first["token"] != "Hello there." || first["logprob"].(float64) < -0.01 {
		t.Errorf("first logprob %v: a scripted token is certain", first)
	}
}

// recorder passes requests to the real server and keeps the conversation of each one.
type recorder struct {
	*api.Client
	sent [][]api.Message
}

func (r *recorder) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	r.sent = append(r.sent, slices.Clone(req.Messages))
	return r.Client.Chat(ctx, req, fn)
}

// runRecorded is e.run with the model's requests recorded.
func runRecorded(e *episode, name string, arch modelgen.Arch, script modelgen.Script) (*agent.Result, *recorder) {
	e.t.Helper()
	e.srv.Scripted(name, arch, script)
	rec := &recorder{Client: e.srv.Client}
	res, err := agent.Run(context.Background(), rec, agent.Task{Dir: e.dir, Instruction: "do the task"}, agent.Options{
		Model: name, NumCtx: 16384, Trajectory: e.traj,
		OnEvent: func(ev agent.Event) { e.events = append(e.events, ev) },
	})
	if err != nil {
		e.t.Fatalf("agent.Run: %v", err)
	}
	return res, rec
}

// stepNotes returns the notes of each step record, in order.
func stepNotes(e *episode) [][]string {
	var out [][]string
	for _, r := range e.records() {
		if r["type"] != "step" {
			continue
		}
		var notes []string
		ns, _ := r["notes"].([]any)
		for _, n := range ns {
			notes = append(notes, n.(string))
		}
		out = append(out, notes)
	}
	return out
}

// TestSwallowedCallIsNudged: the real server silently drops a structured call to a tool it
// was not offered; the agent must not take the empty reply for the final answer, but tell
// the model and go on. Both engines, because each counts eval_count in its own code.
func TestSwallowedCallIsNudged(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	for _, arch := range modelgen.Arches {
		t.Run(string(arch), func(t *testing.T) {
			t.Parallel()
			e := newEpisode(t, srv, map[string]string{"a.txt": "alpha\n"})
			res, rec := runRecorded(e, "grep-"+string(arch), arch, modelgen.Script{Turns: []modelgen.Turn{
				turn(call("Grep", map[string]any{"pattern": "alpha"})),
				turn(call("Bash", map[string]any{"command": "echo ok"})),
				{Content: "Found it."},
			}})
			if res.Exit != agent.ExitDone || res.Answer != "Found it." || res.Steps != 3 {
				t.Fatalf("exit %s (%s), answer %q after %d steps", res.Exit, res.Error, res.Answer, res.Steps)
			}
			// The premise: the server swallowed the call, yet the model produced tokens.
			step1 := e.records()[1]
			asst := step1["assistant"].(map[string]any)
			if asst["content"] != "" || asst["tool_calls"] != nil || step1["tools"] != nil {
				t.Fatalf("the server did not swallow the Grep call: %v", step1)
			}
			if out := step1["tokens"].(map[string]any)["output"].(float64); out <= 1 {
				t.Fatalf("the swallowed reply reports %v output tokens", out)
			}
			notes := stepNotes(e)
			if len(notes) != 3 || len(notes[0]) != 1 || !strings.HasPrefix(notes[0][0], "empty reply 1 of 2: ") || len(notes[1])+len(notes[2]) != 0 {
				t.Fatalf("notes %q", notes)
			}
			// What the model read next: its empty turn, then the nudge as a user message.
			if len(rec.sent) != 3 {
				t.Fatalf("%d requests, want 3", len(rec.sent))
			}
			second := rec.sent[1]
			if len(second) != 4 || second[2].Role != "assistant" || second[2].Content != "" {
				t.Fatalf("second request: %+v", second)
			}
			nudge := second[3]
			if nudge.Role != "user" || !strings.HasPrefix(nudge.Content, "Error: your reply was empty") ||
				!strings.Contains(nudge.Content, "Read, Write, Edit, Glob and Bash") || !strings.Contains(nudge.Content, "final answer") {
				t.Errorf("nudge %+v", nudge)
			}
			if !strings.HasSuffix(notes[0][0], "sent the user message: "+nudge.Content) {
				t.Errorf("the note does not hold the message sent: %q", notes[0][0])
			}
			// The nudge is a user message, so the script (which counts assistant messages)
			// went on with its second turn: the Bash call ran.
			if results := e.toolResults(); len(results) != 1 || !strings.Contains(results[0], "ok") {
				t.Errorf("tool results %q", results)
			}
			noticed := false
			for _, ev := range e.events {
				noticed = noticed || (ev.Kind == agent.EventNotice && ev.Step == 1 && strings.Contains(ev.Text, "replied with nothing"))
			}
			if !noticed {
				t.Error("the user was not told about the empty reply")
			}
		})
	}
}

// TestEmptyRepliesEndTheEpisode: two empty replies in a row (the first with reasoning but no
// text, which is no answer either) end the episode as a repeated failure, not as done; a
// model that ends its turn at once (only the end token) is simply done, as in training.
func TestEmptyRepliesEndTheEpisode(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	t.Run("twice", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a.txt": "alpha\n"})
		res, _ := runRecorded(e, "ls", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
			{Thinking: "search for it", ToolCalls: []modelgen.ToolCall{call("Grep", map[string]any{"pattern": "alpha"})}},
			turn(call("LS", map[string]any{"path": "."})),
			{Content: "never reached"},
		}})
		if res.Exit != agent.ExitRepeatedError || res.Steps != 2 || res.Answer != "" {
			t.Fatalf("exit %s (%s), answer %q after %d steps", res.Exit, res.Error, res.Answer, res.Steps)
		}
		if !strings.Contains(res.Error, "replied with nothing 2 times in a row") || !strings.Contains(res.Error, "tool it does not have") {
			t.Errorf("error %q", res.Error)
		}
		if th := e.records()[1]["assistant"].(map[string]any)["thinking"]; th != "search for it" {
			t.Errorf("step 1 thinking %v", th)
		}
		notes := stepNotes(e)
		if len(notes) != 2 || len(notes[1]) != 1 || !strings.HasPrefix(notes[1][0], "empty reply 2 of 2: ") || !strings.HasSuffix(notes[1][0], "ended the episode") {
			t.Errorf("notes %q", notes)
		}
	})
	t.Run("at once", func(t *testing.T) {
		t.Parallel()
		e := newEpisode(t, srv, map[string]string{"a.txt": "alpha\n"})
		// Past its last turn the scripted model ends its turn at once.
		res, _ := runRecorded(e, "mute", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
			turn(call("Bash", map[string]any{"command": "echo ok"})),
		}})
		if res.Exit != agent.ExitDone || res.Steps != 2 || res.Answer != "" {
			t.Fatalf("exit %s (%s), answer %q after %d steps", res.Exit, res.Error, res.Answer, res.Steps)
		}
		if out := e.records()[2]["tokens"].(map[string]any)["output"].(float64); out != 1 {
			t.Errorf("an immediate end reports %v output tokens, want 1 (the end token)", out)
		}
		if notes := stepNotes(e); len(notes[1]) != 0 {
			t.Errorf("notes %q", notes)
		}
	})
}

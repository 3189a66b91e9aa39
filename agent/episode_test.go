package agent_test

import (
	"context"
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
	srv := ollamatest.Start(t)
	turns := []modelgen.Turn{{Thinking: "the user wants a greeting", Content: "Hello there."}}
	t.Run("supported", func(t *testing.T) {
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
	srv := ollamatest.Start(t)
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
	srv := ollamatest.Start(t)
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

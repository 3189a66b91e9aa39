package ollamatest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/internal/procgroup"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// TestServerLifecycle: start, create, chat, stop, and nothing left running.
func TestServerLifecycle(t *testing.T) {
	srv := ollamatest.Start(t)
	srv.Scripted("hello", modelgen.Llama, modelgen.Script{Turns: []modelgen.Turn{{Content: "hello from the runner"}}})
	ctx := context.Background()
	stream := false
	var got string
	if err := srv.Client.Chat(ctx, &api.ChatRequest{Model: "hello", Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(r api.ChatResponse) error {
		got += r.Message.Content
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != "hello from the runner" {
		t.Fatalf("chat = %q", got)
	}
	ps, err := srv.Client.ListRunning(ctx)
	if err != nil || len(ps.Models) != 1 {
		t.Fatalf("want one loaded runner, got %+v (%v)", ps, err)
	}
	if n := len(procgroup.Members(srv.Pgid())); n < 2 {
		t.Fatalf("want the server and its runner in the group, found %d processes", n)
	}
	srv.Stop()
	if left := procgroup.Members(srv.Pgid()); len(left) != 0 {
		t.Fatalf("processes left after Stop: %v", left)
	}
	hctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := srv.Client.Heartbeat(hctx); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

// TestSmolLM2RealModelChats runs the real (weak) SmolLM2-135M-Instruct on the llama.cpp runner.
func TestSmolLM2RealModelChats(t *testing.T) {
	srv := ollamatest.Start(t)
	srv.SmolLM2("smollm2")
	stream := false
	var msg api.Message
	var evals int
	// Greedy, so the answer does not depend on sampling (a build for another instruction set
	// changes the numbers a little, and Ollama's default temperature then picked another
	// path); 48 tokens let this small model get past its preamble.
	err := srv.Client.Chat(context.Background(), &api.ChatRequest{Model: "smollm2", Stream: &stream,
		Options:  map[string]any{"num_predict": 48, "num_ctx": 2048, "temperature": 0, "seed": 1},
		Messages: []api.Message{{Role: "user", Content: "What is the capital of France? Answer in one word."}}},
		func(r api.ChatResponse) error { msg = r.Message; evals = r.EvalCount; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if evals == 0 || strings.TrimSpace(msg.Content) == "" {
		t.Fatalf("no answer: %+v", msg)
	}
	t.Logf("SmolLM2 says: %q", msg.Content)
	if !strings.Contains(strings.ToLower(msg.Content), "paris") {
		t.Errorf("a real instruct model should know this one; got %q", msg.Content)
	}
}

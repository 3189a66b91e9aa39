package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/agent/sandbox"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// sampling passes requests to the real server and keeps the temperature of each.
type sampling struct {
	*api.Client
	temps []any
}

func (s *sampling) Chat(ctx context.Context, req *api.ChatRequest, fn api.ChatResponseFunc) error {
	s.temps = append(s.temps, req.Options["temperature"])
	return s.Client.Chat(ctx, req, fn)
}

// TestTemperatureZero: greedy decoding can be asked for (rollouts and evaluations need it);
// leaving the temperature unset still gives the recommended 0.6.
func TestTemperatureZero(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	srv.Scripted("temp", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{{Content: "done"}}})
	for _, c := range []struct {
		name string
		temp *float64
		want float64
	}{{"zero", agent.Temp(0), 0}, {"unset", nil, agent.DefaultTemperature}, {"set", agent.Temp(1.2), 1.2}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEpisode(t, srv, map[string]string{"a": "a"})
			m := &sampling{Client: srv.Client}
			res, err := agent.Run(context.Background(), m, agent.Task{Dir: e.dir, Instruction: "x"},
				agent.Options{Model: "temp", NumCtx: 8192, Temperature: c.temp, Trajectory: e.traj})
			if err != nil || res.Exit != agent.ExitDone {
				t.Fatalf("run: %v %+v", err, res)
			}
			if len(m.temps) != 1 || m.temps[0] != c.want {
				t.Errorf("temperature sent %v, want %v", m.temps, c.want)
			}
			if got := e.records()[0]["options"].(map[string]any)["temperature"]; got != c.want {
				t.Errorf("temperature recorded %v, want %v", got, c.want)
			}
		})
	}
}

// TestRunLimits: the sandbox limits of a run are the caller's (here the output kept of each
// command), not always the defaults.
func TestRunLimits(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	e := newEpisode(t, srv, map[string]string{"a": "a"})
	res := e.run(context.Background(), "limits", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		turn(call("Bash", map[string]any{"command": "head -c 5000 /dev/zero | tr '\\0' a"})), {Content: "done"},
	}}, agent.Options{Limits: &sandbox.Limits{Output: 1000}})
	if res.Exit != agent.ExitDone {
		t.Fatalf("exit %s: %s", res.Exit, res.Error)
	}
	out := e.toolResults()[0]
	if !strings.Contains(out, "[4000 more bytes not shown]") || strings.Count(out, "a") > 1100 {
		t.Errorf("the output cap of 1000 bytes was not applied:\n%.300s", out)
	}
}

// TestToolCallDurations: each call's ms in the trajectory is how long it took.
func TestToolCallDurations(t *testing.T) {
	t.Parallel()
	srv := ollamatest.Shared(t)
	e := newEpisode(t, srv, map[string]string{"a": "a"})
	res := e.run(context.Background(), "slow", modelgen.Qwen3, modelgen.Script{Turns: []modelgen.Turn{
		turn(call("Bash", map[string]any{"command": "sleep 0.4"}), call("Read", map[string]any{"file_path": "missing"})), {Content: "done"},
	}}, agent.Options{})
	if res.Exit != agent.ExitDone {
		t.Fatalf("exit %s: %s", res.Exit, res.Error)
	}
	tools := e.records()[1]["tools"].([]any)
	if ms := tools[0].(map[string]any)["ms"].(float64); ms < 400 || ms > 60000 {
		t.Errorf("sleep 0.4 recorded as %v ms", ms)
	}
	// A failed call is timed too (it returns through another path).
	if _, ok := tools[1].(map[string]any)["ms"].(float64); !ok {
		t.Errorf("failed call has no ms: %v", tools[1])
	}
}

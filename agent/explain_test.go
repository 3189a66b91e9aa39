package agent_test

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"github.com/frognano/frognano/agent"
	"github.com/frognano/frognano/ollama"
)

// diesMidRun is Ollama going away during a run: the stream ends with EOF (a fake for this
// one deterministic case; the real server's errors are covered by ollama.Explain's tests).
type diesMidRun struct{}

func (diesMidRun) Show(context.Context, *api.ShowRequest) (*api.ShowResponse, error) {
	return &api.ShowResponse{Capabilities: []model.Capability{"completion", "tools"}}, nil
}

func (diesMidRun) Chat(context.Context, *api.ChatRequest, api.ChatResponseFunc) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:11434/api/chat", Err: io.EOF}
}

// When Ollama dies mid-run the result names the server and the fix, not "Post …: EOF".
func TestModelErrorsAreExplained(t *testing.T) {
	cfg := ollama.Config{Host: "127.0.0.1:11434", Model: "frognano:4b"}
	res, err := agent.Run(context.Background(), diesMidRun{}, agent.Task{Dir: t.TempDir(), Instruction: "x"}, agent.Options{
		Model: "frognano:4b", Explain: func(err error) string { return ollama.Explain(err, cfg).Error() }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != agent.ExitModelError || !strings.Contains(res.Error, "Ollama is not reachable at") || !strings.Contains(res.Error, "ollama serve") {
		t.Errorf("exit %s: %q", res.Exit, res.Error)
	}
}

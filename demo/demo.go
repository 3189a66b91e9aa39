// Package demo is `frognano demo` (and `make demo`): it shows the whole pipeline on a
// sample project with a failing test, on the user's FrogNano model when Ollama has one, or
// else on a private Ollama with a scripted demo model. Entry point: [Run].
package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ollama/ollama/api"
	"golang.org/x/tools/txtar"

	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen/script"
)

//go:embed sample.txtar
var sampleArchive []byte

// ScriptedModelName is the name the demo model gets in the private Ollama.
const ScriptedModelName = "frognano-demo:scripted"

// Sample returns the sample project's files.
func Sample() *txtar.Archive { return txtar.Parse(sampleArchive) }

// WriteSample writes the sample project into dir and commits it, so the agent's result
// can be shown as a git diff.
func WriteSample(ctx context.Context, dir string) error {
	for _, f := range Sample().Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=frognano demo", "-c", "user.email=demo@frognano.invalid", "commit", "-q", "-m", "sample project"},
	} {
		if out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	return nil
}

// Script is the episode the scripted demo model replays: run the tests, read the file,
// fix it, run the tests again, report.
func Script() script.Script {
	bash := func(cmd, why string) script.ToolCall {
		return script.ToolCall{Name: "Bash", Arguments: map[string]any{"command": cmd, "description": why}}
	}
	return script.Script{Turns: []script.Turn{
		{Content: "Let me run the tests first.", ToolCalls: []script.ToolCall{bash("go test ./...", "Run the tests")}},
		{ToolCalls: []script.ToolCall{{Name: "Read", Arguments: map[string]any{"file_path": "calc.go"}}}},
		{Content: "Add subtracts; it should add.", ToolCalls: []script.ToolCall{{Name: "Edit", Arguments: map[string]any{
			"file_path": "calc.go", "old_string": "return a - b", "new_string": "return a + b"}}}},
		{ToolCalls: []script.ToolCall{bash("go test ./...", "Run the tests again")}},
		{Content: "Fixed `Add` in calc.go: it returned a - b instead of a + b. `go test ./...` passes now."},
	}}
}

// Options configure a demo run.
type Options struct {
	Config ollama.Config
	// Out receives the narration; Err the progress of long steps.
	Out, Err io.Writer
	// WorkDir holds the sample project and, if one is started, the private Ollama.
	WorkDir string
	// Keep says WorkDir survives the demo (so its trajectory can be read).
	Keep bool
	// Modelgen is the frognano-modelgen binary that writes the scripted model; empty: the
	// one next to the running executable, else the one on PATH (see [FindModelgen]).
	Modelgen string
}

// modelChoice is which model the demo talks to, and whether it is a real one.
type modelChoice struct {
	client   *api.Client
	cfg      ollama.Config
	scripted bool
	stop     func()
}

// chooseModel uses the user's Ollama when it serves the configured model with tool
// support; otherwise it starts a private Ollama with the scripted demo model.
func chooseModel(ctx context.Context, o Options) (*modelChoice, error) {
	cfg := o.Config.WithDefaults()
	if client, err := cfg.Client(); err == nil {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		show, err := client.Show(sctx, &api.ShowRequest{Model: cfg.Model})
		cancel()
		if err == nil && hasTools(show) {
			return &modelChoice{client: client, cfg: cfg, stop: func() {}}, nil
		}
		p := ollama.Explain(err, cfg)
		if err == nil {
			p = &ollama.Problem{What: fmt.Sprintf("model %s has no tool support", cfg.Model)}
		}
		fmt.Fprintf(o.Out, "Not using your Ollama: %s.\n", p.What)
	}

	bin, err := ollama.FindBinary()
	if err != nil {
		return nil, err
	}
	gen := o.Modelgen
	if gen == "" {
		if gen, err = FindModelgen(); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(o.Out, "Starting a private Ollama (%s) with a scripted demo model.\n", bin)
	srv, err := ollama.StartServer(ctx, bin, filepath.Join(o.WorkDir, "ollama"))
	if err != nil {
		return nil, err
	}
	m, err := writeScripted(ctx, gen, filepath.Join(o.WorkDir, "demo-model.gguf"), Script())
	if err == nil {
		err = ollama.Create(ctx, srv.Client, ollama.CreateRequest{
			Name: ScriptedModelName, GGUF: m.Path, Template: m.Template, Parameters: m.Parameters}, nil)
	}
	if err != nil {
		srv.Stop()
		return nil, err
	}
	cfg.Host, cfg.Model, cfg.NumCtx = srv.Host, ScriptedModelName, 16384
	return &modelChoice{client: srv.Client, cfg: cfg, scripted: true, stop: srv.Stop}, nil
}

// ModelgenName is the helper that writes the scripted model: a binary of its own, so that
// the GGUF writer (and the Ollama packages it links) stays out of frognano, which editors
// start at every session (see cmd/frognano-modelgen).
const ModelgenName = "frognano-modelgen"

// FindModelgen finds frognano-modelgen next to the running executable (where `make build`
// puts it), else on PATH.
func FindModelgen() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), ModelgenName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(ModelgenName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("the demo writes its scripted model with %s, which is neither next to this executable nor on PATH: "+
		"run `make build` in the frognano source (it builds both into bin/), or `go build -o DIR ./cmd/%s` with DIR the folder of frognano", ModelgenName, ModelgenName)
}

// scriptedModel is what frognano-modelgen prints: modelgen.Model's fields the demo uses.
type scriptedModel struct {
	Path       string
	Template   string
	Parameters map[string]any
}

// writeScripted runs the frognano-modelgen binary gen to write a model replaying s to path.
func writeScripted(ctx context.Context, gen, path string, s script.Script) (*scriptedModel, error) {
	in, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, gen, "-out", path, "-arch", string(script.Qwen3))
	cmd.Stdin, cmd.Stderr = bytes.NewReader(in), &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("writing the scripted demo model with %s: %v: %s", gen, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var m scriptedModel
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("reading what %s printed: %v", gen, err)
	}
	if m.Path == "" {
		return nil, errors.New(gen + " printed no model file")
	}
	return &m, nil
}

func hasTools(show *api.ShowResponse) bool {
	for _, c := range show.Capabilities {
		if c == "tools" {
			return true
		}
	}
	return false
}

// Run runs the demo and returns an error only when the pipeline itself broke.
func Run(ctx context.Context, o Options) error {
	project := filepath.Join(o.WorkDir, "calc")
	if err := os.MkdirAll(project, 0o755); err != nil {
		return err
	}
	if err := WriteSample(ctx, project); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Sample project: %s (Add subtracts instead of adding)\n\n", project)
	out, _ := goTest(ctx, project)
	fmt.Fprintf(o.Out, "$ go test ./...  (before)\n%s\n", indent(out))

	choice, err := chooseModel(ctx, o)
	if err != nil {
		return err
	}
	defer choice.stop()
	if choice.scripted {
		fmt.Fprintf(o.Out, "Model: %s — a SCRIPTED DEMO MODEL that replays a fixed episode. It only shows the pipeline;\n"+
			"install FrogNano (`frognano model import FILE.gguf`) for real fixes.\n\n", choice.cfg.Model)
	} else {
		fmt.Fprintf(o.Out, "Model: %s at %s (your Ollama).\n\n", choice.cfg.Model, choice.cfg.Host)
	}
	return runAgent(ctx, o, choice, project)
}

func goTest(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func indent(s string) string {
	var b bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimRight([]byte(s), "\n"), []byte("\n")) {
		b.WriteString("    ")
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

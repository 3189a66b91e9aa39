package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/frognano/frognano/demo"
	"github.com/frognano/frognano/ollama"
	"github.com/frognano/frognano/ollama/modelgen"
	"github.com/frognano/frognano/ollama/ollamatest"
)

// frognano runs the CLI in-process with an empty environment plus env.
func frognano(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code = Main(ctx, Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}, args)
	return out.String(), errb.String(), code
}

func TestHelpAndStubs(t *testing.T) {
	for _, c := range commands {
		out, _, code := frognano(t, nil, c.name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage: frognano "+c.name) {
			t.Errorf("%s --help: code %d, output %q", c.name, code, out)
		}
	}
	for _, c := range finetuneCommands {
		if !strings.Contains(c.summary, "not yet available") {
			continue
		}
		_, errOut, code := frognano(t, nil, "finetune", c.name)
		if code != exitNotReady || !strings.Contains(errOut, "not available yet") {
			t.Errorf("finetune %s: a stub must say it is not available (code %d, %q)", c.name, code, errOut)
		}
	}
	if out, _, code := frognano(t, nil, "finetune", "--help"); code != exitOK || !strings.Contains(out, "synth") {
		t.Errorf("finetune --help: %d %q", code, out)
	}
	if _, errOut, code := frognano(t, nil, "frobnicate"); code != exitUsage || !strings.Contains(errOut, "unknown command") {
		t.Errorf("unknown command: code %d, %q", code, errOut)
	}
	if out, _, code := frognano(t, nil, "version"); code != exitOK || !strings.Contains(out, "tested with Ollama "+ollama.Version) {
		t.Errorf("version: %d %q", code, out)
	}
}

// scriptedFrogNano writes a GGUF that answers the FrogNano chat format with a thinking
// block and an XML tool call, the way the real model does.
func scriptedFrogNano(t *testing.T, arch modelgen.Arch) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "frognano.gguf")
	_, err := modelgen.Scripted(path, arch, modelgen.Script{
		Renderer: ollama.FrogNanoRenderer, Parser: ollama.FrogNanoParser,
		Turns: []modelgen.Turn{{Content: "The user wants main.go.\n</think>\n\n<tool_call>\n<function=Read>\n<parameter=file_path>\nmain.go\n</parameter>\n<parameter=limit>\n20\n</parameter>\n</function>\n</tool_call>"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestModelImport imports a generated GGUF through the CLI, checks what Ollama recorded,
// and that FrogNano's format (renderer + parser) really yields thinking and a structured
// XML tool call from the real server: TestImportedFormatParsesXMLToolCalls in spirit.
func TestModelImport(t *testing.T) {
	srv := ollamatest.Start(t)
	env := map[string]string{"OLLAMA_HOST": srv.Host}
	for _, arch := range modelgen.Arches {
		t.Run(string(arch), func(t *testing.T) {
			name := "frognano:" + string(arch)
			gguf := scriptedFrogNano(t, arch)
			out, errOut, code := frognano(t, env, "model", "import", "--name", name, "--num-ctx", "32768", gguf)
			if code != exitOK {
				t.Fatalf("import: code %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, "uploading 100%") {
				t.Errorf("import showed no upload progress: %q", errOut)
			}
			ctx := context.Background()
			show, err := srv.Client.Show(ctx, &api.ShowRequest{Model: name})
			if err != nil {
				t.Fatal(err)
			}
			// Show reports the renderer and parser only inside the Modelfile.
			for _, want := range []string{"RENDERER " + ollama.FrogNanoRenderer, "PARSER " + ollama.FrogNanoParser} {
				if !strings.Contains(show.Modelfile, want) {
					t.Errorf("modelfile lacks %q:\n%s", want, show.Modelfile)
				}
			}
			for _, want := range []string{"num_ctx", "32768", "temperature", "0.6", "top_k", "20", "top_p", "0.95", "<|im_end|>"} {
				if !strings.Contains(show.Parameters, want) {
					t.Errorf("parameters lack %q:\n%s", want, show.Parameters)
				}
			}

			stream := false
			var msg api.Message
			err = srv.Client.Chat(ctx, &api.ChatRequest{Model: name, Stream: &stream, Think: &api.ThinkValue{Value: true},
				Tools:    api.Tools{readTool()},
				Messages: []api.Message{{Role: "user", Content: "show me main.go"}}},
				func(r api.ChatResponse) error { msg = r.Message; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(msg.Thinking) != "The user wants main.go." {
				t.Errorf("thinking = %q", msg.Thinking)
			}
			if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "Read" {
				t.Fatalf("tool calls = %+v (content %q)", msg.ToolCalls, msg.Content)
			}
			args := msg.ToolCalls[0].Function.Arguments
			if p, _ := args.Get("file_path"); p != "main.go" {
				t.Errorf("file_path = %v", p)
			}
			if l, _ := args.Get("limit"); l != float64(20) && l != 20 {
				t.Errorf("limit = %#v, want the integer 20 typed by the tool schema", l)
			}
			if strings.Contains(msg.Content, "<think>") || strings.Contains(msg.Content, "tool_call") {
				t.Errorf("markup leaked into content: %q", msg.Content)
			}

			// A second import under the same name keeps the existing model.
			_, errOut, code = frognano(t, env, "model", "import", "--name", name, gguf)
			if code != exitFailed || !strings.Contains(errOut, "already has a model named") {
				t.Errorf("re-import without --force: code %d, %q", code, errOut)
			}
			if _, _, code = frognano(t, env, "model", "import", "--name", name, "--force", gguf); code != exitOK {
				t.Errorf("re-import with --force: code %d", code)
			}
		})
	}

	out, _, code := frognano(t, map[string]string{"OLLAMA_HOST": srv.Host, "FROGNANO_MODEL": "frognano:qwen3"}, "model", "list")
	if code != exitOK {
		t.Fatalf("list: code %d", code)
	}
	var marked []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "*") {
			marked = append(marked, strings.Fields(line)[1])
		}
	}
	if len(marked) != 1 || marked[0] != "frognano:qwen3" || !strings.Contains(out, "frognano:llama") {
		t.Errorf("list marks %v; output:\n%s", marked, out)
	}
}

func TestModelImportBadInput(t *testing.T) {
	srv := ollamatest.Start(t)
	env := map[string]string{"OLLAMA_HOST": srv.Host}
	notGGUF := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notGGUF, []byte("hello"), 0o644)
	if _, errOut, code := frognano(t, env, "model", "import", notGGUF); code != exitFailed || !strings.Contains(errOut, "not a GGUF file") {
		t.Errorf("non-GGUF: code %d, %q", code, errOut)
	}
	if _, errOut, code := frognano(t, env, "model", "import", "/does/not/exist.gguf"); code != exitFailed || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: code %d, %q", code, errOut)
	}
	if _, _, code := frognano(t, env, "model", "import"); code != exitUsage {
		t.Errorf("no file: code %d", code)
	}
	list, err := srv.Client.List(context.Background())
	if err != nil || len(list.Models) != 0 {
		t.Errorf("bad imports must leave no model behind: %v %v", list, err)
	}
}

func readTool() api.Tool {
	props := api.NewToolPropertiesMap()
	props.Set("file_path", api.ToolProperty{Type: api.PropertyType{"string"}})
	props.Set("limit", api.ToolProperty{Type: api.PropertyType{"integer"}})
	return api.Tool{Type: "function", Function: api.ToolFunction{Name: "Read",
		Parameters: api.ToolFunctionParameters{Type: "object", Required: []string{"file_path"}, Properties: props}}}
}

// trajectoryOf is the trajectory a run's stderr names; the file must exist.
func trajectoryOf(t *testing.T, stderr string) string {
	t.Helper()
	_, after, ok := strings.Cut(stderr, "trajectory: ")
	path, _, _ := strings.Cut(after, "\n")
	if !ok || path == "" {
		t.Fatalf("no trajectory named in %q", stderr)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAgentCommand runs `frognano agent --apply` on the demo's sample with the scripted
// episode: the user's folder changes only at the end, and only with --apply.
func TestAgentCommand(t *testing.T) {
	srv := ollamatest.Start(t)
	srv.Scripted("fixer", modelgen.Qwen3, demo.Script())
	env := map[string]string{"OLLAMA_HOST": srv.Host, "FROGNANO_MODEL": "fixer", "FROGNANO_NUM_CTX": "16384"}
	dir := t.TempDir()
	if err := demo.WriteSample(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	traj := filepath.Join(t.TempDir(), "t.jsonl")
	out, errOut, code := frognano(t, env, "agent", "--dir", dir, "--task", demo.Instruction, "--trajectory", traj, "--apply")
	if code != exitOK {
		t.Fatalf("code %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"[1] Run the tests", "[3] Editing calc.go", "done after 5 steps, 1 files changed", "trajectory: " + traj, "applied 1 files"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "+\treturn a + b") {
		t.Errorf("stdout should be the diff:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "return a + b") {
		t.Errorf("--apply did not apply: %s", b)
	}
	// An episode cut short (here by the step limit, after the edit) applies nothing unless
	// asked to explicitly.
	short := t.TempDir()
	if err := demo.WriteSample(context.Background(), short); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(short, "calc.go"))
	// These two take the default trajectory: a new file each, though the same second may
	// start both.
	t.Setenv("FROGNANO_CACHE", t.TempDir())
	out, errOut, code = frognano(t, env, "agent", "--dir", short, "--task", demo.Instruction, "--apply", "--max-steps", "3")
	first := trajectoryOf(t, errOut)
	if code != exitFailed || !strings.Contains(errOut, "max_steps after 3 steps, 1 files changed") || !strings.Contains(errOut, "not applied") || !strings.Contains(out, "+\treturn a + b") {
		t.Errorf("--apply after max_steps: code %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(short, "calc.go")); string(b) != string(before) {
		t.Errorf("a run that did not finish was applied: %s", b)
	}
	_, errOut, _ = frognano(t, env, "agent", "--dir", short, "--task", demo.Instruction, "--apply", "--apply-incomplete", "--max-steps", "3")
	if b, _ := os.ReadFile(filepath.Join(short, "calc.go")); !strings.Contains(string(b), "return a + b") || !strings.Contains(errOut, "applied 1 files") {
		t.Errorf("--apply-incomplete did not apply: %s\n%s", b, errOut)
	}
	if second := trajectoryOf(t, errOut); second == first {
		t.Errorf("two runs wrote one trajectory file %s", first)
	}
	// A named trajectory that exists is never overwritten.
	if _, errOut, code := frognano(t, env, "agent", "--dir", short, "--task", demo.Instruction, "--trajectory", traj); code != exitFailed || !strings.Contains(errOut, "exists already") {
		t.Errorf("existing --trajectory: code %d, %q", code, errOut)
	}
	if _, errOut, code := frognano(t, map[string]string{"OLLAMA_HOST": "127.0.0.1:1"}, "agent", "--dir", "/nonexistent", "--task", "x"); code != exitUsage || !strings.Contains(errOut, "--dir /nonexistent is not a folder") {
		t.Errorf("missing folder: %d %q", code, errOut)
	}
	if _, errOut, code := frognano(t, env, "agent", "--dir", dir); code != exitUsage || !strings.Contains(errOut, "--task is required") {
		t.Errorf("missing --task: %d %q", code, errOut)
	}
	if _, errOut, code := frognano(t, map[string]string{"OLLAMA_HOST": srv.Host, "FROGNANO_MODEL": "absent"}, "agent", "--dir", dir, "--task", "x"); code != exitFailed || !strings.Contains(errOut, `Model "absent" is not installed`) {
		t.Errorf("missing model: %d %q", code, errOut)
	}
}

func TestDoctorExitCode(t *testing.T) {
	out, _, code := frognano(t, map[string]string{"OLLAMA_HOST": "127.0.0.1:1"}, "doctor")
	if code != exitFailed || !strings.Contains(out, "FAIL  ollama") || !strings.Contains(out, "fix: Start it with `ollama serve`") {
		t.Errorf("doctor with Ollama down: code %d\n%s", code, out)
	}
	out, _, code = frognano(t, map[string]string{"OLLAMA_HOST": "127.0.0.1:1"}, "doctor", "--json")
	if code != exitFailed || !strings.Contains(out, `"status": "FAIL"`) {
		t.Errorf("doctor --json: code %d\n%s", code, out)
	}
}

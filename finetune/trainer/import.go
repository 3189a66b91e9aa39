package trainer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ollama/ollama/api"
)

// ImportRequest registers an exported folder ([Process.MergeExport]) in Ollama.
type ImportRequest struct {
	Name string // the new model's name; a model of that name must not exist
	Dir  string // the exported safetensors folder
	// Quantize: "" or "f16" keeps the exported weights (export float16 for that), "q8_0"
	// for models whose widths are not multiples of 256 (tiny test models), "q4_K_M" for
	// real ones (it is accepted for any widths and then crashes at load: see the notes).
	Quantize string
	// Template, or Renderer and Parser, is the chat format Ollama serves; for FrogNano the
	// ones `frognano model import` registers (ollama.FrogNanoRenderer, FrogNanoParser,
	// FrogNanoParameters). All empty: the template Ollama derives from tokenizer_config.json.
	Template   string
	Renderer   string
	Parser     string
	Parameters map[string]any
	// System and Messages are the model's SYSTEM prompt and MESSAGE lines, carried over from
	// the model the export was trained from so that the new one answers in the same setting.
	System   string
	Messages []api.Message
}

// ollamaArchs are the architectures Ollama 0.17.4's converter takes from this trainer, and
// the config fields each needs: a missing layer or head count crashes the whole server at
// create, a missing rope_theta loads silently with the wrong RoPE base (notes).
var ollamaArchs = map[string][]string{
	"LlamaForCausalLM": {"num_hidden_layers", "num_attention_heads", "num_key_value_heads",
		"hidden_size", "intermediate_size", "rope_theta", "vocab_size"},
	"Qwen3_5ForConditionalGeneration": {"num_hidden_layers", "num_attention_heads",
		"num_key_value_heads", "head_dim", "linear_num_key_heads", "linear_num_value_heads",
		"linear_key_head_dim", "linear_value_head_dim", "rope_theta", "partial_rotary_factor"},
}

// CheckExport validates an exported folder before anything reaches Ollama: config.json
// (architecture, required fields), tokenizer.json, and tokenizer_config.json with a chat
// template and an eos_token. It returns every problem found.
func CheckExport(dir string) error {
	var probs []string
	var cfg map[string]any
	if err := readJSON(filepath.Join(dir, "config.json"), &cfg); err != nil {
		return err
	}
	var arch string
	if a, ok := cfg["architectures"].([]any); ok && len(a) == 1 {
		arch, _ = a[0].(string)
	}
	need, ok := ollamaArchs[arch]
	if !ok {
		probs = append(probs, fmt.Sprintf("architecture %q is not one Ollama 0.17.4 converts from this trainer", arch))
	}
	fields := map[string]any{}
	for _, m := range []any{cfg["rope_parameters"], cfg["text_config"], cfg} {
		if m, ok := m.(map[string]any); ok {
			for k, v := range m {
				fields[k] = v
			}
		}
	}
	if tc, ok := cfg["text_config"].(map[string]any); ok {
		if rp, ok := tc["rope_parameters"].(map[string]any); ok {
			for k, v := range rp {
				fields[k] = v
			}
		}
	}
	for _, k := range need {
		if v, ok := fields[k].(float64); !ok || v <= 0 {
			probs = append(probs, "config.json lacks "+k)
		}
	}
	if arch == "LlamaForCausalLM" {
		// Ollama's Llama converter reads rope_theta only at the top level
		if v, ok := cfg["rope_theta"].(float64); !ok || v <= 0 {
			probs = append(probs, "config.json lacks a top-level rope_theta (Ollama would use its default RoPE base)")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		probs = append(probs, "no tokenizer.json (Ollama: unknown tokenizer format)")
	}
	var tc map[string]any
	if err := readJSON(filepath.Join(dir, "tokenizer_config.json"), &tc); err != nil {
		probs = append(probs, err.Error())
	} else {
		if s, _ := tc["chat_template"].(string); s == "" {
			probs = append(probs, "tokenizer_config.json has no chat_template")
		}
		if tc["eos_token"] == nil {
			probs = append(probs, "tokenizer_config.json has no eos_token (Ollama would not know when to stop)")
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("export %s is not importable: %s", dir, strings.Join(probs, "; "))
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ErrModelExists is returned by [Import] when the name is taken: an import never replaces
// or deletes a model.
var ErrModelExists = errors.New("Ollama already has a model of that name")

// Import checks the folder ([CheckExport]), refuses a name Ollama already has, uploads
// every file as a blob and creates the model from them. progress may be nil.
func Import(ctx context.Context, c *api.Client, req ImportRequest, progress func(api.ProgressResponse)) error {
	if strings.TrimSpace(req.Name) == "" {
		return errors.New("import: a model name is required")
	}
	quant := req.Quantize
	switch strings.ToLower(quant) {
	case "", "f16":
		quant = ""
	case "q8_0", "q4_k_m", "q4_k_s":
	default:
		return fmt.Errorf("import: quantization %q is not one of f16, q8_0, q4_K_M, q4_K_S", req.Quantize)
	}
	if err := CheckExport(req.Dir); err != nil {
		return err
	}
	_, err := c.Show(ctx, &api.ShowRequest{Model: req.Name})
	var se api.StatusError
	switch {
	case err == nil:
		return fmt.Errorf("import %s: %w", req.Name, ErrModelExists)
	case !errors.As(err, &se) || se.StatusCode != http.StatusNotFound:
		return fmt.Errorf("import %s: asking Ollama whether the name is free: %w", req.Name, err)
	}
	entries, err := os.ReadDir(req.Dir)
	if err != nil {
		return err
	}
	files := map[string]string{}
	for _, e := range entries {
		// what the converter reads; chat_template.jinja is already in tokenizer_config.json
		n := e.Name()
		if e.IsDir() || !(strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".json")) {
			continue
		}
		d, err := uploadBlob(ctx, c, filepath.Join(req.Dir, n))
		if err != nil {
			return fmt.Errorf("import %s: uploading %s: %w", req.Name, n, err)
		}
		files[n] = d
	}
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".safetensors") }) {
		return fmt.Errorf("import %s: %s has no .safetensors file", req.Name, req.Dir)
	}
	if progress == nil {
		progress = func(api.ProgressResponse) {}
	}
	return c.Create(ctx, &api.CreateRequest{
		Model:      req.Name,
		Files:      files,
		Template:   req.Template,
		Renderer:   req.Renderer,
		Parser:     req.Parser,
		Parameters: req.Parameters,
		System:     req.System,
		Messages:   req.Messages,
		Quantize:   quant,
	}, func(r api.ProgressResponse) error { progress(r); return nil })
}

func uploadBlob(ctx context.Context, c *api.Client, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return digest, c.CreateBlob(ctx, digest, f)
}

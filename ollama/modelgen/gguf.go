// Package modelgen writes small GGUF models for tests and the demo: tiny random models for
// plumbing, and scripted models that make a real Ollama server emit an exact agent episode.
//
// Start with [Scripted]; [Random] is the plumbing-only variant. Both return a [Model] whose
// file, template and parameters [ollama.Import] registers with a server.
package modelgen

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ollama/ollama/fs/ggml"

	"github.com/frognano/frognano/ollama/modelgen/script"
)

// Arch, Llama and Qwen3 are package script's (see [Script]).
type Arch = script.Arch

const (
	Llama = script.Llama
	Qwen3 = script.Qwen3
)

// Arches lists every architecture modelgen writes, for tests that cover both engines.
var Arches = []Arch{Llama, Qwen3}

// Model is a written GGUF file plus what Ollama needs to serve it as intended.
type Model struct {
	Path       string
	Template   string
	Renderer   string
	Parser     string
	Parameters map[string]any
	// ContextLength is the trained context the file declares; Ollama caps num_ctx to it.
	ContextLength int
}

// shape holds the dimensions of a generated transformer.
type shape struct {
	hidden, ff, heads, kvHeads, headDim, layers, context int
}

// shapeFor gives one attention head whatever the width: the generated layers' weights are
// zero (scripted) or noise (random), and a prompt's attention costs heads × context per
// token. One head instead of hidden/32 halved a 7,000-token prompt's evaluation (2.5 →
// 1.4 s, BenchmarkEpisode20Steps); key_length says its width, as Qwen3 files do.
func shapeFor(hidden int) shape {
	const headDim = 32
	return shape{hidden: hidden, ff: 64, heads: 1, kvHeads: 1, headDim: headDim, layers: 1, context: 131072}
}

// matrix is a float32 tensor in row-major order of its ggml shape reversed: rows × cols
// where cols is the ggml input dimension (ne0).
type matrix struct {
	rows, cols int
	data       []float32
}

func newMatrix(rows, cols int) *matrix {
	return &matrix{rows: rows, cols: cols, data: make([]float32, rows*cols)}
}

func (m *matrix) set(r, c int, v float32) { m.data[r*m.cols+c] = v }

func (m *matrix) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 4*len(m.data))
	for i, f := range m.data {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
	}
	n, err := w.Write(buf)
	return int64(n), err
}

func ones(n int) *matrix {
	m := newMatrix(1, n)
	for i := range m.data {
		m.data[i] = 1
	}
	return m
}

func tensor(name string, m *matrix) *ggml.Tensor {
	shape := []uint64{uint64(m.cols)}
	if m.rows > 1 {
		shape = append(shape, uint64(m.rows))
	}
	return &ggml.Tensor{Name: name, Kind: uint32(ggml.TensorTypeF32), Shape: shape, WriterTo: m}
}

// writeGGUF writes a transformer of the given arch. embd and out are vocab × hidden; fill
// sets every layer weight (zero for scripted models, small noise for random ones).
func writeGGUF(path string, arch Arch, s shape, v *vocab, embd, out *matrix, fill func(*matrix)) error {
	if arch != Llama && arch != Qwen3 {
		return fmt.Errorf("modelgen: unknown architecture %q (want llama or qwen3)", arch)
	}
	a := string(arch)
	eos := v.ids[ImEnd]
	kv := ggml.KV{
		"general.architecture":                  a,
		"general.name":                          "frognano-modelgen",
		a + ".block_count":                      uint32(s.layers),
		a + ".context_length":                   uint32(s.context),
		a + ".embedding_length":                 uint32(s.hidden),
		a + ".feed_forward_length":              uint32(s.ff),
		a + ".attention.head_count":             uint32(s.heads),
		a + ".attention.head_count_kv":          uint32(s.kvHeads),
		a + ".attention.layer_norm_rms_epsilon": float32(1e-6),
		a + ".rope.freq_base":                   float32(10000),
		"tokenizer.ggml.model":                  "gpt2",
		"tokenizer.ggml.pre":                    "qwen2",
		"tokenizer.ggml.tokens":                 v.tokens,
		"tokenizer.ggml.token_type":             v.types,
		"tokenizer.ggml.merges":                 v.merges,
		"tokenizer.ggml.bos_token_id":           uint32(v.ids[EndOfText]),
		"tokenizer.ggml.eos_token_id":           uint32(eos),
		"tokenizer.ggml.padding_token_id":       uint32(v.ids[EndOfText]),
		"tokenizer.ggml.add_bos_token":          false,
	}
	kv[a+".attention.key_length"] = uint32(s.headDim)
	kv[a+".attention.value_length"] = uint32(s.headDim)

	ts := []*ggml.Tensor{
		tensor("token_embd.weight", embd),
		tensor("output.weight", out),
		tensor("output_norm.weight", ones(s.hidden)),
	}
	q, kvw := s.heads*s.headDim, s.kvHeads*s.headDim
	for i := 0; i < s.layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		layer := map[string]*matrix{
			"attn_q":      newMatrix(q, s.hidden),
			"attn_k":      newMatrix(kvw, s.hidden),
			"attn_v":      newMatrix(kvw, s.hidden),
			"attn_output": newMatrix(s.hidden, q),
			"ffn_gate":    newMatrix(s.ff, s.hidden),
			"ffn_up":      newMatrix(s.ff, s.hidden),
			"ffn_down":    newMatrix(s.hidden, s.ff),
		}
		for name, m := range layer {
			fill(m)
			ts = append(ts, tensor(p+name+".weight", m))
		}
		ts = append(ts, tensor(p+"attn_norm.weight", ones(s.hidden)), tensor(p+"ffn_norm.weight", ones(s.hidden)))
		if arch == Qwen3 {
			ts = append(ts, tensor(p+"attn_q_norm.weight", ones(s.headDim)), tensor(p+"attn_k_norm.weight", ones(s.headDim)))
		}
	}

	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("modelgen: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

package trainer

import (
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the version of the JSON-lines protocol this client speaks (README.md);
// Start refuses a trainer that answers hello with another.
const ProtocolVersion = 1

// Hello is what the trainer found: versions, device and the dtype it would train in.
type Hello struct {
	Protocol      int      `json:"protocol"`
	Python        string   `json:"python"`
	Torch         string   `json:"torch"`
	Transformers  string   `json:"transformers"`
	Peft          string   `json:"peft"`
	CUDAAvailable bool     `json:"cuda_available"`
	CUDAVersion   string   `json:"cuda_version"`
	GPUs          []string `json:"gpus"`
	Device        string   `json:"device"`
	DType         string   `json:"dtype"`
	Distributed   string   `json:"distributed"` // "", ddp or fsdp
	WorldSize     int      `json:"world_size"`  // ranks under torchrun; 1 otherwise
}

// Load selects the model and the training settings. Every numeric field left zero is
// either the trainer's default (README.md) or invalid for it, so omitting is never a
// silent change of meaning.
type Load struct {
	Model                 string       `json:"model,omitempty"`  // a local model folder
	GGUF                  string       `json:"gguf,omitempty"`   // or a GGUF file (dequantised)
	Random                *RandomModel `json:"random,omitempty"` // or a tiny random model
	LoRA                  *LoRA        `json:"lora,omitempty"`
	GRPO                  *GRPO        `json:"grpo,omitempty"`
	LR                    float64      `json:"lr,omitempty"`
	WeightDecay           float64      `json:"weight_decay,omitempty"`
	Device                string       `json:"device,omitempty"` // auto, cpu, cuda
	DType                 string       `json:"dtype,omitempty"`  // auto, float32, bfloat16
	GradientCheckpointing *bool        `json:"gradient_checkpointing,omitempty"`
	Seed                  int          `json:"seed,omitempty"`
	// LogprobChunk is how many positions the LM head scores at a time (default 1024): the
	// logits of a whole long sequence would not fit in memory.
	LogprobChunk int `json:"logprob_chunk,omitempty"`
}

// RandomModel is a tiny random-initialised model for tests (nothing is downloaded).
type RandomModel struct {
	Arch              string `json:"arch"` // llama, qwen3, qwen3_5
	Seed              int    `json:"seed,omitempty"`
	VocabSize         int    `json:"vocab_size,omitempty"`
	HiddenSize        int    `json:"hidden_size,omitempty"`
	IntermediateSize  int    `json:"intermediate_size,omitempty"`
	NumHiddenLayers   int    `json:"num_hidden_layers,omitempty"`
	NumAttentionHeads int    `json:"num_attention_heads,omitempty"`
	NumKeyValueHeads  int    `json:"num_key_value_heads,omitempty"`
	// InitializerRange is the weights' init std (0: transformers' 0.02, whose nearly flat
	// next-token distributions make a weak export check).
	InitializerRange float64 `json:"initializer_range,omitempty"`
	// TextOutput makes the model generate only printable ASCII, newlines and <|im_end|>
	// (with the byte tokenizer): a random model otherwise emits bytes that are not whole
	// UTF-8, whose pieces Ollama's logprobs lose, so no rollout of it can be rebuilt.
	TextOutput bool `json:"text_output,omitempty"`
}

// LoRA is the adapter: Target nil means all linear layers.
type LoRA struct {
	Rank    int      `json:"rank,omitempty"`
	Alpha   float64  `json:"alpha,omitempty"`
	Dropout float64  `json:"dropout,omitempty"`
	Target  []string `json:"target,omitempty"`
}

// GRPO holds the objective's settings.
type GRPO struct {
	ClipLow     float64 `json:"clip_low,omitempty"`
	ClipHigh    float64 `json:"clip_high,omitempty"`
	ScaleStd    bool    `json:"scale_std,omitempty"`
	KLCoef      float64 `json:"kl_coef,omitempty"`
	MaxGradNorm float64 `json:"max_grad_norm,omitempty"`
}

// Loaded describes the model the trainer holds.
type Loaded struct {
	Arch                  string `json:"arch"`
	Device                string `json:"device"`
	DType                 string `json:"dtype"`
	Parameters            int64  `json:"parameters"`
	Trainable             int64  `json:"trainable"`
	VocabSize             int    `json:"vocab_size"`
	GradientCheckpointing bool   `json:"gradient_checkpointing"`
	WorldSize             int    `json:"world_size"`
}

// Rollout is one trajectory as token ids: the prompt and everything after it, exactly as
// the model saw and produced them. Mask is true for the assistant's own tokens, the only
// ones the loss sees (Mask[0] must be false).
type Rollout struct {
	Tokens []int   `json:"tokens"`
	Mask   []bool  `json:"mask"`
	Reward float64 `json:"reward"`
	Group  string  `json:"group"` // the task: advantages are relative within a group
}

// Batch is one train request: all of it is scored by the old policy first, then split
// into Minibatches optimizer steps (groups kept whole), Epochs times. Zero means 1.
type Batch struct {
	Rollouts    []Rollout `json:"rollouts"`
	Minibatches int       `json:"minibatches,omitempty"`
	Epochs      int       `json:"epochs,omitempty"`
}

// Trained is a train request's outcome. Loss and GradNorm are nil when no step was taken
// (every group had equal rewards).
type Trained struct {
	Loss          *float64 `json:"loss"`
	GradNorm      *float64 `json:"grad_norm"`
	Tokens        int      `json:"tokens"`
	Sequences     int      `json:"sequences"`
	Steps         int      `json:"steps"`
	SkippedGroups []string `json:"skipped_groups"`
	ClipFraction  float64  `json:"clip_fraction"`
	StepTime      float64  `json:"step_time_s"`
}

// Saved lists the adapter's files.
type Saved struct {
	Path  string   `json:"path"`
	Files []string `json:"files"`
}

// Exported is a merged model folder; Problems lists what Ollama's converter would refuse.
type Exported struct {
	Path         string   `json:"path"`
	Files        []string `json:"files"`
	Architecture string   `json:"architecture"`
	Problems     []string `json:"problems"`
}

// LogprobsRequest asks for the next-token distribution after one sequence, given as exactly
// one of Tokens, Text (tokenized by the model's tokenizer, special tokens added as it adds
// them) and Messages (rendered by its chat template with the generation prompt).
type LogprobsRequest struct {
	Tokens   []int     `json:"tokens,omitempty"`
	Text     string    `json:"text,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	TopK     int       `json:"top_k,omitempty"` // default 5, at most 100
}

// TokenizeRequest asks for the ids of a rollout's texts and output pieces. Each text is
// tokenized whole, as Ollama tokenizes a prompt (special tokens parsed; the tokenizer's own
// BOS added unless NoSpecialTokens); each piece must be the text of one token (the pieces
// of Ollama's per-token logprobs: the model's own tokens).
type TokenizeRequest struct {
	Texts           []string   `json:"texts,omitempty"`
	Pieces          [][]string `json:"pieces,omitempty"`
	NoSpecialTokens bool       `json:"-"`
}

// MarshalJSON writes NoSpecialTokens as the protocol's add_special_tokens.
func (r TokenizeRequest) MarshalJSON() ([]byte, error) {
	type plain TokenizeRequest
	return json.Marshal(struct {
		plain
		AddSpecialTokens bool `json:"add_special_tokens"`
	}{plain(r), !r.NoSpecialTokens})
}

// Tokenized answers a [TokenizeRequest] in its shape: ids per text, and one id per piece,
// -1 where no single token spells the piece.
type Tokenized struct {
	Texts  [][]int `json:"texts"`
	Pieces [][]int `json:"pieces"`
}

// Message is one chat message for [LogprobsRequest.Messages].
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// NextTokens is the answer to a logprobs request: the sequence's token ids and the TopK
// most likely next tokens, most likely first.
type NextTokens struct {
	Tokens []int       `json:"tokens"`
	Top    []NextToken `json:"top"`
}

// NextToken is one candidate next token. Token and Bytes are set when the model has a
// tokenizer (Bytes: what the token spells, also for pieces of a UTF-8 character).
type NextToken struct {
	ID      int     `json:"id"`
	Logprob float64 `json:"logprob"`
	Token   string  `json:"token,omitempty"`
	Bytes   []int   `json:"bytes,omitempty"` // as Ollama's api.TokenLogprob.Bytes
}

// Metrics are the trainer's running totals.
type Metrics struct {
	Uptime     float64  `json:"uptime_s"`
	Loaded     bool     `json:"loaded"`
	Steps      int      `json:"steps"`
	Tokens     int64    `json:"tokens"`
	TrainCalls int      `json:"train_calls"`
	StepTime   float64  `json:"step_time_s"`
	LastLoss   *float64 `json:"last_loss"`
	PeakMemory int64    `json:"peak_memory_bytes"`
	WorldSize  int      `json:"world_size"`
	// AdapterDigests (with [Process.MetricsDigest]): each rank's sha256 of the adapter it
	// holds; equal under DDP when the ranks are in step (under FSDP each holds a shard)
	AdapterDigests []string `json:"adapter_digests,omitempty"`
}

// Error is an error the trainer answered with; Code is one of the README's codes
// (invalid_params, not_loaded, nonfinite, out_of_memory, ...).
type Error struct {
	Method  string `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("trainer %s: %s (%s)", e.Method, e.Message, e.Code)
}

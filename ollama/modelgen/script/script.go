// Package script describes the episode a scripted model replays ([Script]) and the engine
// that serves it ([Arch]): plain data, apart from the GGUF writer in package modelgen,
// which links Ollama's ggml packages. The shipped frognano binary describes the demo's
// episode with it and leaves writing the model to the frognano-modelgen helper
// (cmd/frognano-modelgen), so that what an editor starts stays small.
package script

// Arch selects which of Ollama's engines serves the model.
type Arch string

const (
	// Llama is served by Ollama's llama.cpp runner.
	Llama Arch = "llama"
	// Qwen3 is served by Ollama's own Go engine, like FrogNano's qwen35 architecture.
	Qwen3 Arch = "qwen3"
)

// Turn is one assistant turn of a script: what the model says in reply to the prompt that
// has as many assistant messages in its history as turns came before this one.
type Turn struct {
	// Thinking is emitted first, inside <think>…</think>; Ollama moves it to
	// Message.Thinking when the request asks to think, and leaves it in the content otherwise.
	Thinking string `json:",omitempty"`
	// Content is plain text; it may hold a text-form tool call to test client-side recovery.
	Content string `json:",omitempty"`
	// ToolCalls are emitted after the content in Ollama's JSON-in-<tool_call> form, which
	// the server's own tool parser turns into structured Message.ToolCalls.
	ToolCalls []ToolCall `json:",omitempty"`
}

// ToolCall is a call the scripted model makes.
type ToolCall struct {
	Name      string
	Arguments map[string]any
}

// Script is a whole episode, one Turn per assistant message. It travels to
// frognano-modelgen as JSON.
type Script struct {
	Turns []Turn
	// NoTools leaves .Tools out of the template, so the server says the model "does not
	// support tools" (for testing that error path).
	NoTools bool `json:",omitempty"`
	// NoThinking leaves .Thinking out of the template, so the server rejects think:true.
	NoThinking bool `json:",omitempty"`
	// Renderer and Parser, when set, make the server build the prompt and read the reply
	// with its built-in code instead of the template (as a FrogNano import does). A
	// renderer's prompt does not say which step it is, so such a script has one turn, which
	// follows the "\n" that ends the renderer's "<|im_start|>assistant\n".
	Renderer string `json:",omitempty"`
	Parser   string `json:",omitempty"`
}

package ollama

// FrogNano's chat format, as Ollama v0.17.4 can serve it (see docs in the README):
// ChatML, thinking opened by the generation prompt ("<think>\n"), tools described and
// called in the Qwen3-coder XML form (<tool_call><function=NAME><parameter=ARG>…), tool
// results as <tool_response> in a user turn. Ollama's built-in "nemotron-3-nano" renderer
// writes exactly that layout and its parser of the same name reads the XML calls and moves
// the reasoning before </think> into Message.Thinking. Other built-in pairs fall short:
// parser "qwen3.5" fails on XML calls, "qwen3-coder" leaves <think> text in the content and
// renders no thinking, renderer "qwen3.5" describes tools as JSON. The pair is verified
// against the real server by TestImportedFormatParsesXMLToolCalls.
const (
	FrogNanoRenderer = "nemotron-3-nano"
	FrogNanoParser   = "nemotron-3-nano"
)

// FrogNanoParameters are the sampling settings FrogNano was tuned for (its model card),
// the stop tokens of its ChatML template, its per-turn token budget, and num_ctx.
func FrogNanoParameters(numCtx int) map[string]any {
	if numCtx <= 0 {
		numCtx = DefaultNumCtx
	}
	return map[string]any{
		"temperature":    0.6,
		"top_p":          0.95,
		"top_k":          20,
		"min_p":          0.0,
		"repeat_penalty": 1.0,
		"num_ctx":        numCtx,
		"num_predict":    8192,
		"stop":           []string{"<|im_end|>", "<|endoftext|>"},
	}
}

// FrogNanoRequest is the CreateRequest that registers a FrogNano GGUF under name.
func FrogNanoRequest(name, gguf string, numCtx int) CreateRequest {
	return CreateRequest{
		Name:       name,
		GGUF:       gguf,
		Renderer:   FrogNanoRenderer,
		Parser:     FrogNanoParser,
		Parameters: FrogNanoParameters(numCtx),
	}
}

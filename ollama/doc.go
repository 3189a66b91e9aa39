// Package ollama holds what frognano needs from the Ollama runtime beyond the upstream
// api.Client: where the server and models are configured ([Config]), starting a private
// server ([StartServer]), registering models ([Create], [FrogNanoRequest]), and turning the
// runtime's errors into messages that say what to do ([Explain]).
//
// The upstream github.com/ollama/ollama/api package stays the only HTTP client.
package ollama

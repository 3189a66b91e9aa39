// Package agent is the FrogNano coding agent: a linear loop over Ollama's chat API with the
// five tools the model was trained with, a private copy of the workspace (agent/workspace),
// sandboxed commands (agent/sandbox), progress events and a JSON Lines trajectory.
//
// Entry point: [Run].
package agent

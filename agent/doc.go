// Package agent will hold the FrogNano coding-agent loop over Ollama's chat API (five
// tools, a private workspace copy, trajectories). Its sandbox probe lives in agent/sandbox.
package agent

// Package finetune will hold task synthesis, rollouts, the curriculum, the GRPO trainer
// driver, export back to Ollama and the daemon. Not built yet: `frognano finetune` says so.
package finetune

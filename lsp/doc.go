// Package lsp will hold the language server that puts the agent behind code actions.
// Not built yet: `frognano lsp` says so at runtime.
package lsp

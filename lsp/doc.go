// Package lsp is frognano's language server: standard LSP over stdio whose code actions
// run the FrogNano agent and deliver its multi-file result as one workspace edit.
//
// Layers, as in gopls: the transport ([Serve]: jsonrpc2 with document-sync notifications
// applied in arrival order), one thin handler file per LSP method, and the logic they call
// (the action table in actions.go, the runner in run.go, edits in edit.go, fine-tuning's
// status and commands in finetune.go), which takes explicit inputs and never sees the
// connection. The commands (workspace/executeCommand) are one table, in command.go. Language knowledge lives in lsp/source,
// open documents and UTF-16 positions in lsp/document.
package lsp

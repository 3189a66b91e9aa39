// Package source is the language knowledge behind frognano's code actions: given one file's
// text and a byte offset, it says which function is there, whether it is a test (and how to
// run just that test), and whether its body is a stub waiting to be implemented.
//
// Entry points: [Enclosing] for the function under the cursor, [Funcs] for a file's
// outline, [LangOf] to pick the language. A language server that keeps a file's functions
// across edits uses [Parse] once and [File.Update] for each new version (file.go), which in
// a Go file parses only the function that changed. The package never sees the editor
// connection: callers convert LSP positions (UTF-16) to byte offsets and back.
//
// Go is read with go/parser. Python, TypeScript and JavaScript are read with tree-sitter
// (internal/syntax), whose error recovery still gives the functions it can find in text
// that does not parse; a File keeps the syntax tree and re-parses it incrementally
// (tree.go), so Parse's File must be closed.
package source

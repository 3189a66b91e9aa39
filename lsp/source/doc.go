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
// Go is read with go/parser. Python, TypeScript and JavaScript are read with small
// hand-written scanners (python_lex.go, js_lex.go) that understand strings, comments,
// template literals and regular expressions well enough to match blocks; they are not
// parsers, and on text they do not understand they return fewer functions, never a panic.
package source

package source

import (
	"path"
	"strings"
)

// Lang is a language this package understands; the empty Lang means "not supported".
type Lang string

// The supported languages. TSX and JSX are TypeScript and JavaScript: the grammar is
// picked from the file's extension (tree.go: TSX only for .tsx files).
const (
	Go         Lang = "go"
	Python     Lang = "python"
	TypeScript Lang = "typescript"
	JavaScript Lang = "javascript"
)

// languageIDs maps the LSP languageId values (LSP 3.17, "Text Document Item") we support.
var languageIDs = map[string]Lang{
	"go":              Go,
	"python":          Python,
	"typescript":      TypeScript,
	"typescriptreact": TypeScript,
	"javascript":      JavaScript,
	"javascriptreact": JavaScript,
}

var extensions = map[string]Lang{
	".go":  Go,
	".py":  Python,
	".pyi": Python,
	".ts":  TypeScript,
	".tsx": TypeScript,
	".mts": TypeScript,
	".cts": TypeScript,
	".js":  JavaScript,
	".jsx": JavaScript,
	".mjs": JavaScript,
	".cjs": JavaScript,
}

// LangOf picks the language from the client's languageId when it is one we know, else from
// the file's extension; clients differ in the ids they send for other languages, and an
// unknown id should not hide a .go file. It returns "" for anything else.
func LangOf(filePath, languageID string) Lang {
	if l, ok := languageIDs[languageID]; ok {
		return l
	}
	return extensions[strings.ToLower(path.Ext(slash(filePath)))]
}

// slash makes a path use forward slashes whatever the client sent, so that path (not
// path/filepath) can split it the same way on every system.
func slash(p string) string { return strings.ReplaceAll(p, `\`, "/") }

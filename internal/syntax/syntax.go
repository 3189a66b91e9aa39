// Package syntax parses Python, JavaScript, TypeScript and TSX with tree-sitter: one parser
// for the language server (lsp/source) and for fine-tuning's mutation synthesizers.
//
// Start with [Parse] (or [LangOf] to pick the grammar from a file name). A [Tree] is
// immutable; [Tree.Reparse] makes the tree of a new version of the text from an old one,
// re-reading only what changed (tree-sitter's incremental parsing), and [Tree.Changed]
// says where the two differ. Read a tree through [Node]: its kind ("binary_expression"),
// byte range ([Node.Start], [Node.End], [Node.Text]), fields ([Node.Field]: "operator",
// "condition", "name", "body", ...), children and parent; [Node.Walk] visits a subtree in
// source order, [Node.DescendantAt] finds what lies at an offset. Offsets are bytes into
// the text given to Parse, so text[n.Start():n.End()] is a node's text and an edit is a
// replacement of such a range.
//
// The kinds and field names are the grammars' own (see node-types.json in the modules
// github.com/tree-sitter/tree-sitter-{python,javascript,typescript}); for example Python's
// comparison_operator and boolean_operator, JavaScript's binary_expression with its
// "operator" field, if_statement with "condition", call_expression with "arguments".
//
// Memory: the tree-sitter binding has no finalizers and its trees live in C memory. Every
// tree Parse or Reparse returns must be closed with [Tree.Close]; parsers and cursors are
// created and closed inside this package, so a Tree is the only thing a caller owns. A
// Tree dropped without Close is freed when the garbage collector finds it (a safety net,
// not the plan: C memory does not make the collector run), and [Open] counts the trees not
// yet freed so that tests can check for leaks. A Node keeps its Tree reachable; using one
// after its Tree was closed panics with a message rather than reading freed memory.
//
// A Tree and its Nodes may be read from many goroutines at once; Close must come after
// every other use.
package syntax

import (
	"path"
	"strings"
	"sync"
	"unsafe"

	ts "github.com/tree-sitter/go-tree-sitter"
	tsjs "github.com/tree-sitter/tree-sitter-javascript/bindings/go"
	tspy "github.com/tree-sitter/tree-sitter-python/bindings/go"
	tsts "github.com/tree-sitter/tree-sitter-typescript/bindings/go"
)

// Lang is a grammar. JavaScript's grammar reads JSX too; TypeScript's does not (in a .ts
// file "<T>x" is a type assertion), which is why TSX is a grammar of its own.
type Lang string

const (
	Python     Lang = "python"
	JavaScript Lang = "javascript"
	TypeScript Lang = "typescript"
	TSX        Lang = "tsx"
)

// Langs lists every grammar this package has.
var Langs = []Lang{Python, JavaScript, TypeScript, TSX}

var extensions = map[string]Lang{
	".py": Python, ".pyi": Python,
	".js": JavaScript, ".jsx": JavaScript, ".mjs": JavaScript, ".cjs": JavaScript,
	".ts": TypeScript, ".mts": TypeScript, ".cts": TypeScript,
	".tsx": TSX,
}

// LangOf picks the grammar from a file name's extension (forward or back slashes), or ""
// for a file none of them reads.
func LangOf(name string) Lang {
	return extensions[strings.ToLower(path.Ext(strings.ReplaceAll(name, `\`, "/")))]
}

// grammar is what this package keeps about one language: the binding's handle and tables
// that spare a cgo call and an allocation for each kind and field name looked up.
type grammar struct {
	lang   *ts.Language
	kinds  []string          // by symbol id
	fields map[string]uint16 // field name to id
}

var (
	grammarsOnce sync.Once
	grammars     map[Lang]*grammar
)

func grammarOf(l Lang) *grammar {
	grammarsOnce.Do(func() {
		grammars = map[Lang]*grammar{}
		for l, p := range map[Lang]unsafe.Pointer{
			Python:     tspy.Language(),
			JavaScript: tsjs.Language(),
			TypeScript: tsts.LanguageTypescript(),
			TSX:        tsts.LanguageTSX(),
		} {
			tl := ts.NewLanguage(p)
			g := &grammar{lang: tl, fields: map[string]uint16{}}
			for id := range tl.NodeKindCount() {
				g.kinds = append(g.kinds, tl.NodeKindForId(uint16(id)))
			}
			for id := uint16(1); uint32(id) <= tl.FieldCount(); id++ {
				g.fields[tl.FieldNameForId(id)] = id
			}
			grammars[l] = g
		}
	})
	return grammars[l]
}

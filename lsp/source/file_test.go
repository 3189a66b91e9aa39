package source

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/frognano/frognano/internal/syntax"
)

// sameFuncs reports how two lists of functions differ, or "" when they are equal (tests
// compared by value).
func sameFuncs(got, want []Func) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d functions, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		gt, wt := g.Test, w.Test
		g.Test, w.Test = nil, nil
		if g != w || (gt == nil) != (wt == nil) || gt != nil && *gt != *wt {
			return fmt.Sprintf("function %d is\n%+v %+v\nwant\n%+v %+v", i, g, gt, w, wt)
		}
	}
	return ""
}

// checkUpdate checks that f.Update(text) is what Parse finds in text, including what the
// next Update relies on, and returns it.
func checkUpdate(t testing.TB, f *File, text string) *File {
	t.Helper()
	got := f.Update(text)
	want, err := Parse(f.lang, f.relPath, text)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	switch {
	case got.spliced:
		// A splice claims what a fresh parse finds, and a text without errors.
		if want.tree.HasError() {
			t.Fatalf("%s: Update from\n%q\nto\n%q\nwas spliced, but the text has a syntax error", f.relPath, f.text, text)
		}
	case got.tree != nil:
		// What Update reused must be what a full walk of its tree finds.
		w := &walker{text: text, relPath: got.relPath, lang: got.lang}
		all := w.walk(got.tree)
		slices.SortStableFunc(all, func(a, b Func) int { return cmp.Compare(a.Start, b.Start) })
		if d := sameFuncs(got.all, all); d != "" {
			t.Fatalf("%s: Update from\n%q\nto\n%q\ngives %s (a full walk of the same tree)", f.relPath, f.text, text, d)
		}
		if got.tree.HasError() || want.tree.HasError() {
			// Only here may tree-sitter's incremental and fresh parses differ (tree.go).
			return got
		}
	}
	if d := sameFuncs(got.Funcs(), want.Funcs()); d != "" {
		t.Fatalf("%s: Update from\n%q\nto\n%q\ngives %s", f.relPath, f.text, text, d)
	}
	// A Go File updated on the quick path has no all (file.go, moved): in Go it is Funcs,
	// compared above.
	if got.text != text || got.goClean != want.goClean || got.goTesting != want.goTesting || got.all != nil && sameFuncs(got.all, want.all) != "" {
		t.Fatalf("%s: Update to %q: state %v %q, want %v %q", f.relPath, text, got.goClean, got.goTesting, want.goClean, want.goTesting)
	}
	return got
}

// Pieces that random edits insert: the ones that make or break Go declarations, comments,
// strings, line ends and stub markers, and their Python and TypeScript counterparts.
var editPieces = []string{
	"{", "}", "(", ")", ";", "\n", "\r\n", "\r", " ", "\t", "x", "1", "é", "😀",
	"/*", "*/", "//", "\"", "`", "'", "\\",
	"func ", "func g() {}", "func (r *T) M() int {\n\treturn 0\n}\n", "\nfunc h() {\n", "}\n\nfunc k() {",
	"import \"os\"\n", "package q\n", "var v = 1\n", "type T struct{}\n", "var f = func() {\n",
	"panic(\"not implemented\")", "// TODO\n", "return nil\n", "t *testing.T", "testing", "Test",
	"def f():\n    pass\n", "    ", "class C:\n", "it('x', () => {", "});\n", "=>",
}

// randomEdit replaces a random span of text, often at a function's edge, with random pieces.
func randomEdit(r *rand.Rand, text string) string {
	var at int
	switch k := r.IntN(4); {
	case k == 0 && strings.Contains(text, "}"):
		// At, before or after a closing brace: the edges of Go functions.
		for at = r.IntN(len(text) + 1); at < len(text) && text[at] != '}'; at++ {
		}
		at = min(len(text), max(0, at+r.IntN(3)-1))
	case k == 1 && strings.Contains(text, "func"):
		at = strings.Index(text[r.IntN(len(text)):]+text, "func") % max(1, len(text))
		at = min(len(text), max(0, at+r.IntN(3)-1))
	default:
		at = r.IntN(len(text) + 1)
	}
	end := min(len(text), at+r.IntN(4))
	if r.IntN(8) == 0 {
		end = min(len(text), at+r.IntN(80))
	}
	var ins strings.Builder
	for range r.IntN(3) {
		ins.WriteString(editPieces[r.IntN(len(editPieces))])
	}
	if r.IntN(4) == 0 {
		ins.Reset()
		ins.WriteString(string(rune('a' + r.IntN(26)))) // a keystroke
	}
	return text[:at] + ins.String() + text[end:]
}

// TestUpdateMatchesParse edits every fixture, and large generated files, at random, many
// times over, and checks after each edit that updating the previous version's File gives
// what a fresh parse does. It also checks that the Go files took the quick path often,
// so that the comparison is not only of full parses with themselves.
func TestUpdateMatchesParse(t *testing.T) {
	type sample struct {
		lang      Lang
		rel, text string
	}
	var samples []sample
	for _, fx := range fixtures(t) {
		samples = append(samples, sample{fx.lang, fx.rel, fx.text})
	}
	for _, lang := range []Lang{Go, Python, TypeScript} {
		rel, text := bigFile(lang, 30)
		samples = append(samples, sample{lang, rel, text})
	}
	samples = append(samples,
		sample{Go, "p/a_test.go", "package p\n\nimport tt \"testing\"\n\nfunc TestA(t *tt.T) {}\n\nfunc TestB(t *tt.T) {\n}\n"},
		sample{Go, "p/one_line.go", "package p; func a() {}; func b() { panic(\"TODO\") }; /* c */ func c() {}"},
		sample{Go, "p/crlf.go", "package p\r\n\r\n// A is a.\r\nfunc A() {\r\n\treturn\r\n}\r\n\r\n\tfunc B() {\r\n}\r\n"},
		sample{Go, "p/no_package.go", "func A() {\n}\n\nfunc B() {\n\t// TODO\n}\n"},
	)
	edits := 300
	if testing.Short() {
		edits = 60
	}
	r := rand.New(rand.NewPCG(1, 2))
	quick, goEdits := 0, 0
	reused, treeEdits := 0, 0
	openTrees := syntax.Open()
	for _, s := range samples {
		f, err := Parse(s.lang, s.rel, s.text)
		if err != nil {
			t.Fatal(err)
		}
		n := edits
		if s.lang != Go {
			n = edits / 3 // each edit also parses afresh and walks the whole tree
		}
		for range n {
			text := randomEdit(r, f.text)
			if f.lang == Go && f.goClean {
				goEdits++
				if f.goUpdate(text) != nil {
					quick++
				}
			}
			next := checkUpdate(t, f, text)
			if f.lang != Go {
				treeEdits++
				if next.reused > 0 {
					reused++
				}
			}
			if next != f {
				f.Close()
			}
			f = next
			if r.IntN(50) == 0 || f.lang == Go && !f.goClean && r.IntN(3) == 0 {
				f.Close()
				f, _ = Parse(s.lang, s.rel, s.text) // back to a file that parses
			}
		}
		f.Close()
	}
	t.Logf("%d of %d edits to Go files that parsed took the quick path", quick, goEdits)
	if quick < goEdits/5 {
		t.Errorf("only %d of %d edits to Go files that parsed took the quick path", quick, goEdits)
	}
	// The incremental walk must be what is compared, not only full walks with themselves.
	t.Logf("%d of %d edits to Python and TS/JS files reused statements of the previous version", reused, treeEdits)
	if reused < treeEdits/2 {
		t.Errorf("only %d of %d edits to Python and TS/JS files reused statements", reused, treeEdits)
	}
	if n := syntax.Open() - openTrees; n != 0 {
		t.Errorf("%d syntax trees left open", n)
	}
}

// TestUpdateCases are the edits the quick path must get right, or must leave to a full
// parse, each checked against a full parse.
func TestUpdateCases(t *testing.T) {
	const base = "package p\n\nimport \"testing\"\n\n// A is a.\nfunc A() {\n\treturn\n}\n\nvar x = 1\n\n// TestB is b.\nfunc TestB(t *testing.T) {\n\t// TODO\n}\n"
	// Two cases need a line before a function that the base text does not have.
	commented := strings.Replace(base, "func TestB", "/* c */ func TestB", 1)
	declared := strings.Replace(base, "func TestB", "var y = 2; func TestB", 1)
	tests := []struct {
		name, old, new string
		quick          bool   // whether the quick path should prove it
		base           string // if not the one above
	}{
		{"keystroke in a body", "\treturn\n", "\treturn \n", true, ""},
		{"keystroke in a doc comment", "TestB is b", "TestB is c", true, ""},
		{"keystroke in the first function's doc comment", "A is a", "A is b", true, ""},
		{"import added", "import \"testing\"", "import (\n\t\"os\"\n\t\"testing\"\n)", true, ""},
		{"package renamed", "package p", "package q", true, ""},
		{"package clause removed", "package p\n", "", true, ""},
		{"function in the head", "import \"testing\"\n", "import \"testing\"\n\nfunc Z() {}\n", false, ""},
		{"head broken", "import \"testing\"\n", "import \"testing\n", false, ""},
		{"keystroke in the last line", "\t// TODO\n}\n", "\t// TODO\n}\n\n", true, ""},
		{"new statement", "\treturn\n", "\tx++\n\treturn\n", true, ""},
		{"body becomes a stub", "\treturn\n", "\tpanic(\"not implemented\")\n", true, ""},
		{"rename", "func A()", "func A2()", true, ""},
		{"variable between functions", "var x = 1", "var x, y = 1, 2", true, ""},
		{"function split in two", "\treturn\n}", "\treturn\n}\n\nfunc C() {", false, ""},
		{"new function between", "var x = 1\n", "var x = 1\n\nfunc C() {}\n", false, ""},
		{"brace removed", "\treturn\n}", "\treturn\n", false, ""},
		{"text after the closing brace", "\treturn\n}\n", "\treturn\n}x\n", false, ""},
		{"import after a function", "var x = 1\n", "import \"os\"\n", false, ""},
		{"testing renamed", "import \"testing\"", "import tt \"testing\"", false, ""},
		{"comment opened between", "var x = 1\n", "var x = 1 /*\n", false, ""},
		{"comment before func on its line", "\nfunc TestB", "\n/* c */ func TestB", true, ""},
		{"comment before func removed", "/* c */ func TestB", "func TestB", true, commented},
		{"declaration before func removed", "var y = 2; func TestB", "    \tfunc TestB", true, declared},
		{"same-line declaration before func", "\n// TestB is b.\nfunc TestB", "\nvar y = 2; func TestB", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := cmp.Or(tt.base, base)
			if !strings.Contains(b, tt.old) {
				t.Fatalf("%q is not in the base text", tt.old)
			}
			f, _ := Parse(Go, "p/p_test.go", b)
			text := strings.Replace(b, tt.old, tt.new, 1)
			if quick := f.goUpdate(text) != nil; quick != tt.quick {
				t.Errorf("quick path taken: %v, want %v", quick, tt.quick)
			}
			checkUpdate(t, f, text)
		})
	}
}

// FuzzUpdate checks Update against Parse for one edit of an arbitrary text, in the
// language of rel's extension, else Go (go test -fuzz FuzzUpdate ./lsp/source); the seeds
// are the fixtures with an edit inside, between and across their functions.
func FuzzUpdate(f *testing.F) {
	for _, fx := range fixtures(&testing.T{}) {
		f.Add(fx.text, fx.rel, len(fx.text)/2, 1, "x")
		if i := strings.Index(fx.text, "}\n"); i >= 0 {
			f.Add(fx.text, fx.rel, i+1, 0, "\n\nfunc g() {}")
			f.Add(fx.text, fx.rel, i, 1, "")
		}
	}
	f.Fuzz(func(t *testing.T, text, rel string, at, n int, ins string) {
		at = min(max(at, 0), len(text))
		n = min(max(n, 0), len(text)-at)
		next := text[:at] + ins + text[at+n:]
		lang := LangOf(rel, "")
		if lang == "" {
			lang = Go // the language with a quick path
		}
		file, err := Parse(lang, rel, text)
		if err != nil {
			t.Fatal(err)
		}
		checkUpdate(t, file, next)
	})
}

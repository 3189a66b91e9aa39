package source

import (
	"fmt"
	"strings"
	"testing"
)

// bigFile repeats a fixture-like unit n times: about ten lines a unit, so 1,000 units make
// a 10,000-line file, the size the language server's latency targets are set for.
func bigFile(lang Lang, n int) (rel, text string) {
	var b strings.Builder
	switch lang {
	case Go:
		b.WriteString("package calc\n\nimport \"fmt\"\n\n")
		for i := range n {
			fmt.Fprintf(&b, "// F%d does step %d.\nfunc F%d(a, b int) int {\n\tx := a + %d\n\tif x > b {\n\t\treturn x - b\n\t}\n\tfmt.Println(x)\n\treturn b\n}\n\n", i, i, i, i)
		}
		return "calc.go", b.String()
	case Python:
		b.WriteString("import os\n\n\nclass Calc:\n")
		for i := range n {
			fmt.Fprintf(&b, "    def step_%d(self, a, b):\n        \"\"\"Step %d.\"\"\"\n        x = a + %d\n        if x > b:\n            return x - b\n        print(x)\n        return b\n\n", i, i, i)
		}
		return "calc.py", b.String()
	default:
		b.WriteString("import { log } from \"./log\";\n\nexport class Calc {\n")
		for i := range n {
			fmt.Fprintf(&b, "  // Step %d.\n  step%d(a: number, b: number): number {\n    const x = a + %d;\n    if (x > b) {\n      return x - b;\n    }\n    log(`${x}`);\n    return b;\n  }\n\n", i, i, i)
		}
		b.WriteString("}\n")
		return "calc.ts", b.String()
	}
}

// BenchmarkFuncs10k is a full parse of a 10,000-line file: what opening it costs.
func BenchmarkFuncs10k(b *testing.B) {
	for _, lang := range []Lang{Go, Python, TypeScript} {
		rel, text := bigFile(lang, 1000)
		b.Run(string(lang), func(b *testing.B) {
			for b.Loop() {
				if fs, _ := Funcs(lang, rel, text); len(fs) < 1000 {
					b.Fatal(len(fs))
				}
			}
		})
	}
}

// BenchmarkUpdate10k is what a keystroke in one function's doc comment (a letter changed,
// as in the Go file's "// F500 does") costs in a 10,000-line file: File.Update from the
// previous version. Go re-parses the function; Python and TypeScript re-parse the method
// with its neighbours and splice it in (splice.go; BenchmarkFuncs10k is what a full parse
// costs).
func BenchmarkUpdate10k(b *testing.B) {
	for _, lang := range []Lang{Go, Python, TypeScript} {
		rel, text := bigFile(lang, 1000)
		i := strings.Index(text, "F500 does") + len("F500 ")
		if lang != Go {
			i = strings.Index(text, "Step 500.")
		}
		versions := [2]string{text, text[:i] + "X" + text[i+1:]}
		b.Run(string(lang), func(b *testing.B) {
			f, _ := Parse(lang, rel, text)
			n := 0
			for b.Loop() {
				n++
				g := f.Update(versions[n%2])
				if g.top.n < 1000 { // not Funcs(), which copies them into one slice
					b.Fatal("the update lost functions")
				}
				f.Close()
				f = g
			}
			f.Close()
		})
	}
}

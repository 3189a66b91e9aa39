package syntax

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// bigSource is a 10,000-line file of lang: a class with a thousand ten-line methods (the
// size lsp/source's latency targets are set for).
func bigSource(lang Lang) []byte {
	var b strings.Builder
	if lang == Python {
		b.WriteString("import os\n\n\nclass Calc:\n")
		for i := range 1000 {
			fmt.Fprintf(&b, "    def step_%d(self, a, b):\n        \"\"\"Step %d.\"\"\"\n        x = a + %d\n        if x > b:\n            return x - b\n        print(x)\n        return b\n\n", i, i, i)
		}
		return []byte(b.String())
	}
	b.WriteString("import { log } from \"./log\";\n\nexport class Calc {\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  // Step %d.\n  step%d(a: number, b: number): number {\n    const x = a + %d;\n    if (x > b) {\n      return x - b;\n    }\n    log(`${x}`);\n    return b;\n  }\n\n", i, i, i)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// BenchmarkParse10k is a full parse of a 10,000-line file.
func BenchmarkParse10k(b *testing.B) {
	for _, lang := range []Lang{Python, TypeScript} {
		src := bigSource(lang)
		b.Run(string(lang), func(b *testing.B) {
			for b.Loop() {
				t, _ := Parse(lang, src)
				t.Close()
			}
		})
	}
}

// BenchmarkReparse10k is the parse after typing one character in the middle of it: a
// letter of method 500's doc string (Python) or comment (TypeScript), so that the text
// still parses. (Inserting at len/2 put an "x" at the start of a Python line, closing the
// class: a syntax error, whose recovery is not what typing usually costs.)
func BenchmarkReparse10k(b *testing.B) {
	for _, lang := range []Lang{Python, TypeScript} {
		src := bigSource(lang)
		i := bytes.Index(src, []byte("Step 500."))
		edited := append(append(append([]byte{}, src[:i]...), 'x'), src[i:]...)
		b.Run(string(lang), func(b *testing.B) {
			t, _ := Parse(lang, src)
			defer t.Close()
			for b.Loop() {
				nt, _ := t.Reparse(edited)
				nt.Close()
			}
		})
	}
}

// BenchmarkWalk10k visits every node of a 10,000-line file.
func BenchmarkWalk10k(b *testing.B) {
	for _, lang := range []Lang{Python, TypeScript} {
		t, _ := Parse(lang, bigSource(lang))
		b.Run(string(lang), func(b *testing.B) {
			for b.Loop() {
				n := 0
				t.Root().Walk(func(Node) bool { n++; return true })
			}
		})
		t.Close()
	}
}

// BenchmarkParseRanges10k is what lsp/source's splice parses after an edit in method 500
// of a 10,000-line file: the class's header, methods 499 to 501 and (TypeScript) the
// class's closing brace.
func BenchmarkParseRanges10k(b *testing.B) {
	for _, lang := range []Lang{Python, TypeScript} {
		src := bigSource(lang)
		s := string(src)
		head := strings.Index(s, "\n") + 1 // Python: up to the class's line
		from, to := strings.Index(s, "Step 499."), strings.Index(s, "Step 502.")
		if lang == Python {
			head = strings.Index(s, "class Calc:\n") + len("class Calc:\n")
			from = strings.LastIndex(s[:from], "\n    def") + 1
			to = strings.LastIndex(s[:to], "\n    def")
		} else {
			head = strings.Index(s, "{\n") + 1
			from = strings.LastIndex(s[:from], "\n") + 1
			to = strings.LastIndex(s[:to], "\n  //")
		}
		ranges := []Range{{strings.LastIndex(s[:head-1], "\n") + 1, head}, {from, to}}
		if lang != Python {
			ranges = append(ranges, Range{len(s) - 2, len(s) - 1})
		}
		b.Run(string(lang), func(b *testing.B) {
			for b.Loop() {
				t, err := ParseRanges(lang, src, ranges)
				if err != nil || t.HasError() {
					b.Fatal(err, t.Root())
				}
				t.Close()
			}
		})
	}
}

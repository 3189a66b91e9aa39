package document

import (
	"fmt"
	"strings"
	"testing"
)

// bigText is a 10,000-line Go-like text, the size the server's latency targets are set for.
func bigText() string {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "// F%d does step %d.\nfunc F%d(a, b int) int {\n\tx := a + %d\n\tif x > b {\n\t\treturn x - b\n\t}\n\tfmt.Println(x)\n\treturn b\n}\n\n", i, i, i, i)
	}
	return b.String()
}

func BenchmarkNewLines10k(b *testing.B) {
	text := bigText()
	for b.Loop() {
		NewLines(text)
	}
}

// BenchmarkOffsetOf10k converts a position near the end of the text without an index.
func BenchmarkOffsetOf10k(b *testing.B) {
	text := bigText()
	p := Position{Line: 9990, Character: 3}
	for b.Loop() {
		if _, err := OffsetOf(text, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLinesUpdate10k is the index of a 10,000-line text after a keystroke in its
// middle, from the previous version's.
func BenchmarkLinesUpdate10k(b *testing.B) {
	text := bigText()
	i := strings.Index(text, "// F500 does") + len("// F500 ")
	versions := [2]string{text, text[:i] + "D" + text[i+1:]}
	l := NewLines(text)
	n := 0
	for b.Loop() {
		n++
		l = l.Update(versions[n%2])
	}
}

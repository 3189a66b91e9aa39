package synth

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

const switchSrc = `package p

type T[E any] struct{ xs []E }

func (T[E]) Len(_ int, xs ...E) int {
	n := 0
	for range xs {
		n++
	}
	return n
}

func Map[A, B any](xs []A, f func(A) B) []B {
	var out []B
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func Touch(p *int) {
	if p != nil {
		*p = 1
	}
}
`

func TestSwitchFile(t *testing.T) {
	t.Parallel()
	ms, err := GoMutants("m/p", "p.go", []byte(switchSrc))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		ms[i].ID = i + 1
	}
	out, lines, err := switchFile("p.go", []byte(switchSrc), ms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, 0); err != nil {
		t.Fatalf("the switched file does not parse: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{
		"func (frognanoP1 T[E]) Len(frognanoP2 int, xs ...E) int {\n\tswitch frognanoMutant {",
		"return frognanoP1.Len_frognanoMutant",
		"(frognanoP2, xs...)",
		"return Map_frognanoMutant",
		"[A, B](xs, f)",
		"\t\tTouch_frognanoMutant",
		"(p)\n\t\treturn\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	// Each copy lies where lines says, and holds its change.
	all := strings.Split(s, "\n")
	for _, m := range ms {
		r := lines[m.ID]
		first := all[r.first-1]
		if !strings.HasPrefix(first, "func ") || !strings.Contains(first, copyName("", m.ID)) {
			t.Errorf("mutant %d: line %d is %q", m.ID, r.first, first)
		}
		if last := all[r.last-1]; last != "}" {
			t.Errorf("mutant %d: last line %d is %q", m.ID, r.last, last)
		}
	}
}

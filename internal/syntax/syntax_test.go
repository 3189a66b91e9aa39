package syntax

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

var samples = map[Lang]string{
	Python: `import os

@dataclass
class Calc:
    """Adds."""

    def add(self, a, b=1):
        if a > b and not b:
            return a + b
        return [x for x in range(a) if x != b]

async def main():
    await Calc().add(1, 2)
`,
	JavaScript: `export function add(a, b) {
  if (a > b && b !== 0) {
    return a + b;
  }
  return <Sum a={a} b={b} />;
}
const mul = (a, b) => a * b;
`,
	TypeScript: `export abstract class Shape<T extends object> {
  abstract area(): number;
  scale(k: number): number {
    return k >= 1 ? this.area() * k : 0;
  }
}
const cast = <T>(x: unknown): T => <T>x;
function over(a: string): string;
function over(a: number): number;
function over(a: any) { return a; }
`,
	TSX: `export const Button = ({ label }: { label: string }) => {
  const n: number = label.length - 1;
  return <button disabled={n < 0}>{label}</button>;
};
`,
}

// mustParse parses and registers the tree's Close with t.
func mustParse(t testing.TB, lang Lang, src string) *Tree {
	t.Helper()
	tr, err := Parse(lang, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// checkClosed fails t when a tree made since before was not freed by the end of the test.
func checkClosed(t *testing.T) {
	before := Open()
	t.Cleanup(func() {
		if n := Open() - before; n != 0 {
			t.Errorf("%d trees left open", n)
		}
	})
}

func TestLangOf(t *testing.T) {
	for name, want := range map[string]Lang{
		"a/b.py": Python, "x.PYI": Python, "c.js": JavaScript, "c.jsx": JavaScript, "c.mjs": JavaScript,
		"c.ts": TypeScript, "c.mts": TypeScript, `w\c.tsx`: TSX, "c.go": "", "Makefile": "",
	} {
		if got := LangOf(name); got != want {
			t.Errorf("LangOf(%q) = %q, want %q", name, got, want)
		}
	}
	if _, err := Parse("go", []byte("package p")); err == nil {
		t.Error("Parse(go) gave no error")
	}
}

// TestParse: every sample parses without an error, and the nodes a mutation needs are
// there with the right text.
func TestParse(t *testing.T) {
	checkClosed(t)
	wants := map[Lang][]string{
		Python:     {"comparison_operator:a > b", "boolean_operator:a > b and not b", "binary_operator:a + b", "decorator:@dataclass", "comparison_operator:x != b"},
		JavaScript: {"binary_expression:a > b", "binary_expression:a > b && b !== 0", "jsx_self_closing_element:<Sum a={a} b={b} />", "arrow_function:(a, b) => a * b"},
		TypeScript: {"ternary_expression:k >= 1 ? this.area() * k : 0", "abstract_method_signature:abstract area(): number", "type_assertion:<T>x", "function_signature:function over(a: string): string;"},
		TSX:        {"binary_expression:n < 0", "jsx_element:<button disabled={n < 0}>{label}</button>", "binary_expression:label.length - 1"},
	}
	for _, lang := range Langs {
		tr := mustParse(t, lang, samples[lang])
		if tr.HasError() {
			t.Errorf("%s: syntax error in the sample: %s", lang, tr.Root())
		}
		seen := map[string]bool{}
		tr.Root().Walk(func(n Node) bool {
			if n.Text() != samples[lang][n.Start():n.End()] {
				t.Fatalf("%s: Text %q is not the text at [%d:%d]", lang, n.Text(), n.Start(), n.End())
			}
			seen[n.Kind()+":"+n.Text()] = true
			return true
		})
		for _, w := range wants[lang] {
			if !seen[w] {
				t.Errorf("%s: no node %s", lang, w)
			}
		}
	}
}

// TestFields: what a mutation reads: an operator's token and range, a condition, the
// arguments of a call, a function's name and body.
func TestFields(t *testing.T) {
	checkClosed(t)
	tr := mustParse(t, JavaScript, samples[JavaScript])
	src := samples[JavaScript]
	bins := tr.Root().Find("binary_expression")
	if len(bins) != 5 {
		t.Fatalf("%d binary expressions, want 5", len(bins))
	}
	and := bins[0]
	op := and.Field("operator")
	if op.Kind() != "&&" || op.IsNamed() || src[op.Start():op.End()] != "&&" {
		t.Errorf("operator of %q: %q %q", and.Text(), op.Kind(), op.Text())
	}
	if l, r := and.Field("left").Text(), and.Field("right").Text(); l != "a > b" || r != "b !== 0" {
		t.Errorf("left %q right %q", l, r)
	}
	ifs := tr.Root().Find("if_statement")
	if len(ifs) != 1 || ifs[0].Field("condition").Text() != "(a > b && b !== 0)" {
		t.Errorf("if condition: %v", ifs)
	}
	fn := tr.Root().Find("function_declaration")[0]
	if fn.Field("name").Text() != "add" || fn.Field("body").Kind() != "statement_block" {
		t.Errorf("function: %s", fn)
	}
	if got := len(fn.Field("parameters").NamedChildren()); got != 2 {
		t.Errorf("%d parameters", got)
	}
	if fn.Field("nonesuch").Valid() || fn.Field("body").Field("name").Valid() {
		t.Error("a missing field gave a node")
	}
	if p := op.Parent(); !p.Equal(and) {
		t.Errorf("operator's parent %s", p)
	}
	py := mustParse(t, Python, samples[Python])
	calls := py.Root().Find("call")
	var args []string
	for _, c := range calls {
		for _, a := range c.Field("arguments").NamedChildren() {
			args = append(args, a.Text())
		}
	}
	if got := strings.Join(args, ","); got != "a,1,2" {
		t.Errorf("call arguments %q", got)
	}
	deco := py.Root().Find("decorated_definition")[0]
	if got := deco.FieldAll("definition"); len(got) != 1 || got[0].Kind() != "class_definition" {
		t.Errorf("decorated definition: %v", got)
	}
	at := py.Root().DescendantAt(strings.Index(samples[Python], "a + b"), strings.Index(samples[Python], "a + b")+1)
	if at.Kind() != "identifier" || at.Parent().Kind() != "binary_operator" {
		t.Errorf("DescendantAt: %s in %s", at, at.Parent())
	}
}

// TestWalkSkip: returning false from visit skips the children, and the walk of a subtree
// stays inside it.
func TestWalkSkip(t *testing.T) {
	checkClosed(t)
	tr := mustParse(t, Python, samples[Python])
	var kinds []string
	tr.Root().Walk(func(n Node) bool {
		kinds = append(kinds, n.Kind())
		return n.Kind() == "module"
	})
	if got := strings.Join(kinds, " "); got != "module import_statement decorated_definition function_definition" {
		t.Errorf("top level: %s", got)
	}
	cls := tr.Root().Find("class_definition")[0]
	n := 0
	cls.Walk(func(c Node) bool {
		if c.Start() < cls.Start() || c.End() > cls.End() {
			t.Errorf("%s outside the class", c)
		}
		n++
		return true
	})
	if n < 20 {
		t.Errorf("walked %d nodes of the class", n)
	}
}

// TestReparse: a tree reparsed after random edits is the tree a fresh parse gives, the
// old tree is left as it was, and Changed covers every place the two differ.
func TestReparse(t *testing.T) {
	checkClosed(t)
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"x", " ", "\n", "(", ")", "{", "}", "if ", "def ", ":", "\"", "'", "<a>", "// c", "# c", "1", "=>", ";"}
	for _, lang := range Langs {
		text := samples[lang]
		tr, err := Parse(lang, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for step := range 100 {
			i := r.IntN(len(text) + 1)
			j := min(len(text), i+r.IntN(4))
			next := text[:i] + pieces[r.IntN(len(pieces))] + text[j:]
			if step%3 == 0 {
				next = text[:i] + text[j:] // a deletion
			}
			before := tr.Root().String()
			nt, err := tr.Reparse([]byte(next))
			if err != nil {
				t.Fatal(err)
			}
			fresh := mustParse(t, lang, next)
			if got, want := nt.Root().String(), fresh.Root().String(); got != want {
				t.Fatalf("%s step %d: reparse %s\nfresh parse %s", lang, step, got, want)
			}
			if tr.Root().String() != before {
				t.Fatalf("%s step %d: Reparse changed the old tree", lang, step)
			}
			checkChanged(t, tr, nt)
			tr.Close()
			tr, text = nt, next
		}
		tr.Close()
	}
}

// checkChanged checks what Changed promises (tree-sitter's ts_tree_get_changed_ranges):
// text outside the ranges has the same ancestors in both trees. So each token of the new
// tree that neither overlaps nor touches a range is a token of the old tree, moved by the
// edit, with the same kinds of ancestors up to the root.
func checkChanged(t *testing.T, old, nt *Tree) {
	t.Helper()
	chain := func(n Node) string {
		var b strings.Builder
		for ; n.Valid(); n = n.Parent() {
			b.WriteString(n.Kind() + "<")
		}
		return b.String()
	}
	type key struct {
		start       int
		text, chain string
	}
	oldLeaves := map[key]bool{}
	old.Root().Walk(func(n Node) bool {
		if n.ChildCount() == 0 {
			oldLeaves[key{n.Start(), n.Text(), chain(n)}] = true
		}
		return true
	})
	_, oldEnd, newEnd := changed(old.src, nt.src)
	nt.Root().Walk(func(n Node) bool {
		for _, r := range nt.Changed() {
			if n.Start() <= r.End && r.Start <= n.End() {
				return true
			}
		}
		if n.ChildCount() > 0 {
			return true
		}
		o := n.Start()
		if o >= newEnd {
			o -= newEnd - oldEnd
		}
		if !oldLeaves[key{o, n.Text(), chain(n)}] {
			t.Fatalf("%s at %d (%s) outside %v is not in the old tree\nold %q\nnew %q", n, n.Start(), chain(n), nt.Changed(), old.src, nt.src)
		}
		return true
	})
}

// TestCloseAndLeaks: Close frees, twice is harmless, a Node of a closed tree panics, and
// a tree dropped without Close is freed by the collector.
func TestCloseAndLeaks(t *testing.T) {
	before := Open()
	tr, _ := Parse(Python, []byte("x = 1\n"))
	root := tr.Root()
	if Open() != before+1 {
		t.Fatalf("Open() = %d after one Parse, want %d", Open(), before+1)
	}
	tr.Close()
	tr.Close()
	if nt, err := tr.Reparse([]byte("x = 2\n")); nt != nil || !errors.Is(err, ErrClosed) {
		t.Errorf("Reparse of a closed tree: %v, %v", nt, err)
	}
	if Open() != before {
		t.Fatalf("Open() = %d after Close, want %d", Open(), before)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "after its Close") {
				t.Errorf("Kind of a closed tree's node: recovered %v", r)
			}
		}()
		root.Kind()
	}()
	for range 10 {
		Parse(Python, []byte("dropped = True\n"))
	}
	for range 100 {
		if Open() == before {
			break
		}
		runtimeGC()
	}
	if Open() != before {
		t.Errorf("%d dropped trees were not freed by the collector", Open()-before)
	}
}

// TestConcurrent reads one tree and reparses it from many goroutines (go test -race).
func TestConcurrent(t *testing.T) {
	checkClosed(t)
	tr := mustParse(t, TypeScript, samples[TypeScript])
	want := tr.Root().String()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			next := samples[TypeScript] + strings.Repeat("\n", g)
			nt, err := tr.Reparse([]byte(next))
			if err != nil {
				t.Error(err)
				return
			}
			defer nt.Close()
			if tr.Root().String() != want || len(nt.Root().Find("class_declaration", "abstract_class_declaration")) != 1 {
				t.Error("concurrent reparse changed the tree or lost the class")
			}
		})
	}
	wg.Wait()
}

func TestChangedEdit(t *testing.T) {
	for _, c := range []struct {
		a, b      string
		s, oe, ne int
	}{
		{"abc", "abc", 3, 3, 3}, {"abc", "abxc", 2, 2, 3}, {"aa", "aaa", 2, 2, 3}, {"abc", "ac", 1, 2, 1}, {"", "x", 0, 0, 1},
	} {
		s, oe, ne := changed([]byte(c.a), []byte(c.b))
		if s != c.s || oe != c.oe || ne != c.ne || c.a[:s]+c.b[s:ne]+c.a[oe:] != c.b {
			t.Errorf("changed(%q, %q) = %d %d %d", c.a, c.b, s, oe, ne)
		}
	}
}

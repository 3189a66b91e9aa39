package syntax

import (
	"strings"
	"testing"
)

// TestParseRanges parses a class with only its header, one method and its closing brace:
// the nodes keep the whole text's offsets, the methods left out are not in the tree, and
// Python's indentation reads the same across the gap.
func TestParseRanges(t *testing.T) {
	before := Open()
	for _, tc := range []struct {
		lang             Lang
		src, head, keep  string
		close, wantKind  string
		wantMembersAfter int
	}{
		{Python, "class C:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n\n    def c(self):\n        return 3\n", "class C:\n", "    def b(self):\n        return 2\n", "", "function_definition", 1},
		{TypeScript, "class C {\n  a(): number { return 1; }\n  b<T>(x: T): T { return x; }\n  c() {}\n}\n", "class C {", "  b<T>(x: T): T { return x; }\n", "}", "method_definition", 1},
	} {
		src := []byte(tc.src)
		k := strings.Index(tc.src, tc.keep)
		ranges := []Range{{0, len(tc.head)}, {k, k + len(tc.keep)}}
		if tc.close != "" {
			c := strings.LastIndex(tc.src, tc.close)
			ranges = append(ranges, Range{c, c + len(tc.close)})
		}
		tree, err := ParseRanges(tc.lang, src, ranges)
		if err != nil {
			t.Fatal(err)
		}
		if tree.HasError() {
			t.Errorf("%s: %s", tc.lang, tree.Root())
		}
		members := tree.Root().Find(tc.wantKind)
		if len(members) != tc.wantMembersAfter {
			t.Fatalf("%s: %d %s, want %d: %s", tc.lang, len(members), tc.wantKind, tc.wantMembersAfter, tree.Root())
		}
		if got := members[0].Text(); strings.TrimSpace(got) != strings.TrimSpace(tc.keep) {
			t.Errorf("%s: the member is %q, want %q (offsets of the whole text)", tc.lang, got, tc.keep)
		}
		c := tree.Clone()
		tree.Close()
		if c.Root().Kind() == "" {
			t.Errorf("%s: the clone died with the tree", tc.lang)
		}
		c.Close()
	}
	if _, err := ParseRanges(Python, []byte("x = 1\n"), []Range{{3, 5}, {0, 2}}); err == nil {
		t.Error("unsorted ranges: no error")
	}
	if _, err := ParseRanges(Python, []byte("x = 1\n"), []Range{{0, 99}}); err == nil {
		t.Error("a range outside the text: no error")
	}
	if n := Open() - before; n != 0 {
		t.Errorf("%d trees left open", n)
	}
}

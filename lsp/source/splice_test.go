package source

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/frognano/frognano/internal/syntax"
)

// spliceFixtures are files whose units nest the ways a splice descends through: Python
// classes in classes, decorated classes, an if block; JavaScript describe callbacks and a
// class with JSX; TypeScript generics, async and abstract members; TSX.
var spliceFixtures = []struct{ rel, text string }{
	{"pkg/models.py", `"""Models."""
import asyncio
from typing import Generic, TypeVar

T = TypeVar("T")


@register("x")
class Store(Generic[T]):
    """A store."""

    kind = "store"

    def __init__(self, items: list[T]) -> None:
        self.items = items

    @property
    def size(self) -> int:
        return len(self.items)

    async def load(self, key: str) -> T:
        await asyncio.sleep(0)
        return self.items[0]

    class Meta:
        table = "store"

        def columns(self):
            return ("a", "b")

        # a comment between members
        def indexes(self):
            raise NotImplementedError

    def close(self):
        pass


if __name__ == "__main__":
    def main():
        print(Store([1]).size)

    main()
`},
	{"tests/test_models.py", `import pytest


class TestStore:
    def test_size(self):
        assert Store([1]).size == 1

    @pytest.mark.asyncio
    async def test_load(self):
        assert await Store([2]).load("k") == 2

    class TestNested:
        def test_inner(self):
            pass


def test_top():
    x = """a
multi-line string"""
    assert x
`},
	{"src/list.test.jsx", `import { render } from "@testing-library/react";

describe("List", () => {
  it("renders items", () => {
    const out = render(<List items={[1, 2]} />);
    expect(out).toBeTruthy();
  });

  describe.each([[1], [2]])("with %i", (n) => {
    test("counts", async () => {
      await Promise.resolve(n);
    });
  });

  it.todo("later");
});

export class List extends Component {
  render() {
    return <ul>{this.props.items.map((i) => <li key={i}>{i}</li>)}</ul>;
  }

  handle = (e) => {
    e.preventDefault();
  };
}
`},
	{"src/repo.ts", `import { Db } from "./db";

export abstract class Repo<T extends { id: string }> {
  protected cache = new Map<string, T>();

  constructor(private db: Db) {}

  abstract table(): string;

  async get(id: string): Promise<T | undefined> {
    if (this.cache.has(id)) {
      return this.cache.get(id);
    }
    const row = await this.db.one<T>(` + "`select * from ${this.table()} where id = $1`" + `, [id]);
    return row;
  }

  @logged
  put<K extends keyof T>(key: K, value: T[K]): void {
    // TODO
  }

  static of<U extends { id: string }>(db: Db): Repo<U> {
    throw new Error("not implemented");
  }
}

export namespace Repos {
  export function all(): string[] {
    return [];
  }
}

export const byId = <T,>(xs: T[], f: (x: T) => string): Map<string, T> => new Map(xs.map((x) => [f(x), x]));
`},
	{"src/Table.tsx", `import React from "react";

type Props<T> = { rows: T[]; render: (row: T) => React.ReactNode };

export function Table<T>({ rows, render }: Props<T>) {
  return (
    <table>
      <tbody>{rows.map((r, i) => <tr key={i}>{render(r)}</tr>)}</tbody>
    </table>
  );
}

export class Grid<T> extends React.Component<Props<T>> {
  state = { sorted: false };

  toggle = async (): Promise<void> => {
    this.setState({ sorted: !this.state.sorted });
  };

  render() {
    return <Table<T> rows={this.props.rows} render={this.props.render} />;
  }
}
`},
	{"src/app.test.ts", `import { describe, it, expect } from "vitest";

describe("app", () => {
  it("adds", () => {
    expect(1 + 1).toBe(2);
  });

  it("subtracts", () => {
    expect(2 - 1).toBe(1);
  });
});
`},
}

// splicePieces are what random edits insert into Python and JS/TS files: whole units and
// the characters that open or close strings, comments, brackets and blocks, so that many
// edits run across the edges of the units around them.
var splicePieces = []string{
	"x", "1", " ", "\n", "    ", "\t", "(", ")", "[", "]", "{", "}", ":", ";", ",", ".",
	"\"", "'", "`", "\"\"\"", "'''", "#", "//", "/*", "*/", "${", "\\",
	"\n    def g(self):\n        return 1\n", "\n    class D:\n        pass\n", "\n@dec\n", "async ", "await ",
	"def h():\n    pass\n", "if x:\n", "else:\n", "return ", "lambda: 0",
	"\n  m(): void {}\n", "\n  f = () => 1;\n", "function k() {}\n", "<T>", "<div>", "</div>", "=>",
	"it(\"t\", () => {", "});\n", "class C {", "export ", "@logged\n", "vitest",
}

// spliceEdit is one random edit of text: mostly a keystroke or a piece typed at a random
// place, sometimes a deletion or a replacement of up to 200 bytes (across units).
func spliceEdit(r *rand.Rand, text string) string {
	at := r.IntN(len(text) + 1)
	end := at
	switch r.IntN(6) {
	case 0:
		end = min(len(text), at+1+r.IntN(3))
	case 1:
		end = min(len(text), at+r.IntN(200))
	}
	ins := ""
	switch k := r.IntN(4); {
	case k == 0 && end > at:
	case k == 1:
		ins = string(rune('a' + r.IntN(26)))
	default:
		for range 1 + r.IntN(2) {
			ins += splicePieces[r.IntN(len(splicePieces))]
		}
	}
	return text[:at] + ins + text[end:]
}

// TestSpliceMatchesParse edits Python, JavaScript, TypeScript and TSX files at random and
// checks after each edit that the update is what a fresh parse finds (checkUpdate: a
// spliced update must also be of a text without a syntax error). Many edits leave the text
// broken; most of those are followed by a return to the original text, so that clean
// texts (where splices happen) come often. It checks that a good share of
// the updates were spliced, so that splices are what is compared, and that every tree was
// closed.
func TestSpliceMatchesParse(t *testing.T) {
	type sample struct {
		lang      Lang
		rel, text string
	}
	var samples []sample
	for _, fx := range spliceFixtures {
		samples = append(samples, sample{LangOf(fx.rel, ""), fx.rel, fx.text})
	}
	for _, fx := range fixtures(t) {
		if fx.lang != Go {
			samples = append(samples, sample{fx.lang, fx.rel, fx.text})
		}
	}
	for _, lang := range []Lang{Python, TypeScript} {
		rel, text := bigFile(lang, 40)
		samples = append(samples, sample{lang, rel, text})
	}
	edits := 400
	if testing.Short() {
		edits = 100
	}
	openTrees := syntax.Open()
	spliced, total := map[Lang]int{}, map[Lang]int{}
	for i, s := range samples {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		f, err := Parse(s.lang, s.rel, s.text)
		if err != nil {
			t.Fatal(err)
		}
		for range edits {
			if !f.clean && r.IntN(4) != 0 {
				// Back to the clean text, where splices happen; the other edits go on
				// from a broken one (the fallback's ground).
				f.Close()
				f, _ = Parse(s.lang, s.rel, s.text)
			}
			text := spliceEdit(r, f.text)
			wasClean := f.clean
			next := checkUpdate(t, f, text)
			if !wasClean || !next.clean {
				total[s.lang]-- // counted: updates from a clean text to a clean one
			}
			total[s.lang]++
			if next.spliced {
				spliced[s.lang]++
			}
			if next != f {
				f.Close()
			}
			f = next
			if r.IntN(40) == 0 {
				f.Close()
				f, _ = Parse(s.lang, s.rel, s.text)
			}
		}
		f.Close()
	}
	for _, lang := range []Lang{Python, TypeScript, JavaScript} {
		t.Logf("%s: %d of %d updates from a clean text to a clean one spliced", lang, spliced[lang], total[lang])
		if spliced[lang] < total[lang]*3/5 {
			t.Errorf("%s: only %d of %d updates from a clean text to a clean one spliced", lang, spliced[lang], total[lang])
		}
	}
	if n := syntax.Open() - openTrees; n != 0 {
		t.Errorf("%d syntax trees left open", n)
	}
}

// TestSpliceCases are edits a splice must get right or leave to the full re-parse, each
// checked against a fresh parse: whether it was spliced is part of the expectation, so
// that the fallback is known to be taken where the units' edges move.
func TestSpliceCases(t *testing.T) {
	py := spliceFixtures[0].text
	ts := spliceFixtures[3].text
	tests := []struct {
		name, rel, base, old, new string
		spliced                   bool
	}{
		{"keystroke in a method", "m.py", py, "return len(self.items)", "return len(self.itemz)", true},
		{"keystroke in a nested class's method", "m.py", py, `return ("a", "b")`, `return ("a", "c")`, true},
		{"comment between members", "m.py", py, "# a comment between", "# a comments between", true},
		{"new method", "m.py", py, "    async def load", "    def open(self):\n        pass\n\n    async def load", true},
		{"method renamed", "m.py", py, "def size(self)", "def length(self)", true},
		{"class renamed", "m.py", py, "class Meta:", "class Meta2:", true},
		{"docstring opened", "m.py", py, `    """A store."""`, `    """A store.`, false},
		{"string opened across methods", "m.py", py, "return self.items[0]", "return 'self.items[0]", false},
		{"bracket opened", "m.py", py, "await asyncio.sleep(0)", "await asyncio.sleep(0", false},
		{"method dedented out of its class", "m.py", py, "    def close(self):\n        pass", "def close(self):\n        pass", false},
		{"first line of a block indented", "m.py", py, "    class Meta:\n        table", "    class Meta:\n \t       table", false},
		{"class header", "m.py", py, "class Store(Generic[T]):", "class Store(Generic[T], Base):", true},
		{"last method of a class", "m.py", py, "            raise NotImplementedError", "            raise ValueError", false},
		{"keystroke in a TS method", "r.ts", ts, "return row;", "return rows;", true},
		{"generic method added", "r.ts", ts, "  abstract table(): string;", "  abstract table(): string;\n\n  first<U>(xs: U[]): U {\n    return xs[0];\n  }", true},
		{"template string opened", "r.ts", ts, "return row;", "return `row;", false},
		{"comment opened", "r.ts", ts, "// TODO", "/* TODO", false},
		{"brace removed", "r.ts", ts, "return this.cache.get(id);\n    }", "return this.cache.get(id);\n", false},
		{"statement without semicolon before a parenthesis", "r.ts", ts, "return [];", "return []\n    (1)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.base, tt.old) {
				t.Fatalf("%q is not in the base text", tt.old)
			}
			lang := LangOf(tt.rel, "")
			f, _ := Parse(lang, tt.rel, tt.base)
			defer f.Close()
			g := checkUpdate(t, f, strings.Replace(tt.base, tt.old, tt.new, 1))
			defer g.Close()
			if g.spliced != tt.spliced {
				t.Errorf("spliced: %v, want %v", g.spliced, tt.spliced)
			}
		})
	}
}

// TestSpliceThenFallback updates a File that was spliced, whose tree is of the version
// before, with edits a splice leaves to tree-sitter: its re-parse starts from that older
// tree, and the units it takes from the memo must be those the edit since the spliced
// version did not touch. The second edit undoes the first while it breaks the file
// elsewhere, so that the tree's text and the new one agree where the memo does not.
func TestSpliceThenFallback(t *testing.T) {
	for _, tc := range []struct{ rel, text, a, a2, b, b2 string }{
		// A rename of the same length: the unit's kind and length stay, its function's name
		// does not.
		{"m.py", spliceFixtures[0].text, "def size(self)", "def sizf(self)", "await asyncio.sleep(0)", "await asyncio.sleep(0"},
		{"r.ts", spliceFixtures[3].text, "async get(id", "async gex(id", "// TODO", "/* TODO"},
	} {
		lang := LangOf(tc.rel, "")
		f, _ := Parse(lang, tc.rel, tc.text)
		g := checkUpdate(t, f, strings.Replace(tc.text, tc.a, tc.a2, 1))
		if !g.spliced {
			t.Fatalf("%s: the first edit was not spliced", tc.rel)
		}
		// Undo the first edit and break the file elsewhere, in one change.
		h := checkUpdate(t, g, strings.Replace(tc.text, tc.b, tc.b2, 1))
		if h.spliced || h.clean {
			t.Fatalf("%s: the breaking edit was spliced (%v) or parsed clean (%v)", tc.rel, h.spliced, h.clean)
		}
		// Repair it: a fallback again (h has errors), then a splice from the repaired text.
		k := checkUpdate(t, h, tc.text)
		l := checkUpdate(t, k, strings.Replace(tc.text, tc.a, tc.a2, 1))
		if !l.spliced {
			t.Errorf("%s: no splice after the repair", tc.rel)
		}
		for _, x := range []*File{f, g, h, k, l} {
			x.Close()
		}
	}
}

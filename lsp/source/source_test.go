package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// want is what a test expects of the Func at a cursor; empty fields are not checked,
// except that Test and Stub are always compared.
type want struct {
	name      string
	test, cmd string // Test.Name and Test.Command; "" means Test == nil
	stub      bool
	sig       string // Signature
	body      string // text[BodyStart:BodyEnd] trimmed; "<empty>" for an empty body
}

// enclosingTests place a cursor in a fixture: at is text that occurs once in the file,
// with "|" where the cursor goes (at the start of the text when there is no "|"). The
// file's path relative to the repository root is rel (default: its path under testdata).
var enclosingTests = []struct {
	file, rel, at string
	want          *want // nil: no function there
}{
	// Go: tests, with the package directory in the command.
	{"go/calc/calc_test.go", "pkg/calc/calc_test.go", "got != |3", &want{name: "TestAdd", test: "TestAdd", cmd: `go test -run '^TestAdd$' ./pkg/calc`, sig: "func TestAdd(t *testing.T)"}},
	{"go/calc/calc_test.go", "calc_test.go", "got != |3", &want{name: "TestAdd", test: "TestAdd", cmd: `go test -run '^TestAdd$' .`}},
	{"go/calc/calc_test.go", "", "func TestDiv", &want{name: "TestDiv", test: "TestDiv", cmd: `go test -run '^TestDiv$' ./go/calc`}},
	{"go/calc/calc_test.go", "", "TODO: a table", &want{name: "TestDiv", test: "TestDiv", cmd: `go test -run '^TestDiv$' ./go/calc`}}, // in a function literal
	{"go/calc/calc_test.go", "", "(&Calc{}).Add", &want{name: "BenchmarkAdd"}},
	{"go/calc/calc_test.go", "", "m.Run()", &want{name: "TestMain"}},
	{"go/calc/calc_test.go", "", "t.Helper()", &want{name: "helper"}},
	{"go/calc/calc_test.go", "", "func Testlower(t *testing.T) {|}", &want{name: "Testlower", stub: true, body: "<empty>"}},
	// Go: methods and stubs.
	{"go/calc/calc.go", "", "c.total += a + b", &want{name: "Calc.Add", sig: "func (c *Calc) Add(a, b int) int", body: "c.total += a + b\n\treturn a + b"}},
	{"go/calc/calc.go", "", "Reset() {|}", &want{name: "Calc.Reset", stub: true, body: "<empty>"}},
	{"go/calc/calc.go", "", "TODO: multiply", &want{name: "Calc.Mul", stub: true}},
	{"go/calc/calc.go", "", `panic("not implemented")`, &want{name: "Calc.Div", stub: true, body: `panic("not implemented")`}},
	{"go/calc/calc.go", "", `panic("implement me")`, &want{name: "Pow", stub: true}},
	{"go/calc/calc.go", "", "not yet implemented", &want{name: "Mod", stub: true}},
	{"go/calc/calc.go", "", `"func Fake() {"`, &want{name: "Format"}},
	{"go/calc/calc.go", "", "panic(err)", &want{name: "Must"}},
	{"go/calc/calc.go", "", `panic("unreachable")`, &want{name: "Unreachable"}},
	{"go/calc/calc.go", "", "s.items = append", &want{name: "Stack.Push", sig: "func (s *Stack[T]) Push(v T)"}},
	{"go/calc/calc.go", "", "nothing to do", &want{name: "Noop"}},
	{"go/calc/calc.go", "", "type Calc struct", nil},
	{"go/calc/calc.go", "", "// Add is finished.", nil}, // doc comments are outside the range
	// Python.
	{"py/calc.py", "", "self.total += a + b", &want{name: "Calc.add", sig: "def add(self, a, b)"}},
	{"py/calc.py", "", `label = "def x(): {"`, &want{name: "Calc.add"}},
	{"py/calc.py", "", "Subtract b", &want{name: "Calc.sub", stub: true, body: "\"\"\"Subtract b from a.\"\"\"\n        pass"}},
	{"py/calc.py", "", "        ...", &want{name: "Calc.mul", stub: true, sig: "async def mul(self, a, b) -> int"}},
	{"py/calc.py", "", "a: int,", &want{name: "Calc.div", stub: true, body: `raise NotImplementedError("div")`}},
	{"py/calc.py", "", "keep a history", &want{name: "Calc.History.last", stub: true}},
	{"py/calc.py", "", "return 0", &want{name: "Calc.zero"}},
	{"py/calc.py", "", "return x + y", &want{name: "outer.inner"}},
	{"py/calc.py", "", "return inner", &want{name: "outer"}},
	{"py/calc.py", "", "FIXME", &want{name: "todo_only", stub: true}},
	{"py/calc.py", "", "one_liner(): pass", &want{name: "one_liner", stub: true, body: "pass"}},
	{"py/calc.py", "", "still_in_string", &want{name: "fstring_braces"}},
	{"py/calc.py", "", "bad input", &want{name: "validate"}},
	{"py/calc.py", "", "fake_in_docstring", nil},
	{"py/calc.py", "", "TEMPLATE", nil},
	{"py/calc.py", "", `"""Accumulates."""`, nil},
	{"py/test_calc.py", "tests/test_calc.py", "self.calc.add(1, 2) == 3", &want{name: "TestCalc.test_add", test: "TestCalc::test_add", cmd: "python -m pytest tests/test_calc.py::TestCalc::test_add"}},
	{"py/test_calc.py", "", "Only a docstring", &want{name: "TestCalc.test_sub", test: "TestCalc::test_sub", cmd: "python -m pytest py/test_calc.py::TestCalc::test_sub", stub: true}},
	{"py/test_calc.py", "", "assert True", &want{name: "TestCalc.TestNested.test_deep", test: "TestCalc::TestNested::test_deep", cmd: "python -m pytest py/test_calc.py::TestCalc::TestNested::test_deep"}},
	{"py/test_calc.py", "", "self.calc = Calc()", &want{name: "TestCalc.setup_method"}},
	{"py/test_calc.py", "", "assert False", &want{name: "Helpers.test_not_collected"}},
	{"py/test_calc.py", "", "def test_fake", &want{name: "test_module_level", test: "test_module_level", cmd: "python -m pytest py/test_calc.py::test_module_level"}},
	{"py/test_calc.py", "", "await helper()", &want{name: "test_async", test: "test_async", cmd: "python -m pytest py/test_calc.py::test_async"}},
	// Real-world shapes: decorators, nested functions and classes, async code.
	{"py/service.py", "", "await asyncio.sleep", &want{name: "retry.decorate.wrapper"}},
	{"py/service.py", "", "return self.name.title()", &want{name: "User.display", sig: "def display(self) -> str"}},
	{"py/service.py", "", "return (\"name\",)", &want{name: "User.Meta.Index.columns"}},
	{"py/service.py", "", `table = "users"`, nil},
	{"py/service.py", "", "async for item", &want{name: "Repository.fetch", sig: "async def fetch(self, key: str) -> T"}},
	{"py/service.py", "", "Not written yet", &want{name: "Repository._stream", stub: true}},
	{"py/service.py", "", "case [head", &want{name: "Repository.first"}},
	{"py/service.py", "", "asyncio.run", &want{name: "main"}},
	{"ts/shapes.ts", "", "abstract area(): number;", nil},
	{"ts/shapes.ts", "", "a.area() - b.area()", &want{name: "Shape.compare"}},
	{"ts/shapes.ts", "", "super(Kind.Circle)", &want{name: "Circle.constructor", sig: `constructor(@Inject("radius") radius: number)`}},
	{"ts/shapes.ts", "", "negative radius", &want{name: "Circle.radius", sig: "set radius(r: number)"}},
	{"ts/shapes.ts", "", "await this.render", &want{name: "Circle.onResize"}},
	{"ts/shapes.ts", "", "TODO: render", &want{name: "Circle.render", stub: true}},
	{"ts/shapes.ts", "", "input.map", &want{name: "area", sig: "export function area(input: Circle | Circle[]): number | number[]"}},
	{"ts/shapes.ts", "", "export function area(shape: Circle)", nil},
	{"ts/shapes.ts", "", "out.set(k", &want{name: "group"}},
	{"ts/shapes.ts", "", "res.json()", &want{name: "load"}},
	{"ts/shapes.ts", "", "console.log(e.type)", &want{name: "handlers.click"}},
	{"ts/shapes.ts", "", "yield* this.items", &want{name: "Registry.[Symbol.iterator]"}},
	{"ts/App.tsx", "", "setPicked(item)", &want{name: "List"}},
	{"ts/App.tsx", "", "pick(item)}", &want{name: "List"}},
	{"ts/App.tsx", "", "x + 1", &want{name: "increment"}},
	{"ts/App.tsx", "", "!this.state.open", &want{name: "Legacy.toggle"}},
	{"ts/App.tsx", "", "design the pending state", &want{name: "Pending", stub: true}},
	{"js/server.mjs", "", "res.statusCode = 404", &want{name: "Router.handle"}},
	{"js/server.mjs", "", "yield String(chunk)", &want{name: "Router.lines", sig: "static async *lines(stream)"}},
	{"js/server.mjs", "", "next();", &want{name: "middleware.logger"}},
	{"js/server.mjs", "", "new Router().handle", &want{name: "onRequest"}},
	{"js/server.mjs", "", `console.log("listening")`, nil},
	// TypeScript.
	{"ts/calc.ts", "", "return a + b;", &want{name: "Calc.add", sig: "add(a: number, b: number): number", body: "const s = \"}{\";\n    return a + b;"}},
	{"ts/calc.ts", "", `"}{"`, &want{name: "Calc.add"}},
	{"ts/calc.ts", "", `"Not implemented"`, &want{name: "Calc.fetch", stub: true, sig: "async fetch(id: string): Promise<{ id: string }>"}},
	{"ts/calc.ts", "", "not implemented: parse", &want{name: "parse", stub: true, sig: "export const parse = async (s: string): Promise<number> =>"}},
	{"ts/calc.ts", "", "x * 2", &want{name: "double", body: "x * 2"}},
	{"ts/calc.ts", "", "this.total++", &want{name: "Calc.handler"}},
	{"ts/calc.ts", "", "super()", &want{name: "Calc.constructor"}},
	{"ts/calc.ts", "", "return this.total", &want{name: "Calc.value"}},
	{"ts/calc.ts", "", "x ?? 0", &want{name: "Calc.area"}},
	{"ts/calc.ts", "", "// } in a comment", &want{name: "tricky"}},
	{"ts/calc.ts", "", "return t + pattern.source", &want{name: "tricky"}},
	{"ts/calc.ts", "", "a / 2 / b", &want{name: "default"}},
	{"ts/calc.ts", "", "fetch(url)", &want{name: "api.get"}},
	{"ts/calc.ts", "", "implement post", &want{name: "api.post", stub: true}},
	{"ts/calc.ts", "", "todo(): Promise<void> {|}", &want{name: "todo", stub: true, body: "<empty>"}},
	{"ts/calc.ts", "", "private total = 0", nil},
	{"ts/calc.ts", "", "cb: (x: number)", nil},
	{"ts/calc.ts", "", "const pattern", nil},
	{"ts/calc.test.ts", "web/calc.test.ts", "expect(calc.add(1, 2))", &want{name: "adds {numbers}", test: "adds {numbers}", cmd: `npx vitest run web/calc.test.ts -t "adds \\{numbers\\}"`}},
	{"ts/calc.test.ts", "", "toBe(want)", &want{name: "adds %i + %i", test: "adds %i + %i", cmd: `npx vitest run ts/calc.test.ts -t "adds .* \\+ .*"`}},
	{"ts/calc.test.ts", "", "rejects.toThrow", &want{name: `fetches ${"id"} (async)`, test: `fetches ${"id"} (async)`, cmd: `npx vitest run ts/calc.test.ts -t "fetches .* \\(async\\)"`}},
	{"ts/calc.test.ts", "", "const calc", nil}, // in describe, outside any test
	{"ts/calc.test.ts", "", `"caches"`, nil},
	// JavaScript.
	{"js/calc.test.js", "", "format('{')", &want{name: `handles "quotes" and it's {braces}`, test: `handles "quotes" and it's {braces}`, cmd: `npx jest js/calc.test.js -t "handles \"quotes\" and it's \\{braces\\}"`}},
	{"js/calc.test.js", "", "const re", &want{name: "regex /}/ and template `}`", test: "regex /}/ and template `}`", cmd: "npx jest js/calc.test.js -t \"regex /\\\\}/ and template \\`\\\\}\\`\""}},
	{"js/calc.test.js", "", `"not implemented"`, &want{name: "is pending", test: "is pending", cmd: `npx jest js/calc.test.js -t "is pending"`, stub: true}},
	{"js/calc.test.js", "", "describe(", nil},
	{"js/Button.jsx", "", "click</button>", &want{name: "Button"}},
	{"js/Button.jsx", "", "<></>", &want{name: "Empty", body: "<></>"}},
	{"js/Button.jsx", "", "render something", &want{name: "Later", stub: true}},
}

func TestEnclosing(t *testing.T) {
	for _, tt := range enclosingTests {
		b, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		rel := tt.rel
		if rel == "" {
			rel = tt.file
		}
		t.Run(tt.file+"@"+tt.at, func(t *testing.T) {
			off := cursor(t, text, tt.at)
			f, err := Enclosing(LangOf(rel, ""), rel, text, off)
			if err != nil {
				t.Fatal(err)
			}
			check(t, text, f, tt.want)
		})
	}
}

// cursor finds at (less its "|") in text, once, and returns the cursor's offset.
func cursor(t *testing.T, text, at string) int {
	t.Helper()
	bar := max(strings.IndexByte(at, '|'), 0)
	plain := strings.Replace(at, "|", "", 1)
	i := strings.Index(text, plain)
	if i < 0 || strings.Count(text, plain) != 1 {
		t.Fatalf("%q occurs %d times, want once", plain, strings.Count(text, plain))
	}
	return i + bar
}

func check(t *testing.T, text string, f *Func, w *want) {
	t.Helper()
	if w == nil {
		if f != nil {
			t.Fatalf("got %s, want no function", describe(text, *f))
		}
		return
	}
	if f == nil {
		t.Fatalf("got no function, want %s", w.name)
	}
	if f.Name != w.name {
		t.Errorf("Name = %q, want %q", f.Name, w.name)
	}
	var test, cmd string
	if f.Test != nil {
		test, cmd = f.Test.Name, f.Test.Command
	}
	if test != w.test || cmd != w.cmd {
		t.Errorf("Test = %q, %q; want %q, %q", test, cmd, w.test, w.cmd)
	}
	if f.Stub != w.stub {
		t.Errorf("Stub = %v, want %v", f.Stub, w.stub)
	}
	if w.sig != "" && f.Signature != w.sig {
		t.Errorf("Signature = %q, want %q", f.Signature, w.sig)
	}
	body := strings.TrimSpace(text[f.BodyStart:f.BodyEnd])
	if body == "" {
		body = "<empty>"
	}
	if w.body != "" && body != w.body {
		t.Errorf("body = %q, want %q", body, w.body)
	}
	checkRanges(t, text, *f)
}

// checkRanges asserts the invariants every Func keeps, whatever the input.
func checkRanges(t *testing.T, text string, f Func) {
	t.Helper()
	if !(0 <= f.Start && f.Start <= f.BodyStart && f.BodyStart <= f.BodyEnd && f.BodyEnd <= f.End && f.End <= len(text)) {
		t.Fatalf("%s: bad ranges Start %d BodyStart %d BodyEnd %d End %d (len %d)", f.Name, f.Start, f.BodyStart, f.BodyEnd, f.End, len(text))
	}
	if f.Name == "" {
		t.Errorf("a Func without a name at %d", f.Start)
	}
}

// Edge cases that need their own small text.
func TestEnclosingText(t *testing.T) {
	tests := []struct {
		name      string
		lang      Lang
		rel, text string
		at        string
		want      *want
	}{
		{"go parse error before", Go, "p.go", "package p\n\nfunc A() {\n\tx := \n}\n\nfunc B() int { return 1 }\n", "return |1", &want{name: "B"}},
		{"go parse error inside", Go, "p.go", "package p\n\nfunc A() {\n\tx := \n}\n\nfunc B() int { return 1 }\n", "x := ", &want{name: "A"}},
		{"go unterminated body", Go, "p.go", "package p\n\nfunc A() {\n\tif x {\n\t\ty()\n", "y()", &want{name: "A"}},
		{"go no package clause", Go, "p.go", "func A() {}\n", "A()", &want{name: "A", stub: true, sig: "func A()"}},
		{"go aliased testing", Go, "x/a_test.go", "package x\n\nimport tt \"testing\"\n\nfunc TestA(t *tt.T) { t.Fail() }\n", "t.Fail", &want{name: "TestA", test: "TestA", cmd: "go test -run '^TestA$' ./x"}},
		{"go test outside _test.go", Go, "a.go", "package x\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { t.Fail() }\n", "t.Fail", &want{name: "TestA"}},
		{"go path needing quotes", Go, "my dir/a_test.go", "package x\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { t.Fail() }\n", "t.Fail", &want{name: "TestA", test: "TestA", cmd: "go test -run '^TestA$' './my dir'"}},
		{"go error return", Go, "a.go", "package x\n\nfunc A() error { return ErrNotImplemented }\n", "return", &want{name: "A", stub: true}},
		{"go zero return only", Go, "a.go", "package x\n\nfunc A() int { return 0 }\n", "return", &want{name: "A"}},
		{"py crlf", Python, "m.py", "class A:\r\n    def f(self):\r\n        pass\r\n\r\nx = 1\r\n", "pass", &want{name: "A.f", stub: true, body: "pass"}},
		{"py tabs", Python, "m.py", "class A:\n\tdef f(self):\n\t\treturn 1\n\tdef g(self):\n\t\treturn 2\n", "return 2", &want{name: "A.g", body: "return 2"}},
		{"py header only", Python, "m.py", "def f(x):", "f(x)", &want{name: "f", stub: true, body: "<empty>"}},
		{"py header being typed", Python, "m.py", "def f(x\n", "f(x", nil},
		// Python rejects the whole file; tree-sitter's error recovery ends the string at its
		// line and finds g after it. What matters is an answer with sane ranges, no panic.
		{"py unterminated string", Python, "m.py", "def f():\n    s = '''\ndef g():\n", "def g", &want{name: "g", stub: true}},
		{"py *_test.py", Python, "tests/calc_test.py", "def test_a():\n    assert 1\n", "assert", &want{name: "test_a", test: "test_a", cmd: "python -m pytest tests/calc_test.py::test_a"}},
		{"py not a test file", Python, "calc.py", "class TestA:\n    def test_a(self):\n        assert 1\n", "assert", &want{name: "TestA.test_a"}},
		{"py dedented comment in body", Python, "m.py", "def f():\n    x = 1\n# note\n    return x\n", "return x", &want{name: "f", body: "x = 1\n# note\n    return x"}},
		{"py nested block is real", Python, "m.py", "def f():\n    if x:\n        pass\n", "pass", &want{name: "f"}},
		{"py raise NotImplemented", Python, "m.py", "def f():\n    raise NotImplementedError\n", "raise", &want{name: "f", stub: true}},
		{"ts division and regex", TypeScript, "a.ts", "const a = (x: number) => {\n  const y = x / 2 / 3;\n  const r = /}/;\n  return y;\n};\nfunction b() { return 1 }\n", "return 1", &want{name: "b"}},
		{"ts generic arrow", TypeScript, "a.ts", "export const id = <T,>(x: T): T => {\n  return x;\n};\n", "return x", &want{name: "id"}},
		{"tsx generic arrow", TypeScript, "a.tsx", "export const id = <T,>(x: T): T => {\n  return x;\n};\n", "return x", &want{name: "id"}},
		{"ts object type return", TypeScript, "a.ts", "function f(): { a: number } {\n  return { a: 1 };\n}\n", "return", &want{name: "f", sig: "function f(): { a: number }"}},
		{"ts nested object", TypeScript, "a.ts", "export const routes = {\n  users: {\n    list: async () => {\n      return [];\n    },\n  },\n};\n", "return []", &want{name: "list", body: "return [];"}},
		{"ts class expression", TypeScript, "a.ts", "const Foo = class {\n  bar() {\n    return 1;\n  }\n};\n", "return 1", &want{name: "Foo.bar"}},
		{"ts decorated method", TypeScript, "a.ts", "class C {\n  @Get(':id')\n  find(@Param('id') id: string) {\n    return id;\n  }\n}\n", "return id", &want{name: "C.find", sig: "find(@Param('id') id: string)"}},
		{"ts return null as any", TypeScript, "a.ts", "function f(): Foo {\n  // TODO\n  return null as any;\n}\n", "return", &want{name: "f", stub: true}},
		{"js nested function", JavaScript, "a.js", "function outer() {\n  function inner() {\n    return 1;\n  }\n  return inner;\n}\n", "return 1", &want{name: "inner"}},
		{"js unclosed call inside", JavaScript, "a.js", "function f() {\n  g(\n}\nfunction h() { return 2 }\n", "return 2", &want{name: "h"}},
		{"js not a test file", JavaScript, "a.js", "it('x', () => {\n  run();\n});\n", "run()", nil},
		{"js it inside __tests__", JavaScript, "src/__tests__/a.js", "it('x', () => {\n  run();\n});\n", "run()", &want{name: "x", test: "x", cmd: `npx jest src/__tests__/a.js -t "x"`}},
		{"js require vitest", JavaScript, "a.spec.js", "const { it } = require('vitest');\nit('x', () => {\n  run();\n});\n", "run()", &want{name: "x", test: "x", cmd: `npx vitest run a.spec.js -t "x"`}},
		{"js dollar in name", JavaScript, "a.test.js", "test('costs $5', async function () {\n  run();\n});\n", "run()", &want{name: "costs $5", test: "costs $5", cmd: `npx jest a.test.js -t "costs \\\$5"`}}, // the shell gives the regex \$5
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Enclosing(tt.lang, tt.rel, tt.text, cursor(t, tt.text, tt.at))
			if err != nil {
				t.Fatal(err)
			}
			check(t, tt.text, f, tt.want)
		})
	}
}

func TestUnsupported(t *testing.T) {
	if f, err := Enclosing("rust", "a.rs", "fn main() {}", 3); f != nil || !errors.Is(err, ErrUnsupported) {
		t.Errorf("Enclosing(rust) = %v, %v; want nil, ErrUnsupported", f, err)
	}
	if fs, err := Funcs("", "a.txt", "x"); fs != nil || !errors.Is(err, ErrUnsupported) {
		t.Errorf("Funcs(\"\") = %v, %v; want nil, ErrUnsupported", fs, err)
	}
	if _, err := Enclosing(Go, "a.go", "package a", 10); err == nil {
		t.Error("Enclosing with an offset past the end: no error")
	}
}

func TestLangOf(t *testing.T) {
	tests := []struct {
		path, id string
		want     Lang
	}{
		{"a.go", "", Go},
		{"a.txt", "go", Go},
		{"a.py", "plaintext", Python},
		{"a.pyi", "", Python},
		{"a.tsx", "", TypeScript},
		{"a", "typescriptreact", TypeScript},
		{"a.mjs", "", JavaScript},
		{"A.JSX", "", JavaScript},
		{`dir\a.js`, "", JavaScript},
		{"a.rs", "rust", ""},
		{"Makefile", "", ""},
	}
	for _, tt := range tests {
		if got := LangOf(tt.path, tt.id); got != tt.want {
			t.Errorf("LangOf(%q, %q) = %q, want %q", tt.path, tt.id, got, tt.want)
		}
	}
}

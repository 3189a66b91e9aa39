package reward

import (
	"strings"
	"testing"

	"github.com/frognano/frognano/internal/syntax"
)

// pyPlain is a module as a fix's base could be: no imports, a function to fix.
const pyPlain = "def absolute(x):\n    if x < 0:\n        return x\n    return x\n"

// pyValue is a base that defines its own equality, which a fix may change.
const pyValue = "class Value:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n\n    def __eq__(self, other):\n        return isinstance(other, Value) and self.x == other.x\n"

// The Python screen refuses what a fix has no use for and a forger needs, on the syntax
// tree: a comment or a prose string that names it is not counted, a reference by any other
// name is.
func TestScreenPython(t *testing.T) {
	const withSys = "import sys\n\n" + pyPlain
	const withOS = "import os\n\n" + pyPlain
	refused := []struct{ name, base, now, why string }{
		{"import sys", pyPlain, withSys, "import sys"},
		{"import os.path", pyPlain, "import os.path\n" + pyPlain, "import os"},
		{"import _pytest", pyPlain, "from _pytest import reports\n", "import _pytest"},
		{"import pytest in a function", pyPlain, pyPlain + "\ndef f():\n    import pytest\n", "import pytest"},
		{"importlib", pyPlain, "import importlib\n", "import importlib"},
		{"string", pyPlain, "import string\n", "import string"},
		{"operator", pyPlain, "from operator import attrgetter\n", "import operator"},
		{"pickle", pyPlain, "import pickle\n", "import pickle"},
		{"a test module of the repository", pyPlain, "from tests.conftest import helper\n", "import tests"},
		{"__import__", pyPlain, "m = __import__('o' + 's')\n", "__import__"},
		{"getattr with a computed name", pyPlain, "def f(x, n):\n    return getattr(x, n)\n", "the name getattr"},
		{"getattr with a built string", withSys, withSys + "m = getattr(sys, 'mod' + 'ules')\n", "the name getattr"},
		{"getattr with a dunder", pyPlain, "d = getattr(absolute, '__globals__')\n", "getattr"},
		{"getattr with a frame's attribute", pyPlain, "def f(fr):\n    return getattr(fr, 'f_back')\n", ".f_back"},
		{"an alias of getattr", pyPlain, "g = getattr\n", "the name getattr"},
		{"getattr passed on", pyPlain, "import functools\n\nf = functools.reduce(getattr, ['a'], object)\n", "the name getattr"},
		{"vars", pyPlain, "d = vars(absolute)\n", "the name vars"},
		{"globals", pyPlain, "d = globals()\n", "the name globals"},
		{"dir", pyPlain, "names = dir(absolute)\n", "the name dir"},
		{"exec", pyPlain, "exec('x = 1')\n", "the name exec"},
		{"eval as a value", pyPlain, "run = eval\n", "the name eval"},
		{"compile", pyPlain, "c = compile('1', 'f', 'eval')\n", "the name compile"},
		{"open", pyPlain, "with open('/tmp/x') as f:\n    pass\n", "the name open"},
		{"breakpoint", pyPlain, "breakpoint()\n", "the name breakpoint"},
		{"exit", pyPlain, "exit(0)\n", "the name exit"},
		{"SystemExit", pyPlain, "raise SystemExit(0)\n", "SystemExit"},
		{"a traceback's frame", pyPlain, "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame\n", "__traceback__"},
		{"tb_frame", pyPlain, "def f(tb):\n    return tb.tb_frame\n", ".tb_frame"},
		{"f_back", pyPlain, "def f(fr):\n    return fr.f_back.f_globals\n", ".f_back"},
		{"a generator's frame", pyPlain, "def g():\n    yield 1\n\n\nfr = g().gi_frame\n", ".gi_frame"},
		{"__subclasses__", pyPlain, "c = object.__subclasses__()\n", "__subclasses__"},
		{"__class__.__base__", pyPlain, "c = ().__class__.__base__\n", "__base__"},
		{"__globals__", pyPlain, "g = absolute.__globals__\n", "__globals__"},
		{"__self__ of a builtin", pyPlain, "b = len.__self__\n", "__self__"},
		{"__dict__", pyPlain, "d = absolute.__dict__\n", "__dict__"},
		{"__builtins__", pyPlain, "b = __builtins__\n", "__builtins__"},
		{"a dunder in a string", pyPlain, "n = '__globals__'\n", "__globals__ in a string"},
		{"a dunder across strings", pyPlain, "n = '__glo' 'bals__'\n", "__globals__ in a string"},
		{"a dunder by an escape", pyPlain, "n = '\\x5f_globals__'\n", "__globals__ in a string"},
		{"a dunder by an octal escape", pyPlain, "n = '\\137_globals__'\n", "__globals__ in a string"},
		{"a named escape", pyPlain, "n = '\\N{LOW LINE}_globals__'\n", "named escape"},
		{"sys of an allowed module", pyPlain, "import typing\n\nm = typing.sys.modules\n", ".sys"},
		{"sys from an allowed module", pyPlain, "from dataclasses import sys\n", ".sys"},
		{"a private os of the standard library", pyPlain, "import random\n\nos = random._os\n", "._os"},
		{"a private name of the standard library", pyPlain, "import typing\n\ne = typing._eval_type\n", "typing._eval_type"},
		{"get_type_hints", pyPlain, "import typing\n\nh = typing.get_type_hints(absolute)\n", ".get_type_hints"},
		{"sys of a module of the repository", pyPlain, "import calc\n\nm = calc.sys\n", ".sys"},
		{".modules on anything", pyPlain, "def f(x):\n    return x.modules\n", ".modules"},
		{"a forward reference that calls", pyPlain, "def f(x: 'getattr(a, b)'):\n    pass\n", "the name getattr"},
		{"a forward reference across strings", pyPlain, "def f(x: 'getattr' '(a, b)'):\n    pass\n", "the name getattr"},
		{"singledispatch", pyPlain, "from functools import singledispatch\n", ".singledispatch"},
		{"a forward reference in a subscript", pyPlain, "import typing\n\nT = typing.List['vars(typing)']\n", "the name vars"},
		{"sys.exit", withSys, withSys + "sys.exit(0)\n", "sys.exit"},
		{"sys renamed", withSys, withSys + "import sys as s\n\ns.exit(0)\n", "sys.exit"},
		{"from sys import exit", withSys, withSys + "from sys import exit as leave\n", "sys.exit"},
		{"sys.modules", withSys, withSys + "m = sys.modules\n", ".modules"},
		{"sys._getframe", withSys, withSys + "f = sys._getframe(1)\n", "._getframe"},
		{"os._exit", withOS, withOS + "os._exit(0)\n", "._exit"},
		{"os.dup2", withOS, withOS + "os.dup2(5, 3)\n", ".dup2"},
		{"from os import dup2", withOS, withOS + "from os import dup2 as d\n", ".dup2"},
		{"os.close", withOS, withOS + "os.close(3)\n", "os.close"},
		{"os.execv", withOS, withOS + "os.execv('/bin/true', ['true'])\n", "os.execv"},
		{"/proc/self/fd", withOS, withOS + "fds = os.listdir('/proc/self/fd')\n", "descriptors"},
		{"attrgetter of a base's operator", "import operator\n", "import operator\n\nf = operator.attrgetter('x')\n", ".attrgetter"},
		{"get_field of a base's string", "import string\n", "import string\n\nf = string.Formatter().get_field('0.x', (1,), {})\n", ".get_field"},
		{"builtins of Python 3.11's enum", pyPlain, "import enum\n\nb = enum.bltns\n", ".bltns"},
		{"a class pattern's keyword", pyPlain, "def f(g):\n    match g:\n        case object(gi_frame=fr):\n            return fr\n", "the name gi_frame"},
		{"a dataclass's field", pyPlain, "from dataclasses import dataclass\n\n\n@dataclass\nclass S:\n    f_back: object = None\n", "the name f_back"},
		{"an attribute's name as a string", pyPlain, "names = ('f_' 'back', 'sys')\n", `the string "f_back"`},
		{"update_wrapper", pyPlain, "import functools\n\nfunctools.update_wrapper(a, b, assigned=('x',))\n", ".update_wrapper"},
		{"wraps given names", pyPlain, "import functools\n\n\n@functools.wraps(absolute, assigned=('x',))\ndef g():\n    pass\n", "functools.wraps given names"},
		{"__match_args__", pyPlain, "class A:\n    __match_args__ = ('x',)\n", "__match_args__"},
		{"__instancecheck__", pyPlain, "class M(type):\n    def __instancecheck__(cls, x):\n        return True\n", "__instancecheck__"},
		{"a new use of a module the base used", "import subprocess\n\nsubprocess.run(['true'])\n", "import subprocess\n\nsubprocess.run(['true'])\nsubprocess.Popen(['x'])\n", "a use of subprocess.Popen"},
		{"a new use through a name", "from inspect import isclass\n", "from inspect import isclass, getmembers\n\nm = getmembers(isclass)\n", "a use of inspect.getmembers"},
		{"a module as a value", withOS, withOS + "o = os\no.close(3)\n", "the module os as a value"},
		{"a star import of the repository's", pyPlain, "from calc.util import *\n", "import *"},
		{"a non-ASCII name", pyPlain, "ｇｅｔａｔｔｒ(absolute, 'x')\n", "non-ASCII name"},
		{"a non-ASCII attribute", "import sys\n", "import sys\n\nm = sys.ｍｏｄｕｌｅｓ\n", "non-ASCII name ｍｏｄｕｌｅｓ"},
		{"a non-ASCII import", pyPlain, "from calc import ｓｙｓ\n", "non-ASCII name ｓｙｓ"},
		{"a non-ASCII name for another", "café = 1\n", "ｇｅｔａｔｔｒ = 1\n", "non-ASCII name ｇｅｔａｔｔｒ"},
		{"a non-ASCII name in a forward reference", pyPlain, "def f(x: 'ｇｅｔａｔｔｒ(a, b)'):\n    pass\n", "non-ASCII name"},
		{"a raw string's dunder", pyPlain, "n = r'__globals__\\''\n", "__globals__ in a string"},
		{"a lone carriage return", pyPlain, "x = 1  # note\rimport sys\n", "carriage return"},
		{"utf-7", pyPlain, "# coding: utf-7\nx = 1  # +AAo-import sys\n", "source encoding"},
		{"a file that does not parse", pyPlain, "def f(:\n", "does not parse"},
		{"bytes that are not text", pyPlain, "x = '\xff'\n", "not UTF-8"},
		{"a file that does not parse, as its base did not", "def f(:\n", "def f(:\n    pass\nimport sys\n", "does not parse"},
		{"a lone carriage return its base had", "x = 1  # a\ry = 2\n", "x = 1  # a\rimport sys\n", "carriage return"},
		{"enum.global_enum", pyPlain, "import enum\n\nenum.global_enum(E)\n", ".global_enum"},
		{"Enum._convert_ on a subclass", pyPlain, "import enum\n\n\nclass A(enum.Enum):\n    pass\n\n\nS = A._convert_('S', 'm', bool)\n", "._convert_"},
		{"a new __eq__", pyPlain, "class Same(int):\n    def __eq__(self, other):\n        return True\n", "the comparison __eq__"},
		{"an __eq__ assigned", pyPlain, "class Same(int):\n    __eq__ = lambda s, o: True\n", "the comparison __eq__"},
		{"an __eq__ set on a class", pyPlain, "class Same(int):\n    pass\n\n\nSame.__eq__ = lambda s, o: True\n", "the comparison __eq__"},
		{"an __eq__ in type's namespace", pyPlain, "Same = type('Same', (int,), {'__eq__': lambda s, o: True})\n", "the comparison __eq__"},
		{"a second __eq__ beside the base's", pyValue, pyValue + "\n\nclass Same(int):\n    def __eq__(self, other):\n        return True\n", "the comparison __eq__"},
		{"type with a computed namespace", pyPlain, "Same = type('Same', (int,), {'_' + '_eq__': lambda s, o: True})\n", "type(name, bases, namespace)"},
		{"type with its arguments spread", pyPlain, "Same = type(*args)\n", "type(name, bases, namespace)"},
		{"a class's type called", pyPlain, "Same = type(int)('Same', (int,), ns)\n", "type(name, bases, namespace)"},
		{"a class's __class__ called", pyPlain, "Same = int.__class__(*args)\n", "type(name, bases, namespace)"},
		{"ABCMeta called", pyPlain, "import abc\n\nSame = abc.ABCMeta('Same', (int,), ns)\n", "ABCMeta(name, bases, namespace)"},
		{"make_dataclass's namespace", pyPlain, "import dataclasses\n\nS = dataclasses.make_dataclass('S', [], namespace=ns)\n", "make_dataclass's namespace"},
		{"a metaclass", pyPlain, "class M(type):\n    def __new__(m, name, bases, ns):\n        return super().__new__(m, name, bases, ns)\n", "a metaclass ("},
		{"a metaclass=", pyPlain, "import abc\n\n\nclass A(int, metaclass=abc.ABCMeta):\n    pass\n", "a metaclass="},
		{"a new __contains__", pyPlain, "class All(list):\n    def __contains__(self, x):\n        return True\n", "the comparison __contains__"},
	}
	accepted := []struct{ name, base, now string }{
		{"a comparison fixed", pyPlain, strings.Replace(pyPlain, "return x\n", "return -x\n", 1)},
		{"comments and prose strings that name forbidden things", pyPlain, pyPlain +
			"\n\n# Not sys.exit, getattr(sys, 'modules') nor __globals__ here.\ndef g():\n    \"\"\"Never eval or exec; see sys.modules.\"\"\"\n    return 'getattr or vars(x)'\n"},
		{"a reimplementation", pyPlain, `from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Optional


class Sign(Enum):
    NEG = -1
    POS = 1


@dataclass
class Value:
    x: float
    tags: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.x = float(self.x)

    def __repr__(self):
        return f"{type(self).__name__}({self.x!r:>8})"


class Base:
    def __init__(self, n):
        self.n = n


class Child(Base):
    def __init__(self, n):
        super().__init__(n)
        self.stack = []

    def __getattr__(self, name):
        raise AttributeError(name)


@functools.lru_cache(maxsize=None)
def absolute(x: Optional[int]) -> "int":
    if x is None:
        return 0
    return -x if x < 0 else x


def total(xs, n):
    counts = Counter(xs)
    pairs = [(a, b) for a, b in itertools.zip_longest(xs, xs[1:]) if b is not None]
    squares = {i: i * i for i in range(n) if i % 2 == 0}
    match n:
        case 0:
            return 0
        case _:
            pass
    if (m := len(pairs)) > 0 and math.isfinite(m):
        pass
    return sum(xs[:n]) + 0 * len(counts) * len(squares)


def first(obj, d):
    return getattr(obj, "value", None) or d["open"] or hasattr(obj, "x") or obj.__class__.__name__


def put(obj):
    setattr(obj, "value", 1)


if __name__ == "__main__":
    print(absolute(-3))
`},
		{"an __eq__ the base had, fixed", pyValue, strings.Replace(pyValue, "self.x == other.x", "self.x == other.x and self.y == other.y", 1)},
		{"type of a value", pyPlain, "def f(x):\n    return type(x).__name__ + str(type(x) is int)\n"},
		{"the metaclass the base had", "import abc\n\n\nclass A(metaclass=abc.ABCMeta):\n    pass\n", "import abc\n\n\nclass A(metaclass=abc.ABCMeta):\n    x = 1\n"},
		{"a dataclass's generated comparisons", pyPlain, "from dataclasses import dataclass\n\n\n@dataclass(order=True)\nclass P:\n    x: int\n"},
		{"functools.wraps", pyPlain, "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n    def inner(*a, **k):\n        return fn(*a, **k)\n\n    return inner\n"},
		{"attributes named like modules elsewhere", pyPlain, pyPlain + "\n\ndef f(m, e, node):\n    return m.string, e.code, node.operator, m.types\n"},
		{"a module the base imported", "import os\n\n" + pyPlain, "import os\n\n" + pyPlain + "\n\ndef p(a):\n    return os.path.join(a, 'x')\n"},
		{"the uses the base had", "import subprocess\n\n\ndef f():\n    return subprocess.run(['a'])\n", "import subprocess\n\n\ndef f():\n    return subprocess.run(['b'], check=True)\n"},
		{"what the base already had", "def f(x, n):\n    return getattr(x, n)\n", "def f(x, n):\n    return getattr(x, n) or None\n"},
		{"the repository's own modules", pyPlain, "from calc.util import helper\nimport calc\nfrom . import sibling\nfrom .. import parent\n\n" + pyPlain},
		{"a raw regular expression", pyPlain, "import re\n\nR = re.compile(r\"\\d+__x\\\\\")\n" + pyPlain},
		{"lines that end in CRLF", pyPlain, "x = 1\r\ny = 2\r\n"},
		{"a UTF-8 declaration", pyPlain, "# -*- coding: utf-8 -*-\n" + pyPlain},
		{"a Latin-1 declaration", pyPlain, "# -*- coding: latin-1 -*-\n" + pyPlain},
	}
	repo := map[string]bool{"calc": true}
	for _, c := range refused {
		got := screen([]kept{{Path: "calc/calc.py", Content: []byte(c.now), Base: []byte(c.base)}}, repo)
		if !strings.Contains(got, c.why) {
			t.Errorf("%s: screen says %q, want %q", c.name, got, c.why)
		}
	}
	for _, c := range accepted {
		if got := screen([]kept{{Path: "calc/calc.py", Content: []byte(c.now), Base: []byte(c.base)}}, repo); got != "" {
			t.Errorf("%s: refused: %s", c.name, got)
		}
	}
	if n := syntax.Open(); n != 0 {
		t.Errorf("%d syntax trees left open", n)
	}
}

// The repository's own modules are its packages and modules at the top and in src/, not
// its tests nor what Python imports on its own.
func TestPyModules(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"calc/__init__.py", "src/pkg/m.py", "tool.py", "tests/test_x.py", "test/x.py", "conftest.py",
		"setup.py", "test_top.py", "sitecustomize.py", "docs/index.md", "README.md", ".hidden/x.py", "my-dir/x.py"} {
		write(t, root, p, "")
	}
	got := pyModules(root)
	var names []string
	for _, n := range []string{"calc", "src", "pkg", "tool", "tests", "test", "conftest", "setup", "test_top", "sitecustomize", "docs", "README", "hidden", "my-dir"} {
		if got[n] {
			names = append(names, n)
		}
	}
	// docs is a folder (a namespace package to Python); src is the folder's name too.
	if want := "calc src pkg tool docs"; strings.Join(names, " ") != want {
		t.Errorf("modules %v, want %s", names, want)
	}
}

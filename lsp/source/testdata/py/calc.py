"""A fixture module: a calculator with finished and unfinished methods.

def fake_in_docstring():
    pass
"""

import functools

TEMPLATE = "def not_a_function(): {"


class Calc:
    """Accumulates."""

    def __init__(self):
        self.total = 0

    def add(self, a, b):
        # Braces and def in strings must not confuse the scanner.
        label = "def x(): {" + 'class Y:'
        self.total += a + b
        return a + b

    def sub(self, a, b):
        """Subtract b from a."""
        pass

    async def mul(self, a, b) -> int:
        ...

    def div(
        self,
        a: int,
        b: int,
    ) -> float:
        raise NotImplementedError("div")

    class History:
        def last(self):
            return None  # TODO: keep a history

    @staticmethod
    @functools.cache
    def zero():
        return 0


def outer(x):
    def inner(y):
        return x + y

    return inner


def todo_only():
    # FIXME: write me
    ...


def one_liner(): pass


def fstring_braces(name, d):
    a = f"{name!r:>{10}} {{literal}} {'{'}"
    return a + f"{d["key"]}" + f'''{name}
def still_in_string():'''


def validate(x):
    raise ValueError("bad input")

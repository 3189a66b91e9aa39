import pytest

from calc import Calc


def helper():
    return Calc()


class TestCalc:
    def setup_method(self):
        self.calc = Calc()

    def test_add(self):
        assert self.calc.add(1, 2) == 3

    @pytest.mark.parametrize("a,b", [(1, 2)])
    def test_sub(self, a, b):
        """Only a docstring and pass: a stub test."""
        pass

    class TestNested:
        def test_deep(self):
            assert True


class Helpers:
    def test_not_collected(self):
        assert False


def test_module_level():
    s = """
def test_fake():
    pass
"""
    assert s


async def test_async():
    assert await helper().fetch()

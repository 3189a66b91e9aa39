"""A real-world shaped module: decorators, nested classes, async code, generics."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Generic, TypeVar, overload

T = TypeVar("T")


def retry(times: int = 3):
    """A decorator factory: the wrapper is a nested function."""

    def decorate(fn):
        async def wrapper(*args, **kwargs):
            for attempt in range(times):
                try:
                    return await fn(*args, **kwargs)
                except ConnectionError:
                    await asyncio.sleep(2**attempt)
            raise TimeoutError(fn.__name__)

        return wrapper

    return decorate


@dataclass(frozen=True)
class User:
    name: str
    tags: list[str] = field(default_factory=list)

    @property
    def display(self) -> str:
        return self.name.title()

    @classmethod
    def parse(cls, raw: str) -> "User":
        name, *tags = raw.split(",")
        return cls(name, tags)

    class Meta:
        table = "users"

        class Index:
            def columns(self):
                return ("name",)


class Repository(Generic[T]):
    def __init__(self) -> None:
        self._items: dict[str, T] = {}

    @overload
    def get(self, key: str) -> T: ...

    @overload
    def get(self, key: str, default: T) -> T: ...

    def get(self, key, default=None):
        return self._items.get(key, default)

    @retry(times=5)
    async def fetch(self, key: str) -> T:
        async with self._lock:
            async for item in self._stream(key):
                if item is not None:
                    return item
        raise KeyError(key)

    async def _stream(self, key):
        """Not written yet."""
        raise NotImplementedError

    def first[U](self, items: list[U]) -> U | None:
        match items:
            case [head, *_]:
                return head
            case _:
                return None


if __name__ == "__main__":

    def main():
        asyncio.run(Repository().fetch("x"))

    main()

handler = lambda event: event["body"]

"""Name -> implementation registries with lazy "module:attr" targets and "did you mean" errors."""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Generic, Iterator, TypeVar

from codea1_eval.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    """A registry of one kind of thing (benchmark, backend, selector, mutator).

    Entries are either objects or lazy ``"package.module:attr"`` strings, imported on first use so
    that heavy dependencies (torch, vllm) stay out of the CLI's start-up path.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._help: dict[str, str] = {}

    def register(self, name: str, target: Any, help: str = "") -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = target
        self._help[name] = help

    def names(self) -> list[str]:
        return sorted(self._entries)

    def help(self, name: str) -> str:
        return self._help[self.check(name)]

    def check(self, name: str) -> str:
        """Return ``name`` if registered, else raise a UserError with the closest names."""
        if name in self._entries:
            return name
        close = difflib.get_close_matches(name, self._entries, n=3, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UserError(
            f"unknown {self.kind} {name!r}.{hint} Known: {', '.join(self.names())}."
        )

    def get(self, name: str) -> T:
        target = self._entries[self.check(name)]
        if isinstance(target, str):
            module_name, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module_name), attr)
            self._entries[name] = target
        return target

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

"""Console output: rich progress bars and tables on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console

console = Console(stderr=True)


@contextmanager
def progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(k)``; draws a bar on a TTY, else logs about every 10% (and at the end)."""
    if total <= 0:
        yield lambda k=1: None
        return
    if sys.stderr.isatty():
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TimeRemainingColumn(), console=console) as bar:
            task = bar.add_task(description, total=total)
            yield lambda k=1: bar.advance(task, k)
        return
    state = {"done": 0, "next": max(1, total // 10), "start": time.monotonic()}

    def advance(k: int = 1) -> None:
        state["done"] += k
        if state["done"] >= state["next"] or state["done"] >= total:
            elapsed = time.monotonic() - state["start"]
            print(f"{description}: {state['done']}/{total} ({elapsed:.0f}s)", file=sys.stderr, flush=True)
            state["next"] = state["done"] + max(1, total // 10)

    yield advance

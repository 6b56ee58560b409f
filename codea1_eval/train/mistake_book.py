"""The Mistake Book of the adversarial loop (Code-A1; DESIGN §8): per question, the generated tests that
valid codes failed, each with a frequency.

After a step, over valid codes only, the caller reports one event per (code, test):

- each pass of a historical (Mistake Book) test decrements that test's frequency by 1, and the entry is
  deleted once its frequency is <= 0;
- each failure of a new valid test increments its frequency by 1; an unknown test enters at 1.

``update`` applies all the decrements first, then the increments, so a test that is both historical and
newly failed in one step is judged on the book as it stood before the step's new failures. Entries keep
their insertion order (a deleted test that comes back is inserted again, last); ``top`` sorts by
frequency, highest first, ties broken by insertion order (first added first).

JSON layout: {"schema": 1, "questions": {question_id: [{"testcase": str, "frequency": int}, ...]}},
entries in insertion order; questions with no entries are left out.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

from codea1_eval.errors import UserError

SCHEMA = 1
DEFAULT_TOP = 8


class MistakeBook:
    """Per question id, an insertion-ordered map of test case → frequency (always >= 1)."""

    def __init__(self) -> None:
        self._questions: dict[str, dict[str, int]] = {}

    def entries(self, question_id: str) -> list[tuple[str, int]]:
        """The question's (test case, frequency) pairs in insertion order."""
        return list(self._questions.get(question_id, {}).items())

    def top(self, question_id: str, k: int = DEFAULT_TOP) -> list[str]:
        """The question's ``k`` most frequent test cases, ties broken by insertion order (first added first)."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        ranked = sorted(self.entries(question_id), key=lambda entry: -entry[1])  # stable: keeps insertion order
        return [testcase for testcase, _ in ranked[:k]]

    def update(self, question_id: str, historical_passes: Iterable[str], new_failures: Iterable[str]) -> None:
        """Apply one step's events: −1 per (code, historical test) pass, then +1 per (code, new test) failure."""
        book = self._questions.setdefault(question_id, {})
        for testcase, passes in Counter(historical_passes).items():
            if testcase in book:
                book[testcase] -= passes
                if book[testcase] <= 0:
                    del book[testcase]
        for testcase, failures in Counter(new_failures).items():
            book[testcase] = book.get(testcase, 0) + failures
        if not book:
            del self._questions[question_id]

    def set_frequencies(self, question_id: str, frequencies: Mapping[str, int]) -> None:
        """Replace the question's entries (in the mapping's order); frequencies <= 0 are left out."""
        kept = {testcase: frequency for testcase, frequency in frequencies.items() if frequency > 0}
        if kept:
            self._questions[question_id] = kept
        else:
            self._questions.pop(question_id, None)

    def size(self, question_id: str | None = None) -> int:
        """Entries of ``question_id``, or of the whole book when it is None."""
        if question_id is not None:
            return len(self._questions.get(question_id, {}))
        return sum(len(book) for book in self._questions.values())

    def to_json(self) -> str:
        """The book as JSON text (layout in the module docstring)."""
        questions = {question_id: [{"testcase": testcase, "frequency": frequency}
                                   for testcase, frequency in book.items()]
                     for question_id, book in self._questions.items()}
        return json.dumps({"schema": SCHEMA, "questions": questions}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> MistakeBook:
        """A book from ``to_json`` text; ValueError when the text is not a schema-1 Mistake Book."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("questions"), dict):
            raise ValueError(f'expected {{"schema": {SCHEMA}, "questions": {{...}}}}')
        book = cls()
        for question_id, entries in data["questions"].items():
            if not isinstance(entries, list):
                raise ValueError(f"question {question_id!r}: expected a list of entries")
            testcases = book._questions.setdefault(question_id, {})
            for entry in entries:
                testcase = _testcase(entry)
                if testcase in testcases:
                    raise ValueError(f"question {question_id!r}: test case {testcase!r} listed twice")
                testcases[testcase] = _frequency(entry)
            if not testcases:
                del book._questions[question_id]
        return book

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the book to ``path`` atomically (a temporary file in the same folder, then os.replace)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(self.to_json())
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MistakeBook:
        """The book saved at ``path``; an empty book when the file is missing; UserError when it is corrupt."""
        target = Path(path)
        try:
            raw = target.read_bytes()
        except FileNotFoundError:
            return cls()
        try:
            return cls.from_json(raw.decode("utf-8"))
        except ValueError as error:  # includes JSONDecodeError and UnicodeDecodeError
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise UserError(f"corrupt Mistake Book {target}: {message}") from error


def _testcase(entry: Any) -> str:
    if not isinstance(entry, dict) or not isinstance(entry.get("testcase"), str):
        raise ValueError(f"entry {entry!r}: expected a string 'testcase'")
    return entry["testcase"]


def _frequency(entry: dict[str, Any]) -> int:
    frequency = entry.get("frequency")
    if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
        raise ValueError(f"entry {entry['testcase']!r}: 'frequency' must be an integer >= 1, got {frequency!r}")
    return frequency

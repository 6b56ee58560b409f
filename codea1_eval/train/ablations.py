"""The Code-A1 ablations (paper Table 3) as `train --ablation NAME` switches of the ``code-a1`` mode.

Each removes one thing from the adversarial step, and nothing else:

- ``no-code-access``: the Test LLM no longer sees the candidate code. Its prompt is the black-box tester
  prompt (the question alone); it still writes N suites per code, and those suites are still run on
  that code, so only what the tester can read changes.
- ``no-predicted-answer``: the tester's predicted answers no longer count. Every test that runs on the
  reference is kept with the reference's true value (as before), and a wrong prediction is no longer
  an invalid test in R_val: validity judges only whether the input is legal (it runs on the reference,
  is not a duplicate). The seed notes name this row without defining it; this is our reading of it:
  the tester's job shrinks to choosing inputs, the outputs come from the reference.
- ``no-mistake-book``: no Mistake Book. No historical tests are read (codes are scored on their suites
  alone, R_adv falls back to gen_fail) and nothing is written to the book.
"""

from __future__ import annotations

from typing import Iterable

from codea1_eval.errors import UserError

NO_CODE_ACCESS, NO_PREDICTED_ANSWER, NO_MISTAKE_BOOK = "no-code-access", "no-predicted-answer", "no-mistake-book"
ABLATIONS: dict[str, str] = {
    NO_CODE_ACCESS: "the tester's prompt omits the candidate code (black-box prompt)",
    NO_PREDICTED_ANSWER: "wrong predicted answers are not invalid in R_val (outputs come from the reference)",
    NO_MISTAKE_BOOK: "no Mistake Book reads or writes",
}
"""Each ablation's name and, in a line, what it removes."""


def checked_ablations(names: Iterable[str], mode: str) -> tuple[str, ...]:
    """``names`` sorted and de-duplicated; an unknown name, or any ablation outside ``code-a1``, is an error."""
    chosen = tuple(sorted(set(names)))
    unknown = [name for name in chosen if name not in ABLATIONS]
    if unknown:
        raise UserError(f"unknown ablation {unknown[0]!r}; use one of: {', '.join(ABLATIONS)}")
    if chosen and mode != "code-a1":
        raise UserError(f"--ablation applies to --mode code-a1 only (got --mode {mode})")
    return chosen

"""The sandbox's environment switches (``CODEA1_LANDLOCK``, ``CODEA1_FENCE``, ``CODEA1_FORKSERVER``), read one way."""

from __future__ import annotations

import os
from typing import Sequence

from codea1_eval.errors import UserError


def read_switch(name: str, default: str, choices: Sequence[str], wording: str) -> str:
    """The setting of the environment switch ``name`` (stripped, lower-cased; ``default`` where it is unset), one of
    ``choices``; anything else is a one-line UserError that says ``use {wording}``."""
    setting = os.environ.get(name, default).strip().lower()
    if setting not in choices:
        raise UserError(f"{name}={setting!r}: use {wording}")
    return setting

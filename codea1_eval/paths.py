"""Per-user cache locations (read from the environment at call time, never at import)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$CODEA1_CACHE_DIR`` or ``~/.cache/codea1-eval``."""
    return Path(os.environ.get("CODEA1_CACHE_DIR") or Path.home() / ".cache" / "codea1-eval")

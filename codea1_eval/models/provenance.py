"""Where a checkpoint came from: the training record `train` leaves in every checkpoint it writes.

`train` writes ``codea1_training.json`` into each policy directory it saves (mode, α, ablations, data and
its sha256, the step, the starting model, the run). An evaluation of that directory (``--coder DIR``,
``hf:DIR``, ``vllm:DIR``) copies the record into its manifest, so `table` can group rows by how their
checkpoints were trained. Checkpoints from elsewhere have no record (None).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRAINING_FILE = "codea1_training.json"
TRAINING_SCHEMA = 1


def training_provenance(spec: str | None) -> dict[str, Any] | None:
    """The training record of the local checkpoint ``spec`` names, or None (no record, not a local
    directory, or an unreadable record)."""
    if not spec:
        return None
    from codea1_eval.errors import UserError
    from codea1_eval.models.spec import parse_model_spec

    try:
        backend, argument = parse_model_spec(spec)
    except UserError:  # a spec the command itself rejects with its own message
        return None
    record = Path(argument) / TRAINING_FILE
    if backend not in ("hf", "vllm") or not record.is_file():
        return None
    try:
        value = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_training_record(directory: Path, record: dict[str, Any]) -> None:
    """Write ``record`` (with the schema) as ``directory``'s training record."""
    (Path(directory) / TRAINING_FILE).write_text(json.dumps({"schema": TRAINING_SCHEMA, **record}, indent=1))

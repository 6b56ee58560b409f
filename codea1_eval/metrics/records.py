"""Typed metric records: every number a run reports, with its k, variant, 95% interval, number of tasks and
direction. ``metrics.json`` (schema 2) carries them as ``records`` beside the flat keys of schema 1
(``pass@5``, ``mut@5_conditional``, ``accuracy.most-passed``), which stay for older readers; readers use
``metric_records``, which also turns a schema-1 file (no ``records``) into records."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codea1_eval.results import write_json_atomic

METRICS_SCHEMA = 2
_AT_K = re.compile(r"(?:(?P<base>base)_)?(?P<name>[a-z]+)@(?P<k>\d+)(?:_(?P<variant>conditional))?")
_PERCENTAGES = ("line_coverage", "branch_coverage", "gt_pass_rate")


@dataclass(frozen=True)
class MetricRecord:
    """One reported number. ``name``: avg, pass, mut, mul, accuracy, line_coverage, ...; ``variant``:
    ``base`` (evalplus' base inputs), ``conditional`` (the paper's mut@k over tasks whose suite passes)
    or, for ``accuracy``, the selector; ``interval``: the 95% bootstrap interval when one was computed."""

    name: str
    value: float | None
    k: int | None = None
    variant: str = ""
    interval: tuple[float, float] | None = None
    n_tasks: int | None = None
    higher_is_better: bool = True

    @property
    def key(self) -> str:
        """The flat schema-1 key of this number (``base_pass@1``, ``mut@5_conditional``, ``accuracy.codet``)."""
        if self.name == "accuracy":
            return f"accuracy.{self.variant}"
        if self.k is None:
            return self.name
        prefix = "base_" if self.variant == "base" else ""
        suffix = "_conditional" if self.variant == "conditional" else ""
        return f"{prefix}{self.name}@{self.k}{suffix}"


def _interval(value: Any) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if isinstance(value, (list, tuple)) and len(value) == 2 else None


def _tasks_at_k(metrics: dict[str, Any], name: str, k: int, variant: str) -> int | None:
    if variant == "conditional":
        return metrics.get(f"n_tasks_conditional@{k}")
    if name in ("mut", "mul"):
        return metrics.get(f"n_tasks_mut@{k}")
    return metrics.get("n_tasks")


def records_from_flat(metrics: dict[str, Any]) -> list[MetricRecord]:
    """The records of a flat (schema-1) metrics dict, in its key order."""
    intervals = metrics.get("ci95") or {}
    records = []
    for key, value in metrics.items():
        match = _AT_K.fullmatch(key)
        if match and (value is None or isinstance(value, (int, float))):
            variant = "base" if match["base"] else (match["variant"] or "")
            k = int(match["k"])
            records.append(MetricRecord(match["name"], value, k, variant, _interval(intervals.get(key)),
                                        _tasks_at_k(metrics, match["name"], k, variant)))
        elif key in _PERCENTAGES and isinstance(value, (int, float)):
            tasks = metrics.get("n_tasks_coverage") if key.endswith("coverage") else metrics.get("n_tasks")
            records.append(MetricRecord(key, value, n_tasks=tasks))
    if isinstance(metrics.get("accuracy"), dict):
        for selector, value in metrics["accuracy"].items():
            records.append(MetricRecord("accuracy", value, None, selector, _interval(intervals.get(selector)),
                                        metrics.get("n_tasks")))
    return records


def metric_records(metrics: dict[str, Any]) -> list[MetricRecord]:
    """A metrics.json's records: its ``records`` (schema 2), else read from its flat keys (schema 1)."""
    if isinstance(metrics.get("records"), list):
        return [MetricRecord(**{**record, "interval": _interval(record.get("interval"))})
                for record in metrics["records"]]
    return records_from_flat(metrics)


def write_metrics(path: Path, metrics: dict[str, Any]) -> dict[str, Any]:
    """Write ``metrics`` as metrics.json (schema 2: the flat keys and their records), atomically; returns
    what was written."""
    records = [{**asdict(record), "interval": list(record.interval) if record.interval else None}
               for record in records_from_flat(metrics)]
    document = {**metrics, "schema": METRICS_SCHEMA, "records": records}
    write_json_atomic(path, document)
    return document

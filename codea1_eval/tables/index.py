"""The results index: run directories of any command read into records and a pandas DataFrame, and
the check that runs shown side by side were measured the same way."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

from codea1_eval.errors import UserError
from codea1_eval.metrics.records import MetricRecord, metric_records
from codea1_eval.results import read_jsonl

COMMANDS = ("avg", "mul", "bon", "train")
COMPARED_SETTINGS = {
    "avg": ("dataset_sha256", "n", "temperature", "top_p", "split", "subset"),
    "mul": ("dataset_sha256", "k", "protocol", "mode", "mutator", "temperature"),
    "bon": ("dataset_sha256", "candidates", "suites", "temperature", "white_box", "split", "subset"),
    "train": ("data", "mode", "codes", "suites", "temperature"),
}
"""Per command, the settings that must agree between runs of one benchmark shown in one table."""


@dataclass(frozen=True)
class Run:
    """One run directory: its command, recorded config, metrics and (train) log."""

    path: Path
    command: str
    config: dict[str, Any]
    metrics: dict[str, Any]
    manifest: dict[str, Any] = field(repr=False)
    train_log: tuple[dict[str, Any], ...] = ()

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def records(self) -> tuple[MetricRecord, ...]:
        """The run's metric records (schema 2), or read from its flat keys (older runs)."""
        return tuple(metric_records(self.metrics))

    def metric(self, key: str) -> MetricRecord | None:
        """The record whose flat key is ``key`` (``pass@5``, ``mut@5_conditional``, ``accuracy.codet``)."""
        return next((record for record in self.records if record.key == key), None)

    @property
    def benchmark(self) -> str:
        return self.metrics.get("benchmark") or self.config.get("benchmark") or "-"

    def setting(self, name: str) -> Any:
        """A setting of the run: from its config, else its metrics or manifest (dataset sha256)."""
        if name == "dataset_sha256":
            return self.metrics.get(name) or self.config.get(name) or self.manifest.get("benchmark", {}).get("sha256")
        value = self.config.get(name)
        return value if value is not None else self.metrics.get(name)

    def training(self, role: str) -> dict[str, Any] | None:
        """The training record of the run's coder or tester checkpoint (``models.provenance``): how `train`
        made it (mode, alpha, ablations, data sha256, step, base model), or None for any other model."""
        section = self.manifest.get("generation" if self.command == "avg" else role)
        return section.get("training") if isinstance(section, dict) else None

    def model(self, role: str) -> str:
        """The spec of the run's coder or tester; a samples-file coder is named by the file's stem."""
        spec = self.config.get(role)
        if spec is None and role == "coder" and self.config.get("samples"):
            return Path(self.config["samples"]).stem
        return spec or "-"


def load_run(path: Path) -> Run:
    """Read one run directory (UserError when it is not a finished codea1-eval run)."""
    path = Path(path)
    manifest_file = path / "manifest.json"
    if not manifest_file.is_file():
        raise UserError(f"{path} is not a codea1-eval run dir (no manifest.json)")
    try:
        manifest = json.loads(manifest_file.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{manifest_file} is not valid JSON: {exc}") from None
    command = manifest.get("command")
    if command not in COMMANDS:
        raise UserError(f"{path}: unknown command {command!r} in manifest.json")
    train_log: tuple[dict[str, Any], ...] = ()
    if command == "train":
        train_log = tuple(read_jsonl(path / "train_log.jsonl"))
        if not train_log:
            raise UserError(f"{path}: the train run has no logged step yet (train_log.jsonl)")
        metrics = dict(train_log[-1])
    else:
        metrics_file = path / "metrics.json"
        if not metrics_file.is_file():
            raise UserError(f"{path}: the {command} run has not finished (no metrics.json)")
        metrics = json.loads(metrics_file.read_text())
    return Run(path, command, dict(manifest.get("config", {})), metrics, manifest, train_log)


def load_runs(paths: Iterable[Path]) -> list[Run]:
    """Read run directories in the given order (duplicates once)."""
    runs = [load_run(Path(p)) for p in dict.fromkeys(Path(p) for p in paths)]
    if not runs:
        raise UserError("give at least one run directory")
    return runs


def runs_frame(runs: Sequence[Run]):
    """A pandas DataFrame: one row per run with its command, models, benchmark, dataset sha256, the
    compared settings and every scalar metric (``accuracy.most-passed`` style for nested ones)."""
    import pandas as pd

    rows = []
    for run in runs:
        row: dict[str, Any] = {"run": run.name, "command": run.command, "benchmark": run.benchmark,
                               "coder": run.model("coder"), "tester": run.model("tester"),
                               "dataset_sha256": run.setting("dataset_sha256")}
        for setting in COMPARED_SETTINGS[run.command]:
            row.setdefault(setting, run.setting(setting))
        row.update(_scalars(run.metrics))
        rows.append(row)
    return pd.DataFrame(rows)


def _scalars(metrics: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        if key in ("ci95", "curves", "schema"):
            continue
        if isinstance(value, dict):
            flat.update(_scalars(value, f"{prefix}{key}."))
        elif isinstance(value, (int, float, str, bool)) or value is None:
            flat[f"{prefix}{key}"] = value
    return flat


def incomparable(runs: Sequence[Run]) -> list[str]:
    """Why runs of one command and benchmark cannot share a table: each setting that differs, with
    the runs on each side (unknown values, such as a samples file's temperature, are not compared)."""
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        groups[(run.command, run.benchmark)].append(run)
    problems = []
    for (command, benchmark), group in groups.items():
        for setting in COMPARED_SETTINGS[command]:
            by_value: dict[str, list[str]] = defaultdict(list)
            for run in group:
                value = run.setting(setting)
                if value is not None:
                    by_value[json.dumps(value)].append(run.name)
            if len(by_value) > 1:
                sides = "; ".join(f"{value} ({', '.join(names)})" for value, names in by_value.items())
                problems.append(f"{command} runs on {benchmark} differ in {setting}: {sides}")
    return problems

"""`codea1-eval diff RUN_A RUN_B`: why two runs' numbers differ.

Three parts, most telling first:

1. settings that differ, in the order that most often explains a difference: the status, the dataset
   (sha256), the models' identities, the config (sampling, limits, timeout scale, ...), the sandbox's
   limits, the tool's version, package versions, then the host;
2. every metric both runs report: A, B, the change, and whether each value lies inside the other's 95%
   interval (a change inside both intervals is within the runs' own noise);
3. the samples whose verdict flipped (``avg`` runs: ``samples.jsonl``, paired by task and sample index),
   each with its reason from the records: a different generation (the programs differ), or the same
   program judged differently (the statuses and errors of both executions, and the limit settings that
   changed, if any).

Run dirs of every schema the tool has written are read; files a run does not have are skipped.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codea1_eval.results import read_jsonl
from codea1_eval.tables.index import Run, load_run

SECTION_ORDER = ("status", "benchmark", "generation", "coder", "tester", "config", "sandbox", "tool_version",
                 "git", "packages", "host")
NOISE = {"generation.generation_cache", "coder.generation_cache", "tester.generation_cache", "benchmark.source",
         "benchmark.tasks", "host.hostname", "config.out"}
"""Facts that differ between runs without changing a result (cache hit counts, where a file lay)."""
LIMIT_SETTINGS = ("config.timeout_scale", "config.isolation", "sandbox.")


@dataclass(frozen=True)
class SettingChange:
    name: str
    a: Any
    b: Any


@dataclass(frozen=True)
class MetricChange:
    name: str
    a: float | None
    b: float | None
    inside_intervals: bool | None
    """Each value inside the other run's 95% interval (None: an interval or a value is missing)."""

    @property
    def change(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass(frozen=True)
class Flip:
    task_id: str
    index: int
    a: str
    b: str
    reason: str


@dataclass
class RunDiff:
    a: str
    b: str
    settings: list[SettingChange] = field(default_factory=list)
    metrics: list[MetricChange] = field(default_factory=list)
    flips: list[Flip] = field(default_factory=list)
    samples_compared: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``diff --json``)."""
        return {**asdict(self), "metrics": [{**asdict(m), "change": m.change} for m in self.metrics]}


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return {key: item for name, inner in value.items() for key, item in _flat(inner, f"{prefix}.{name}").items()}
    return {prefix: value}


def _manifest_facts(run: Run) -> dict[str, Any]:
    """The manifest's facts as flat ``section.key`` names, in ``SECTION_ORDER``'s sections."""
    return {name: value for section in SECTION_ORDER if section in run.manifest
            for name, value in _flat(run.manifest[section], section).items()}


def _settings(a: Run, b: Run) -> list[SettingChange]:
    facts_a, facts_b = _manifest_facts(a), _manifest_facts(b)
    changed = [name for name in set(facts_a) | set(facts_b) if facts_a.get(name) != facts_b.get(name)
               and not any(name == noise or name.startswith(noise + ".") for noise in NOISE)]
    changed.sort(key=lambda name: (SECTION_ORDER.index(name.split(".")[0]), name))
    return [SettingChange(name, facts_a.get(name), facts_b.get(name)) for name in changed]


def _inside(value: float | None, interval: tuple[float, float] | None) -> bool | None:
    if value is None or interval is None:
        return None
    return interval[0] - 1e-9 <= value <= interval[1] + 1e-9


def _metrics(a: Run, b: Run) -> list[MetricChange]:
    changes = []
    for record in a.records:
        other = b.metric(record.key)
        if other is None:
            continue
        inside = [_inside(record.value, other.interval), _inside(other.value, record.interval)]
        changes.append(MetricChange(record.key, record.value, other.value,
                                    None if None in inside else all(inside)))
    return changes


def _samples(run: Run) -> tuple[dict[tuple[str, int], dict], dict[str, dict]]:
    """(task id, index within the task) -> sample row; execution key -> execution record."""
    samples, counts = {}, {}
    if (run.path / "samples.jsonl").is_file():
        for row in read_jsonl(run.path / "samples.jsonl"):
            index = counts[row["task_id"]] = counts.get(row["task_id"], -1) + 1
            samples[row["task_id"], index] = row
    executions = {}
    if (run.path / "executions.jsonl").is_file():
        executions = {row["key"]: row for row in read_jsonl(run.path / "executions.jsonl") if "key" in row}
    return samples, executions


def _verdict(sample: dict, executions: dict[str, dict]) -> tuple[bool, str]:
    """Whether the sample passed (every input list), and its statuses as text."""
    execution = executions.get(sample.get("execution_key", ""), {})
    statuses = [sample.get("base_status"), sample.get("plus_status")]
    passed = execution.get("passed")
    if passed is None:
        passed = all(status in ("pass", None) for status in statuses) and statuses[0] == "pass"
    text = "/".join(status for status in statuses if status) or ("pass" if passed else "fail")
    error = execution.get("error")
    return bool(passed), text + (f" ({error})" if error and not passed else "")


def _flips(a: Run, b: Run, limit_changes: list[str]) -> tuple[list[Flip], int]:
    samples_a, executions_a = _samples(a)
    samples_b, executions_b = _samples(b)
    flips, shared = [], [key for key in samples_a if key in samples_b]
    for key in shared:
        (passed_a, text_a), (passed_b, text_b) = _verdict(samples_a[key], executions_a), _verdict(samples_b[key],
                                                                                                  executions_b)
        if passed_a == passed_b:
            continue
        if samples_a[key].get("solution") != samples_b[key].get("solution"):
            reason = "a different generation (the programs differ)"
        else:
            reason = "the same program judged differently" + (
                f" (changed: {', '.join(limit_changes)})" if limit_changes else "")
        flips.append(Flip(key[0], key[1], text_a, text_b, reason))
    return flips, len(shared)


def diff_runs(path_a: Path, path_b: Path) -> RunDiff:
    """Compare two run directories (see the module doc)."""
    a, b = load_run(Path(path_a)), load_run(Path(path_b))
    result = RunDiff(str(path_a), str(path_b), _settings(a, b), _metrics(a, b))
    limit_changes = [s.name for s in result.settings if s.name.startswith(LIMIT_SETTINGS)]
    result.flips, result.samples_compared = _flips(a, b, limit_changes)
    return result


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_diff(result: RunDiff) -> str:
    """The diff as text: settings, metrics, flipped samples."""
    lines = [f"A: {result.a}", f"B: {result.b}", "", "Settings that differ (A -> B):"]
    lines += [f"  {s.name}: {json.dumps(s.a)} -> {json.dumps(s.b)}" for s in result.settings] or ["  none"]
    lines += ["", "Metrics (A -> B, change; inside both 95% intervals?):"]
    for m in result.metrics:
        noise = {True: "inside", False: "outside", None: "no interval"}[m.inside_intervals]
        change = "-" if m.change is None else f"{m.change:+.2f}"
        lines.append(f"  {m.name}: {_number(m.a)} -> {_number(m.b)} ({change}; {noise})")
    lines += ["", f"Flipped samples ({len(result.flips)} of {result.samples_compared} compared):"]
    lines += [f"  {f.task_id} #{f.index}: {f.a} -> {f.b}: {f.reason}" for f in result.flips] or ["  none"]
    return "\n".join(lines) + "\n"

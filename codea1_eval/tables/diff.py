"""`codea1-eval diff RUN_A RUN_B`: why two runs' numbers differ.

Three parts, most telling first:

1. settings that differ, in the order that most often explains a difference: the status, the dataset
   (sha256), the models' identities, the config (sampling, limits, timeout scale, ...), the sandbox's
   limits, the tool's version, package versions, then the host;
2. every metric both runs report: A, B, the change, and whether each value lies inside the other's 95%
   interval (a change inside both intervals is within the runs' own noise);
3. what flipped, with its reason from the records: for ``avg``, the samples whose verdict flipped
   (``samples.jsonl``, paired by task and sample index): a different generation (the programs differ), or
   the same program judged differently (the statuses and errors of both executions, and the limit
   settings that changed, if any); for ``bon``, the tasks whose pick (most-passed) turned right or wrong:
   different candidates, different tests, or the same ones judged differently; for ``mul``, the tasks
   whose tests turned to hold or not on the reference: different tests, or the same ones judged
   differently.

Run dirs of every schema the tool has written are read; files a run does not have are skipped.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from codea1_eval.tables.index import Run, load_run
from codea1_eval.tables.run_records import (matrices, pick_correct, rows, rows_by_task, rows_grouped, sample_passed,
                                             task_holds, tests_hold)

SECTION_ORDER = ("command", "status", "benchmark", "skipped", "generation", "coder", "tester", "config", "sandbox", "tool_version",
                 "git", "packages", "host")
NOISE = {"generation.generation_cache", "coder.generation_cache", "tester.generation_cache", "benchmark.source",
         "host.hostname", "config.out"}
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
    index: int | None
    """The sample's index within its task (avg); None for a task-level flip (bon, mul)."""
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
    compared: int = 0
    unit: str = "samples"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``diff --json``)."""
        return {**asdict(self), "metrics": [{**asdict(m), "change": m.change} for m in self.metrics]}


def _changes(a: Any, b: Any, name: str) -> list[SettingChange]:
    """Where ``a`` and ``b`` differ: inside dicts both sides have, key by key; anywhere else as a whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [change for key in sorted(set(a) | set(b)) for change in _changes(a.get(key), b.get(key), f"{name}.{key}")]
    noise = any(name == prefix or name.startswith(prefix + ".") for prefix in NOISE)
    return [] if a == b or noise else [SettingChange(name, a, b)]


def _settings(a: Run, b: Run) -> list[SettingChange]:
    return [change for section in SECTION_ORDER
            for change in _changes(a.manifest.get(section), b.manifest.get(section), section)]


def _inside(value: float | None, interval: tuple[float, float] | None) -> bool | None:
    if value is None or interval is None:
        return None
    return interval[0] - 1e-9 <= value <= interval[1] + 1e-9


def _metrics(a: Run, b: Run) -> list[MetricChange]:
    if a.command == "train" and b.command == "train":  # the last logged step's numbers
        return [MetricChange(key, value, b.metrics[key], None) for key, value in a.metrics.items()
                if isinstance(value, (int, float)) and isinstance(b.metrics.get(key), (int, float))]
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
    for row in rows(run.path, "samples.jsonl"):
        index = counts[row["task_id"]] = counts.get(row["task_id"], -1) + 1
        samples[row["task_id"], index] = row
    return samples, {row["key"]: row for row in rows(run.path, "executions.jsonl") if "key" in row}


def _verdict(sample: dict, executions: dict[str, dict]) -> tuple[bool, str]:
    """Whether the sample passed (every input list), and its statuses as text."""
    execution = executions.get(sample.get("execution_key", ""), {})
    statuses = [sample.get("base_status"), sample.get("plus_status")]
    passed = sample_passed(sample, execution)
    text = "/".join(status for status in statuses if status) or ("pass" if passed else "fail")
    error = execution.get("error")
    return passed, text + (f" ({error})" if error and not passed else "")


def _judged_again(limit_changes: list[str], what: str) -> str:
    return f"the same {what} judged differently" + (f" (changed: {', '.join(limit_changes)})" if limit_changes else "")


def _sample_flips(a: Run, b: Run, limit_changes: list[str]) -> tuple[list[Flip], int]:
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
            reason = _judged_again(limit_changes, "program")
        flips.append(Flip(key[0], key[1], text_a, text_b, reason))
    return flips, len(shared)


def _pick_flips(a: Run, b: Run, limit_changes: list[str]) -> tuple[list[Flip], int]:
    """bon: tasks whose pick turned right or wrong."""
    picks = [{m.matrix.task_id: m for m in matrices(run.path)} for run in (a, b)]
    candidates = [rows_by_task(run.path, "candidates.jsonl") for run in (a, b)]
    suites = [rows_grouped(run.path, "suites.jsonl", "candidate") for run in (a, b)]  # white-box: one per candidate
    flips, shared = [], [task for task in picks[0] if task in picks[1]]
    for task in shared:
        right = [pick_correct(side[task]) for side in picks]
        if right[0] == right[1]:
            continue
        codes = [[c.get("code") for c in side.get(task, {}).get("candidates", [])] for side in candidates]
        tests = [[s.get("response") for row in side.get(task, []) for s in row.get("suites", [])] for side in suites]
        reason = ("different candidates (the coder's programs differ)" if codes[0] != codes[1] else
                  "different tests (the tester's suites differ)" if tests[0] != tests[1] else
                  _judged_again(limit_changes, "programs and tests"))
        flips.append(Flip(task, None, *("pick right" if r else "pick wrong" for r in right), reason))
    return flips, len(shared)


def _test_flips(a: Run, b: Run, limit_changes: list[str]) -> tuple[list[Flip], int]:
    """mul: tasks whose tests turned to hold, or not, on the reference."""
    records = [rows_by_task(run.path, "tests.jsonl") for run in (a, b)]
    flips, shared = [], [task for task in records[0] if task in records[1]]
    for task in shared:
        if task_holds(records[0][task]) == task_holds(records[1][task]):
            continue
        counts = [f"{sum(held)}/{len(held)} tests hold" for held in (tests_hold(side[task]) for side in records)]
        texts = [[r.get("source") for r in side[task].get("results", [])] or side[task].get("tests", [])
                 for side in records]
        reason = ("a different generation (the tests differ)" if texts[0] != texts[1] else
                  _judged_again(limit_changes, "tests"))
        flips.append(Flip(task, None, *counts, reason))
    return flips, len(shared)


FLIPS = {"avg": (_sample_flips, "samples"), "bon": (_pick_flips, "tasks"), "mul": (_test_flips, "tasks")}


def diff_runs(path_a: Path, path_b: Path) -> RunDiff:
    """Compare two run directories (see the module doc)."""
    a, b = load_run(Path(path_a)), load_run(Path(path_b))
    result = RunDiff(str(path_a), str(path_b), _settings(a, b), _metrics(a, b))
    limit_changes = [s.name for s in result.settings if s.name.startswith(LIMIT_SETTINGS)]
    if a.command == b.command and a.command in FLIPS:
        flips, result.unit = FLIPS[a.command]
        result.flips, result.compared = flips(a, b, limit_changes)
    return result


def _shown(value: Any, width: int = 160) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[:width - 3] + "..."


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_diff(result: RunDiff) -> str:
    """The diff as text: settings, metrics, flipped samples."""
    lines = [f"A: {result.a}", f"B: {result.b}", "", "Settings that differ (A -> B):"]
    lines += [f"  {s.name}: {_shown(s.a)} -> {_shown(s.b)}" for s in result.settings] or ["  none"]
    lines += ["", "Metrics (A -> B, change; inside both 95% intervals?):"]
    for m in result.metrics:
        noise = {True: "inside", False: "outside", None: "no interval"}[m.inside_intervals]
        change = "-" if m.change is None else f"{m.change:+.2f}"
        lines.append(f"  {m.name}: {_number(m.a)} -> {_number(m.b)} ({change}; {noise})")
    lines += ["", f"Flipped {result.unit} ({len(result.flips)} of {result.compared} compared):"]
    lines += [f"  {f.task_id}{'' if f.index is None else f' #{f.index}'}: {f.a} -> {f.b}: {f.reason}"
              for f in result.flips] or ["  none"]
    return "\n".join(lines) + "\n"

"""The paper's table layouts, built from run records into format-free tables.

- ``coders`` (Code-A1 Table 1): coder rows x avg@k on HumanEval+ / MBPP+ / BigCodeBench (and any other
  benchmark present), plus their mean;
- ``testers`` (Table 2): tester rows x pass@k, mut@k (conditional by default, labelled) and Mul per
  benchmark;
- ``ablations`` (Table 3): the Code-A1 checkpoints and their ablations, told apart by the training record
  of each checkpoint (``models.provenance``): avg@k per benchmark and the mean, and Mul@k of the
  matching testers when mul runs are given;
- ``golden-sources`` (Table 4): Code LLMs trained with ``--mode golden`` on tests of different sources
  (human-annotated, or written by a base, SFT or Code-A1 tester through ``train golden-data``), told apart
  by the training records: avg@k per benchmark and the mean;
- ``bon`` (Table 5): per coder, the coder alone (the expected accuracy of one of its candidates) and each
  coder x tester pair under best-of-N with the named selector, per benchmark.

Every cell keeps where its number came from (run dir and metrics key); 95% intervals come along where
the run recorded them. Higher is better in every column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

from codea1_eval.errors import UserError
from codea1_eval.registry import Registry
from codea1_eval.tables.index import Run

BENCHMARK_ORDER = ("humaneval", "humaneval+", "mbpp+", "bigcodebench", "bigcodebench-hard", "ult-lite", "ult")
DISPLAY_NAMES = {"humaneval": "HumanEval", "humaneval+": "HumanEval+", "humaneval+-mini": "HumanEval+ mini",
                 "mbpp+": "MBPP+", "bigcodebench": "BigCodeBench", "bigcodebench-hard": "BigCodeBench-Hard",
                 "ult-lite": "ULT-Lite", "ult": "ULT"}
TESTER_KS = (5, 2, 1)


@dataclass(frozen=True)
class Cell:
    """A number (None: not measured) with its 95% interval, and the metrics entry it came from."""

    value: float | None
    low: float | None = None
    high: float | None = None
    source: str = ""


@dataclass
class Table:
    """Columns, then rows of (label, cells)."""

    title: str
    columns: list[str]
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)


def benchmark_label(name: str) -> str:
    """``bigcodebench-instruct-stdlib`` -> ``BigCodeBench (instruct, stdlib)``; HumanEval+ etc. as the paper."""
    match = re.fullmatch(r"(bigcodebench(?:-hard)?)-(complete|instruct)(-stdlib)?", name)
    if match:
        base, split, stdlib = match.groups()
        qualifiers = [q for q in (split if split != "complete" else "", "stdlib" if stdlib else "") if q]
        return DISPLAY_NAMES[base] + (f" ({', '.join(qualifiers)})" if qualifiers else "")
    return DISPLAY_NAMES.get(name, name)


def benchmark_order_key(name: str) -> tuple[int, str]:
    base = re.sub(r"-(complete|instruct)(-stdlib)?$", "", name)
    return (BENCHMARK_ORDER.index(base) if base in BENCHMARK_ORDER else len(BENCHMARK_ORDER), name)


def _benchmarks(runs: Sequence[Run]) -> list[str]:
    return sorted({run.benchmark for run in runs}, key=benchmark_order_key)


def metric_cell(run: Run, key: str) -> Cell:
    """The run's metric record ``key`` (``avg@32``, ``mut@5_conditional``, ``accuracy.codet``) with its interval."""
    record = run.metric(key)
    if record is None or record.value is None:
        return Cell(None)
    low, high = record.interval or (None, None)
    return Cell(float(record.value), low, high, f"{run.name}/metrics.json:{key}")


def _only(runs: Sequence[Run], command: str) -> list[Run]:
    chosen = [run for run in runs if run.command == command]
    if not chosen:
        raise UserError(f"this table needs {command} runs; none given")
    return chosen


def unique_rows(pairs: Sequence[tuple[str, str, Run]]) -> dict[str, dict[str, Run]]:
    """label -> benchmark -> run, refusing two runs for one cell."""
    table: dict[str, dict[str, Run]] = {}
    for label, benchmark, run in pairs:
        row = table.setdefault(label, {})
        if benchmark in row:
            raise UserError(f"two runs for {label} on {benchmark}: {row[benchmark].name} and {run.name}")
        row[benchmark] = run
    return table


def coders_table(runs: Sequence[Run], k: int | None = None, **_: object) -> Table:
    """Table 1: avg@k per benchmark (k: the largest avg@k every run reports, unless given) and the mean."""
    runs = _only(runs, "avg")
    k = common_avg_k(runs, k)
    benchmarks = _benchmarks(runs)
    rows = unique_rows([(run.model("coder"), run.benchmark, run) for run in runs])
    table = Table(f"Coders: avg@{k} (%)", [f"{benchmark_label(b)} avg@{k}" for b in benchmarks] + ["Mean"])
    for label, by_benchmark in rows.items():
        cells = [metric_cell(by_benchmark[b], f"avg@{k}") if b in by_benchmark else Cell(None) for b in benchmarks]
        values = [c.value for c in cells]
        mean = sum(values) / len(values) if None not in values else None
        table.rows.append((label, cells + [Cell(mean, source="mean of the row")]))
    return table


def common_avg_k(runs: Sequence[Run], k: int | None) -> int:
    """``k``, or the largest avg@k every run reports; an error when some run does not report it."""
    common = set.intersection(*({record.k for record in run.records if record.name == "avg" and not record.variant}
                                for run in runs))
    if k is None:
        k = max(common) if common else 1
    if k not in common:
        raise UserError(f"avg@{k} is not reported by every run (common: {sorted(common)})")
    return k


def common_tester_k(runs: Sequence[Run], k: int | None) -> int:
    """``k``, or the largest of 5, 2, 1 that every mul run reports pass@k for."""
    if k is None:
        k = next((c for c in TESTER_KS if all(run.metric(f"pass@{c}") is not None for run in runs)), None)
        if k is None:
            raise UserError("the mul runs share no reported k")
    return k


def run_protocol(run: Run) -> str:
    """How a mul run judged its tests. A ``ult`` run from before the authors' harness was reproduced
    (its metrics carry assert validity counts) read each round's first assert: ``ult-asserts``."""
    protocol = run.setting("protocol") or "code-a1"
    return "ult-asserts" if protocol == "ult" and "validity" in run.metrics else protocol


def _tester_label(run: Run) -> str:
    """The tester, with the protocol in brackets unless it is the benchmark's default (ult on ULT, else
    code-a1), so a table never mixes the authors' ULT scoring with another reading unlabelled."""
    default = "ult" if run.benchmark.startswith("ult") else "code-a1"
    protocol = run_protocol(run)
    return run.model("tester") + ("" if protocol == default else f" [{protocol}]")


def testers_table(runs: Sequence[Run], k: int | None = None, variant: str = "conditional", **_: object) -> Table:
    """Table 2: pass@k, mut@k (``conditional``: the paper's; ``plain``: all tasks) and Mul per benchmark."""
    runs = _only(runs, "mul")
    if variant not in ("conditional", "plain"):
        raise UserError(f"unknown mut@k variant {variant!r}; use conditional or plain")
    k = common_tester_k(runs, k)
    suffix = "_conditional" if variant == "conditional" else ""
    benchmarks = _benchmarks(runs)
    columns, keys = [], []
    for benchmark in benchmarks:
        name = benchmark_label(benchmark)
        columns += [f"{name} pass@{k}", f"{name} mut@{k}" + (" (cond.)" if suffix else ""), f"{name} Mul@{k}"]
        keys += [(benchmark, f"pass@{k}"), (benchmark, f"mut@{k}{suffix}"), (benchmark, f"mul@{k}{suffix}")]
    rows = unique_rows([(_tester_label(run), run.benchmark, run) for run in runs])
    table = Table(f"Testers: pass@{k}, mut@{k} ({variant}) and Mul (%)", columns)
    for label, by_benchmark in rows.items():
        table.rows.append((label, [metric_cell(by_benchmark[b], key) if b in by_benchmark else Cell(None) for b, key in keys]))
    return table


def bon_table(runs: Sequence[Run], selector: str = "most-passed", **_: object) -> Table:
    """Table 5: per coder, the coder alone (``random``: the expected accuracy of one candidate) and every
    coder x tester pair under best-of-N with ``selector``."""
    runs = _only(runs, "bon")
    missing = [run.name for run in runs if run.metric(f"accuracy.{selector}") is None]
    if missing:
        raise UserError(f"selector {selector!r} is not in the metrics of {', '.join(missing)} "
                        "(re-score them with `codea1-eval bon --matrices RUN --selector NAME`)")
    benchmarks = _benchmarks(runs)
    alone: dict[str, dict[str, Run]] = {}  # the candidates, hence `random`, do not depend on the tester
    for run in runs:
        alone.setdefault(run.model("coder"), {}).setdefault(run.benchmark, run)
    paired = unique_rows([(f"{run.model('coder')} + {run.model('tester')}", run.benchmark, run) for run in runs])
    table = Table(f"Best-of-N accuracy (%), selector {selector}", [benchmark_label(b) for b in benchmarks])
    for coder, by_benchmark in alone.items():
        table.rows.append((f"{coder} (alone)", [_random_cell(by_benchmark.get(b)) for b in benchmarks]))
        for label, pair in paired.items():
            if label.startswith(f"{coder} + "):
                table.rows.append((label, [metric_cell(pair[b], f"accuracy.{selector}") if b in pair else Cell(None)
                                           for b in benchmarks]))
    return table


ABLATION_LABELS = {"no-code-access": "w/o code access", "no-predicted-answer": "w/o predicted answer",
                   "no-mistake-book": "w/o Mistake Book"}


def _ablation_label(run: Run, role: str) -> str:
    """``Code-A1``, or ``w/o ...`` for each ablation its checkpoint was trained with."""
    record = run.training(role)
    if not record or record.get("mode") != "code-a1":
        raise UserError(f"{run.name}: its {role} was not trained by `codea1-eval train --mode code-a1` "
                        "(no Code-A1 training record in the manifest), so it has no row in the ablation table")
    ablations = record.get("ablations") or []
    return ", ".join(ABLATION_LABELS.get(a, a) for a in ablations) if ablations else "Code-A1"


def ablations_table(runs: Sequence[Run], k: int | None = None, variant: str = "conditional", **_: object) -> Table:
    """Table 3: one row per training variant (Code-A1, then each ablation): the Code LLM's avg@k per
    benchmark and their mean, then the Test LLM's Mul@k per benchmark when mul runs are given."""
    coders, testers = [run for run in runs if run.command == "avg"], [run for run in runs if run.command == "mul"]
    if not coders and not testers:
        raise UserError("this table needs avg or mul runs of checkpoints written by `codea1-eval train`")
    code_rows = unique_rows([(_ablation_label(run, "coder"), run.benchmark, run) for run in coders])
    test_rows = unique_rows([(_ablation_label(run, "tester"), run.benchmark, run) for run in testers])
    code_benchmarks, test_benchmarks = _benchmarks(coders), _benchmarks(testers)
    avg_k = common_avg_k(coders, k) if coders else None
    mul_key = f"mul@{common_tester_k(testers, k)}" + ("_conditional" if variant == "conditional" else "") if testers else ""
    columns = [f"{benchmark_label(b)} avg@{avg_k}" for b in code_benchmarks] + (["Mean"] if coders else [])
    columns += [f"{benchmark_label(b)} {mul_key.replace('mul', 'Mul').replace('_conditional', ' (cond.)')}"
                for b in test_benchmarks]
    table = Table("Ablations (%)", columns)
    known = ["Code-A1", *ABLATION_LABELS.values()]
    labels = sorted({*code_rows, *test_rows}, key=lambda label: (known.index(label) if label in known else len(known),
                                                                  label))
    for label in labels:
        by_benchmark, cells = code_rows.get(label, {}), []
        if coders:
            cells = [metric_cell(by_benchmark[b], f"avg@{avg_k}") if b in by_benchmark else Cell(None) for b in code_benchmarks]
            values = [c.value for c in cells]
            cells.append(Cell(sum(values) / len(values) if None not in values else None, source="mean of the row"))
        tested = test_rows.get(label, {})
        cells += [metric_cell(tested[b], mul_key) if b in tested else Cell(None) for b in test_benchmarks]
        table.rows.append((label, cells))
    return table


GOLDEN_SOURCE_LABELS = {"human": "Human-annotated", None: "Base Test LLM", "sft": "SFT Test LLM",
                        "code-a1": "Code-A1 Test LLM"}
BASE_CODER = "Base Code LLM"


def golden_source_label(run: Run) -> str:
    """Where the golden tests that trained the run's coder came from (Table 4's rows): human-annotated (the
    data's own tests), or the tester that wrote them (``train golden-data``) named by how it was trained;
    ``Base Code LLM`` for a coder `train` did not make."""
    record = run.training("coder")
    if record is None:
        return BASE_CODER
    if record.get("mode") != "golden":
        raise UserError(f"{run.name}: its coder was trained with --mode {record.get('mode')}, not golden, so it "
                        "has no row in the golden-sources table")
    source = record.get("test_source")
    if not source:
        return GOLDEN_SOURCE_LABELS["human"]
    tester_mode = (source.get("training") or {}).get("mode")
    return GOLDEN_SOURCE_LABELS.get(tester_mode, f"{tester_mode} Test LLM")


def golden_sources_table(runs: Sequence[Run], k: int | None = None, **_: object) -> Table:
    """Table 4: Code LLMs trained by RLVR (``--mode golden``) on golden tests from different sources, one
    row per source (from the checkpoints' training records): avg@k per benchmark and their mean."""
    runs = _only(runs, "avg")
    k = common_avg_k(runs, k)
    benchmarks = _benchmarks(runs)
    rows = unique_rows([(golden_source_label(run), run.benchmark, run) for run in runs])
    order = [BASE_CODER, *GOLDEN_SOURCE_LABELS.values()]
    table = Table(f"Golden-test sources: avg@{k} (%)", [f"{benchmark_label(b)} avg@{k}" for b in benchmarks] + ["Mean"])
    for label in sorted(rows, key=lambda label: (order.index(label) if label in order else len(order), label)):
        cells = [metric_cell(rows[label][b], f"avg@{k}") if b in rows[label] else Cell(None) for b in benchmarks]
        values = [c.value for c in cells]
        table.rows.append((label, cells + [Cell(sum(values) / len(values) if None not in values else None,
                                                source="mean of the row")]))
    return table


def _random_cell(run: Run | None) -> Cell:
    return Cell(None) if run is None else metric_cell(run, "accuracy.random")


LAYOUTS: Registry[Callable[..., Table]] = Registry("table layout")
LAYOUTS.register("coders", coders_table, help="Table 1: coder rows x avg@k per benchmark and their mean")
LAYOUTS.register("testers", testers_table, help="Table 2: tester rows x pass@k, mut@k (conditional) and Mul")
LAYOUTS.register("ablations", ablations_table, help="Table 3: Code-A1 and its ablations (from the checkpoints' "
                 "training records): avg@k per benchmark, the mean, and the testers' Mul")
LAYOUTS.register("golden-sources", golden_sources_table, help="Table 4: coders trained on golden tests from "
                 "different sources (from the checkpoints' training records): avg@k per benchmark and the mean")
LAYOUTS.register("bon", bon_table, help="Table 5: coder alone and coder x tester pairs under best-of-N")
LAYOUT_OF_COMMAND = {"avg": "coders", "mul": "testers", "bon": "bon"}

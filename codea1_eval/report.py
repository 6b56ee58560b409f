"""Printing results as rich tables (paper tables from run dirs come with `codea1-eval table`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from codea1_eval.metrics.records import MetricRecord, metric_records


def print_avg_metrics(metrics: dict[str, Any]) -> None:
    """A table of avg@k / pass@k with 95% intervals (from the metric records), then the run's facts, on stdout."""
    table = Table(title=f"{metrics['benchmark']}: {metrics['n_tasks']} tasks x n={metrics['n']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    for record in metric_records(metrics):
        if record.k is not None:
            table.add_row(record.key, _number(record.value), _interval(record))
    console = Console()
    console.print(table)
    console.print(f"gt_pass_rate: {metrics['gt_pass_rate']:.2f}%   call statuses: {metrics['call_statuses']}"
                  f"   extraction: {metrics['extraction']}")
    _print_skipped(console, metrics)
    if "run_dir" in metrics:
        console.print(f"run dir: {metrics['run_dir']}")


def print_mul_metrics(metrics: dict[str, Any]) -> None:
    """A table of pass@k, mut@k (plain, conditional) and Mul with 95% intervals, then coverage."""
    table = Table(title=f"{metrics['benchmark']}: {metrics['n_tasks']} tasks, tester {metrics['tester']} "
                        f"({', '.join(str(metrics[key]) for key in ('protocol', 'mode', 'mutator') if metrics.get(key))})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("tasks", justify="right")
    for record in metric_records(metrics):
        if record.k is not None:
            table.add_row(record.key, _number(record.value), _interval(record), str(record.n_tasks))
    console = Console()
    console.print(table)
    console.print(f"coverage: line {_number(metrics['line_coverage'])}%, branch {_number(metrics['branch_coverage'])}%"
                  f" ({metrics['n_tasks_coverage']} tasks)   mutants: {metrics['mutants']}"
                  + (f"   tests by validity: {metrics['validity']}" if "validity" in metrics else ""))
    if "run_dir" in metrics:
        console.print(f"run dir: {metrics['run_dir']}")


def print_bon_metrics(metrics: dict[str, Any]) -> None:
    """A table of selector accuracy with 95% intervals (random and oracle last), then CURE statistics."""
    table = Table(title=f"{metrics['benchmark']}: {metrics['n_tasks']} problems, coder {metrics['coder']} x "
                        f"tester {metrics['tester']} (M={metrics['candidates']}, "
                        f"{metrics['tests_mean']:.1f} tests per problem on average)")
    table.add_column("selector")
    table.add_column("accuracy", justify="right")
    table.add_column("95% CI", justify="right")
    for record in metric_records(metrics):
        if record.name == "accuracy":
            table.add_row(record.variant, _number(record.value), _interval(record))
    console = Console()
    console.print(table)
    cure = metrics["cure"]
    console.print(f"CURE: p_u {cure['p_u']:.4f}, p_01 {cure['p_01']:.4f}, p_00 {cure['p_00']:.4f}, "
                  f"mu {cure['mu']:.4f} ({cure['problems']} problems used, {cure['skipped']} skipped: "
                  f"all candidates right or all wrong)")
    _print_skipped(console, metrics)
    if "run_dir" in metrics:
        console.print(f"run dir: {metrics['run_dir']}")


def _print_skipped(console: Console, metrics: dict[str, Any]) -> None:
    skipped = metrics.get("skipped") or {}
    if skipped:
        console.print(f"skipped (cannot run here): {len(skipped)} task(s): {', '.join(list(skipped)[:8])}"
                      f"{' ...' if len(skipped) > 8 else ''} (reasons in metrics.json)")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _interval(record: MetricRecord) -> str:
    return f"[{_number(record.interval[0])}, {_number(record.interval[1])}]" if record.interval else "-"

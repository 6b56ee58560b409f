"""Printing results as rich tables (paper tables from run dirs come with `codea1-eval table`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def print_avg_metrics(metrics: dict[str, Any]) -> None:
    """A table of avg@k / pass@k with 95% intervals, then the run's facts, on stdout."""
    table = Table(title=f"{metrics['benchmark']}: {metrics['n_tasks']} tasks x n={metrics['n']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    for name, value in metrics.items():
        if "@" in name:
            low, high = metrics["ci95"][name]
            table.add_row(name, f"{value:.2f}", f"[{low:.2f}, {high:.2f}]")
    console = Console()
    console.print(table)
    console.print(f"gt_pass_rate: {metrics['gt_pass_rate']:.2f}%   call statuses: {metrics['call_statuses']}"
                  f"   extraction: {metrics['extraction']}")
    if "run_dir" in metrics:
        console.print(f"run dir: {metrics['run_dir']}")

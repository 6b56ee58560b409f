"""A coder's metrics from its verdicts: avg@k and unbiased pass@k (plus and, where the test kind judges base
inputs separately, base), each with a 95% bootstrap interval, and the counts of call statuses and
extraction outcomes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.judging import kind_of
from codea1_eval.metrics.passk import avg_at_k, bootstrap_interval, pass_at_k, per_problem_pass_at_k

REPORTED_KS = (1, 8, 16, 32)


def coder_metrics(benchmark: Benchmark, samples: dict[str, list[dict]], verdicts: dict[str, dict],
                    gt_pass_rate: float) -> dict[str, Any]:
    """avg@k and pass@k (with bootstrap 95% intervals) for k in {1, 8, 16, 32} <= n."""
    plus = [[verdicts[s["execution_key"]]["passed"] for s in task] for task in samples.values()]
    base = [[verdicts[s["execution_key"]]["base_status"] == "pass" for s in task] for task in samples.values()]
    n = min(len(task) for task in plus)
    ks = sorted({k for k in REPORTED_KS if k <= n})
    metrics: dict[str, Any] = {"benchmark": benchmark.name, "dataset_sha256": benchmark.sha256,
                               "n_tasks": len(plus), "n": n, "n_samples": sum(map(len, plus)),
                               "gt_pass_rate": round(gt_pass_rate, 4), "ci95": {}}
    separate_base = all(kind_of(p).judges_base_separately for p in benchmark.problems)
    variants = [("", plus)] + ([("base_", base)] if separate_base else [])
    for prefix, outcomes in variants:
        for k in ks:
            metrics[f"{prefix}avg@{k}"] = round(avg_at_k(outcomes, k), 4)
            metrics["ci95"][f"{prefix}avg@{k}"] = [round(x, 4) for x in bootstrap_interval(
                [100.0 * sum(o[:k]) / k for o in outcomes])]
            metrics[f"{prefix}pass@{k}"] = round(pass_at_k(outcomes, k), 4)
            metrics["ci95"][f"{prefix}pass@{k}"] = [round(x, 4) for x in bootstrap_interval(
                [100.0 * per_problem_pass_at_k(len(o), sum(o), k) for o in outcomes])]
    statuses: Counter = Counter()
    for task in samples.values():
        for sample in task:
            for status, count in verdicts[sample["execution_key"]]["call_statuses"]:
                statuses[status] += count
    metrics["call_statuses"] = dict(statuses)
    metrics["extraction"] = dict(Counter(s["extraction"] for task in samples.values() for s in task))
    return metrics

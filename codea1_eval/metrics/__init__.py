"""Metrics: pass@k, avg@k, bootstrap intervals, tester metrics (pass@k, mut@k, Mul) and coverage."""

from codea1_eval.metrics.coverage import CoverageResult, measure_coverage, micro_average
from codea1_eval.metrics.passk import avg_at_k, bootstrap_interval, pass_at_k, per_problem_pass_at_k
from codea1_eval.metrics.tester import TaskOutcome, mul, mul_metrics, mutation_score_at_k, suite_pass_at_k

__all__ = [
    "CoverageResult", "TaskOutcome", "avg_at_k", "bootstrap_interval", "measure_coverage", "micro_average", "mul",
    "mul_metrics", "mutation_score_at_k", "pass_at_k", "per_problem_pass_at_k", "suite_pass_at_k",
]

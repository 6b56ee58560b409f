"""Metrics: pass@k, avg@k, bootstrap intervals (tester and mutation metrics join later)."""

from codea1_eval.metrics.passk import avg_at_k, bootstrap_interval, pass_at_k, per_problem_pass_at_k

__all__ = ["avg_at_k", "bootstrap_interval", "pass_at_k", "per_problem_pass_at_k"]

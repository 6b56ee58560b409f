"""`codea1-eval mul`: a tester's pass@k, mut@k, Mul and coverage (stages in ``run``'s docstring)."""

from codea1_eval.commands.mul.config import MulConfig
from codea1_eval.commands.mul.run import compute_metrics, run_mul
from codea1_eval.commands.mul.scoring import suite_tests

__all__ = ["MulConfig", "compute_metrics", "run_mul", "suite_tests"]

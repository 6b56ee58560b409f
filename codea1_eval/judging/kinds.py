"""Test kinds: how the problems of one kind are tested. A problem names its kind (``Problem.test_kind``);
the kind builds the reference's and a candidate's sandbox programs, reads the ground truth from the
reference's run and judges a candidate's run against it. Nothing else branches on the kind.

Registered kinds: ``values`` (evalplus inputs; values compared on the trusted side), ``check-script``
(HumanEval's ``check(candidate)`` run after the code), ``unittest`` (BigCodeBench's ``TestCases``, one
call per method) and ``test-functions`` (training data's ``check(candidate)`` or pytest ``test_*``
functions, one call each). A new kind subclasses :class:`TestKind` and registers in ``TEST_KINDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codea1_eval.registry import Registry
from codea1_eval.sandbox import OK, RETURNED

if TYPE_CHECKING:
    from codea1_eval.benchmarks.base import Benchmark, Problem
    from codea1_eval.judging.records import GroundTruth, Verdict
    from codea1_eval.sandbox import ExecResult, Program

GROUND_TRUTH_CALL_LIMIT_S = 60.0
"""Per reference call (the reference is trusted; the limit only stops a broken environment)."""


class TestKind:
    """One way of testing a program. Subclasses implement all four methods."""

    name = ""
    judges_base_separately = False
    """Whether a verdict's base status differs from its plus status (evalplus' base and plus inputs);
    commands then report base_ metrics too."""
    __test__ = False  # not a pytest test class

    def reference_program(self, problem: "Problem") -> "Program":
        """The sandbox program that runs the reference and yields the ground truth."""
        raise NotImplementedError

    def ground_truth(self, problem: "Problem", oracle: str, result: "ExecResult") -> "GroundTruth":
        """The ground truth read from the reference program's run (``oracle``: the benchmark's comparison rules)."""
        raise NotImplementedError

    def candidate_program(self, problem: "Problem", truth: "GroundTruth | None", code: str,
                          timeout_scale: float = 1.0, oracle: str | None = None) -> "Program":
        """The sandbox program that tests ``code``, with time limits from the ground truth; with
        ``oracle`` a kind may stop at the first failing input (as evalplus' fast check does)."""
        raise NotImplementedError

    def verdict(self, oracle: str, problem: "Problem", truth: "GroundTruth | None", result: "ExecResult") -> "Verdict":
        """The candidate's verdict, judged on the trusted side."""
        raise NotImplementedError


def reference_error(result: "ExecResult") -> str | None:
    """Why a reference's run is not ground truth (its program's error, or how many calls did not return);
    None when every call returned."""
    failed = [call for call in result.calls if call.status != RETURNED]
    if result.status == OK and not failed:
        return None
    return result.error or f"{len(failed)} reference calls did not return: {failed[0].error}"


TEST_KINDS: Registry[TestKind] = Registry("test kind")
TEST_KINDS.register("values", "codea1_eval.judging.values:VALUES",
                    help="evalplus inputs: each input one call, the returned value compared here")
TEST_KINDS.register("check-script", "codea1_eval.judging.check_script:CHECK_SCRIPT",
                    help="a test script (HumanEval's check(candidate)) run once after the code")
TEST_KINDS.register("unittest", "codea1_eval.judging.unittest_kind:UNITTEST",
                    help="a unittest TestCases class, one call per test method (BigCodeBench)")
TEST_KINDS.register("test-functions", "codea1_eval.judging.test_functions:TEST_FUNCTIONS",
                    help="check(candidate) or pytest test_* functions, one call each (training data)")


def kind_of(problem: "Problem") -> TestKind:
    """The test kind a problem names."""
    return TEST_KINDS.get(problem.test_kind)


def candidate_program(problem: "Problem", truth: "GroundTruth | None", code: str, timeout_scale: float = 1.0,
                      oracle: str | None = None) -> "Program":
    """The Program that tests ``code`` on ``problem`` (its kind's limits, times ``timeout_scale``); with
    ``oracle`` (the benchmark's comparison rules) an input list stops at its first failure."""
    return kind_of(problem).candidate_program(problem, truth, code, timeout_scale, oracle)


def judge(benchmark: "Benchmark", problem: "Problem", truth: "GroundTruth | None", result: "ExecResult") -> "Verdict":
    """A candidate's verdict on ``problem`` from its execution, judged on the trusted side."""
    return kind_of(problem).verdict(benchmark.oracle, problem, truth, result)

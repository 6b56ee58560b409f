"""The ``check-script`` kind: a test script (HumanEval's ``check(candidate)``) run once after the code;
the program passes when the script returns."""

from __future__ import annotations

from codea1_eval.judging.kinds import GROUND_TRUTH_CALL_LIMIT_S, TestKind, reference_error
from codea1_eval.judging.records import FAIL, PASS, GroundTruth, Verdict
from codea1_eval.sandbox import RETURNED, ExecResult, Program

SCRIPT_TIME_LIMIT_S = 3.0


class CheckScriptKind(TestKind):
    """One call: the script after the code; base and plus verdicts are the same."""

    name = "check-script"

    def reference_program(self, problem) -> Program:
        return Program(problem.reference, None, script=problem.test_script, time_limits=[GROUND_TRUTH_CALL_LIMIT_S])

    def ground_truth(self, problem, oracle: str, result: ExecResult) -> GroundTruth:
        error = reference_error(result)
        return GroundTruth([], [c.duration for c in result.calls], error is None, error)

    def candidate_program(self, problem, truth, code: str, timeout_scale: float = 1.0,
                          oracle: str | None = None) -> Program:
        return Program(code, None, script=problem.test_script, time_limits=[SCRIPT_TIME_LIMIT_S * timeout_scale])

    def verdict(self, oracle: str, problem, truth, result: ExecResult) -> Verdict:
        call = result.calls[0]
        status = PASS if call.status == RETURNED else call.status
        verdict = PASS if status == PASS else FAIL
        return Verdict(verdict, verdict, [status], result.status, call.error or result.error)


CHECK_SCRIPT = CheckScriptKind()

"""The ``values`` kind: evalplus inputs, one sandbox call each; returned values are compared here,
on the trusted side, with the benchmark's oracle (evalplus' rules), and time limits are evalplus'."""

from __future__ import annotations

from operator import attrgetter

from codea1_eval.judging.kinds import GROUND_TRUTH_CALL_LIMIT_S, TestKind, reference_error
from codea1_eval.judging.records import FAIL, PASS, GroundTruth, Verdict
from codea1_eval.sandbox import RETURNED, CallResult, ExecResult, Program, digest_allowances
from codea1_eval.sandbox.compare import MBPP_OUTPUT_NOT_NONE_TASKS, EvalplusComparator, is_floats

MIN_TIME_LIMIT_S = 1.0
GT_TIME_LIMIT_FACTOR = 4.0
TASK_TIME_CAP_S = 60.0
LIST_SLACK_S = 2.0
"""evalplus' ``untrusted_check`` waits min(60 s, the sum of the list's limits) + 1 s for a list's process, and joins
it with 1 s more (1 s more again without the fast check), then kills it: the list fails."""
LONG_STR_CHARS = 1 << 20
"""A returned str longer than this travels as a digest, in the reference's runs and the candidates' alike (evalplus
compares strs with ==, which equal digests decide exactly): HumanEval/15's answers, up to 6.9 MB, made the ground
truth 150 MB of JSON and crossed the pipe whole. Cached ground truth holds such digests: a change here needs a new
GROUND_TRUTH_SCHEMA."""


_JUDGED = attrgetter("judged")


def input_time_limits(times: list[float], scale: float) -> list[float]:
    """evalplus: max(1 s, 4 × the reference's time) per input, times ``scale``."""
    return [max(MIN_TIME_LIMIT_S, GT_TIME_LIMIT_FACTOR * t) * scale for t in times]


def _fail_fast(oracle: str, problem, truth: GroundTruth):
    """``Program.next_call`` that stops a list (base, then plus) at its first failing input, as evalplus'
    default fast check does: after a base failure the plus inputs still run. A list is judged here in order
    and only while every earlier input of it passed, so the float tolerance evalplus forces from the first
    float expectation on is known from the position alone: a returned value equal to the expected one passes
    at once, wherever equality is the oracle, and the comparator judges the rest (its tolerance set first)."""
    outputs, n_base, atol = truth.outputs, problem.n_base, problem.atol
    lists = [(0, n_base), (n_base, len(problem.inputs))]
    comparators = [EvalplusComparator(oracle, problem.entry_point, atol) for _ in lists]
    floats_before = [0, 0]  # per list: its first float expectation's index, or how far it is known to have none
    equality_decides = comparators[0].equality_decides
    expected: list = []  # ``outputs`` as a list, from the first call on (a cached line is decoded then); the two lists
    # may run at once (``sandbox.idle_slots``): each replaces it whole, with the same items, so neither sees it half made

    def next_call(index: int, call: CallResult) -> int:
        if not expected:
            expected[:] = outputs
        if equality_decides and _returned_equal(call, expected[index]):
            call.judged = True
            return index + 1
        part = 0 if index < n_base else 1
        start, stop = lists[part]
        comparator = comparators[part]
        if atol == 0 and comparator.forces_float_tolerance:  # scanned only up to this call (a list fails early)
            scanned = max(start, floats_before[part])
            while scanned < index and not is_floats(expected[scanned]):
                scanned += 1
            floats_before[part] = scanned
            comparator.atol = 1e-6 if scanned < index else 0
        call.judged = comparator.check(problem.inputs[index], expected[index], call.status == RETURNED, call.value)
        return index + 1 if call.judged else stop

    return next_call


class ValuesKind(TestKind):
    """Inputs as calls of the entry point; base and plus inputs judged separately (evalplus)."""

    name = "values"
    judges_base_separately = True

    def reference_program(self, problem) -> Program:
        count = len(problem.inputs or ())
        return Program(problem.reference, problem.entry_point, calls=problem.inputs,
                       time_limits=[GROUND_TRUTH_CALL_LIMIT_S] * count, digest_strings_over=LONG_STR_CHARS)

    def ground_truth(self, problem, oracle: str, result: ExecResult) -> GroundTruth:
        outputs = [c.value for c in result.calls]
        if oracle == "mbpp" and problem.entry_point in MBPP_OUTPUT_NOT_NONE_TASKS:
            outputs = [value is not None for value in outputs]
        error = reference_error(result)
        return GroundTruth(outputs, [c.duration for c in result.calls], error is None, error)

    def candidate_program(self, problem, truth, code: str, timeout_scale: float = 1.0,
                          oracle: str | None = None) -> Program:
        limits = input_time_limits(truth.times, timeout_scale)
        slack = LIST_SLACK_S + (0.0 if oracle else 1.0)  # fail-fast is evalplus' fast check
        base, plus = (min(TASK_TIME_CAP_S * timeout_scale, sum(part)) + slack
                      for part in (limits[:problem.n_base], limits[problem.n_base:]))
        return Program(code, problem.entry_point, calls=problem.inputs, time_limits=limits,
                       total_time_limit=base + plus + 10.0,
                       next_call=_fail_fast(oracle, problem, truth) if oracle else None,
                       digest_time_limits=digest_allowances(truth.outputs), expected_seconds=sum(truth.times),
                       digest_strings_over=LONG_STR_CHARS, fresh_process_at=problem.n_base,
                       part_time_limits=(base, plus), reliability_guard=True, evalplus_alarm=True)

    def verdict(self, oracle: str, problem, truth, result: ExecResult) -> Verdict:
        """Each list judged in order by evalplus' rules (``compare_outputs``); a pass the fail-fast
        ``next_call`` already judged is taken as judged (a list's judging there is the same, in the same order)."""
        calls, n_base = result.calls, problem.n_base
        if all(map(_JUDGED, calls)):  # every call passed where next_call judged it (as most right answers do)
            return Verdict(PASS, PASS, [PASS] * len(calls), result.status, result.error)
        verdicts = []
        for start, stop in ((0, n_base), (n_base, len(calls))):
            comparator = EvalplusComparator(oracle, problem.entry_point, problem.atol)
            expected = truth.outputs[start:stop]
            untold = 0  # judged passes from here on are not yet the comparator's state
            for offset, call in enumerate(calls[start:stop]):
                if call.judged or comparator.equality_decides and _returned_equal(call, expected[offset]):
                    verdicts.append(True)  # as ``check`` would judge it, at a twentieth of the cost
                    continue
                if untold < offset:
                    comparator.passed(expected[untold:offset])
                untold = offset + 1
                verdicts.append(comparator.check(problem.inputs[start + offset], expected[offset],
                                                 call.status == RETURNED, call.value))
        statuses = [PASS if ok else (FAIL if call.status == RETURNED else call.status)
                    for ok, call in zip(verdicts, result.calls)]
        first_error = next((c.error for c in result.calls if c.error), result.error)
        return Verdict(PASS if all(verdicts[:n_base]) else FAIL, PASS if all(verdicts[n_base:]) else FAIL,
                       statuses, result.status, first_error)


def _returned_equal(call: CallResult, expected) -> bool:
    """Whether ``call`` returned a value == ``expected`` (where that decides, ``EvalplusComparator.check`` passes it
    and only moves its float tolerance, as ``passed`` does)."""
    try:
        return call.status == RETURNED and bool(call.value == expected)
    except Exception:
        return False  # the comparator decides, as evalplus would (an ndarray's == has no truth value)


VALUES = ValuesKind()

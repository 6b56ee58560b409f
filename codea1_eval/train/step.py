"""Scoring one adversarial step (DESIGN §8) from the policies' responses: no model here, only the sandbox.

For each question: M code responses, and for each code N white-box suite responses. Suites are validated
on the reference (``asserts.validate_suites``: kept tests carry the reference's true value); each code
runs once on the kept tests of its N suites plus the question's Mistake Book tests (top 8), after a
probe that tells whether the code runs (its module executes without error: the reference's "defines",
which does not ask for the entry point; a code without it simply fails every test). From those
verdicts come the code rewards, the test rewards (R_val, R_adv, α, whether the code runs, non-printable
penalty), the Mistake Book update (over codes that run) and the TopVar choice of codes whose suites
train the test policy.

A suite's R_val counts its kept tests as valid and, as the reference does, every extracted assert that is
not VALID (wrong answers included, although they are kept with the true value) as invalid; statements
the reference would not extract (unparseable, not a call, no assert) count in neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from codea1_eval.asserts import (FAITHFUL, NO_ASSERT, NOT_A_CALL, UNPARSEABLE, VALID, AssertResult, SuiteResult,
                                 WRONG_ANSWER, AssertJob, extract_asserts, run_asserts, validate_suites)
from codea1_eval.sandbox import Executor
from codea1_eval.train.data import TrainProblem
from codea1_eval.train.topvar import population_std, topvar_select
from codea1_eval.train.mistake_book import DEFAULT_TOP, MistakeBook
from codea1_eval.train.rewards import (SuiteOutcome, adversarial_reward, code_reward, tester_reward,
                                      validity_reward)

NOT_EXTRACTED = (UNPARSEABLE, NOT_A_CALL, NO_ASSERT)
CALL_TIME_LIMIT_S = 3.0


@dataclass
class SuiteScore:
    """One white-box suite written for one code, and how that code did on it."""

    response: str
    kept_tests: list[str]
    invalid_tests: int
    passes: list[bool]
    r_val: float
    r_adv: float
    reward: float


@dataclass
class QuestionScores:
    """Everything one question contributes to a step: rewards, what changed, what trains the tester."""

    question_id: str
    codes: list[str]
    code_defines: list[bool]
    code_rewards: list[float]
    suites: list[list[SuiteScore]]
    history_tests: list[str]
    history_verdicts: list[list[bool]]
    selected_codes: list[int] = field(default_factory=list)

    @property
    def suite_rewards(self) -> list[list[float]]:
        return [[suite.reward for suite in row] for row in self.suites]


def history_test(testcase: str, entry_point: str) -> AssertResult | None:
    """A Mistake Book entry (an ``assert call op literal`` string) as an executable test, or None."""
    parsed = next((a for a in extract_asserts(testcase, entry_point).asserts if a.problem is None), None)
    if parsed is None:
        return None
    return AssertResult(VALID, testcase, parsed.call, parsed.op, parsed.predicted, parsed.predicted, testcase)


def _invalid_count(suite: SuiteResult, judge_answers: bool = True) -> int:
    """The suite's invalid tests for R_val; a wrong answer counts unless ``judge_answers`` is off."""
    ignored = NOT_EXTRACTED if judge_answers else (*NOT_EXTRACTED, WRONG_ANSWER)
    return sum(result.status != VALID and result.status not in ignored for result in suite.results)


def score_step(problems: Sequence[TrainProblem], code_responses: dict[str, list[str]],
               suite_responses: dict[str, list[list[str]]], book: MistakeBook, executor: Executor | None = None,
               alpha: float = 0.5, topvar_keep: int = 1, mode: str = FAITHFUL, use_book: bool = True,
               judge_answers: bool = True) -> list[QuestionScores]:
    """Score a step and update ``book``: ``suite_responses[qid][m]`` are the N suites written for code m.
    ``use_book=False`` neither reads nor updates the book; ``judge_answers=False`` keeps wrong predicted
    answers out of R_val's invalid count (the ablations of ``train.ablations``)."""
    executor = executor or Executor()
    jobs = [(p, m, n) for p in problems for m, row in enumerate(suite_responses[p.question_id])
            for n in range(len(row))]
    extractions = [extract_asserts(suite_responses[p.question_id][m][n], p.entry_point) for p, m, n in jobs]
    validated = dict(zip(((p.question_id, m, n) for p, m, n in jobs),
                         validate_suites(extractions, [p.solution for p, _, _ in jobs], mode, executor)))
    scores, jobs_to_run, tests_per_program = [], [], []
    for problem in problems:
        qid = problem.question_id
        entries = book.top(qid, DEFAULT_TOP) if use_book else []
        history = [t for t in (history_test(tc, problem.entry_point) for tc in entries) if t]
        codes = [problem.program(r) for r in code_responses[qid]]
        scores.append(QuestionScores(qid, codes, [], [], [], [t.assert_source for t in history], []))
        for m, code in enumerate(codes):
            suites = [validated[(qid, m, n)] for n in range(len(suite_responses[qid][m]))]
            tests = [t for suite in suites for t in suite.kept] + history
            tests_per_program.append((problem, m, suites, history))
            # the guard holds when the code's module ran; a code that fails to load passes nothing
            jobs_to_run.append(AssertJob(code, [t.check() for t in tests], "True"))
    by_question = {s.question_id: s for s in scores}
    for (problem, m, suites, history), run in zip(tests_per_program,
                                                  run_asserts(executor, jobs_to_run, CALL_TIME_LIMIT_S)):
        _score_code(by_question[problem.question_id], m, suites, history, list(run.passed), run.guard_held,
                    suite_responses[problem.question_id][m], alpha, judge_answers)
    for question in scores:
        if use_book:
            _update_book(book, question)
        question.selected_codes = topvar_select(question.suite_rewards, topvar_keep) if question.suites else []
    return scores


def _score_code(question: QuestionScores, m: int, suites: list[SuiteResult], history: list[AssertResult],
                verdicts: list[bool], defines: bool, responses: list[str], alpha: float,
                judge_answers: bool) -> None:
    history_verdicts = verdicts[len(verdicts) - len(history):] if history else []
    history_passed = sum(history_verdicts)
    start, outcomes, row = 0, [], []
    for suite, response in zip(suites, responses):
        kept = suite.kept
        suite_passes = verdicts[start:start + len(kept)]
        start += len(kept)
        outcome = SuiteOutcome(tuple(suite_passes), history_passed, len(history), defines)
        outcomes.append(outcome)
        invalid = _invalid_count(suite, judge_answers)
        r_val = validity_reward(len(kept), invalid)
        r_adv = adversarial_reward(outcome)
        row.append(SuiteScore(response, [t.assert_source for t in kept], invalid, list(suite_passes),
                              r_val, r_adv, tester_reward(r_val, r_adv, defines, response, alpha)))
    question.code_defines.append(defines)
    question.code_rewards.append(code_reward(outcomes))
    question.suites.append(row)
    question.history_verdicts.append(history_verdicts)


def _update_book(book: MistakeBook, question: QuestionScores) -> None:
    """Over codes that define: −1 per historical test passed, +1 per new kept test failed."""
    historical_passes, new_failures = [], []
    for m, defines in enumerate(question.code_defines):
        if not defines:
            continue
        historical_passes += [test for test, passed in zip(question.history_tests, question.history_verdicts[m])
                              if passed]
        for suite in question.suites[m]:
            new_failures += [test for test, passed in zip(suite.kept_tests, suite.passes) if not passed]
    book.update(question.question_id, historical_passes, new_failures)


def step_statistics(scores: Sequence[QuestionScores], book: MistakeBook) -> dict[str, float]:
    """Per-step means for the training log."""
    suites = [suite for q in scores for row in q.suites for suite in row]
    code_rewards = [r for q in scores for r in q.code_rewards]
    history = [(sum(verdicts), len(verdicts)) for q in scores for verdicts in q.history_verdicts if verdicts]
    kept = sum(len(s.kept_tests) for s in suites)
    return {
        "code_reward": _mean(code_rewards),
        "test_reward": _mean([s.reward for s in suites]),
        "r_val": _mean([s.r_val for s in suites]),
        "r_adv": _mean([s.r_adv for s in suites]),
        "valid_test_ratio": kept / max(1, kept + sum(s.invalid_tests for s in suites)),
        "mistake_book_size": float(book.size()),
        "history_pass_rate": sum(p for p, _ in history) / max(1, sum(t for _, t in history)),
        "topvar_std": _mean([population_std(q.suite_rewards[m]) for q in scores for m in q.selected_codes]),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0

"""Training modes (``--mode``): what one step samples, how it rewards, and which policies it updates.

- ``code-a1`` (default): the adversarial loop of DESIGN §8 (``step.score_step``): M codes per question
  from the code policy, N white-box suites per code from the test policy, Mistake Book, TopVar; the
  paper's ablations (``train.ablations``) switch parts of it off.
- ``golden``: the code policy alone; a code's reward is its ground-truth test pass rate.
- ``self-play``: one model in both roles (CURE): M codes and N black-box suites per question from the
  same policy, one joint GRPO step; codes earn their ground-truth pass rate, each generated test CURE's
  reward (``rewards.cure_test_reward``) against the codes' ground-truth correctness, a suite the mean
  over its tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from codea1_eval.asserts import VALID, AssertJob, AssertResult, extract_asserts, literal_value, run_asserts
from codea1_eval.errors import UserError
from codea1_eval.extract import extract_code
from codea1_eval.prompts import assert_test_messages, code_messages
from codea1_eval.registry import Registry
from codea1_eval.sandbox import Executor
from codea1_eval.train.ablations import NO_CODE_ACCESS, NO_MISTAKE_BOOK, NO_PREDICTED_ANSWER
from codea1_eval.train.data import TrainProblem
from codea1_eval.train.ground_truth import pass_rates_by_question
from codea1_eval.train.mistake_book import MistakeBook
from codea1_eval.train.rewards import cure_test_reward, golden_code_reward, nonprintable_share
from codea1_eval.train.step import CALL_TIME_LIMIT_S, QuestionScores, SuiteScore, score_step

if TYPE_CHECKING:
    from codea1_eval.train.loop import TrainConfig
    from codea1_eval.train.policy import Policy, Rollout


@dataclass(frozen=True)
class PolicyPlan:
    """A policy a mode trains: where it starts, its GRPO group and batch, the OUT dirs it is saved to."""

    role: str
    spec: str
    group: int
    batch: int
    saved_as: tuple[str, ...]


@dataclass
class StepOutcome:
    """One step's scores (for the log), GRPO inputs per policy role, and the rollouts to record."""

    scores: list[QuestionScores]
    updates: dict[str, tuple[list["Rollout"], list[float]]]
    records: list[dict[str, Any]]


class TrainMode(Protocol):
    needs_ground_truth: bool

    def policies(self, config: "TrainConfig") -> list[PolicyPlan]: ...

    def step(self, config: "TrainConfig", batch: list[TrainProblem], policies: dict[str, "Policy"],
             book: MistakeBook, executor: Executor) -> StepOutcome: ...


def _code_texts(problems: Sequence[TrainProblem], code_rollouts: list[list["Rollout"]]) -> list[list[str]]:
    return [[p.program(r.text) for r in rows] for p, rows in zip(problems, code_rollouts)]


def _suite_record(suite: SuiteScore) -> dict[str, Any]:
    return {"response": suite.response, "kept_tests": suite.kept_tests, "invalid_tests": suite.invalid_tests,
            "passes": suite.passes, "r_val": suite.r_val, "r_adv": suite.r_adv, "reward": suite.reward}


class CodeA1Mode:
    """The adversarial Code LLM vs Test LLM loop (Code-A1)."""

    needs_ground_truth = False

    def policies(self, config: "TrainConfig") -> list[PolicyPlan]:
        per_step = config.questions_per_step
        return [PolicyPlan("code", config.coder, config.codes, per_step * config.codes, ("code",)),
                PolicyPlan("test", config.tester, config.suites, per_step * config.topvar_keep * config.suites,
                           ("test",))]

    def step(self, config, batch, policies, book, executor) -> StepOutcome:
        code_rollouts = policies["code"].sample([code_messages(p.question) for p in batch], config.codes)
        sees_code = NO_CODE_ACCESS not in config.ablations
        chats = [assert_test_messages(p.question, extract_code(r.text)[0] if sees_code else None)
                 for p, rows in zip(batch, code_rollouts) for r in rows]
        suites = policies["test"].sample(chats, config.suites)
        suite_rollouts = [suites[i * config.codes:(i + 1) * config.codes] for i in range(len(batch))]
        scores = score_step(batch, {p.question_id: [r.text for r in rows] for p, rows in zip(batch, code_rollouts)},
                            {p.question_id: [[r.text for r in row] for row in rows]
                             for p, rows in zip(batch, suite_rollouts)},
                            book, executor, config.alpha, config.topvar_keep,
                            use_book=NO_MISTAKE_BOOK not in config.ablations,
                            judge_answers=NO_PREDICTED_ANSWER not in config.ablations)
        selected = [(i, m) for i, q in enumerate(scores) for m in q.selected_codes]
        updates = {
            "code": ([r for rows in code_rollouts for r in rows], [x for q in scores for x in q.code_rewards]),
            "test": ([r for i, m in selected for r in suite_rollouts[i][m]],
                     [s.reward for i, m in selected for s in scores[i].suites[m]]),
        }
        records = [{"question_id": q.question_id, "selected_codes": q.selected_codes,
                    "history_tests": q.history_tests,
                    "codes": [{"response": r.text, "defines": q.code_defines[m], "reward": q.code_rewards[m],
                               "suites": [_suite_record(s) for s in q.suites[m]]} for m, r in enumerate(rows)]}
                   for q, rows in zip(scores, code_rollouts)]
        return StepOutcome(scores, updates, records)


class GoldenMode:
    """The code policy alone, rewarded with its ground-truth test pass rate."""

    needs_ground_truth = True

    def policies(self, config: "TrainConfig") -> list[PolicyPlan]:
        return [PolicyPlan("code", config.coder, config.codes, config.questions_per_step * config.codes, ("code",))]

    def step(self, config, batch, policies, book, executor) -> StepOutcome:
        code_rollouts = policies["code"].sample([code_messages(p.question) for p in batch], config.codes)
        counts = pass_rates_by_question(batch, _code_texts(batch, code_rollouts), executor)
        rewards = [[golden_code_reward(passed, total) for passed, total in row] for row in counts]
        scores = [QuestionScores(p.question_id, [r.text for r in rows], [], row, [], [], [])
                  for p, rows, row in zip(batch, code_rollouts, rewards)]
        records = [{"question_id": p.question_id,
                    "codes": [{"response": r.text, "ground_truth": list(c), "reward": x}
                              for r, c, x in zip(rows, count_row, row)]}
                   for p, rows, count_row, row in zip(batch, code_rollouts, counts, rewards)]
        return StepOutcome(scores, {"code": ([r for rows in code_rollouts for r in rows],
                                             [x for row in rewards for x in row])}, records)


class SelfPlayMode:
    """One model writes codes and black-box tests (CURE); one joint GRPO step per training step."""

    needs_ground_truth = True

    def policies(self, config: "TrainConfig") -> list[PolicyPlan]:
        if config.codes != config.suites:
            raise UserError(f"self-play trains codes and tests in one GRPO step, so -M and -N must be equal "
                            f"(got {config.codes} and {config.suites})")
        spec = config.coder
        return [PolicyPlan("model", spec, config.codes, config.questions_per_step * (config.codes + config.suites),
                           ("code", "test"))]

    def step(self, config, batch, policies, book, executor) -> StepOutcome:
        model = policies["model"]
        code_rollouts = model.sample([code_messages(p.question) for p in batch], config.codes)
        suite_rollouts = model.sample([assert_test_messages(p.question) for p in batch], config.suites)
        codes = _code_texts(batch, code_rollouts)
        counts = pass_rates_by_question(batch, codes, executor)
        code_rewards = [[golden_code_reward(passed, total) for passed, total in row] for row in counts]
        correct = [[total > 0 and passed == total for passed, total in row] for row in counts]
        suite_tests = [[_usable_tests(r.text, p.entry_point) for r in rows] for p, rows in zip(batch, suite_rollouts)]
        verdicts = _run_tests(batch, codes, suite_tests, executor)
        scores, records = [], []
        for p, rows, tests_row, verdict_row, correct_row, reward_row, code_row, count_row in zip(
                batch, suite_rollouts, suite_tests, verdicts, correct, code_rewards, code_rollouts, counts):
            suites, suite_records, position = [], [], 0
            for rollout, tests in zip(rows, tests_row):
                columns = [[verdict_row[m][position + k] for m in range(len(code_row))] for k in range(len(tests))]
                position += len(tests)
                reward = self_play_suite_reward(columns, correct_row, rollout.text)
                sources = [t.assert_source for t in tests]
                suites.append(SuiteScore(rollout.text, sources, 0, [all(c) for c in columns], 0.0, 0.0, reward))
                suite_records.append({"response": rollout.text, "tests": sources, "verdicts": columns,
                                      "reward": reward})
            scores.append(QuestionScores(p.question_id, [r.text for r in code_row], [], reward_row, [suites], [], []))
            records.append({"question_id": p.question_id,
                            "codes": [{"response": r.text, "ground_truth": list(c), "correct": ok, "reward": x}
                                      for r, c, ok, x in zip(code_row, count_row, correct_row, reward_row)],
                            "suites": suite_records})
        rollouts = [r for rows in code_rollouts for r in rows] + [r for rows in suite_rollouts for r in rows]
        rewards = [x for row in code_rewards for x in row] + [s.reward for q in scores for s in q.suites[0]]
        return StepOutcome(scores, {"model": (rollouts, rewards)}, records)


def self_play_suite_reward(verdicts: Sequence[Sequence[bool]], code_correct: Sequence[bool], response: str) -> float:
    """A self-play suite's reward: the mean CURE reward of its tests (``verdicts[test][code]``; a suite with
    no usable test counts as one test that no code passes), minus the response's non-printable share."""
    per_test = [cure_test_reward(column, code_correct) for column in verdicts]
    if not per_test:
        per_test = [cure_test_reward([False] * len(code_correct), code_correct)]
    return sum(per_test) / len(per_test) - nonprintable_share(response)


def _usable_tests(response: str, entry_point: str) -> list:
    """A black-box suite's asserts that can run as written: a call and a literal predicted answer."""
    tests = []
    for parsed in extract_asserts(response, entry_point).asserts:
        if parsed.problem is not None:
            continue
        try:
            literal_value(parsed.predicted)
        except ValueError:
            continue
        source = f"assert {parsed.call} {parsed.op} {parsed.predicted}"
        tests.append(AssertResult(VALID, source, parsed.call, parsed.op, parsed.predicted, parsed.predicted, source))
    return tests


def _run_tests(batch: Sequence[TrainProblem], codes: list[list[str]], suite_tests: list[list[list]],
               executor: Executor) -> list[list[list[bool]]]:
    """verdicts[question][code][test] over the question's suites' tests in suite order."""
    jobs = [(q, AssertJob(code, [t.check() for suite in suite_tests[q] for t in suite]))
            for q in range(len(batch)) for code in codes[q]]
    verdicts: list[list[list[bool]]] = [[] for _ in batch]
    for (q, _), run in zip(jobs, run_asserts(executor, [job for _, job in jobs], CALL_TIME_LIMIT_S)):
        verdicts[q].append(list(run.passed))
    return verdicts


TRAIN_MODES: Registry = Registry("training mode")
TRAIN_MODES.register("code-a1", CodeA1Mode, help=CodeA1Mode.__doc__ or "")
TRAIN_MODES.register("golden", GoldenMode, help=GoldenMode.__doc__ or "")
TRAIN_MODES.register("self-play", SelfPlayMode, help=SelfPlayMode.__doc__ or "")

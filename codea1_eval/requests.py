"""The generation requests of the evaluation commands: a coder's (prompted as the benchmark's harness
does), a Code-A1 tester's (white-box or black-box asserts) and a ULT round's. Each is seeded per task,
so a sample never depends on which tasks share its call."""

from __future__ import annotations

from codea1_eval.benchmarks.base import Problem
from codea1_eval.benchmarks.harness import CODE_A1_HARNESS, Harness
from codea1_eval.models import GenerationRequest, SamplingParams
from codea1_eval.models.driver import task_seed
from codea1_eval.prompts import assert_test_messages, ult_round_messages


def code_requests(problems: list[Problem], n: int, temperature: float, top_p: float, max_tokens: int,
                  seed: int, harness: Harness = CODE_A1_HARNESS) -> list[GenerationRequest]:
    """One coder request per problem for ``n`` samples, prompted as ``harness`` does."""
    return [GenerationRequest(harness.coder_messages(problem), params=SamplingParams(
        n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=task_seed(seed, problem.task_id)))
        for problem in problems]


def tester_request(problem: Problem, code: str | None, n: int, temperature: float, top_p: float, max_tokens: int,
                   seed: int, seed_key: str) -> GenerationRequest:
    """A Code-A1 tester request for ``n`` suites of asserts: shown ``code`` (white-box) or only the
    question (``code`` None); seeded by ``seed`` and ``seed_key``."""
    return GenerationRequest(assert_test_messages(problem.question, code), params=SamplingParams(
        n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=task_seed(seed, seed_key)))


def ult_round_request(problem: Problem, previous: list[str], max_tokens: int) -> GenerationRequest:
    """The next round of the ULT protocol after the ``previous`` replies (always greedy)."""
    return GenerationRequest(ult_round_messages(problem.entry_point, problem.prompt, problem.question, previous),
                             params=SamplingParams(max_tokens=max_tokens))

"""`codea1-eval train sft-data`: the SFT-tester baseline's data (DESIGN §8: failing code → reference tests).

For each training question, ``--coder`` samples M codes; each code that fails some of the question's
ground-truth tests becomes one chat example: the Code-A1 white-box tester prompt with that code as
"Buggy Code", answered by the question's reference tests written as the tester's output format (a
```python block of ``assert f(...) == value`` lines, at most 8, each validated on the reference solution).
Rows are TRL's conversational SFT format (``messages``), plus ``question_id`` and the code's pass counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codea1_eval.asserts import FAITHFUL, VALID, extract_asserts, validate_suites
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.prompts import assert_test_messages
from codea1_eval.results import write_jsonl_atomic
from codea1_eval.sandbox import Executor
from codea1_eval.train.data import SampledDataJob, TrainProblem, load_train_problems
from codea1_eval.train.ground_truth import pass_rates_by_question
from codea1_eval.train.rewards import TARGET_TESTS


@dataclass(kw_only=True)
class SftDataConfig(SampledDataJob):
    """Inputs of ``train sft-data``."""

    coder: str = "smollm2"
    codes: int = 8


def reference_asserts(problem: TrainProblem, executor: Executor) -> list[str]:
    """The question's ground-truth tests as ``assert call == value`` lines that hold on the reference."""
    text = re.sub(r"\bcandidate\b", problem.entry_point, problem.test)  # check(candidate) bodies
    suite, = validate_suites([extract_asserts(text, problem.entry_point)], [problem.solution], FAITHFUL, executor)
    return [test.assert_source for test in suite.kept if test.status == VALID][:TARGET_TESTS]


def build_sft_data(config: SftDataConfig) -> dict[str, Any]:
    """Sample codes, keep the failing ones, write the SFT rows to ``config.out``; return counts."""
    from codea1_eval.requests import code_requests
    from codea1_eval.benchmarks.base import Problem
    from codea1_eval.models.driver import generate_all

    problems = load_train_problems(config.data, config.limit)
    missing = [p.question_id for p in problems if not p.test]
    if missing:
        raise UserError(f"sft-data needs ground-truth tests (a `test` field); {len(missing)} questions lack one, "
                        f"e.g. {missing[0]}")
    executor = Executor(parallel=config.parallel)
    backend = config.load_backend(config.coder)
    as_tasks = [Problem(p.question_id, p.question, p.entry_point, p.solution) for p in problems]
    requests = code_requests(as_tasks, config.codes, config.temperature, config.top_p, config.max_tokens, config.seed)
    responses: dict[int, list[str]] = {}
    with progress(f"codes ({config.coder})", len(requests) * config.codes) as advance:
        generate_all(backend, requests, lambda i, completions: responses.__setitem__(i, [c.text for c in completions]),
                     advance)
    codes = [[p.program(text) for text in responses[i]] for i, p in enumerate(problems)]
    rows, without_tests = [], []
    for problem, row, verdicts in zip(problems, codes, pass_rates_by_question(problems, codes, executor)):
        target = reference_asserts(problem, executor)
        if not target:
            without_tests.append(problem.question_id)
            continue
        answer = "```python\n" + "\n".join(target) + "\n```"
        rows += [{"question_id": problem.question_id, "passed": passed, "total": total,
                  "messages": [*assert_test_messages(problem.question, code), {"role": "assistant", "content": answer}]}
                 for code, (passed, total) in zip(row, verdicts) if passed < total]
    Path(config.out).parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(Path(config.out), rows)
    return {"questions": len(problems), "codes": sum(map(len, codes)), "failing_codes": len(rows),
            "questions_without_usable_reference_asserts": without_tests, "out": str(config.out)}

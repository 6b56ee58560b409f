"""`codea1-eval train golden-data`: a tester writes the golden tests of a training file (paper Table 4).

For each training question the tester (any model spec) writes ``suites`` suites of asserts from the
question alone (the Code-A1 black-box tester prompt). Each suite is validated on the question's reference
solution as Code-A1 validates tests (DESIGN §5, mode ``faithful``): a call that raises or times out on the
reference is dropped, a wrong predicted answer is corrected to the reference's value, repeats are dropped.
The kept asserts of all suites, in order and unique, at most ``max_tests``, become the question's new
``test`` program, one ``test_golden_K`` function each, so ``train --mode golden`` rewards a code with the
share of them it passes. Questions for which the tester wrote no usable test are left out (and counted).

Every row records where its tests came from in ``test_source``: the tester's spec and its training record
(``models.provenance``: None for a model `train` did not make), which ``train`` copies into its
checkpoints' records and ``table --layout golden-sources`` reads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codea1_eval.asserts import FAITHFUL, extract_asserts, validate_suites
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.models.provenance import training_provenance
from codea1_eval.results import write_jsonl_atomic
from codea1_eval.sandbox import Executor
from codea1_eval.train.data import SampledDataJob, TrainProblem, load_train_problems
from codea1_eval.train.ground_truth import pass_rates_by_question
from codea1_eval.train.rewards import TARGET_TESTS


@dataclass(kw_only=True)
class GoldenDataConfig(SampledDataJob):
    """Inputs of ``train golden-data``."""

    tester: str = "smollm2"
    suites: int = 4
    max_tests: int = TARGET_TESTS


def golden_test_program(asserts: list[str]) -> str:
    """The ``test`` program of a question: one pytest function per assert."""
    return "".join(f"def test_golden_{number}():\n    {line}\n\n\n" for number, line in enumerate(asserts, 1))


def build_golden_data(config: GoldenDataConfig) -> dict[str, Any]:
    """Have the tester write and validate golden tests, write the new training file; return counts."""
    from codea1_eval.benchmarks.base import Problem
    from codea1_eval.models.driver import generate_all
    from codea1_eval.requests import tester_request

    problems = load_train_problems(config.data, config.limit)
    executor = Executor(parallel=config.parallel)
    backend = config.load_backend(config.tester)
    requests = [tester_request(Problem(p.question_id, p.question, p.entry_point, p.solution), None, config.suites,
                               config.temperature, config.top_p, config.max_tokens, config.seed,
                               f"golden:{p.question_id}") for p in problems]
    replies: dict[int, list[str]] = {}
    with progress(f"golden suites ({config.tester})", len(requests) * config.suites) as advance:
        generate_all(backend, requests, lambda i, completions: replies.__setitem__(i, [c.text for c in completions]),
                     advance)
    source = {"tester": config.tester, "training": training_provenance(config.tester)}
    asserts = validated_asserts(problems, [replies[index] for index in range(len(problems))], executor)
    with_tests = [TrainProblem(p.question_id, p.question, p.entry_point, p.solution,
                               test=golden_test_program(kept[:config.max_tests]))
                  for p, kept in zip(problems, asserts) if kept]
    # The asserts held on the reference when validated; a reference that then fails them (a nondeterministic
    # or timing-dependent one) has no golden tests to train on: left out and counted.
    reference_rates = pass_rates_by_question(with_tests, [[p.solution] for p in with_tests], executor)
    kept = [p for p, ((passed, total),) in zip(with_tests, reference_rates) if passed == total]
    if not kept:
        raise UserError(f"{config.tester} wrote no test that holds on a reference solution, for any of "
                        f"{len(problems)} questions; nothing to train on")
    Path(config.out).parent.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(Path(config.out), [{**asdict(p), "test_source": source} for p in kept])
    return {"questions": len(problems), "with_tests": len(kept), "tests": sum(p.test.count("def test_") for p in kept),
            "questions_without_tests": [p.question_id for p, found in zip(problems, asserts) if not found],
            "questions_whose_reference_failed_its_tests": sorted({p.question_id for p in with_tests} -
                                                                  {p.question_id for p in kept}),
            "out": str(config.out)}


def validated_asserts(problems: list[TrainProblem], replies: list[list[str]], executor: Executor) -> list[list[str]]:
    """Per question, the kept asserts (Code-A1's validation on the reference) of all its replies, in order
    and unique; every suite of every question is validated in one sandbox batch."""
    extractions = [extract_asserts(reply, p.entry_point) for p, row in zip(problems, replies) for reply in row]
    references = [p.solution for p, row in zip(problems, replies) for _ in row]
    suites = iter(validate_suites(extractions, references, FAITHFUL, executor))
    return [list(dict.fromkeys(test.assert_source for _ in row for test in next(suites).kept))
            for row in replies]

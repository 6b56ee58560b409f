"""Pseudo-models: deterministic stand-ins for a model in one role, registered once and accepted wherever
a model spec of that role is (`bon --coder`, `bon --tester`, `mul --tester`).

- ``mutants`` (coder): the reference plus M - 1 of its mutants, shuffled with the seed; candidates whose
  correctness is known without a strong coder.
- ``reference-inputs`` (tester): asserts built from the reference's outputs on the benchmark's own
  inputs (or ULT's example calls), one suite per problem; a golden-test upper bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codea1_eval.errors import UserError
from codea1_eval.metrics.mutation import DEFAULT_MUTATOR, mutant_candidates
from codea1_eval.metrics.reference_tests import (REFERENCE_INPUTS, reference_inputs_reply, reference_inputs_rounds,
                                                 require_inputs)
from codea1_eval.registry import Registry

if TYPE_CHECKING:
    from codea1_eval.benchmarks.base import Benchmark, Problem
    from codea1_eval.sandbox import Executor

CODER, TESTER = "coder", "tester"


class PseudoModel:
    """A pseudo-model of one ``role``; ``check`` refuses, before any work, a benchmark it cannot serve."""

    role = ""

    def check(self, benchmark: "Benchmark") -> None:
        """Raise UserError when the benchmark does not fit (default: every benchmark fits)."""


class MutantsCoder(PseudoModel):
    """The reference plus M - 1 of its mutants (from ``mutator``), shuffled with the seed."""

    role = CODER

    def candidates(self, problem: "Problem", count: int, seed: int, mutator: str = DEFAULT_MUTATOR) -> list[dict]:
        """``count`` candidate programs ({code, origin}) for ``problem``."""
        return mutant_candidates(problem.task_id, problem.reference, count, seed, mutator)


class ReferenceInputsTester(PseudoModel):
    """Asserts from the reference's outputs on the benchmark's inputs (HumanEval+, MBPP+) or example calls
    (ULT)."""

    role = TESTER

    def check(self, benchmark: "Benchmark") -> None:
        require_inputs(benchmark)

    def reply(self, problem: "Problem", executor: "Executor", minimum: int = 0) -> str:
        """The tester's reply for ``problem``: its asserts in one code block (at least ``minimum`` where
        the inputs allow)."""
        return reference_inputs_reply(problem, executor, minimum)

    def rounds(self, problem: "Problem", executor: "Executor", count: int) -> list[str]:
        """Its replies to ``count`` rounds of the ULT chat (one test function each)."""
        return reference_inputs_rounds(problem, executor, count)


PSEUDO_MODELS: Registry[PseudoModel] = Registry("pseudo-model")
PSEUDO_MODELS.register("mutants", MutantsCoder(), help=MutantsCoder.__doc__ or "")
PSEUDO_MODELS.register(REFERENCE_INPUTS, ReferenceInputsTester(), help=ReferenceInputsTester.__doc__ or "")


def pseudo_model(spec: str | None, role: str) -> PseudoModel | None:
    """The pseudo-model ``spec`` names, when it is one and serves ``role``; None for a model spec. A
    pseudo-model of another role is a UserError naming the roles."""
    if spec is None or spec not in PSEUDO_MODELS:
        return None
    model = PSEUDO_MODELS.get(spec)
    if model.role != role:
        raise UserError(f"{spec} is a {model.role} pseudo-model; it cannot be the {role}")
    return model

"""Reward hacks earn what a wrong answer earns, in `bon`: each program of the adversarial corpus, and
candidates that change the names a test's predicted answer uses, run as a `bon` candidate on generated
asserts whose right side is an expression (``sum([1, 2])``). The predicted answers are evaluated first,
in a program without any candidate (``asserts.run.resolve_predicted``), and compared with the
candidate's outputs on the trusted side; every hack fails every assert, as ``add(a, b) = a - b`` does."""

from __future__ import annotations

import pytest

from codea1_eval.asserts import AssertCheck, assert_program, assert_verdicts
from codea1_eval.asserts.run import import_header, resolve_predicted
from codea1_eval.sandbox.engine import Executor, SandboxLimits

from .box import HONEST, dedent_code
from .test_hack_proofing import ATTACKS

pytestmark = pytest.mark.timeout(180)

TIME_LIMIT = 1.0
CHECKS = [AssertCheck("add(1, 2)", "==", predicted="sum([1, 2])"),
          AssertCheck("add(2, 3)", "==", predicted="math.floor(5.5)"),
          AssertCheck("add(0, 0)", "==", predicted="0")]
CONTEXT = "import math\n"
WRONG = "import math\ndef add(a, b):\n    return a - b\n"
SHADOW_BUILTIN = dedent_code("""
    sum = lambda values: 'forged'
    def add(a, b):
        return 'forged'
""")
PATCH_MODULE = dedent_code("""
    import math
    math.floor = lambda value: 'forged'
    def add(a, b):
        return 'forged'
""")
HACKS = [pytest.param(SHADOW_BUILTIN, id="shadow-sum"), pytest.param(PATCH_MODULE, id="patch-math.floor"),
         *[pytest.param("import math\n" + p.values[0], id=p.id) for p in ATTACKS]]


@pytest.fixture(scope="module")
def executor() -> Executor:
    return Executor(SandboxLimits(memory_mb=1024, load_time_limit=5.0), parallel=2)


@pytest.fixture(scope="module")
def checks(executor) -> list[AssertCheck]:
    [resolved] = resolve_predicted([(CHECKS, CONTEXT)], executor, TIME_LIMIT)
    return resolved


def _passed(executor, checks, code: str) -> list[bool]:
    return list(assert_verdicts(checks, executor.run(assert_program(code, checks, TIME_LIMIT))).passed)


def test_predicted_answers_become_literals_evaluated_without_a_candidate(checks):
    assert [c.expected for c in checks] == ["3", "5", "0"]


def test_honest_and_wrong_candidates(executor, checks):
    assert _passed(executor, checks, "import math\n" + HONEST) == [True, True, True]
    assert _passed(executor, checks, WRONG) == [False, False, True]


def test_evaluated_beside_the_candidate_the_shadowing_hack_would_pass(executor):
    # the hole this closes: the same asserts with their right sides run in the candidate's program
    assert _passed(executor, CHECKS, SHADOW_BUILTIN)[0] is True
    assert _passed(executor, CHECKS, PATCH_MODULE)[1] is True


@pytest.mark.parametrize("code", HACKS)
def test_a_hack_passes_no_assert_with_an_expression_answer(executor, checks, code):
    assert _passed(executor, checks, code)[:2] == [False, False]


def test_import_header_keeps_only_the_prompts_imports():
    prompt = 'from typing import List\nimport math as m\n\ndef f(x: List[int]) -> int:\n    """Doc."""\n'
    assert import_header(prompt) == "from typing import List\nimport math as m\n"
    assert import_header("Write a function that adds two numbers.") == ""

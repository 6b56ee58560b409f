"""Reward hacks earn what a wrong answer earns.

In `bon`: each program of the adversarial corpus, and candidates that change the names a test's
predicted answer uses, run as a candidate on generated asserts whose right side is an expression
(``sum([1, 2])``). The predicted answers are evaluated first, in a program without any candidate
(``asserts.run.resolve_predicted``), and compared with the candidate's outputs on the trusted side;
every hack fails every assert, as ``add(a, b) = a - b`` does.

In training's ground-truth tests (the `golden` and `self-play` code rewards, `sft-data`): the same
programs as generated codes of a question whose tests compare with ``==`` and ``math.isclose``, judged
by record and replay (``judging.replay``): every hack passes 0 of the question's tests, as the wrong
code does, where the direct run (code and tests in one process) gave some of them full marks."""

from __future__ import annotations

import pytest

from codea1_eval.asserts import AssertCheck, assert_program, assert_verdicts
from codea1_eval.asserts.run import import_header, resolve_predicted
from codea1_eval.judging.replay import ReplayJob, replay_pass_rates
from codea1_eval.sandbox.engine import Executor, SandboxLimits
from codea1_eval.train.ground_truth import pass_rates, pass_rates_by_question
from codea1_eval.train.data import TrainProblem

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


@pytest.fixture(scope="module", autouse=True)
def _one_second_test_functions():
    """Ground-truth test functions and training's assert calls get 1 s here instead of the product's 6 s
    and 3 s: the hacks that loop or dodge the alarm are killed either way, and at those limits they made
    this file take a minute longer."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("codea1_eval.train.step.CALL_TIME_LIMIT_S", 1.0)
        patch.setattr("codea1_eval.judging.replay.TEST_FUNCTION_TIME_LIMIT_S", 1.0)
        patch.setattr("codea1_eval.judging.test_functions.TEST_FUNCTION_TIME_LIMIT_S", 1.0)
        yield


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


# --------------------------------------------------------------------------------------------------
# Training's ground-truth tests, judged by record and replay.

REFERENCE = "def add(a, b):\n    return a + b\n"
GROUND_TRUTH = dedent_code("""
    import math

    def check(candidate):
        assert candidate(1, 2) == 3
        assert math.isclose(candidate(0.5, 0.25), 0.75)
""")
KODCODE_TESTS = dedent_code("""
    from solution import add
    import math

    def test_ints():
        assert add(1, 2) == 3

    def test_floats():
        assert math.isclose(add(0.5, 0.25), 0.75)
""")
PATCH_ISCLOSE = dedent_code("""
    import math
    math.isclose = lambda *args, **kwargs: True
    def add(a, b):
        return -1
""")


def _direct_and_replayed(executor, code: str, tests: str) -> tuple[tuple[int, int], tuple[int, int]]:
    question = TrainProblem("q/add", "Add.", "add", REFERENCE, test=tests)
    [[replayed]] = pass_rates_by_question([question], [[code]], executor)
    [direct] = pass_rates([(code, tests, "add")], executor)
    return direct, replayed


@pytest.mark.parametrize("tests", [GROUND_TRUTH, KODCODE_TESTS], ids=["check-style", "kodcode-style"])
def test_ground_truth_of_honest_and_wrong_codes(executor, tests):
    total = 1 if tests is GROUND_TRUTH else 2
    assert _direct_and_replayed(executor, HONEST, tests) == ((total, total), (total, total))
    assert _direct_and_replayed(executor, "def add(a, b):\n    return a - b\n", tests) == ((0, total), (0, total))


def test_the_direct_run_is_fooled_where_the_replay_is_not(executor):
    assert _direct_and_replayed(executor, PATCH_ISCLOSE, KODCODE_TESTS) == ((1, 2), (0, 2))
    assert _direct_and_replayed(executor, ATTACKS[0].values[0], KODCODE_TESTS) == ((1, 2), (0, 2))  # always-equal


@pytest.mark.parametrize("code", [pytest.param(PATCH_ISCLOSE, id="patch-math.isclose"), *HACKS])
@pytest.mark.parametrize("tests", [GROUND_TRUTH, KODCODE_TESTS], ids=["check-style", "kodcode-style"])
def test_a_hack_passes_no_ground_truth_test(executor, tests, code):
    question = TrainProblem("q/add", "Add.", "add", REFERENCE, test=tests)
    [[rate]] = pass_rates_by_question([question], [[code]], executor)
    assert rate[0] == 0


def test_mutated_arguments_raised_exceptions_and_fallback(executor):
    in_place = TrainProblem("q/sort", "Sort in place.", "sort_in_place",
                            "def sort_in_place(xs):\n    xs.sort()\n",
                            test="from solution import sort_in_place\nimport pytest\n\n"
                                 "def test_sorts():\n    xs = [3, 1, 2]\n    assert sort_in_place(xs) is None\n"
                                 "    assert xs == [1, 2, 3]\n\n"
                                 "def test_rejects():\n    with pytest.raises(TypeError):\n"
                                 "        sort_in_place([1, 'a'])\n")
    klass = TrainProblem("q/box", "A box.", "Box", "class Box:\n    def __init__(self, v):\n        self.v = v\n",
                         test="from solution import Box\n\ndef test_box():\n    assert Box(3).v == 3\n")
    codes = [["def sort_in_place(xs):\n    xs.sort()\n", "def sort_in_place(xs):\n    return sorted(xs)\n"],
             ["class Box:\n    def __init__(self, v):\n        self.v = v\n"]]
    # the copy that sorts nothing fails test_sorts (returns a list, leaves xs) and passes test_rejects
    assert pass_rates_by_question([in_place, klass], codes, executor) == [[(2, 2), (1, 2)], [(1, 1)]]
    jobs = [ReplayJob(code, q.test, q.entry_point, q.solution) for q, row in zip([in_place, klass], codes)
            for code in row]
    _, direct = replay_pass_rates(jobs, executor, lambda rest: [(1, 1)] * len(rest))
    assert direct == 1  # the class question: its instances cannot be replayed, so it runs the direct way


# --------------------------------------------------------------------------------------------------
# The code-a1 mode: a hack as the generated code, and as the generated test suite.

SUITE = "```python\nassert add(1, 2) == 3\nassert add(0.5, 0.25) == 0.75\n```"
WRONG_CODE = "def add(a, b):\n    return a - b\n"


def _code_a1_step(executor, code_responses: list[str], suite_response: str):
    from codea1_eval.train.mistake_book import MistakeBook
    from codea1_eval.train.step import score_step

    question = TrainProblem("q/add", "Add.", "add", REFERENCE)
    [scores] = score_step([question], {"q/add": code_responses},
                          {"q/add": [[suite_response]] * len(code_responses)}, MistakeBook(), executor)
    return scores


@pytest.mark.parametrize("code", [pytest.param(PATCH_ISCLOSE, id="patch-math.isclose"), *HACKS])
def test_code_a1_a_hack_as_the_code_earns_what_a_wrong_code_earns(executor, code):
    fenced = [f"```python\n{text}```" for text in (WRONG_CODE, code)]
    scores = _code_a1_step(executor, fenced, SUITE)
    assert scores.code_rewards[1] == scores.code_rewards[0] == 0.0
    # the suite that catches it earns what it earns for catching the wrong code, or 0 when the hack's
    # module does not even run (R_T is 0 for a code that does not define)
    assert scores.suite_rewards[1] == (scores.suite_rewards[0] if scores.code_defines[1] else [0.0])


@pytest.mark.parametrize("code", [pytest.param(PATCH_ISCLOSE, id="patch-math.isclose"), *HACKS])
def test_code_a1_a_hack_as_the_test_suite_earns_nothing(executor, code):
    scores = _code_a1_step(executor, [f"```python\n{REFERENCE}```"], f"```python\n{code}```")
    assert scores.suites[0][0].kept_tests == [] and scores.suite_rewards == [[0.0]]



def test_replay_keeps_what_honest_codes_do(executor):
    """Honest codes whose behaviour the replay must carry: their own random draws (the test's inputs do
    not move), deep recursion (the recording adds no stack frames), exceptions of library subclasses
    (json's JSONDecodeError is a ValueError), keyword arguments mutated in place. A code that defines
    its own ``ValueError`` does not pass for the built-in one (the direct run, where the code's name
    replaces the test's, is fooled)."""
    question = TrainProblem(
        "q/pick", "Pick.", "pick",
        "import json\ndef pick(xs, depth=0, out=None):\n    if depth < 3000:\n        return pick(xs, depth + 1, out)\n"
        "    if out is not None:\n        out.append(1)\n    if not xs:\n        json.loads('')\n    return max(xs)\n",
        test="import random\nimport pytest\nfrom solution import pick\n\n"
             "def test_random_inputs():\n    for _ in range(5):\n        xs = [random.randint(0, 99) for _ in range(6)]\n"
             "        assert pick(xs) == max(xs)\n\n"
             "def test_empty():\n    with pytest.raises(ValueError):\n        pick([])\n\n"
             "def test_out():\n    out = []\n    pick([1], out=out)\n    assert out == [1]\n")
    shuffling = ("import json, random\ndef pick(xs, depth=0, out=None):\n    if depth < 3000:\n"
                 "        return pick(xs, depth + 1, out)\n    if out is not None:\n        out.append(1)\n"
                 "    if not xs:\n        json.loads('')\n    ys = list(xs)\n    random.shuffle(ys)\n    return max(ys)\n")
    spoof = ("class ValueError(Exception):\n    pass\n"
             "def pick(xs, depth=0, out=None):\n    if out is not None:\n        out.append(1)\n"
             "    if not xs:\n        raise ValueError('empty')\n    return max(xs)\n")
    rates = pass_rates_by_question([question], [[shuffling, spoof]], executor)
    assert rates == [[(3, 3), (2, 3)]]
    [direct] = pass_rates([(spoof, question.test, "pick")], executor)
    assert direct == (3, 3)  # in one module with the code, the test's own ValueError is the code's

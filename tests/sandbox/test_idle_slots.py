"""A slot with no program left to start runs the second input list of a program still in its first (``idle_slots``),
and the program's results are the ones its own run would have got."""

import threading

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.judging import candidate_program, compute_ground_truth, judge
from codea1_eval.sandbox import CallResult, ExecResult, Executor, Program, run_program
from codea1_eval.sandbox.idle_slots import SecondPart
from codea1_eval.sandbox.records import LOAD_ERROR, OK

SLEEPS = ("import os, time\nseen = []\ndef f(x):\n    seen.append(x)\n    time.sleep(x)\n"
          "    return [len(seen), os.getpid(), os.getppid(), sorted(os.listdir('.'))]\n")
BASE_SLEEPS = Program(SLEEPS, "f", calls=[(0.6,), (0,), (0,), (0,)], time_limits=[5.0] * 4, fresh_process_at=2)
"""The base list takes 0.6 s: time enough for an idle slot to take the plus list, which starts a worker in ms."""


@pytest.mark.parametrize("parallel, plus_beside_base", [(2, True), (1, False)])
def test_a_second_slot_with_nothing_to_start_runs_the_plus_list_beside_the_base_list(parallel, plus_beside_base):
    """Two slots, one program: its plus list runs in a worker of its own (not the worker whose child runs the base
    list), with the same fresh module state and empty folder. One slot: the program's worker runs both, as ever."""
    result = Executor(parallel=parallel).map([BASE_SLEEPS])[0]
    assert result.status == OK and [call.status for call in result.calls] == ["returned"] * 4
    counts, pids, parents, folders = zip(*(call.value for call in result.calls))
    assert counts == (1, 2, 1, 2) and folders == ([], [], [], [])
    assert pids[0] == pids[1] and pids[2] == pids[3] and parents[0] == parents[1]
    assert (pids[2] != parents[0]) is plus_beside_base  # the base list's child is a child of the program's worker
    assert result.workers == (2 if plus_beside_base else 1)


def test_on_two_slots_a_candidates_verdict_and_call_statuses_are_the_ones_one_slot_gives(data_dir):
    """A real HumanEval+ candidate that fails a base input (fail-fast: the rest of the base list skipped, the plus
    list still run): the same statuses, call by call, whether its plus list ran beside its base list or after it."""
    benchmark = load_benchmark("humaneval+", data_dir).limit(1)
    problem = benchmark.problems[0]
    truth = compute_ground_truth(benchmark, Executor())[problem.task_id]
    wrong = problem.reference.replace("return True", "return False", 1)
    verdicts = []
    for parallel in (2, 1):
        program = candidate_program(problem, truth, wrong, oracle="humaneval")
        result = Executor(parallel=parallel).map([program])[0]
        verdicts.append((result.workers, judge(benchmark, problem, truth, result)))
    (beside_workers, beside), (after_workers, after) = verdicts
    assert (beside_workers, after_workers) == (2, 1)
    assert (beside.base_status, beside.plus_status) == (after.base_status, after.plus_status) == ("fail", "fail")
    assert beside.call_statuses == after.call_statuses
    assert beside.call_statuses[problem.n_base:].count("skipped") == after.call_statuses[problem.n_base:].count(
        "skipped") > 0


RETURNS = "import os\ndef f(x):\n    if x == 'crash':\n        os._exit(3)\n    return [x, os.getpid()]\n"
FROM_THE_IDLE_SLOT = CallResult("returned", "from the idle slot")


def _taken(result: ExecResult | None, program: Program) -> SecondPart:
    part = SecondPart(program)
    assert part.take()
    part.deliver(result)
    return part


def test_a_taken_plus_lists_results_stand_where_the_program_would_start_it_afresh():
    """No crash before the plus list: the results the idle slot delivered are the program's (a stand-in result here,
    so that where each value came from shows), its status and error with them, its worker counted."""
    program = Program(RETURNS, "f", calls=[(0,), (1,), (2,), (3,)], time_limits=[5.0] * 4, fresh_process_at=2)
    taken = ExecResult(LOAD_ERROR, [None, None, FROM_THE_IDLE_SLOT, FROM_THE_IDLE_SLOT], "stand-in", workers=1)
    result = run_program(program, second=_taken(taken, program))
    assert [call.value[0] for call in result.calls[:2]] == [0, 1]
    assert result.calls[2:] == [FROM_THE_IDLE_SLOT, FROM_THE_IDLE_SLOT]
    assert (result.status, result.error, result.workers) == (LOAD_ERROR, "stand-in", 2)


@pytest.mark.parametrize("first_input, delivered, workers", [
    pytest.param("crash", ExecResult(OK, [None, None, FROM_THE_IDLE_SLOT, FROM_THE_IDLE_SLOT], workers=1), 3,
                 id="a-crash-before-it"),  # the crash counts toward max_worker_restarts in the plus list too
    pytest.param(0, None, 2, id="the-idle-slot-failed"),
])
def test_otherwise_the_program_runs_its_plus_list_itself(first_input, delivered, workers):
    program = Program(RETURNS, "f", calls=[(first_input,), (1,), (2,), (3,)], time_limits=[5.0] * 4,
                      fresh_process_at=2)
    result = run_program(program, second=_taken(delivered, program))
    assert [call.status for call in result.calls] == ["crash" if first_input == "crash" else "returned"] + [
        "returned"] * 3
    assert [call.value[0] for call in result.calls[1:]] == [1, 2, 3]
    assert result.status == OK and result.workers == workers


def test_a_taken_run_that_the_program_does_not_use_is_stopped():
    """A crash in the base list: the program runs its plus list itself (as sequentially, the crash counted there), and
    the idle slot's run of it, 3 s into its call, is stopped: its worker killed, not left to finish."""
    program = Program(RETURNS.replace("return [x, os.getpid()]", "time.sleep(x)\n    return [x, os.getpid()]")
                      .replace("import os", "import os, time"), "f", calls=[("crash",), (0,), (3,)],
                      time_limits=[10.0] * 3, fresh_process_at=2)
    part = SecondPart(program)
    assert part.take()
    idle_slot = threading.Thread(target=lambda: part.deliver(run_program(program, taken=part)))
    idle_slot.start()
    result = run_program(program, second=part)
    idle_slot.join()
    assert [call.status for call in result.calls] == ["crash", "returned", "returned"]
    assert [call.value[0] for call in result.calls[1:]] == [0, 3] and result.workers == 3
    stopped = part.result().calls[2]
    assert (stopped.status, stopped.error) == ("crash", "worker died during the call")


SLEEPS_ITS_INPUT = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"


def test_where_the_total_deadline_would_bind_the_plus_list_one_slot_and_two_give_the_same_results():
    """The total deadline (1.6 s from the start) ends the plus list after its first call when it runs after the 1-s base
    list: so it does beside it too (the program runs the list itself, as the taken run could have gone further)."""
    program = Program(SLEEPS_ITS_INPUT, "f", calls=[(1.0,), (0.4,), (0.4,)], time_limits=[5.0] * 3,
                      total_time_limit=1.6, fresh_process_at=1, part_time_limits=(5.0, 5.0))
    outcomes = [[(call.status, call.error) for call in Executor(parallel=parallel).map([program])[0].calls]
                for parallel in (2, 1)]
    assert outcomes[0] == outcomes[1] == [("returned", None), ("returned", None),
                                          ("timeout", "total time limit exceeded")]

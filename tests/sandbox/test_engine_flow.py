"""Engine control flow: jumps requested by `Program.next_call` and evalplus-style fail-fast scoring."""

import math
import time

import pytest

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.judging import candidate_program, compute_ground_truth, judge
from codea1_eval.sandbox import CallResult, Executor, Program, SandboxLimits, phases, run_program
from codea1_eval.sandbox.cgroup import _writable_root

from .box import FORGED_FORK_FAILURE_AT_IMPORT

IDENTITY = "def f(x):\n    return x\n"


def test_jump_skips_calls_and_resumes_on_a_fresh_worker():
    program = Program(IDENTITY, "f", calls=[(i,) for i in range(8)], time_limits=[1.0] * 8,
                      next_call=lambda index, call: 5 if index == 1 else index + 1)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned"] * 2 + ["skipped"] * 3 + ["returned"] * 3
    assert [c.value for c in result.calls[5:]] == [5, 6, 7]
    assert result.workers == 2


def test_stop_after_timeout_skips_the_rest():
    code = "def f(x):\n    while x == 1:\n        pass\n    return x\n"
    program = Program(code, "f", calls=[(i,) for i in range(6)], time_limits=[0.3] * 6,
                      next_call=lambda index, call: 6 if call.status != "returned" else index + 1)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned", "timeout"] + ["skipped"] * 4
    assert result.workers == 1


def test_fail_fast_runs_plus_inputs_after_a_base_failure(data_dir):
    benchmark = load_benchmark("humaneval+", data_dir).limit(1)
    problem = benchmark.problems[0]
    truth = compute_ground_truth(benchmark, Executor())[problem.task_id]
    wrong = problem.reference.replace("return True", "return False", 1)
    fast = judge(benchmark, problem, truth, run_program(candidate_program(problem, truth, wrong, oracle="humaneval")))
    full = judge(benchmark, problem, truth, run_program(candidate_program(problem, truth, wrong)))
    assert (fast.base_status, fast.plus_status) == (full.base_status, full.plus_status) == ("fail", "fail")
    assert "skipped" in fast.call_statuses and "skipped" not in full.call_statuses
    first_base_failure = full.call_statuses.index("fail")
    assert fast.call_statuses[:first_base_failure + 1] == full.call_statuses[:first_base_failure + 1]
    assert fast.call_statuses[problem.n_base] == full.call_statuses[problem.n_base]


def test_the_longest_expected_programs_start_first():
    """One worker at a time runs them in order of the reference's time, longest first (ties keep their order)."""
    programs = [Program(IDENTITY, "f", calls=[(i,)], time_limits=[1.0], expected_seconds=seconds)
                for i, seconds in enumerate([0.1, 5.0, 0.0, 1.0, 0.0])]
    finished = [index for index, _ in Executor(parallel=1).map_unordered(programs)]
    assert finished == [1, 3, 0, 2, 4]


def test_cpu_time_has_a_hard_limit_that_sigxcpu_cannot_escape():
    code = "import resource\ndef limits():\n    return list(resource.getrlimit(resource.RLIMIT_CPU))\n"
    soft, hard = run_program(Program(code, "limits", calls=[()], time_limits=[2.0])).calls[0].value
    assert soft > 2 and hard == soft + 1


CRASHES_AT_5 = "import os\ndef f(x):\n    if x == 5:\n        os._exit(3)\n    return x * 10\n"
BLOCKS_THE_ALARM_AT_3 = """
import signal
def f(x):
    if x == 3:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while True:
            pass
    return x
"""


def test_a_worker_that_dies_holding_unsent_results_costs_only_its_own_call():
    """Workers send results in batches, so one can die holding results of calls before the one it dies in. That
    call (which the worker published on its progress page before running it) gets the crash; the calls before
    it run again on a fresh worker, and the calls after it on the next one, as after any crash."""
    program = Program(CRASHES_AT_5, "f", calls=[(i,) for i in range(10)], time_limits=[1.0] * 10)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned"] * 5 + ["crash"] + ["returned"] * 4
    assert [c.value for c in result.calls] == [0, 10, 20, 30, 40, None, 60, 70, 80, 90]
    assert result.calls[5].error == "worker died during the call"
    assert result.workers <= 3  # 3 where calls 0-4 were still unsent when the worker died (the usual case)


def test_a_hard_deadline_falls_on_the_call_the_worker_is_in():
    """Call 3 blocks SIGALRM, so only the parent's hard deadline ends it, while calls 0-2 may still be held in
    the worker: they run again on a worker that sends each result at once, so the timeout is call 3's alone."""
    program = Program(BLOCKS_THE_ALARM_AT_3, "f", calls=[(i,) for i in range(6)], time_limits=[0.5] * 6)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned"] * 3 + ["timeout"] + ["returned"] * 2
    assert [c.value for c in result.calls] == [0, 1, 2, None, 4, 5]
    assert result.calls[3].error == "hard deadline: worker killed"


FORGES_ITS_PROGRESS_THEN_DIES = """
import mmap, os, struct
def f(x):
    if x == 1:
        for fd in os.listdir('/proc/self/fd'):
            if os.path.realpath('/proc/self/fd/' + fd).startswith('/memfd:'):
                try:
                    os.ftruncate(int(fd), 0)
                except OSError:
                    pass
                page = mmap.mmap(int(fd), 8)
                page[:8] = struct.pack('=q', 10 ** 9)
        os._exit(3)
    return x
"""


def test_a_forged_progress_page_is_ignored_and_cannot_be_shrunk():
    """The candidate can write the page that says which call its worker is in: nonsense there is ignored (the
    crash stays on the call the parent was waiting for), and the sealed page cannot shrink under the parent."""
    program = Program(FORGES_ITS_PROGRESS_THEN_DIES, "f", calls=[(i,) for i in range(4)], time_limits=[1.0] * 4)
    result = run_program(program)
    assert [c.status for c in result.calls][1:] == ["crash", "returned", "returned"]
    assert [c.value for c in result.calls][2:] == [2, 3]
    assert result.calls[0].status in ("returned", "crash")  # call 0 was unsent when the worker died (usually)


def test_returned_numbers_and_scalars_come_back_exactly_as_returned():
    """Plain ints, finite floats, strs, bools and None leave the worker as JSON text written directly (not through
    the encoder): the edges of that path come back with their exact type and value."""
    values = [0, -1, 2**53 - 1, -(2**53 - 1), 2**53, -(2**53), 1.5, -0.0, 1e16, 1e-300, 5e-324,
              1.7976931348623157e308, 0.1 + 0.2, float("inf"), True, False, None, "x\u00e9\"\\", "",
              "h\u00e9llo \u2603\n\x00\x7f", "\ud800 lone surrogate"]
    code = f"VALUES = {values!r}\ndef f(i):\n    return VALUES[i]\n".replace("inf", "float('inf')")
    program = Program(code, "f", calls=[(i,) for i in range(len(values))], time_limits=[1.0] * len(values))
    result = run_program(program)
    returned = [call.value for call in result.calls]
    assert [type(value) for value in returned] == [type(value) for value in values]
    assert returned == values
    assert math.copysign(1.0, returned[7]) == -1.0  # -0.0 stays negative


def test_returned_lists_of_plain_items_come_back_exactly_as_returned():
    """A list or tuple whose items JSON holds as they are (strs, bools, None, ints within 53 bits, finite floats)
    is sent as it is, in one pass; one with any other item goes through the encoder item by item."""
    values = [[1, "a", None, True], ["x", "\u2603", ""], [2**53 - 1, -(2**53 - 1), 1.5, -0.0], [True, 2, 0.5],
              ("a", None), (1, 2.5), [], (), [2**53, 1], [-(2**53), 1], [1.5, float("inf")], [10**400, 1.0],
              [[1, 2], ("b",)], [1, [2]], [1.0, float("nan")]]
    code = f"VALUES = {values!r}\ndef f(i):\n    return VALUES[i]\n".replace("inf", "float('inf')").replace(
        "nan", "float('nan')")
    program = Program(code, "f", calls=[(i,) for i in range(len(values))], time_limits=[1.0] * len(values))
    returned = [call.value for call in run_program(program).calls]
    assert repr(returned) == repr(values)  # repr: types within (tuples, bools, -0.0) and nan, which == misses
    assert [type(item) for value in returned for item in value] == [type(item) for value in values for item in value]


COUNTS_ITS_CALLS = "import os\nseen = []\ndef f(x):\n    seen.append(x)\n    return [len(seen), os.getpid()]\n"


def test_calls_from_fresh_process_at_run_in_a_process_that_did_not_run_the_earlier_ones():
    """evalplus runs base and plus inputs in two processes, each loading the program: module state starts afresh."""
    program = Program(COUNTS_ITS_CALLS, "f", calls=[(i,) for i in range(5)], time_limits=[1.0] * 5,
                      fresh_process_at=2)
    result = run_program(program)
    counts, pids = zip(*(call.value for call in result.calls))
    assert counts == (1, 2, 1, 2, 3)
    assert pids[0] == pids[1] != pids[2] == pids[3] == pids[4]
    assert result.workers == 1
    carried = run_program(Program(COUNTS_ITS_CALLS, "f", calls=[(i,) for i in range(5)], time_limits=[1.0] * 5))
    assert [call.value[0] for call in carried.calls] == [1, 2, 3, 4, 5]


LISTS_ITS_FOLDER = ("import os\ndef f(x):\n    names = sorted(os.listdir('.'))\n    open(f'm{x}', 'w').close()\n"
                    "    return names\n")


def test_the_calls_from_fresh_process_at_start_in_an_empty_folder():
    """evalplus runs each input list in a temporary folder of its own: files the base inputs left are not there."""
    program = Program(LISTS_ITS_FOLDER, "f", calls=[(i,) for i in range(4)], time_limits=[1.0] * 4, fresh_process_at=2)
    assert [call.value for call in run_program(program).calls] == [[], ["m0"], [], ["m2"]]


LEAVES_ITS_FOLDER = ("import os\ndef f(x, leave):\n    if leave == 'a file':\n        open('left', 'w').close()\n"
                     "    elif leave == 'a mode':\n        os.chmod('.', 0o750)\n    return os.getcwd()\n")


@pytest.mark.parametrize("leave, same_folder", [("nothing", True), ("a file", False), ("a mode", False)])
def test_the_plus_list_stays_in_the_folder_only_where_the_base_list_left_it_as_it_found_it(leave, same_folder):
    """A folder the base list's child left empty and as it was is a new empty folder already: the plus list runs there
    (no folder made and removed); one it left a file in, or another mode on, gives the plus list a new one."""
    program = Program(LEAVES_ITS_FOLDER, "f", calls=[(0, leave), (1, "nothing")], time_limits=[1.0] * 2,
                      fresh_process_at=1)
    base, plus = (call.value for call in run_program(program).calls)
    assert (base == plus) is same_folder and plus.startswith(base)


GUARD_IN_EACH_LIST = ("import os, sys\nseen = []\ndef f(x):\n    seen.append(x)\n    os.mkdir(f'm{x}')\n"
                      "    return [len(seen), os.getpid(), sorted(os.listdir('.')), os.fork is None, os.chdir is None,\n"
                      "            open is None, sys.getrecursionlimit() < 2000]\n")


def test_both_input_lists_of_a_guarded_program_hold_evalplus_guard_in_processes_and_folders_of_their_own():
    """The worker applies the guard once, before it forks the base list's child: both processes hold it (``os.fork``
    and ``os.chdir`` disabled, evalplus' recursion limit), and still each list has its own state and empty folder."""
    program = Program(GUARD_IN_EACH_LIST, "f", calls=[(i,) for i in range(4)], time_limits=[1.0] * 4,
                      fresh_process_at=2, reliability_guard=True)
    values = [call.value for call in run_program(program).calls]
    assert [value[:1] + value[2:] for value in values] == [[1, ["m0"]] + [True] * 4, [2, ["m0", "m1"]] + [True] * 4,
                                                           [1, ["m2"]] + [True] * 4, [2, ["m2", "m3"]] + [True] * 4]
    assert values[0][1] == values[1][1] != values[2][1] == values[3][1]


def test_a_crash_before_fresh_process_at_is_that_calls_and_the_later_calls_still_run():
    program = Program(CRASHES_AT_5, "f", calls=[(i,) for i in range(4, 9)], time_limits=[1.0] * 5,
                      fresh_process_at=3)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned", "crash", "returned", "returned", "returned"]
    assert [c.value for c in result.calls] == [40, None, 60, 70, 80]


LOOPS_ON_0_AND_2 = "def f(x):\n    while x in (0, 2):\n        pass\n    return x\n"
JUMP_TO_THE_PLUS_LIST_AFTER_CALL_0 = {"fresh_process_at": 2,
                                      "next_call": lambda index, call: 2 if index == 0 else index + 1}
SLOW_ON_1 = ("import os, time\nseen = []\ndef f(x):\n    seen.append(x)\n    if x == 1:\n        time.sleep(0.5)\n"
             "    return [len(seen), os.getpid(), sorted(os.listdir('.'))]\n")
RAISES_ON_0 = SLOW_ON_1.replace("if x == 1:\n        time.sleep(0.5)", "if x == 0:\n        raise ValueError(x)")


def test_a_worker_that_starts_at_fresh_process_at_needs_no_fork():
    """After a jump to the plus inputs (a base failure in fail-fast) while the base list's child is still busy (call 1
    takes 0.5 s, past ``CHILD_LIST_DRAIN_S``), a new worker runs them itself."""
    program = Program(SLOW_ON_1, "f", calls=[(i,) for i in range(5)], time_limits=[1.0] * 5,
                      **JUMP_TO_THE_PLUS_LIST_AFTER_CALL_0)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned", "skipped", "returned", "returned", "returned"]
    assert [c.value[0] for c in result.calls if c.value] == [1, 1, 2, 3]
    assert result.workers == 2


@pytest.mark.parametrize("code, first_status", [
    pytest.param(SLOW_ON_1.replace("0.5", "0"), "returned", id="a-wrong-value"),  # the batched results' path
    pytest.param(RAISES_ON_0, "error", id="an-error"),  # the path that waits on the call
])
def test_after_a_jump_to_fresh_process_at_the_worker_runs_that_list_once_its_child_is_done(code, first_status,
                                                                                           monkeypatch):
    """A base failure in fail-fast, the base list's child done within ``CHILD_LIST_DRAIN_S`` (1 s here: on a busy
    machine the default may pass first): the worker goes on to the plus inputs as after a base list without failure
    (one worker), in a process and folder of their own; what the child returned after the jump is not kept."""
    monkeypatch.setattr(phases, "CHILD_LIST_DRAIN_S", 1.0)
    program = Program(code, "f", calls=[(i,) for i in range(5)], time_limits=[1.0] * 5,
                      **JUMP_TO_THE_PLUS_LIST_AFTER_CALL_0)
    result = run_program(program)
    assert [c.status for c in result.calls] == [first_status, "skipped", "returned", "returned", "returned"]
    assert result.calls[1] == CallResult("skipped", error="not run: an earlier input failed")
    counts, pids, folders = zip(*(c.value for c in result.calls if c.value))
    assert counts[-3:] == (1, 2, 3) and folders[-3:] == ([], [], [])
    assert pids[-3] == pids[-2] == pids[-1] and (first_status == "error" or pids[0] != pids[1])
    assert result.workers == 1


def test_an_input_list_that_runs_out_of_its_time_fails_and_the_next_list_still_runs():
    """evalplus kills a list's process at its cap: the calls left there time out, the plus list runs as usual."""
    calls = [(i,) for i in (1, 0, 3, 4)]
    program = Program(LOOPS_ON_0_AND_2, "f", calls=calls, time_limits=[5.0] * 4, fresh_process_at=2,
                      part_time_limits=(1.0, 5.0))
    began = time.monotonic()
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned", "timeout", "returned", "returned"]
    assert result.calls[1].error == "the time limit of this input list exceeded"
    assert [c.value for c in result.calls] == [1, None, 3, 4]
    assert 1.0 <= time.monotonic() - began < 4.0


def test_the_second_list_has_its_own_time_from_where_it_starts():
    calls = [(i,) for i in (1, 3, 2, 4)]
    program = Program(LOOPS_ON_0_AND_2, "f", calls=calls, time_limits=[5.0] * 4, fresh_process_at=2,
                      part_time_limits=(5.0, 1.0))
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned", "returned", "timeout", "timeout"]
    assert [c.value for c in result.calls[:2]] == [1, 3]


USES_WHAT_EVALPLUS_DISABLES = """
import os
def f(x):
    if x == 0:
        return [open is None, exit is None, os.getcwd is None, os.remove is None, os.kill is None]
    if x == 1:
        import resource
    if x == 2:
        import shutil, subprocess
        return [shutil.rmtree is None, subprocess.Popen is None]
    if x == 3:
        import numpy  # its import sets environment variables: imports run without the guard, as if preloaded
        return [int(numpy.arange(4).sum()), os.putenv is None, help is None]
    return list(range(x))
"""


def test_reliability_guard_disables_what_evalplus_disables_before_the_program_loads():
    calls = [(0,), (1,), (2,), (3,), (300_000,)]  # the last value is digested, after the guard
    guarded = run_program(Program(USES_WHAT_EVALPLUS_DISABLES, "f", calls=calls, time_limits=[5.0] * 5,
                                  reliability_guard=True)).calls
    assert [c.status for c in guarded] == ["returned", "error", "returned", "returned", "returned"]
    assert guarded[0].value == [True] * 5 and guarded[2].value == [True, True] and guarded[3].value == [6, True, True]
    assert guarded[1].error == "ModuleNotFoundError: import of resource halted; None in sys.modules"
    plain = run_program(Program(USES_WHAT_EVALPLUS_DISABLES, "f", calls=calls, time_limits=[5.0] * 5)).calls
    assert [c.status for c in plain] == ["returned"] * 5
    assert plain[0].value == [False] * 5 and plain[2].value == [False, False] and plain[3].value == [6, False, False]
    assert plain[4].value == guarded[4].value


NEEDS_DEEP_RECURSION_AND_LONG_INT_STRS = """
import sys
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
def f(x):
    if x == 0:
        return sys.get_int_max_str_digits()
    if x in (966, 967):
        return depth(x)  # x + 1 frames on the call's own
    return len(str(10 ** 5000))
"""


def test_a_guarded_program_has_evalplus_recursion_depth_and_int_str_limit():
    """evalplus' process keeps CPython's limits (recursion 1000, of which its own path holds 33 frames; 4300 digits
    for int <-> str), which the worker otherwise raises: depth(966), 967 frames on the call's own, passes and
    depth(967) fails there (``python -m evalplus.evaluate``) and here, and so does a 5001-digit str(int)."""
    calls = [(0,), (966,), (967,), (2,)]
    guarded = run_program(Program(NEEDS_DEEP_RECURSION_AND_LONG_INT_STRS, "f", calls=calls, time_limits=[5.0] * 4,
                                  reliability_guard=True)).calls
    assert [(c.status, c.value) for c in guarded] == [("returned", 4300), ("returned", 966), ("error", None),
                                                      ("error", None)]
    assert guarded[2].error.startswith("RecursionError") and guarded[3].error.startswith("ValueError")
    plain = run_program(Program(NEEDS_DEEP_RECURSION_AND_LONG_INT_STRS, "f", calls=calls, time_limits=[5.0] * 4)).calls
    assert [(c.status, c.value) for c in plain] == [("returned", 0), ("returned", 966), ("returned", 967),
                                                    ("returned", 5001)]


def test_a_child_that_exits_early_is_a_crash_in_its_call_and_its_earlier_results_count():
    """os._exit(0) in a base call (evalplus' guard leaves it): the worker does not take it for the base list's end."""
    code = "import os\ndef f(x):\n    if x == 2:\n        os._exit(0)\n    return x\n"
    result = run_program(Program(code, "f", calls=[(i,) for i in range(5)], time_limits=[1.0] * 5,
                                 fresh_process_at=3))
    assert [c.status for c in result.calls] == ["returned", "returned", "crash", "returned", "returned"]
    assert [c.value for c in result.calls] == [0, 1, None, 3, 4]


LOADS_SLOWLY_THE_SECOND_TIME = """
import os, time
if os.path.exists('../base-ran'):  # the worker's own load, after its child ran the base calls in the folder above
    time.sleep(1.5)
def f(x):
    open('base-ran', 'w').close()
    return x
"""


def test_the_second_load_has_the_load_time_limit_not_the_first_plus_calls():
    program = Program(LOADS_SLOWLY_THE_SECOND_TIME, "f", calls=[(0,), (1,), (2,)], time_limits=[0.5] * 3,
                      fresh_process_at=1)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned"] * 3 and result.status == "ok"


@pytest.mark.parametrize("split", [None, 1], ids=["one list", "two lists"])
def test_a_program_that_does_not_compile_fails_its_load_with_the_compilers_error(split):
    """Compiled once in the worker, before any fork for the first list's process: the process that loads the program
    first (the worker itself, or its child for the first list) raises what the compile raised, and the load error
    fails every call, as a program that does not compile fails each of evalplus' processes."""
    program = Program("def f(x):\n    return x +\n", "f", calls=[(0,), (1,), (2,)], time_limits=[1.0] * 3,
                      fresh_process_at=split)
    result = run_program(program)
    assert [(c.status, c.error) for c in result.calls] == [
        ("error", "SyntaxError: invalid syntax (<candidate>, line 2)")] * 3
    assert result.status == "load_error" and result.error == "SyntaxError: invalid syntax (<candidate>, line 2)"
    assert result.workers == 1


FAILS_TO_LOAD_THE_SECOND_TIME = LOADS_SLOWLY_THE_SECOND_TIME.replace("time.sleep(1.5)", "raise ValueError('again')")


def test_a_load_error_of_the_second_list_fails_that_list_only():
    program = Program(FAILS_TO_LOAD_THE_SECOND_TIME, "f", calls=[(0,), (1,), (2,)], time_limits=[1.0] * 3,
                      fresh_process_at=1)
    result = run_program(program)
    assert [c.status for c in result.calls] == ["returned", "error", "error"]
    assert result.calls[0].value == 0 and result.status == "load_error" and result.error == "ValueError: again"


def test_a_fork_failure_forged_by_the_child_of_the_first_list_is_its_load_error_not_the_sandboxs():
    """The child that runs the first list loads the program first: its forgery comes before the worker's own load."""
    program = Program(FORGED_FORK_FAILURE_AT_IMPORT, "add", calls=[(0, 1), (1, 2)], time_limits=[1.0] * 2,
                      fresh_process_at=1)
    result = run_program(program)
    assert result.status == "load_error" and result.error == "forged fork failure"
    assert [c.status for c in result.calls] == ["error", "error"] and result.workers == 1


@pytest.mark.skipif(_writable_root() is None, reason="no writable pids cgroup: the process limit is RLIMIT_NPROC")
def test_a_worker_that_cannot_fork_for_its_second_list_is_the_sandboxs_failure():
    """Before any candidate code ran: retried, then the sandbox's error (never the candidate's crash)."""
    program = Program(IDENTITY, "f", calls=[(0,), (1,)], time_limits=[1.0] * 2, fresh_process_at=1)
    result = run_program(program, SandboxLimits(max_processes=1))
    assert result.status == "sandbox_error" and result.workers == 0
    assert result.error == "worker could not fork: BlockingIOError: [Errno 11] Resource temporarily unavailable"

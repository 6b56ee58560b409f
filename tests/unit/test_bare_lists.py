"""perf/bare_lists.py, the executor benchmark's bare-lists, bare-candidates and bare-processes ways: real server and list processes on
small candidates whose values are known by hand (each input list, or each candidate, in a process of its own, failures
kept to their process or call)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "perf"))

from bare_lists import GRACE_S, run_lists  # noqa: E402

COUNTER = "n = [0]\ndef f(x):\n    n[0] += 1\n    return n[0]\n"
EXITS = "import os\ndef f(x):\n    if x:\n        os._exit(0)\n    return 7\n"
LOOPS = "def f(x):\n    while True:\n        pass\n"
SWALLOWS = ("def f(x):\n    while True:\n        try:\n            while True:\n                pass\n"
            "        except BaseException:\n            pass\n")
UNPICKLABLE = "def f(x):\n    return (lambda: 1) if x else 5\n"


def run(candidates, shape="lists"):
    """Run (code, inputs, fresh_at, part_limits) candidates; return what each list gave and the way's result."""
    problems, rows, seen = [], [], {}
    for number, (code, inputs, fresh_at, parts) in enumerate(candidates):
        problems.append(SimpleNamespace(entry_point="f", inputs=inputs))
        program = SimpleNamespace(time_limits=[0.3] * len(inputs), fresh_process_at=fresh_at, part_time_limits=parts)
        rows.append(SimpleNamespace(task=number, code=code, program=program))
    workload = SimpleNamespace(candidates=rows, problems=problems)

    def judge(workload, candidate, outcomes):
        seen[candidate.task] = outcomes
        return [returned for returned, _ in outcomes]

    result = run_lists(workload, 2, judge, lambda *args, **kwargs: (args, kwargs), load_limit=5.0,
                       memory_bytes=1 << 30, shape=shape)
    return seen, result


def test_each_list_runs_in_a_fresh_process_and_failures_stay_in_their_list_or_call():
    seen, (args, _) = run([(COUNTER, [(0,), (0,), (0,)], 1, None),
                           (EXITS, [(0,), (1,), (0,)], 1, None),
                           (LOOPS, [(0,), (0,)], None, None),
                           (UNPICKLABLE, [(1,), (0,)], None, None)])
    assert seen[0] == [(True, 1), (True, 1), (True, 2)]  # the plus list's process starts from the module again
    assert seen[1] == [(True, 7), (False, None), (False, None)]  # os._exit ends its own list only
    assert seen[2] == [(False, None), (False, None)]  # each call stopped at its 0.3 s limit
    assert seen[3] == [(False, None), (True, 5)]  # the lambda cannot be pickled: that call fails, not the list
    way, calls, _, passed, count, statuses = args
    assert (way, calls, passed, count) == ("bare-lists", 10, 1, 4)
    assert statuses == {"returned": 5, "not returned": 5}


@pytest.mark.timeout(60)  # a list that is never killed hangs the way: this fails it
def test_a_list_that_swallows_its_alarms_is_killed_at_its_cap():
    began = time.monotonic()
    seen, _ = run([(SWALLOWS, [(0,), (0,)], None, (0.5, 0.5))])
    assert seen[0] == [(False, None), (False, None)]
    assert time.monotonic() - began >= 0.5 + GRACE_S  # waited out its cap and the grace, not cut short


def test_one_process_a_candidate_carries_state_from_the_base_list_into_the_plus_list():
    seen, (args, kwargs) = run([(COUNTER, [(0,), (0,), (0,)], 1, None),
                                (EXITS, [(0,), (1,), (0,)], 1, None)], shape="candidates")
    assert seen[0] == [(True, 1), (True, 2), (True, 3)]  # one module load: the counter goes on across the lists
    assert seen[1] == [(False, None)] * 3  # os._exit before the process sent anything: the whole candidate fails
    assert args[0] == "bare-candidates"
    assert kwargs["note"] == "bare processes: one per candidate, 2 at a time; no sandbox"
    way, calls, _, passed, count, statuses = args
    assert (calls, passed, count, statuses) == (6, 1, 2, {"returned": 3, "not returned": 3})  # the counter returned


@pytest.mark.timeout(60)
def test_one_process_a_candidate_is_killed_at_the_sum_of_its_lists_caps():
    began = time.monotonic()
    seen, _ = run([(SWALLOWS, [(0,), (0,)], 1, (0.5, 0.5))], shape="candidates")
    assert seen[0] == [(False, None), (False, None)]
    assert time.monotonic() - began >= 1.0 + GRACE_S  # both lists' caps, then the grace


def test_a_candidate_that_does_not_compile_fails_both_lists_and_the_server_goes_on():
    seen, _ = run([("def f(:\n", [(0,), (0,)], 1, None), (COUNTER, [(0,)], None, None)])
    assert seen[0] == [(False, None), (False, None)]
    assert seen[1] == [(True, 1)]


def test_the_processes_alone_make_every_call_in_a_process_per_list_and_send_nothing(tmp_path):
    log = tmp_path / "calls.log"  # the only trace of the calls: what each list's process wrote
    logs = (f"import os\nn = [0]\ndef f(x):\n    n[0] += 1\n"
            f"    with open({str(log)!r}, 'a') as out:\n        out.write(f'{{os.getpid()}} {{n[0]}}\\n')\n    return x\n")
    seen, (args, kwargs) = run([(logs, [(0,), (1,), (2,)], 1, None), (COUNTER, [(0,)], None, None)], shape="processes")
    lines = [line.split() for line in log.read_text().splitlines()]
    assert [count for _, count in lines] == ["1", "1", "2"]  # three calls; the plus list's process loaded afresh
    assert len({pid for pid, _ in lines}) == 2  # one process a list
    assert seen == {}  # nothing to judge
    way, calls, _, passed, count, statuses = args
    assert (way, calls, passed, count, statuses) == ("bare-processes", 4, None, 2, {"run, not sent": 4})
    assert kwargs["verdicts"] is None
    assert kwargs["note"] == "bare processes: one per input list, 2 at a time; no sandbox; nothing sent back or judged"

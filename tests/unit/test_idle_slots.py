"""The claims on a program's second part (``sandbox.idle_slots``): whoever comes first has it, once."""

import pytest

from codea1_eval.sandbox import ExecResult, Program, SandboxLimits
from codea1_eval.sandbox.idle_slots import SecondParts

TWO_LISTS = Program("def f(x):\n    return x\n", "f", calls=[(0,), (1,), (2,)], time_limits=[1.0] * 3, fresh_process_at=1)


@pytest.mark.parametrize("fresh_process_at", [None, 0, 3])
def test_a_program_with_one_part_has_no_second_part_to_take(fresh_process_at):
    program = Program("", "f", calls=[(0,), (1,), (2,)], time_limits=[1.0] * 3, fresh_process_at=fresh_process_at)
    assert SecondParts(SandboxLimits()).open(program) is None


@pytest.mark.parametrize("grants", [("tmp",), ("tcp",)])
def test_workers_granted_anything_outside_their_folders_keep_both_parts(grants):
    """A ``tmp`` grant's /tmp is the worker's for both lists (a file the base list leaves there, the plus list sees)."""
    assert SecondParts(SandboxLimits(grants=grants)).open(TWO_LISTS) is None


def test_a_program_whose_second_part_only_its_total_deadline_bounds_keeps_it():
    program = Program("", "f", calls=[(0,), (1,)], time_limits=[1.0] * 2, fresh_process_at=1, total_time_limit=5.0)
    assert SecondParts(SandboxLimits()).open(program) is None
    with_parts = Program("", "f", calls=[(0,), (1,)], time_limits=[1.0] * 2, fresh_process_at=1, total_time_limit=5.0,
                         part_time_limits=(1.0, 1.0))
    assert SecondParts(SandboxLimits()).open(with_parts).program is with_parts


def test_the_first_claim_wins_and_a_kept_part_is_never_run_by_an_idle_slot():
    parts = SecondParts(SandboxLimits())
    kept, taken = parts.open(TWO_LISTS), parts.open(TWO_LISTS)
    assert kept.keep() and kept.keep()
    ran = []
    parts.run_taken(lambda part: ran.append(part) or ExecResult("ok", []))
    assert ran == [taken] and not taken.keep() and not kept.take()
    assert taken.result() == ExecResult("ok", [])


def test_a_closed_programs_part_is_not_taken():
    parts = SecondParts(SandboxLimits())
    parts.close(parts.open(TWO_LISTS))
    parts.run_taken(lambda part: pytest.fail("ran a closed program's part"))


def test_a_part_whose_run_raised_is_delivered_as_none_and_the_error_goes_on():
    parts = SecondParts(SandboxLimits())
    part = parts.open(TWO_LISTS)
    with pytest.raises(RuntimeError):
        parts.run_taken(lambda part: (_ for _ in ()).throw(RuntimeError("no worker")))
    assert part.result() is None and not part.keep()


class _Worker:
    def __init__(self):
        self.killed = 0

    def kill(self):
        self.killed += 1


class _Session:
    def __init__(self):
        self.process = _Worker()


def test_abandon_kills_the_attached_worker_only_and_no_worker_attaches_after_it():
    part = SecondParts(SandboxLimits()).open(TWO_LISTS)
    assert part.take()
    done, current = _Session(), _Session()
    assert part.attach(done)
    part.detach()  # done with it: it may be reaped, its pid reused
    assert part.attach(current)
    part.abandon()
    assert (done.process.killed, current.process.killed) == (0, 1)
    assert not part.attach(_Session())

"""The claims on a program's second part (``sandbox.idle_slots``): whoever comes first has it, once."""

import pytest

from codea1_eval.sandbox import ExecResult, Program
from codea1_eval.sandbox.idle_slots import SecondParts

TWO_LISTS = Program("def f(x):\n    return x\n", "f", calls=[(0,), (1,), (2,)], time_limits=[1.0] * 3, fresh_process_at=1)


@pytest.mark.parametrize("fresh_process_at", [None, 0, 3])
def test_a_program_with_one_part_has_no_second_part_to_take(fresh_process_at):
    program = Program("", "f", calls=[(0,), (1,), (2,)], time_limits=[1.0] * 3, fresh_process_at=fresh_process_at)
    assert SecondParts().open(program) is None


def test_the_first_claim_wins_and_a_kept_part_is_never_run_by_an_idle_slot():
    parts = SecondParts()
    kept, taken = parts.open(TWO_LISTS), parts.open(TWO_LISTS)
    assert kept.keep() and kept.keep()
    ran = []
    parts.run_taken(lambda program: ran.append(program) or ExecResult("ok", []))
    assert ran == [TWO_LISTS] and not taken.keep() and not kept.take()
    assert taken.result() == ExecResult("ok", [])


def test_a_closed_programs_part_is_not_taken():
    parts = SecondParts()
    parts.close(parts.open(TWO_LISTS))
    parts.run_taken(lambda program: pytest.fail("ran a closed program's part"))


def test_a_part_whose_run_raised_is_delivered_as_none_and_the_error_goes_on():
    parts = SecondParts()
    part = parts.open(TWO_LISTS)
    with pytest.raises(RuntimeError):
        parts.run_taken(lambda program: (_ for _ in ()).throw(RuntimeError("no worker")))
    assert part.result() is None and not part.keep()

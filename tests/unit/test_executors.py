"""`--executor` specs: the local pool by default, registry errors for unknown names."""

from __future__ import annotations

import pytest

from codea1_eval.errors import UserError
from codea1_eval.sandbox import Executor, Program, make_executor


def test_local_is_the_engine_pool_and_runs_programs():
    executor = make_executor("local", parallel=2)
    assert type(executor) is Executor and executor.parallel == 2
    results = executor.map([Program("def f(x):\n    return 2 * x\n", "f", calls=[(3,)])])
    assert results[0].calls[0].value == 6


@pytest.mark.parametrize("spec, message", [("local:somewhere", "takes no address"),
                                           ("rayy", "unknown executor 'rayy'. Did you mean 'ray'")])
def test_bad_specs_are_user_errors(spec, message):
    with pytest.raises(UserError, match=message):
        make_executor(spec)


def test_a_ray_node_weaker_than_the_driver_runs_nothing(monkeypatch):
    """A node whose workers would get a lower Landlock ABI, or no seccomp fence where the driver's have one, returns a
    sandbox error for every program of its batch instead of running them less confined than the manifest says."""
    import platform

    from codea1_eval.sandbox import SandboxLimits, executors

    program = Program("def f(x):\n    return 2 * x\n", "f", calls=[(3,), (4,)], time_limits=[5.0] * 2)
    [lower] = executors._run_batch([program], SandboxLimits(), [], landlock_abi=99)
    assert lower.status == "sandbox_error" and [c.status for c in lower.calls] == ["crash", "crash"]
    assert lower.error.startswith(f"node {platform.node()} has Landlock ABI ") and lower.error.endswith(
        "at the 'process' level, below the driver's 99")
    monkeypatch.setattr(executors, "worker_fence", lambda: None)
    [unfenced] = executors._run_batch([program], SandboxLimits(), [], landlock_abi=0, fenced=True)
    assert unfenced.error == f"node {platform.node()} has no seccomp fence for its workers (the driver's have one)"
    [ran] = executors._run_batch([program], SandboxLimits(), [], landlock_abi=0, fenced=False)
    assert ran.status == "ok" and [c.value for c in ran.calls] == [6, 8]


def test_a_program_with_fewer_time_limits_than_calls_is_refused_when_made():
    with pytest.raises(ValueError, match=r"^a program with 2 calls needs a time limit for each, got 1$"):
        Program("def f(x):\n    return x\n", "f", calls=[(1,), (2,)])

"""Where candidate programs run (``--executor``): this machine's worker pool, or a Ray cluster.

``local`` is :class:`~codea1_eval.sandbox.engine.Executor`. ``ray`` sends batches of programs as Ray
tasks (one CPU each); a task runs its batch through the same engine on the node it lands on, so each
node runs our own worker processes with the same limits and isolation, and results are identical to
the local executor's. Spec forms: ``ray`` (the cluster in ``$RAY_ADDRESS``, else a running local
one, else a new one on this machine), ``ray:HOST:PORT`` (a cluster's GCS address, this machine being
one of its nodes) and ``ray://HOST:PORT`` (Ray Client). Every node needs codea1-eval installed.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from codea1_eval.errors import SandboxError, UserError
from codea1_eval.registry import Registry
from codea1_eval.sandbox.engine import (CRASH, RETURNED, SANDBOX_ERROR, CallResult, ExecResult, Executor, Program,
                                       SandboxLimits, require_sandbox, run_program)
from codea1_eval.sandbox.forkserver import prestart
from codea1_eval.sandbox.landlock import abi_in_force, worker_fence

RAY_INSTALL = "pip install 'codea1-eval[ray]'"
RAY_BATCH = 8
"""Programs per Ray task: large enough to amortise a task's overhead, small enough to balance nodes."""


def _run_batch(programs: list[Program], limits: SandboxLimits, hidden: list[Path], landlock_abi: int,
               fenced: bool = False) -> list[ExecResult]:
    """A Ray task: the programs of one batch, one after another, through the node's own engine (the
    driver checks each result with ``require_sandbox``). A node whose workers would get a lower Landlock
    ABI than the driver's (an older kernel, ``CODEA1_LANDLOCK`` set otherwise), or no seccomp fence where the
    driver's have one (``fenced``), runs nothing: the run's manifest records the driver's protections."""
    node_abi = abi_in_force(limits.isolation)
    error = None
    if node_abi < landlock_abi:
        error = (f"node {platform.node()} has Landlock ABI {node_abi} at the '{limits.isolation}' level, "
                 f"below the driver's {landlock_abi}")
    elif fenced and limits.isolation == "process" and worker_fence() is None:  # (bwrap's namespace contains it)
        error = f"node {platform.node()} has no seccomp fence for its workers (the driver's have one)"
    if error is not None:
        return [ExecResult(SANDBOX_ERROR, [CallResult(CRASH, error=error)] * program.n_calls, error)
                for program in programs]
    return [run_program(program, limits, hidden) for program in programs]


class RayExecutor(Executor):
    """Runs programs as Ray tasks on a Ray cluster; ``parallel`` is unused (Ray schedules by CPUs)."""

    def __init__(self, address: str | None, limits: SandboxLimits = SandboxLimits(), parallel: int | None = None,
                 hidden: Sequence[Path] = ()):
        super().__init__(limits, parallel, hidden)
        try:
            import ray
        except ImportError:
            raise UserError(f"--executor ray needs Ray: {RAY_INSTALL}") from None
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UserError(f"cannot connect to the Ray cluster at {address or 'auto'}: {exc}") from None
        self._task = ray.remote(num_cpus=1, max_retries=2)(_run_batch)

    def map_unordered(self, programs: Iterable[Program]) -> Iterator[tuple[int, ExecResult]]:
        import ray

        programs = list(programs)
        pending = {}
        for start in range(0, len(programs), RAY_BATCH):
            batch = programs[start:start + RAY_BATCH]
            pending[self._task.remote(batch, self.limits, self.hidden, abi_in_force(self.limits.isolation),
                                      worker_fence() is not None)] = start
        while pending:
            (done,), _ = ray.wait(list(pending), num_returns=1)
            start = pending.pop(done)
            for offset, result in enumerate(ray.get(done)):
                yield start + offset, require_sandbox(result, self.limits.isolation)


def _ray_executor(argument: str, limits: SandboxLimits, parallel: int | None, hidden: Sequence[Path]) -> Executor:
    if argument.startswith("//"):
        address = "ray:" + argument
    else:
        address = argument or None
    return RayExecutor(address, limits, parallel, hidden)


def _local_executor(argument: str, limits: SandboxLimits, parallel: int | None, hidden: Sequence[Path]) -> Executor:
    if argument:
        raise UserError("the local executor takes no address: write just 'local'")
    return Executor(limits, parallel, hidden)


EXECUTORS: Registry = Registry("executor")
EXECUTORS.register("local", _local_executor, help="this machine's worker processes (default)")
EXECUTORS.register("ray", _ray_executor, help="a Ray cluster: ray | ray:HOST:PORT | ray://HOST:PORT")


def prestart_executor(spec: str, isolation: str) -> None:
    """Let the executor ``spec`` names get ready while the caller loads its benchmark: the local one's sandbox
    template starts now, so that ``make_executor``'s canary finds it ready."""
    if _parse_spec(spec)[0] == "local":
        prestart(isolation)


def _parse_spec(spec: str) -> tuple[str, str]:
    name, _, argument = spec.strip().partition(":")
    return name, argument


CANARY = Program("def canary(x):\n    return x + 1\n", "canary", calls=[(41,)], time_limits=[30.0])
"""A trivial program every run executes first: a sandbox that cannot run it stops the run at once."""


def check_sandbox(executor: Executor) -> None:
    """Run the canary through ``executor`` (its isolation level, its nodes); SandboxError, naming the
    cause, unless it returns 42. Called before any model generates or any candidate is judged."""
    result = executor.map([CANARY])[0]  # a worker that cannot start raises SandboxError here
    call = result.calls[0]
    if call.status != RETURNED or call.value != 42:
        raise SandboxError(f"the sandbox canary at the '{executor.limits.isolation}' isolation level failed "
                           f"({result.status}, {call.status}: {call.error or call.value!r})")


def make_executor(spec: str, limits: SandboxLimits = SandboxLimits(), parallel: int | None = None,
                  hidden: Sequence[Path] = ()) -> Executor:
    """The executor an ``--executor`` spec names (``local``, ``ray``, ``ray:HOST:PORT``, ``ray://HOST:PORT``),
    checked with the canary program."""
    name, argument = _parse_spec(spec)
    executor = EXECUTORS.get(name)(argument, limits, parallel, hidden)
    check_sandbox(executor)
    return executor

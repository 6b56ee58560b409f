"""Sandboxed execution of untrusted programs: workers, limits, isolation, trusted comparison."""

from codea1_eval.sandbox.engine import (
    CRASH, ERROR, FAIL, OK, RETURNED, SANDBOX_ERROR, SKIPPED, TIMEOUT,
    CallResult, ExecResult, Executor, Program, SandboxLimits, run_program,
)
from codea1_eval.sandbox.digest_time import digest_allowances
from codea1_eval.sandbox.executors import EXECUTORS, make_executor, prestart_executor

__all__ = [
    "CRASH", "ERROR", "FAIL", "OK", "RETURNED", "SANDBOX_ERROR", "SKIPPED", "TIMEOUT",
    "CallResult", "EXECUTORS", "ExecResult", "Executor", "Program", "SandboxLimits", "digest_allowances",
    "make_executor", "prestart_executor", "run_program",
]

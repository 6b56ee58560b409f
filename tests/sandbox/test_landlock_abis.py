"""The worker's confinement at every Landlock ABI this kernel offers (``CODEA1_LANDLOCK=N``), as a user on an
older kernel gets it: what each ABI contains, seen by a real worker, and what the manifest would say."""

from __future__ import annotations

import errno
import socket
import subprocess

import pytest

from codea1_eval.sandbox.engine import RETURNED, Program, SandboxLimits, run_program
from codea1_eval.sandbox.landlock import kernel_abi, protections

PROBE = """
import os, socket
def f(outside, secret, port, pid):
    def attempt(action):
        try:
            action()
        except OSError as exc:
            return exc.errno
        return "done"
    return {
        "write": attempt(lambda: open(outside + ".new", "w").write("x")),
        "read": attempt(lambda: open(secret).read()),
        "truncate": attempt(lambda: os.truncate(outside, 0)),
        "tcp": attempt(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close()),
        "signal": attempt(lambda: os.kill(pid, 0)),
    }
"""


@pytest.mark.parametrize("abi", range(1, kernel_abi() + 1))
def test_each_abi_contains_what_it_promises(abi, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEA1_LANDLOCK", str(abi))
    outside, secret = tmp_path / "outside.txt", tmp_path / "secret.txt"
    outside.write_text("kept")
    secret.write_text("expected outputs")
    sibling = subprocess.Popen(["sleep", "60"])
    try:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            program = Program(PROBE, "f", calls=[(str(outside), str(secret), listener.getsockname()[1], sibling.pid)],
                              time_limits=[5.0])
            result = run_program(program, SandboxLimits())
    finally:
        sibling.kill()
        sibling.wait()
    assert result.calls[0].status == RETURNED, result.calls[0].error
    assert result.calls[0].value == {
        "write": errno.EACCES, "read": errno.EACCES,
        "truncate": errno.EACCES if abi >= 3 else "done",
        "tcp": errno.EACCES if abi >= 4 else "done",
        "signal": errno.EPERM if abi >= 6 else "done",
    }
    assert outside.read_text() == ("kept" if abi >= 3 else "") and not (tmp_path / "outside.txt.new").exists()
    in_force = protections("process")
    assert (in_force["landlock_abi"], in_force["files"], in_force["truncate"], in_force["network"],
            in_force["signals"]) == (abi, True, abi >= 3, abi >= 4, abi >= 6)

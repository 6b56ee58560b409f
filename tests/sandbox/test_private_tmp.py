"""Workers granted the machine's /tmp (BigCodeBench's grant) each get a copy-on-write /tmp of their own:
two programs that write, read and remove one fixed /tmp path at the same time no longer race, what was
in /tmp before stays readable, and nothing they write or remove reaches the machine's /tmp."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest

from codea1_eval.sandbox import private_tmp
from codea1_eval.sandbox.engine import ERROR, RETURNED, Executor, Program, SandboxLimits
from codea1_eval.sandbox.landlock import kernel_abi


# setUp/tearDown as BigCodeBench/30's tests do them, with a pause in the middle so that two runs overlap.
FIXED_PATH = """
import os, time
def f(path, mine, shared):
    with open(path, "w") as handle:
        handle.write(mine)
    time.sleep(0.5)
    with open(path) as handle:
        seen = handle.read()
    os.remove(path)
    os.remove(shared)
    return [seen, os.path.exists(shared), os.getcwd() == os.environ["TMPDIR"], open("here.txt", "w").write("x")]
"""


@pytest.mark.skipif(not private_tmp.supported(), reason="no mount namespace on this machine")
@pytest.mark.parametrize("forkserver", ["auto", "off"])
def test_two_programs_on_one_fixed_tmp_path_each_see_their_own(forkserver, monkeypatch, tmp_path):
    monkeypatch.setenv("CODEA1_FORKSERVER", forkserver)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the workers' folders and layers: only ours here
    token = uuid.uuid4().hex
    fixed, shared = Path(f"/tmp/codea1_fixed_{token}.json"), Path(f"/tmp/codea1_shared_{token}.txt")
    shared.write_text("on the machine")
    try:
        programs = [Program(FIXED_PATH, "f", calls=[(str(fixed), mine, str(shared))], time_limits=[10.0])
                    for mine in ("first", "second")]
        results = Executor(SandboxLimits(grants=("tmp",)), parallel=2).map(programs)
        calls = [result.calls[0] for result in results]
        assert [call.status for call in calls] == [RETURNED, RETURNED], [call.error for call in calls]
        assert [call.value for call in calls] == [["first", False, True, 1], ["second", False, True, 1]]
        # Both removed the shared file and wrote the fixed one, in their own layers only.
        assert shared.read_text() == "on the machine" and not fixed.exists()
        assert os.listdir(tmp_path) == []  # working folders and layers removed
    finally:
        shared.unlink(missing_ok=True)
        fixed.unlink(missing_ok=True)


@pytest.mark.skipif(kernel_abi() < 1, reason="no Landlock on this kernel")
def test_without_the_grant_the_worker_keeps_the_machines_tmp_unwritable():
    token = uuid.uuid4().hex
    program = Program("def f(path):\n    open(path, 'w').write('x')\n", "f",
                      calls=[(f"/tmp/codea1_fixed_{token}",)], time_limits=[5.0])
    result = Executor(SandboxLimits(), parallel=1).run(program)
    assert result.calls[0].status == ERROR and "Permission denied" in result.calls[0].error
    assert not Path(f"/tmp/codea1_fixed_{token}").exists()


LINK_IN_TMP = """
import os
def f(victim, name):
    os.symlink(victim, "/tmp/" + name)  # in the worker's own upper layer, which the harness deletes afterwards
    os.mkdir("/tmp/" + name + "_shut")
    os.chmod("/tmp/" + name + "_shut", 0)
    return os.path.isdir("/tmp/" + name)
"""


@pytest.mark.skipif(not private_tmp.supported(), reason="no mount namespace on this machine")
def test_a_link_left_in_the_private_tmp_is_removed_without_touching_its_target(monkeypatch, tmp_path,
                                                                                 tmp_path_factory):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the workers' folders and layers: only ours here
    victim = tmp_path_factory.mktemp("victim")
    victim.chmod(0o755)
    name = f"codea1_link_{uuid.uuid4().hex}"
    program = Program(LINK_IN_TMP, "f", calls=[(str(victim), name)], time_limits=[10.0])
    result = Executor(SandboxLimits(grants=("tmp",)), parallel=1).run(program)
    assert (result.calls[0].status, result.calls[0].value) == (RETURNED, True), result.calls[0].error
    # The harness removed the layers, the folder of mode 000 included, and left the link's target as it was
    # (it used to make every folder it found there 0700 before removing it, following links).
    assert oct(victim.stat().st_mode & 0o7777) == "0o755" and victim.is_dir()
    assert os.listdir(tmp_path) == [] and not Path("/tmp", name).exists()

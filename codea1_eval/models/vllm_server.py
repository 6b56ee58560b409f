"""Start and stop a vLLM OpenAI-compatible server on loopback (for tests, benchmarks and local runs).

The server runs in its own process group, so stopping it also stops the engine processes it spawns.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from codea1_eval.errors import UserError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalVLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` serving ``model_dir`` as ``served_name``.

    Defaults are the CPU settings of the offline backend (float32, eager, no chunked prefill; see
    :class:`~codea1_eval.models.vllm_backend.VLLMBackend`), so both engines compute alike.
    """

    CPU_ARGS = ("--enforce-eager", "--no-enable-chunked-prefill")

    def __init__(self, model_dir: str | Path, served_name: str = "model", port: int | None = None,
                 max_model_len: int = 4096, dtype: str = "float32", extra_args: tuple[str, ...] = CPU_ARGS):
        self.model_dir, self.served_name = str(model_dir), served_name
        self.port = port or free_port()
        self.command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model_dir,
                        "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(self.port),
                        "--dtype", dtype, "--max-model-len", str(max_model_len), *extra_args]
        self.process: subprocess.Popen | None = None
        self.log = Path(tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        """The model spec that reaches this server: ``openai:NAME@URL``."""
        return f"openai:{self.served_name}@{self.base_url}"

    def start(self, timeout: float = 600) -> LocalVLLMServer:
        """Launch and wait until ``/v1/models`` answers; a server that dies first is an error."""
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise UserError(f"vLLM server exited with status {self.process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(1)
        self.stop()
        raise UserError(f"vLLM server did not answer within {timeout:.0f} s: {self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the whole server process group at once (a crash, as far as clients can tell)."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def stop(self, grace: float = 30) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after ``grace`` seconds."""
        if self.process is None or self.process.poll() is not None:
            self._signal(signal.SIGKILL)  # reap stragglers of the group, if any
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
        self._signal(signal.SIGKILL)
        self.process.wait()

    def _signal(self, signum: int) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass

    def log_tail(self, lines: int = 5) -> str:
        text = self.log.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "(no output)"

    def __enter__(self) -> LocalVLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

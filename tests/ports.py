"""A free local TCP port, for launches that would otherwise all take accelerate's default 29500 (pytest-xdist
runs two test files' launches at once)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on at this moment."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

"""What the kernel says about one of this process's descriptors: a numeric field of ``/proc/self/fdinfo/<fd>``."""

from __future__ import annotations


def fdinfo_number(descriptor: int, field: str) -> int | None:
    """The decimal number on the ``field:`` line of the descriptor's fdinfo (``mnt_id`` of any file, ``Pid`` of a
    pidfd); None where there is no such line or it cannot be read."""
    prefix = field.encode() + b":"
    try:
        with open(f"/proc/self/fdinfo/{descriptor}", "rb") as info:
            for line in info:
                if line.startswith(prefix):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None

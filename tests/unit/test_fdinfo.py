"""sandbox/fdinfo.py and forked_worker.pid_of: fields of /proc/self/fdinfo read from real descriptors."""

from __future__ import annotations

import os
import time

from codea1_eval.sandbox.fdinfo import fdinfo_number
from codea1_eval.sandbox.forked_worker import pid_of


def test_a_pidfd_gives_its_process_pid_then_minus_one_once_it_is_reaped():
    child = os.fork()
    if child == 0:
        time.sleep(0.2)
        os._exit(0)
    pidfd = os.pidfd_open(child)
    try:
        assert pid_of(pidfd) == child
        os.waitpid(child, 0)
        assert pid_of(pidfd) == -1  # the kernel's word for a process that has ended
    finally:
        os.close(pidfd)


def test_a_field_the_descriptor_lacks_or_a_closed_descriptor_reads_as_none_and_pid_of_as_zero():
    read, write = os.pipe()
    os.close(write)
    try:
        assert fdinfo_number(read, "Pid") is None  # a pipe is no pidfd
        assert pid_of(read) == 0
        assert fdinfo_number(write, "pos") is None  # closed
        assert fdinfo_number(read, "pos") == 0
    finally:
        os.close(read)


def test_the_mount_id_is_that_of_the_mount_the_file_is_on():
    with open("/proc/self/mountinfo") as table:  # mount id, parent id, major:minor, root, mount point, ...
        mounts = {fields[4]: int(fields[0]) for fields in (line.split() for line in table)}
    descriptor = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert fdinfo_number(descriptor, "mnt_id") == mounts["/proc"]
    finally:
        os.close(descriptor)

"""CPU seconds of a benchmark's whole process tree, fork-server workers included (shared by the perf scripts)."""

from __future__ import annotations

import resource

import psutil

from codea1_eval.sandbox.forkserver import template_pids


def process_tree_cpu() -> float:
    """CPU seconds used so far by this process (all threads), its reaped children, and the fork-server
    templates with the workers they reaped (a template is reaped only when it ends)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    for pid in template_pids():
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        seconds += times.user + times.system + times.children_user + times.children_system
    return seconds

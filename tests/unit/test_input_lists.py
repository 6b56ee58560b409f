"""``sandbox/input_lists.serve_jobs``: which fork failures a serving worker may report as the sandbox's own (only
before any process of the job ran candidate code: the first part's), with ``part_process`` stood in for."""

from __future__ import annotations

import importlib.util

import pytest

from codea1_eval.sandbox.forkserver import WORKER_SCRIPT


@pytest.fixture
def input_lists():
    spec = importlib.util.spec_from_file_location("input_lists_under_test", WORKER_SCRIPT.with_name("input_lists.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


JOB = {"fresh_at": 2, "start": 0, "stop": 5, "guard": False}


@pytest.mark.parametrize("failing_part, after_candidate_code", [(0, False), (1, True)])
def test_a_fork_failure_says_whether_an_earlier_part_ran(input_lists, monkeypatch, failing_part, after_candidate_code):
    parts = []

    def part_process(fresh_folder, prepare=None):
        parts.append(fresh_folder)
        if len(parts) - 1 == failing_part:
            raise OSError(11, "Resource temporarily unavailable")
        return False  # the parent, once the part's process ended well

    monkeypatch.setattr(input_lists, "part_process", part_process)
    with pytest.raises(OSError) as raised:
        input_lists.serve_jobs(dict(JOB), next_job=None, served=None, close_jobs=None, prepare=None)
    assert raised.value.after_candidate_code is after_candidate_code
    assert parts == [False, True][:failing_part + 1]  # the second part in a new folder


def test_each_part_runs_in_its_own_process_and_the_job_is_served_after_the_last(input_lists, monkeypatch):
    events = []

    def part_process(fresh_folder, prepare=None):
        events.append(("fork", fresh_folder))
        return False

    def next_job():
        events.append("next")
        raise SystemExit  # the harness is done

    monkeypatch.setattr(input_lists, "part_process", part_process)
    with pytest.raises(SystemExit):
        input_lists.serve_jobs(dict(JOB), next_job, lambda: events.append("served"), None, None)
    assert events == [("fork", False), ("fork", True), "served", "next"]

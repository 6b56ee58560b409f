"""`codea1-eval view` page data and HTML without a browser: every fixture run dir of tests/fixtures/runs
(older run dirs with only manifest.json and metrics.json, or a train log) gets a page, and text from a run
(a generated response) can never close the page's data block or script."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codea1_eval.tables.index import load_run
from codea1_eval.view import view_data
from codea1_eval.view.page import render_page

RUNS = sorted((Path(__file__).parents[1] / "fixtures" / "runs").iterdir())


def _embedded(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page, re.S)
                      .group(1))


@pytest.mark.parametrize("run_dir", RUNS, ids=[path.name for path in RUNS])
def test_every_fixture_run_dir_gets_a_page_with_its_metrics(run_dir):
    data = view_data(run_dir)
    run = load_run(run_dir)
    expected = ([record.key for record in run.records] if run.command != "train" else
                [key for key, value in run.metrics.items() if isinstance(value, (int, float))])
    assert [metric["key"] for metric in data["summary"]["metrics"]] == expected
    assert data["summary"]["settings"] == run.config
    assert _embedded(render_page(data)) == data


def test_run_text_cannot_close_the_data_block_or_the_script():
    hostile = "</script><script>alert(1)</script><!--"
    data = {"title": "t </title>", "summary": {"metrics": [], "settings": {"x": hostile}, "provenance": {}},
            "charts": [], "tasks": [{"id": hostile, "status": "fail", "items": [{"kind": "text", "text": hostile}]}],
            "tasks_title": "Tasks"}
    page = render_page(data)
    assert page.count("</script>") == 2  # the data block's and the page script's, nothing from the run
    block = re.search(r'id="run-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in block  # no "<!--" or "<script" either, which would change how the parser reads it
    assert "<title>t &lt;/title&gt;</title>" in page
    assert _embedded(page) == data

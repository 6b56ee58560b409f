"""How long a big `codea1-eval view` page takes to load and filter in Debian's headless Chromium.

    python perf/view.py                 # 1,000 task rows x 32 samples each (an avg run's shape)
    python perf/view.py --tasks 164 --samples 32

The page is built with the same renderer as every run's page, from synthetic rows shaped like an avg
run's (a response of about 600 characters per sample, a status per task). Prints the load time (navigation
to the page's script having built every row), the time of one status filter and one search, and each
against the 2 s target of issue 24.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from codea1_eval.view.page import render_page  # noqa: E402

TARGET_S = 2.0


def page_data(tasks: int, samples: int) -> dict:
    response = "```python\ndef f(x):\n" + "    x = x + 1  # a line of a generated program\n" * 12 + "    return x\n```"
    rows = []
    for task in range(tasks):
        items = [{"kind": "sample", "index": i, "passed": task % 3 == 2 or (task % 3 == 1 and i % 2 == 0), "verdict": "base pass / plus pass",
                  "response": response, "code_start": 10, "code_end": len(response) - 3, "detail": None}
                 for i in range(samples)]
        passed = sum(item["passed"] for item in items)
        rows.append({"id": f"Task/{task}", "status": "pass" if passed == samples else "mixed" if passed else "fail",
                     "counts": f"{passed}/{samples} samples pass", "items": items, "search": ""})
    return {"title": "perf", "summary": {"metrics": [], "settings": {}, "provenance": {}}, "charts": [],
            "tasks": rows, "tasks_title": "Tasks"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=32)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        page_file = Path(scratch) / "page.html"
        page_file.write_text(render_page(page_data(args.tasks, args.samples)))
        size_mb = page_file.stat().st_size / 2**20
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=["--no-sandbox"])
            page = browser.new_page()
            started = time.perf_counter()
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            load_s = time.perf_counter() - started
            before = page.locator("#shown").inner_text()
            started = time.perf_counter()
            page.select_option("#status", "fail")  # the handler runs before select_option returns
            page.wait_for_function(f"document.getElementById('shown').textContent !== {before!r}")
            filter_s = time.perf_counter() - started
            started = time.perf_counter()
            page.fill("#search", "task/99")
            shown = page.locator("#shown").inner_text()
            search_s = time.perf_counter() - started
            browser.close()
    print(f"page: {args.tasks} task rows x {args.samples} samples, {size_mb:.1f} MiB")
    for name, seconds in (("load", load_s), ("status filter", filter_s), ("search", search_s)):
        print(f"{name}: {seconds:.3f} s (target {TARGET_S} s: {seconds / TARGET_S:.2f} of it)")
    print(f"after the search: {shown}")


if __name__ == "__main__":
    main()

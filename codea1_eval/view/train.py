"""The `train` page: reward and Mistake Book curves from ``train_log.jsonl``, and the rollouts of every
step from ``rollouts.jsonl`` (one row per step and question: each code's reward and its suites)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from codea1_eval.tables.run_records import rows
from codea1_eval.tables.index import Run

if TYPE_CHECKING:
    from codea1_eval.view import ViewOptions

CURVES = (("rewards", ("code_reward", "test_reward", "r_val", "r_adv")),
          ("Mistake Book", ("mistake_book_size", "history_pass_rate")))


def train_view(run: Run, options: "ViewOptions") -> dict[str, Any]:
    """Page data of a `train` run (see the module doc)."""
    charts = [{"title": title, "x": "step", "series": [
        {"label": key, "points": [[line["step"], line.get(key)] for line in run.train_log]} for key in keys]}
        for title, keys in CURVES]
    tasks = []
    for row in rows(run.path, "rollouts.jsonl"):
        codes = row.get("codes", [])
        rewards = [code.get("reward", 0.0) for code in codes]
        table = {"kind": "table", "title": "codes: reward, defines, suites (reward, R_val, R_adv, kept tests)",
                 "columns": ["code", "reward", "defines", "suites"],
                 "rows": [[index, code.get("reward"), code.get("defines"),
                           "; ".join(f"{s.get('reward', 0):.2f} ({s.get('r_val', 0):.2f}, {s.get('r_adv', 0):.2f}, "
                                     f"{len(s.get('kept_tests', []))})" for s in code.get("suites", []))]
                          for index, code in enumerate(codes)]}
        responses = [{"kind": "text", "text": f"# code {index} (reward {code.get('reward', 0):.2f})\n"
                                              f"{code.get('response', '')}"} for index, code in enumerate(codes)]
        history = {"kind": "text", "text": "Mistake Book tests read: " + json.dumps(row.get("history_tests", []))}
        best = max(rewards, default=0.0)
        tasks.append({"id": f"step {row.get('step')} · {row.get('question_id')}",
                      "status": "rewarded" if best > 0 else "unrewarded",
                      "counts": f"{len(codes)} codes, best reward {best:.2f}", "items": [table, history, *responses]})
    return {"tasks": tasks, "tasks_title": "Rollouts (step · question)", "charts": charts}

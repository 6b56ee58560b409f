"""Table 3 (`table --layout ablations`): rows told apart by the training records that evaluation runs
carry in their manifests. The runs are the real fixtures of tests/fixtures/runs, copied with a training
record added as `train`'s checkpoints leave it; each cell must equal the metrics.json it came from."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from codea1_eval.errors import UserError
from codea1_eval.tables import load_runs
from codea1_eval.tables.layouts import ablations_table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "runs"


def _trained_copy(tmp_path: Path, fixture: str, ablations: list[str] | None, mode: str = "code-a1") -> Path:
    """A copy of ``fixture`` whose model was a checkpoint `train` wrote with ``ablations`` (None: no record)."""
    target = tmp_path / f"{fixture}-{'-'.join(ablations or ['none'])}-{mode}"
    shutil.copytree(FIXTURES / fixture, target)
    manifest = json.loads((target / "manifest.json").read_text())
    section = "generation" if manifest["command"] == "avg" else "tester"
    if ablations is not None:
        manifest.setdefault(section, {})["training"] = {"schema": 1, "mode": mode, "alpha": 0.5,
                                                        "ablations": ablations, "step": 3}
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


def _metric(fixture: str, key: str) -> float:
    return json.loads((FIXTURES / fixture / "metrics.json").read_text())[key]


def test_one_row_per_variant_in_the_paper_order_with_each_number_from_its_run(tmp_path):
    paths = [_trained_copy(tmp_path, "avg-humaneval-mutants", ["no-mistake-book"]),
             _trained_copy(tmp_path, "avg-humaneval-smollm2", ["no-code-access"]),
             _trained_copy(tmp_path, "avg-mbpp-smollm2", ["no-code-access"]),
             _trained_copy(tmp_path, "avg-humaneval-canonical", []),
             _trained_copy(tmp_path, "avg-mbpp-canonical", []),
             _trained_copy(tmp_path, "mul-smollm2", []),
             _trained_copy(tmp_path, "mul-reference-inputs", ["no-predicted-answer"])]
    table = ablations_table(load_runs(paths))
    assert table.columns == ["HumanEval+ avg@1", "MBPP+ avg@1", "Mean", "HumanEval+ Mul@2 (cond.)"]
    assert [label for label, _ in table.rows] == ["Code-A1", "w/o code access", "w/o predicted answer",
                                                  "w/o Mistake Book"]
    values = {label: [cell.value for cell in cells] for label, cells in table.rows}
    assert values == {
        "Code-A1": [100.0, 100.0, 100.0, _metric("mul-smollm2", "mul@2_conditional")],
        "w/o code access": [0.0, 0.0, 0.0, None],
        "w/o predicted answer": [None, None, None, _metric("mul-reference-inputs", "mul@2_conditional")],
        "w/o Mistake Book": [0.0, None, None, None],  # no MBPP+ run: no mean
    }
    assert table.rows[0][1][0].source.endswith("/metrics.json:avg@1")


def test_runs_without_a_code_a1_training_record_are_refused(tmp_path):
    plain = _trained_copy(tmp_path, "avg-humaneval-canonical", None)
    golden = _trained_copy(tmp_path, "avg-mbpp-canonical", [], mode="golden")
    for path in (plain, golden):
        with pytest.raises(UserError, match=re.escape(f"{path.name}: its coder was not trained by `codea1-eval "
                                                      "train --mode code-a1`")):
            ablations_table(load_runs([path]))


def test_two_runs_of_one_variant_on_one_benchmark_are_refused(tmp_path):
    first = _trained_copy(tmp_path, "avg-humaneval-canonical", [])
    second = _trained_copy(tmp_path, "avg-humaneval-mutants", [])
    with pytest.raises(UserError, match=re.escape(f"two runs for Code-A1 on humaneval+: {first.name} and "
                                                  f"{second.name}")):
        ablations_table(load_runs([first, second]))

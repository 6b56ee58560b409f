"""Figures from the fixture run dirs: each PNG and PDF is written, non-empty, and its metadata holds
the axes labels the figure was drawn with (read back with PIL)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from codea1_eval.tables import load_runs
from codea1_eval.tables.plots import plot_runs

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def _labels(path: Path) -> list[str]:
    image = Image.open(path)
    assert image.size[0] > 300 and image.size[1] > 200 and image.getextrema() != ((255, 255),) * 4
    return image.text["Description"].splitlines()


def test_every_figure_is_drawn_with_its_axes_labels(tmp_path):
    runs = load_runs([RUNS / "bon-humaneval", *(RUNS / f"train-alpha{a}" for a in ("0.0", "0.5", "1.0"))])
    written = plot_runs(runs, tmp_path)
    assert sorted(p.name for p in written) == sorted(
        f"{stem}.{ext}" for stem in ("bon-curves-bon-humaneval", "train-dynamics-train-alpha0.0",
                                     "train-dynamics-train-alpha0.5", "train-dynamics-train-alpha1.0",
                                     "alpha-ablation") for ext in ("png", "pdf"))
    for path in written:
        assert path.stat().st_size > 1000
        if path.suffix == ".pdf":
            assert path.read_bytes().startswith(b"%PDF")
    assert _labels(tmp_path / "bon-curves-bon-humaneval.png") == [
        "candidates per problem (M) | accuracy (%)", "generated tests (asserts) per problem | accuracy (%)"]
    assert _labels(tmp_path / "train-dynamics-train-alpha0.0.png") == [
        "step | mean reward", "step | Mistake Book size", " | historical pass rate"]
    assert _labels(tmp_path / "alpha-ablation.png") == [
        "α (weight of R_val in the test reward) | mean over training steps"]

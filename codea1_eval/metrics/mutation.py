"""Mutant generation behind a registry. ``ast-ops`` is a small deterministic built-in mutator
(comparison, arithmetic, boolean, constant and return mutations), used for perf workloads and
peer-agreement samples; the mutation-score engines (mutmut, cosmic-ray) register here too."""

from __future__ import annotations

import ast
import copy
import random
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


MUTATORS: Registry[Callable[..., Iterator[str]]] = Registry("mutator")
MUTATORS.register("ast-ops", ast_mutants, help="built-in AST operator/constant mutations (deterministic)")

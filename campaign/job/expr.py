"""Cost-model expressions (`flops: 2*n**3`, `bytes: 3*8*n`) evaluated safely.

Why not `eval`: the text comes from a YAML file anyone may hand a site, and
it is evaluated on login and compute nodes. The expression is parsed with
`ast` and only a whitelist is walked: numbers, parameter names, + - * / //
% **, unary signs, parentheses and the calls min, max, ceil, floor, sqrt,
log2, abs. Everything is computed in float (FLOP and byte counts are
magnitudes, and float cannot grow without bound); an exponent above 64 or a
result that overflows is an error, never a hang. Standard library only: the
job side (campaign.job.fom) evaluates it on the node, and the config side
checks it at compose time with the same code.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping

MAX_TEXT = 400
MAX_EXPONENT = 64.0

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_CALLS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "sqrt": math.sqrt,
    "log2": math.log2,
    "abs": abs,
}


class ExprError(ValueError):
    """An expression that is not allowed, names an unknown parameter, or fails."""


def parse(text: str) -> ast.expr:
    """The checked syntax tree of `text`; ExprError for anything outside the whitelist."""
    if not isinstance(text, str) or not text.strip():
        raise ExprError("empty expression")
    if len(text) > MAX_TEXT:
        raise ExprError(f"expression is {len(text)} characters long; at most {MAX_TEXT}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"not an arithmetic expression: {exc.msg}") from None
    for node in ast.walk(tree.body):
        _allowed(node)
    return tree.body


def _allowed(node: ast.AST) -> None:
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, *_BINARY, *_UNARY)):
        if isinstance(node, ast.BinOp) and type(node.op) not in _BINARY:
            raise ExprError(f"operator {type(node.op).__name__} is not allowed")
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"only numbers may be written, not {node.value!r}")
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _CALLS or node.keywords:
            raise ExprError(f"only the functions {', '.join(sorted(_CALLS))} may be called")
        return
    raise ExprError(f"{type(node).__name__} is not allowed in a cost expression")


def names(text: str) -> set[str]:
    """The parameter names an expression reads (function names excluded)."""
    tree = parse(text)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def evaluate(text: str, values: Mapping[str, float | int | str]) -> float:
    """The value of `text` with `values` for its names; ExprError naming an
    unknown or non-numeric parameter, an exponent above 64 or an overflow."""
    tree = parse(text)
    try:
        result = _eval(tree, values)
    except (OverflowError, ZeroDivisionError, ValueError) as exc:
        if isinstance(exc, ExprError):
            raise
        why = "the result is too large for a float" if isinstance(exc, OverflowError) else exc
        raise ExprError(f"cannot evaluate {text!r}: {why}") from None
    if not math.isfinite(result):
        raise ExprError(f"{text!r} is not finite")
    return result


def _eval(node: ast.expr, values: Mapping[str, float | int | str]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ExprError(f"unknown parameter {node.id!r}; known: {', '.join(sorted(values)) or 'none'}")
        try:
            return float(values[node.id])
        except (TypeError, ValueError):
            raise ExprError(f"parameter {node.id}={values[node.id]!r} is not a number") from None
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, values))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, values), _eval(node.right, values)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ExprError(f"exponent {right:g} above {MAX_EXPONENT:g}")
        return float(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return float(_CALLS[node.func.id](*(_eval(a, values) for a in node.args)))
    raise ExprError(f"{type(node).__name__} is not allowed")

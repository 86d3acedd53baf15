"""Small integer expressions over named values, evaluated vectorised: restrictions, grids, block shapes.

Specs state arithmetic in words a reader can check: a Kernel Tuner user writes restrictions such as
``"block_size_x * block_size_y <= 1024"``, a declarative spec writes ``"TILE_N // VEC"`` for a block's
width. The tuner evaluates such text over thousands of candidates at once, so an expression compiles once
(cached by its text) into a function of a name -> value mapping whose values may be ints or numpy int64
arrays: one restriction over a 243,000-point space is one vectorised pass, not 243,000 calls.

Only arithmetic is allowed (``ast`` whitelist, never ``eval``): integer literals, names, ``+ - * // % **
<< >> & | ^``, unary ``-``/``~``/``not``, comparisons (chains too), ``and``/``or`` (element-wise on
arrays), ``x if c else y``, and ``min``/``max``/``abs``/``cdiv``. ``/`` is refused: kernel arithmetic is
integer, and a float slipping into a tile size is the mistake this guards against; use ``//``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["compile_expr", "evaluate", "names_in", "ExprError"]


class ExprError(ValueError):
    """An expression that cannot be parsed, uses something outside the whitelist, or names an unknown name."""


_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_CMP = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def _min(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = np.minimum(out, x)
    return out


def _max(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = np.maximum(out, x)
    return out


_FUNCS: dict[str, Callable[..., Any]] = {
    "min": _min,
    "max": _max,
    "abs": np.abs,
    "cdiv": lambda a, b: -(-a // b),
}

Fn = Callable[[Mapping[str, Any]], Any]


def _not(x: Any) -> Any:
    return np.logical_not(x) if isinstance(x, np.ndarray) else not x


def _and(a: Any, b: Any) -> Any:
    return np.logical_and(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a and b)


def _or(a: Any, b: Any) -> Any:
    return np.logical_or(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else bool(a or b)


def _compile(node: ast.AST, text: str) -> Fn:
    """A closure evaluating ``node``; anything outside the whitelist is an ExprError naming it."""
    if isinstance(node, ast.Expression):
        return _compile(node.body, text)
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, int):
            raise ExprError(f"expression {text!r}: {v!r} is not an integer literal")
        return lambda env: v
    if isinstance(node, ast.Name):
        name = node.id

        def look(env: Mapping[str, Any]) -> Any:
            try:
                return env[name]
            except KeyError:
                known = ", ".join(sorted(env)) or "(none)"
                raise ExprError(f"expression {text!r}: unknown name {name!r}; known: {known}") from None

        return look
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div):
            raise ExprError(f"expression {text!r}: '/' is not integer arithmetic; use '//'")
        fn = _BIN.get(type(node.op))
        if fn is None:
            raise ExprError(f"expression {text!r}: operator {type(node.op).__name__} is not allowed")
        a, b = _compile(node.left, text), _compile(node.right, text)
        return lambda env: fn(a(env), b(env))
    if isinstance(node, ast.UnaryOp):
        x = _compile(node.operand, text)
        if isinstance(node.op, ast.USub):
            return lambda env: -x(env)
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Invert):
            return lambda env: ~x(env)
        if isinstance(node.op, ast.Not):
            return lambda env: _not(x(env))
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v, text) for v in node.values]
        join = _and if isinstance(node.op, ast.And) else _or

        def boolop(env: Mapping[str, Any]) -> Any:
            out = parts[0](env)
            for p in parts[1:]:
                out = join(out, p(env))
            return out

        return boolop
    if isinstance(node, ast.Compare):
        first = _compile(node.left, text)
        ops = []
        for op, right in zip(node.ops, node.comparators):
            fn = _CMP.get(type(op))
            if fn is None:
                raise ExprError(f"expression {text!r}: comparison {type(op).__name__} is not allowed")
            ops.append((fn, _compile(right, text)))

        def compare(env: Mapping[str, Any]) -> Any:
            left = first(env)
            out: Any = True
            for fn, right in ops:
                r = right(env)
                out = _and(out, fn(left, r))
                left = r
            return out

        return compare
    if isinstance(node, ast.IfExp):
        cond, yes, no = (_compile(n, text) for n in (node.test, node.body, node.orelse))
        return lambda env: np.where(cond(env), yes(env), no(env))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords:
            what = ast.unparse(node.func) if hasattr(ast, "unparse") else "call"
            raise ExprError(f"expression {text!r}: call of {what!r}; allowed: {', '.join(sorted(_FUNCS))}")
        fn = _FUNCS[node.func.id]
        args = [_compile(a, text) for a in node.args]
        if not args:
            raise ExprError(f"expression {text!r}: {node.func.id}() needs arguments")
        return lambda env: fn(*(a(env) for a in args))
    part = ast.unparse(node) if hasattr(ast, "unparse") else type(node).__name__
    raise ExprError(f"expression {text!r}: {part!r} ({type(node).__name__}) is not allowed in an expression")


@lru_cache(maxsize=4096)
def _compiled(text: str) -> tuple[Fn, frozenset[str]]:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise ExprError(f"expression {text!r}: not valid syntax ({e.msg})") from None
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)) - set(_FUNCS)
    return _compile(tree, text), names


def compile_expr(expr: str | int) -> Fn:
    """``expr`` (text or an int) as a function of a name -> value mapping (ints or numpy arrays)."""
    if isinstance(expr, bool):
        raise ExprError(f"expression {expr!r}: a bool is not an integer expression")
    if isinstance(expr, (int, np.integer)):
        v = int(expr)
        return lambda env: v
    if not isinstance(expr, str):
        raise ExprError(f"expression {expr!r}: expected text such as 'TILE // VEC' or an int")
    return _compiled(expr)[0]


def names_in(expr: str | int) -> frozenset[str]:
    """The value names ``expr`` reads (functions excluded)."""
    if isinstance(expr, str):
        return _compiled(expr)[1]
    return frozenset()


def evaluate(expr: str | int, env: Mapping[str, Any]) -> Any:
    """Evaluate ``expr`` over ``env``; ints stay ints, arrays stay arrays."""
    return compile_expr(expr)(env)

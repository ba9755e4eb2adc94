"""Impure debugging ops: ``print`` (format and print values at run time) and ``assert_op``
(fail at run time unless a boolean scalar is true). Both return the empty tuple and are run by
the VM as the packed functions their ``FCallPacked`` names (``relax.run.print``,
``relax.run.assert_op``), which this module registers."""

from __future__ import annotations

import builtins

from ...runtime import registry as _registry
from ..expr import Call, Expr, StringImm
from ..struct_info import PrimStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from ._common import UNKNOWN_NDIM, arg_sinfo, fail, fmt_sinfo
from .base import register_op_rule

__all__ = ["print", "assert_op"]


def _void() -> StructInfo:
    return TupleStructInfo([])


def _infer_print(call: Call, ctx) -> StructInfo:
    if not call.args or not isinstance(call.args[0], StringImm):
        fail(call, "expects its first argument to be the format string (a relax.StringImm)",
             type_error=True)
    return _void()


def _infer_assert(call: Call, ctx) -> StructInfo:
    if len(call.args) < 2:
        fail(call, f"expects a condition and a format string, got {len(call.args)} arguments")
    cond = arg_sinfo(call, 0)
    ok = False
    if isinstance(cond, TensorStructInfo):
        ok = cond.dtype in ("bool", "void") and cond.ndim in (0, UNKNOWN_NDIM)
    elif isinstance(cond, PrimStructInfo):
        ok = cond.dtype == "bool"
    if not ok:
        fail(call, f"expects the condition to be a boolean scalar (R.Tensor((), \"bool\") or "
                   f"R.Prim(\"bool\")), got {fmt_sinfo(cond)}", type_error=True)
    if not isinstance(call.args[1], StringImm):
        fail(call, "expects its second argument to be the format string (a relax.StringImm)",
             type_error=True)
    return _void()


_print_op = register_op_rule("relax.print", _infer_print, purity=False,
                             arguments=("format", "vals"))
_assert_op = register_op_rule("relax.assert_op", _infer_assert, purity=False,
                              arguments=("condition", "format", "vals"))
for _op, _fn in ((_print_op, "relax.run.print"), (_assert_op, "relax.run.assert_op")):
    if _op.get_attr("FCallPacked") is None:
        _op.set_attr("FCallPacked", _fn)
del _op, _fn


def _fmt(format) -> StringImm:
    if isinstance(format, StringImm):
        return format
    if isinstance(format, str):
        return StringImm(format)
    raise TypeError(f"the format must be a str or relax.StringImm, got {type(format).__name__}")


def print(*values: Expr, format: str | StringImm = "") -> Call:  # noqa: A001 - TVM's name
    """Print ``values`` at run time, through ``format`` (``{}`` placeholders) when given."""
    return Call(_print_op, [_fmt(format), *values])


def assert_op(condition: Expr, *format_args, format: str | StringImm = "") -> Call:
    """Fail at run time with ``format`` filled with ``format_args`` unless ``condition`` (a
    boolean scalar) holds. ``format_args`` may also be given as one Python list."""
    if len(format_args) == 1 and isinstance(format_args[0], list | tuple):
        format_args = tuple(format_args[0])
    return Call(_assert_op, [condition, _fmt(format), *format_args])


# ------------------------------------------------------------------ run-time implementations
def _render(fmt: str, vals) -> str:
    shown = [v.numpy() if hasattr(v, "numpy") else v for v in vals]
    if not fmt:
        return " ".join(str(v) for v in shown)
    return fmt.format(*shown)


def _run_print(fmt, *vals) -> None:
    builtins.print(_render(str(fmt), vals))


def _run_assert(cond, fmt, *vals) -> None:
    c = cond.numpy() if hasattr(cond, "numpy") else cond
    if not bool(c):
        msg = _render(str(fmt), vals) if fmt or vals else "Assertion Failed"
        raise AssertionError(msg)


_registry.register_func("relax.run.print", _run_print, override=True)
_registry.register_func("relax.run.assert_op", _run_assert, override=True)

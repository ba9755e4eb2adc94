"""The Executor base shared by every ``relay.create_executor`` kind, and argument checking.

Arguments are matched against the entry function's parameter types before anything runs: a wrong
count, shape or dtype is a ValueError naming the parameter, what was expected and what was given.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import GlobalVar
from ...ir.type import TensorType, TupleType
from ...runtime.ndarray import NDArray
from ...tir.expr import IntImm
from ..expr import Constant, Function, Let, const
from .values import ADT, to_internal

__all__ = ["Executor", "check_args", "convert_kwargs"]


def _shape_str(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _type_str(t) -> str:
    from .interpreter import type_str

    return type_str(t)


def _check_tensor(arg, t: TensorType, where: str):
    if isinstance(arg, NDArray):
        arr = arg.numpy()
    elif isinstance(arg, np.ndarray):
        arr = arg
    elif isinstance(arg, bool | int | float | list):
        arr = np.asarray(arg, dtype=t.dtype)
    elif isinstance(arg, np.generic):
        arr = np.asarray(arg)
    else:
        raise ValueError(f"{where}: expected {_type_str(t)}, got a {type(arg).__name__}")
    ok = arr.ndim == len(t.shape) and str(arr.dtype) == t.dtype
    if ok:
        for want, got in zip(t.shape, arr.shape):
            if isinstance(want, IntImm):
                want = want.value
            if isinstance(want, int) and want != got:
                ok = False
                break
    if not ok:
        raise ValueError(f"{where}: expected {_type_str(t)}, got shape {_shape_str(arr.shape)} "
                         f"{arr.dtype}")
    return arr


def _check_arg(arg, t, where: str):
    """Convert one argument to the interpreter's representation, checking it against ``t``."""
    if isinstance(t, TensorType):
        return _check_tensor(arg, t, where)
    if isinstance(t, TupleType):
        if not isinstance(arg, tuple | list | ADT):
            raise ValueError(f"{where}: expected a tuple {_type_str(t)}, got a "
                             f"{type(arg).__name__}")
        if len(arg) != len(t.fields):
            raise ValueError(f"{where}: expected a tuple of {len(t.fields)} fields "
                             f"{_type_str(t)}, got {len(arg)}")
        return tuple(_check_arg(a, ft, f"{where}[{i}]")
                     for i, (a, ft) in enumerate(zip(arg, t.fields)))
    return to_internal(arg)


def check_args(func: Function, args, fname: str = "main") -> list:
    """Check ``args`` against ``func``'s parameters and convert them for the interpreter."""
    params = func.params
    if len(args) != len(params):
        names = ", ".join(p.name_hint for p in params)
        raise ValueError(f"{fname}() takes {len(params)} argument(s) ({names}), got {len(args)}")
    out = []
    for p, a in zip(params, args):
        t = p._checked_type if p._checked_type is not None else p.type_annotation
        out.append(_check_arg(a, t, f"{fname}() argument '{p.name_hint}'"))
    return out


def convert_kwargs(func, args, kwargs, fname: str = "main") -> list:
    """Merge keyword arguments (by parameter name) into the positional list, as TVM does; a
    ``relay.Constant`` argument stands for its value (TVM's executors accept one)."""
    args = [a.data if isinstance(a, Constant) else a for a in args]
    kwargs = {k: v.data if isinstance(v, Constant) else v for k, v in (kwargs or {}).items()}
    if not kwargs:
        return list(args)
    if not isinstance(func, Function):
        raise ValueError(f"keyword arguments need a relay.Function, not a {type(func).__name__}")
    names = [p.name_hint for p in func.params]
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        raise ValueError(f"{fname}() got an unexpected keyword argument {unknown[0]!r}; "
                         f"parameters are {names}")
    cargs = list(args)
    for i, name in enumerate(names):
        if i < len(args):
            if name in kwargs:
                raise ValueError(f"{fname}() argument {name!r} given both by position ({i}) "
                                 "and by keyword")
        elif name in kwargs:
            cargs.append(kwargs[name])
        else:
            raise ValueError(f"{fname}() missing argument {name!r}")
    return cargs


def _as_expr(value):
    from ..expr import Expr

    if isinstance(value, Expr):
        return value
    if isinstance(value, NDArray | np.ndarray | np.generic | bool | int | float):
        return Constant(np.asarray(value.numpy() if isinstance(value, NDArray) else value))
    return const(value)


class Executor:
    """Base of the executors: ``evaluate(expr=None, binds=None)`` as in TVM.

    ``evaluate()`` returns a callable running ``main``; ``evaluate(fn)`` (a Function or GlobalVar)
    returns a callable running ``fn``; any other expression is evaluated and its value returned.
    """

    #: whether ``_make_executor`` type-checks the function it is given (so fails on free
    #: variables) before it returns; a lazy executor checks for them first
    _checks_when_made = False

    def _make_executor(self, expr=None):
        raise NotImplementedError

    def _convert_args(self, expr, args, kwargs):
        return convert_kwargs(expr, args, kwargs)

    def evaluate(self, expr=None, binds=None):
        if binds:
            if expr is None:
                raise ValueError("evaluate(binds=...) needs an expression to bind into")
            for var, value in reversed(list(binds.items())):
                expr = Let(var, _as_expr(value), expr)
        if expr is None:
            return self._make_executor()
        if isinstance(expr, Function):
            if not self._checks_when_made:
                _refuse_free_vars(expr)
                return self._make_executor(expr)
            # a function with free variables fails the type check of ``_make_executor``:
            # only then is it walked for them, so a closed one (every one that runs) is not
            # walked twice
            try:
                return self._make_executor(expr)
            except Exception:
                _refuse_free_vars(expr)
                raise
        if isinstance(expr, GlobalVar):
            return self._make_executor(expr)
        return self._make_executor(Function([], expr))()


def _refuse_free_vars(fn: Function) -> None:
    """ValueError naming ``fn``'s free variables, if it has any."""
    from ..analysis.free_vars import free_vars

    fvs = free_vars(fn)
    if fvs:
        names = ", ".join("%" + v.name_hint for v in fvs)
        raise ValueError(f"cannot evaluate a function with free variables: {names}") from None

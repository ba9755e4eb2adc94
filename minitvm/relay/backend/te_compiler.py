"""Lowering of fused primitive functions: Relay -> TE (each op's FTECompute) -> PrimFunc -> LLVM.

``lower_function(func)`` returns a ``LoweredFunc``: a native kernel when every op has a compute
and the schedule succeeds, otherwise a numpy fallback that runs the function op by op through
each op's FNumpy reference (so every model builds and runs). Kernels are cached in process by the
function's structural hash, so a repeated build (or a repeated block) compiles nothing.
"""

from __future__ import annotations

import threading

import numpy as np

from ... import te
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...ir.type import TensorType, TupleType
from ...tir import expr as E
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..expr_functor import dataflow_post_order
from ..op._compute._common import static_shape
from .schedules import LoweringError, lower_te

_CACHE: dict[int, list] = {}
_LOCK = threading.Lock()
STATS = {"hits": 0, "misses": 0}


def _ensure_computes() -> None:
    from ..op import _compute  # noqa: F401  (registers FTECompute)


def _static(t) -> tuple[int, ...]:
    try:
        return static_shape(t)
    except ValueError as err:  # symbolic dims: this function falls back to numpy
        raise LoweringError(str(err)) from None


def tensor_types(t) -> list[TensorType]:
    """The tensors of a type: itself, or the (flattened) fields of a tuple type."""
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(reversed(x.fields))
        elif isinstance(x, TensorType):
            out.append(x)
        else:
            raise LoweringError(f"unsupported type {x} in a primitive function")
    return out


def func_ops(func: Function) -> list[str]:
    """Names of the ops called in a primitive function, in evaluation order."""
    return [e.op.name for e in dataflow_post_order(func.body)
            if isinstance(e, Call) and isinstance(e.op, Op)]


class LoweredFunc:
    """One primitive function compiled (``kind == "native"``) or run by numpy (``"fallback"``).

    Native kernels take ``(*params, *extra constants, *outputs[, workspace])``.
    """

    def __init__(self, kind: str, func: Function, out_types: list, prim_func=None, kernel=None,
                 ir_text: str = "", ws_bytes: int = 0, consts=(), reason: str = ""):
        self.kind = kind
        self.func = func
        self.out_types = out_types
        self.prim_func = prim_func
        self.kernel = kernel
        self.ir_text = ir_text
        self.ws_bytes = ws_bytes
        self.consts = list(consts)
        self.reason = reason
        self.input_packs: dict = {}  # input position -> numpy transform of the constant fed

    @property
    def symbol(self) -> str:
        return self.kernel._compiled.symbol if self.kernel is not None else ""

    @property
    def address(self) -> int:
        return self.kernel._compiled.address if self.kernel is not None else 0


def _const_expr(c: Constant):
    arr = c.data.numpy()
    dt = str(arr.dtype)
    v = arr.reshape(()).item()
    if dt == "bool":
        return E.IntImm("bool", int(v))
    return E.const(v, dt)


def _constant_fn(val):
    return lambda: val


def build_te(func: Function):
    """TE placeholders, extra constant inputs (with values) and outputs of ``func``."""
    _ensure_computes()
    inputs, consts, env = [], [], {}
    for p in func.params:
        phs = []
        for t in tensor_types(p.checked_type):
            phs.append(te.placeholder(_static(t), t.dtype, f"p{len(inputs) + len(phs)}"))
        inputs.extend(phs)
        env[id(p)] = phs
    for e in dataflow_post_order(func.body):
        if id(e) in env:
            continue
        if isinstance(e, Var):
            raise LoweringError(f"free variable {e.name_hint} in a primitive function")
        if isinstance(e, Constant):
            arr = e.data.numpy()
            if arr.ndim == 0:
                val = _const_expr(e)
                env[id(e)] = [te.compute((), _constant_fn(val), name="const")]
            else:
                ph = te.placeholder(arr.shape, str(arr.dtype), f"c{len(consts)}")
                consts.append((ph, np.ascontiguousarray(arr)))
                env[id(e)] = [ph]
        elif isinstance(e, Tuple):
            env[id(e)] = [t for f in e.fields for t in env[id(f)]]
        elif isinstance(e, TupleGetItem):
            env[id(e)] = [env[id(e.tuple_value)][e.index]]
        elif isinstance(e, Call) and isinstance(e.op, Op):
            fcompute = e.op.get_attr("FTECompute")
            if fcompute is None:
                raise LoweringError(f"operator {e.op.name} has no compute (FTECompute)")
            args = [t for a in e.args for t in env[id(a)]]
            try:
                outs = fcompute(e.attrs, args, e.checked_type)
            except (ValueError, TypeError, NotImplementedError, KeyError) as err:
                raise LoweringError(f"{e.op.name}: {err}") from err
            env[id(e)] = list(outs)
        else:
            raise LoweringError(f"{type(e).__name__} is not supported in a primitive function")
    outputs = env[id(func.body)]
    return inputs, consts, outputs


def _fallback(func, out_types, reason: str) -> LoweredFunc:
    return LoweredFunc("fallback", func, out_types, reason=reason)


def lower_function(func: Function, name: str = "main", native: bool = True,
                   const_inputs: frozenset = frozenset()) -> LoweredFunc:
    """Lower one primitive function (through the in-process cache).

    ``const_inputs``: flat input positions that receive constants (weights); the kernel may ask
    for them in another layout (``LoweredFunc.input_packs``: position -> numpy transform).
    """
    out_types = tensor_types(func.body.checked_type)
    if not native:
        return _fallback(func, out_types, "native lowering disabled")
    from . import blas, gemm

    key = (structural_hash(func), blas._STATE.get("ok"), tuple(sorted(gemm.GENERATED.items())),
           const_inputs)
    with _LOCK:
        for cand, lowered in _CACHE.get(key, ()):
            if structural_equal(cand, func):
                STATS["hits"] += 1
                out = LoweredFunc(lowered.kind, func, out_types, lowered.prim_func,
                                  lowered.kernel, lowered.ir_text, lowered.ws_bytes,
                                  lowered.consts, lowered.reason)
                out.input_packs = lowered.input_packs
                return out
    STATS["misses"] += 1
    try:
        lowered = _lower_native(func, name, out_types, const_inputs)
    except LoweringError as err:
        lowered = _fallback(func, out_types, str(err))
    with _LOCK:
        _CACHE.setdefault(key, []).append((func, lowered))
    return lowered


def _lower_native(func, name, out_types, const_inputs=frozenset()) -> LoweredFunc:
    from ...codegen.build import compile_prim_func

    for t in out_types:
        _static(t)
    inputs, consts, outputs = build_te(func)
    packs: dict = {}
    prim, ws = lower_te(inputs + [c[0] for c in consts], outputs, name,
                        prepack=const_inputs, packs=packs)
    try:
        kernel, ir_text = compile_prim_func(prim, name)
    except (ValueError, NotImplementedError, KeyError) as err:
        raise LoweringError(f"codegen failed: {err}") from err
    out = LoweredFunc("native", func, out_types, prim, kernel, ir_text, ws,
                      [c[1] for c in consts])
    out.input_packs = packs
    return out


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        STATS["hits"] = STATS["misses"] = 0


# ------------------------------------------------------------------------------ numpy fallback
def _pack(t, flat: list, pos: int):
    if isinstance(t, TupleType):
        out = []
        for f in t.fields:
            v, pos = _pack(f, flat, pos)
            out.append(v)
        return tuple(out), pos
    return flat[pos], pos + 1


def run_fallback(func: Function, args: list) -> list[np.ndarray]:
    """Evaluate a primitive function with the ops' numpy references.

    ``args`` are the flattened tensors of the parameters; returns the flattened outputs.
    """
    env, pos = {}, 0
    for p in func.params:
        env[id(p)], pos = _pack(p.checked_type, args, pos)
    for e in dataflow_post_order(func.body):
        if id(e) in env:
            continue
        if isinstance(e, Constant):
            env[id(e)] = e.data.numpy()
        elif isinstance(e, Tuple):
            env[id(e)] = tuple(env[id(f)] for f in e.fields)
        elif isinstance(e, TupleGetItem):
            env[id(e)] = env[id(e.tuple_value)][e.index]
        elif isinstance(e, Call) and isinstance(e.op, Op):
            impl = e.op.get_attr("FNumpy")
            if impl is None:
                raise ValueError(f"operator {e.op.name} has neither a compute nor a numpy "
                                 "reference; it cannot run")
            out = impl(e.attrs, [env[id(a)] for a in e.args], e.checked_type)
            env[id(e)] = out
        else:
            raise ValueError(f"{type(e).__name__} cannot run in a primitive function")
    res = env[id(func.body)]
    flat, stack = [], [res]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        else:
            flat.append(np.asarray(x))
    return flat

"""ATen-level torch.fx graph -> Relay (what the torch.compile backend feeds in).

``from_fx(gm, input_infos, constants)``: placeholders become Relay inputs, or constants for the
indices in ``constants`` (parameters and buffers); ``get_attr`` tensors become constants; each
``call_function`` on an ATen overload is converted with the shared ATen table after its
arguments are put in schema order.
"""

from __future__ import annotations

import operator

import numpy as np

from ....frontend_common.torch_arrays import tensor_to_numpy
from ....frontend_common.torch_schema import schema_args
from ....ir.module import IRModule
from ... import expr as _expr
from ...analysis import free_vars
from ...transform.infer_type import InferType
from ..common import ImportError_, unsupported_error
from .aten import ATEN, AtenContext, DType, torch_dtype
from .aten_fft import array_constant, refuse_complex


def _aten_name(target) -> str | None:
    schema = getattr(target, "_schema", None)
    if schema is None:
        return None
    ns, _, name = schema.name.partition("::")
    return name if ns == "aten" else f"{ns}::{name}"


def _unsupported(gm) -> dict[str, list[str]]:
    """The operators no converter handles -> the names of the nodes that use them."""
    found: dict[str, list[str]] = {}
    for n in gm.graph.nodes:
        if n.op == "call_function":
            if n.target is operator.getitem:
                continue
            name = _aten_name(n.target)
            if name is None or name not in ATEN:
                found.setdefault(name or getattr(n.target, "__name__", str(n.target)),
                                 []).append(n.name)
        elif n.op in ("call_module", "call_method"):
            found.setdefault(f"{n.op}:{n.target}", []).append(n.name)
    return found


def _numpy(t) -> np.ndarray:
    return tensor_to_numpy(t)  # bfloat16 widened to float32 (frontend_common.torch_arrays)


def _value(env, a):
    import torch

    if isinstance(a, torch.fx.Node):
        return env[a]
    if isinstance(a, list | tuple):
        return type(a)(_value(env, x) for x in a)
    if isinstance(a, torch.dtype):
        return DType(torch_dtype(a))
    if isinstance(a, torch.Tensor):
        return array_constant(_numpy(a))
    return a


def from_fx(gm, input_infos, constants: dict | None = None):
    """Convert an ATen-level ``torch.fx.GraphModule`` into a Relay module.

    ``input_infos`` gives (name, shape, dtype) per placeholder; ``constants`` maps placeholder
    indices to tensors embedded as constants (parameters, buffers). Returns (mod, params) with
    an empty params dict, and the names of the Relay inputs in order.
    """
    import torch

    missing = _unsupported(gm)
    if missing:
        raise unsupported_error("PyTorch (ATen)", {k: len(v) for k, v in missing.items()},
                                missing)
    constants = constants or {}
    env: dict = {}
    params = []
    ctx = AtenContext()
    placeholder = 0
    outputs = None
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            if placeholder in constants:
                value = constants[placeholder]
                if isinstance(value, torch.Tensor):
                    value = array_constant(_numpy(value))
                env[n] = value  # a tensor constant, or a Python number baked into the trace
            else:
                name, shape, dtype = input_infos[placeholder]
                v = _expr.var(name, shape=tuple(int(d) for d in shape), dtype=dtype)
                env[n] = v
                params.append(v)
            placeholder += 1
        elif n.op == "get_attr":
            obj = gm
            for part in n.target.split("."):
                obj = getattr(obj, part)
            if not isinstance(obj, torch.Tensor):
                raise ImportError_(f"get_attr {n.target!r} is not a tensor")
            env[n] = array_constant(_numpy(obj))
        elif n.op == "call_function":
            if n.target is operator.getitem:
                seq = env[n.args[0]]
                env[n] = seq[n.args[1]] if not isinstance(seq, _expr.Expr) else \
                    _expr.TupleGetItem(seq, n.args[1])
                continue
            name = _aten_name(n.target)
            args = _value(env, schema_args(n.target, n.args, n.kwargs))
            ctx.op_name = name
            refuse_complex(ctx, ATEN[name], list(args))
            try:
                out = ATEN[name](ctx, list(args))
            except ImportError_:
                raise
            except Exception as e:  # noqa: BLE001 - name the node in any converter failure
                raise ImportError_(f"aten::{name} (node {n.name}): cannot convert: "
                                   f"{type(e).__name__}: {e}") from e
            if isinstance(out, _expr.Expr):
                out = ctx.fold(out)
            elif isinstance(out, tuple | list):
                out = type(out)(ctx.fold(o) if isinstance(o, _expr.Expr) else o for o in out)
            env[n] = out
        elif n.op == "output":
            outputs = _value(env, n.args[0])
    flat = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    bad = [i for i, o in enumerate(flat) if not isinstance(o, _expr.Expr)]
    if bad:
        raise ImportError_(f"graph outputs {bad} are not tensors ({[flat[i] for i in bad]})")
    body = flat[0] if len(flat) == 1 and not isinstance(outputs, list | tuple) else \
        _expr.Tuple(flat)
    known = set(params)
    func = _expr.Function(params + [v for v in free_vars(body) if v not in known], body)
    return InferType()(IRModule.from_expr(func)), {}

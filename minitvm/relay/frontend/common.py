"""Helpers every importer shares: constant folding while importing, shape queries, errors."""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ...runtime import error as _error
from ...runtime.ndarray import NDArray
from .. import expr as _expr
from .. import op as _op
from ..expr import Call, Constant, Tuple, TupleGetItem
from ..op import nn as _nn
from ..transform.infer_type import InferTypeLocal

__all__ = [
    "OpNotImplemented", "ImportError_", "Folder", "infer_type", "infer_shape", "infer_dtype",
    "const_value", "unsupported_error", "new_var", "last_two_swapped", "contract_axis",
    "dynamic_quantize_uint8", "RelayBuilder",
]


class OpNotImplemented(_error.OpNotImplemented):
    """A model uses operators the importer does not convert (``tvm.error.OpNotImplemented``)."""


class ImportError_(ValueError):
    """A model file is malformed or uses an operator in a way that cannot be imported."""


def unsupported_error(framework: str, counts: dict[str, int],
                      nodes: dict[str, list[str]] | None = None) -> OpNotImplemented:
    """One error naming every unsupported operator of a model, with how often each occurs
    and, where ``nodes`` gives them, the first nodes that use it."""
    def where(name: str) -> str:
        used = (nodes or {}).get(name)
        if not used:
            return ""
        more = ", ..." if len(used) > 3 else ""
        return f" [node{'s' if len(used) > 1 else ''} {', '.join(used[:3])}{more}]"

    listed = ", ".join((f"{name} (x{n})" if n > 1 else name) + where(name)
                       for name, n in sorted(counts.items()))
    return OpNotImplemented(
        f"the following {framework} operators are not supported by minitvm's importer: {listed}")


def new_var(name: str, shape, dtype: str = "float32") -> _expr.Var:
    return _expr.var(name, shape=tuple(int(d) for d in shape), dtype=dtype)


def infer_type(expr):
    """The checked type of ``expr`` (free variables typed by their annotations)."""
    if isinstance(expr, Constant):
        return TensorType(expr.data.shape, str(expr.data.dtype))
    if expr._checked_type is not None:
        return expr._checked_type
    return InferTypeLocal(expr)


def infer_shape(expr) -> tuple[int, ...]:
    """The static shape of a tensor expression; a clear error when it is not static."""
    t = infer_type(expr)
    if not isinstance(t, TensorType):
        raise ImportError_(f"expected a tensor, got a value of type {t}")
    if not t.is_static():
        raise ImportError_(f"the importer needs static shapes here, got {t}")
    return tuple(int(d) for d in t.concrete_shape)


def infer_dtype(expr) -> str:
    t = infer_type(expr)
    if not isinstance(t, TensorType):
        raise ImportError_(f"expected a tensor, got a value of type {t}")
    return str(t.dtype)


def const_value(expr) -> np.ndarray | None:
    """The numpy value of ``expr`` when it is a constant, else None."""
    if isinstance(expr, Constant):
        return expr.data.numpy()
    return None


class Folder:
    """Folds calls whose arguments are all constants as the importer builds them.

    Shape-computing subgraphs (Shape -> Gather -> Concat -> Reshape) become constants this way,
    so later converters see concrete shapes. Memoized across one import; the walk over newly
    built nodes is an explicit post-order stack.
    """

    def __init__(self, max_elements: int = 1 << 26):
        self.memo: dict = {}
        self.max_elements = max_elements
        self.keep: frozenset = frozenset()  # names of ops never folded

    def __call__(self, expr):
        if not isinstance(expr, Call | Tuple | TupleGetItem):
            return expr
        stack = [(expr, False)]
        memo = self.memo
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            kids = self._children(node)
            if not ready:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if k not in memo
                             and isinstance(k, Call | Tuple | TupleGetItem))
                continue
            memo[node] = self._fold(node, [memo.get(k, k) for k in kids])
        return memo[expr]

    @staticmethod
    def _children(node):
        if isinstance(node, Call):
            return list(node.args)
        if isinstance(node, Tuple):
            return list(node.fields)
        return [node.tuple_value]

    def _fold(self, node, kids):
        if isinstance(node, Tuple):
            return node if all(a is b for a, b in zip(kids, node.fields)) else Tuple(kids)
        if isinstance(node, TupleGetItem):
            tup = kids[0]
            if isinstance(tup, Tuple):
                return tup.fields[node.index]
            return node if tup is node.tuple_value else TupleGetItem(tup, node.index)
        new = node if all(a is b for a, b in zip(kids, node.args)) else Call(
            node.op, kids, node.attrs, node.type_args)
        op = new.op
        if not isinstance(op, Op) or not kids or op.get_attr("TOpIsStateful") or \
                op.name in self.keep:
            return new
        if op.name in ("shape_of", "ndarray_size"):
            return self._fold_shape(new)
        if not all(_is_literal(k) for k in kids):
            return new
        rel, impl = op.get_attr("FTypeRelation"), op.get_attr("FNumpy")
        if rel is None or impl is None:
            return new
        try:
            out_type = rel([_literal_type(k) for k in kids], new.attrs)
            if isinstance(out_type, TensorType) and out_type.is_static() and \
                    int(np.prod(out_type.concrete_shape)) > self.max_elements:
                return new
            value = impl(new.attrs, [_literal_value(k) for k in kids], out_type)
        except (TypeError, ValueError, NotImplementedError):
            return new
        return _to_const(value, out_type)

    def _fold_shape(self, call):
        try:
            shape = infer_shape(call.args[0])
        except Exception:  # noqa: BLE001 - dynamic: leave the call
            return call
        dtype = getattr(call.attrs, "dtype", "int32") if call.attrs is not None else "int32"
        if call.op.name == "shape_of":
            return _expr.const(np.array(shape, dtype=dtype), dtype)
        return _expr.const(np.array(int(np.prod(shape)), dtype=dtype), dtype)


def _is_literal(e) -> bool:
    return isinstance(e, Constant) or (isinstance(e, Tuple) and all(
        isinstance(f, Constant) for f in e.fields))


def _literal_type(e):
    if isinstance(e, Constant):
        return TensorType(e.data.shape, str(e.data.dtype))
    return TupleType([_literal_type(f) for f in e.fields])


def _literal_value(e):
    if isinstance(e, Constant):
        return e.data.numpy()
    return tuple(f.data.numpy() for f in e.fields)


def _to_const(value, ty):
    if isinstance(ty, TupleType):
        return Tuple([_to_const(v, t) for v, t in zip(value, ty.fields, strict=True)])
    arr = np.asarray(value)
    if isinstance(ty, TensorType) and str(arr.dtype) != ty.dtype:
        arr = arr.astype(ty.dtype)
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        arr = arr.copy(order="C")
    return Constant(NDArray(arr))


def last_two_swapped(expr):
    """The input of ``expr`` when ``expr`` is a ``transpose`` that swaps only its last two axes
    (``k.transpose(-2, -1)`` of attention scores), else None: the importers then give
    ``batch_matmul`` the untransposed operand with ``transpose_b=True`` (its native form) and
    no separate transpose kernel runs."""
    if not isinstance(expr, Call) or expr.op is not Op.get("transpose"):
        return None
    axes = expr.attrs.axes
    if axes is None:
        return None
    nd = len(axes)
    want = list(range(nd - 2)) + [nd - 1, nd - 2]
    got = [int(a) % nd for a in axes]
    return expr.args[0] if nd >= 2 and got == want else None


def bmm_operand(x, shape: tuple, batch: tuple):
    """``x`` (``shape``: batch axes, then a matrix) as a rank-3 ``batch_matmul`` operand for the
    broadcast ``batch`` (static): its own batch merged into one axis; one matrix of batch 1
    when its batch axes are all ones (``batch_matmul`` broadcasts it, nothing is copied: a DFT
    or mixing matrix applied to every map); else copied to the batch first."""
    nb, mat = int(np.prod(batch)), tuple(shape[-2:])
    if tuple(shape[:-2]) == tuple(batch):
        return x if len(batch) == 1 else _op.reshape(x, (nb,) + mat)
    if all(d == 1 for d in shape[:-2]):
        return x if len(shape) == 3 else _op.reshape(x, (1,) + mat)
    x = _op.broadcast_to(x, tuple(batch) + mat)
    return x if len(batch) == 1 else _op.reshape(x, (nb,) + mat)


def contract_axis(x, axis: int, nd: int, mat: np.ndarray, dtype: str):
    """``x`` (rank ``nd``) contracted along ``axis`` with the constant ``mat`` [n_in, n_out]:
    the axis moved last, one dense layer, moved back (the DFT matrices of ONNX's DFT / STFT and
    torch.fft)."""
    perm = [d for d in range(nd) if d != axis] + [axis]
    moved = x if axis == nd - 1 else _op.transpose(x, perm)
    y = _nn.dense(moved, _expr.const(np.ascontiguousarray(mat.T).astype(dtype), dtype))
    return y if axis == nd - 1 else _op.transpose(y, [int(b) for b in np.argsort(perm)])


def dynamic_quantize_uint8(x, dtype: str):
    """ONNX's ``DynamicQuantizeLinear`` of ``x`` (of float ``dtype``): uint8 over its range
    widened to hold 0, scale ``(max - min) / 255`` (1 for an all-zero input, as onnxruntime),
    zero point ``round(-min / scale)``; (the uint8 tensor, the scale, the zero point as a float
    of ``dtype``). Also how a ``DynamicQuantizeLSTM`` quantizes its input and state."""
    def f(v):
        return _expr.const(np.array(v, dtype), dtype)

    lo = _op.minimum(_op.min(x), f(0))
    hi = _op.maximum(_op.max(x), f(0))
    scale = _op.divide(_op.subtract(hi, lo), f(255))
    safe = _op.where(_op.equal(scale, f(0)), f(1), scale)
    zp = _op.clip(_op.round(_op.divide(_op.negative(lo), safe)), 0.0, 255.0)
    q = _op.cast(_op.clip(_op.add(_op.round(_op.divide(x, safe)), zp), 0.0, 255.0), "uint8")
    return q, safe, zp


class RelayBuilder:
    """The operations every ``frontend_common`` plan's builder has (``torch_order.OrderBuilder``,
    ``unique_plan.UniqueBuilder``) on Relay expressions: ``relay.op`` for the elementwise maths,
    constants, casts, slices along one axis and concatenation; expressions need no binding.
    Each plan's builder adds its own operations."""

    ops = _op

    @staticmethod
    def const(value: np.ndarray):
        return _expr.const(value, str(value.dtype))

    @staticmethod
    def emit(e):
        return e

    @staticmethod
    def cast(x, dtype: str):
        return _op.cast(x, dtype)

    @staticmethod
    def slice_axis(x, axis: int, begin: int, end: int):
        return _op.strided_slice(x, [begin], [end], axes=[axis])

    @staticmethod
    def concat(parts: list, axis: int):
        return _op.concatenate(parts, axis)

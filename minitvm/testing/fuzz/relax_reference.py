"""A numpy reference evaluator of high-level Relax programs (the oracle of the Relax fuzzer).

It walks ``main``'s bindings in order with an environment (an explicit stack of scopes for
``If`` branches, so nothing recurses with the program's size), evaluates each operator call
with numpy — the shared ``topi`` references where their semantics are Relax's, small direct
implementations here for the rest — and checks every result's shape and dtype against the
call's struct info with the symbolic dimensions' values substituted: a disagreement is a
struct-info inference bug (``StructInfoMismatch``).
"""

from __future__ import annotations

import numpy as np

from ...ir.op import Op
from ...ir.type import TensorType
from ...relax.expr import (
    Call,
    Constant,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ...relax.struct_info import TensorStructInfo, TupleStructInfo
from ...tir import IntImm
from ...topi.reference.tensor import clip_values

__all__ = ["evaluate", "NoReference", "StructInfoMismatch", "EmptyReduction"]

#: Reductions without an identity: undefined on an empty tensor.
# reductions with no value over an empty axis (max / min give their identity: ``_identity``)
_NO_IDENTITY = frozenset({"argmax", "argmin"})


def _identity(name: str, dt: np.dtype):
    """What Relax's max / min give over an empty axis: -inf / +inf (ONNX's ReduceMax /
    ReduceMin identity, TVM's kernels'), an integer type's extreme."""
    if dt.kind in "iu":
        return np.iinfo(dt).min if name == "max" else np.iinfo(dt).max
    return -np.inf if name == "max" else np.inf


class NoReference(NotImplementedError):
    """The program uses something this evaluator cannot run (a PrimFunc call, a packed
    function, an operator without a reference)."""


class EmptyReduction(ValueError):
    """max/min/argmax/argmin of an empty tensor: no value (the compiled code must refuse too)."""


class StructInfoMismatch(AssertionError):
    """A value's shape or dtype disagrees with its struct info."""


def _squeezed_axes(call) -> tuple | None:
    """The axes ``relax.squeeze`` removes: the given ones, or with ``axis=None`` the ones whose
    length the argument's struct info says is 1 (a symbolic length is never squeezed, even
    when it is 1 at run time: the result's struct info keeps it, see ``_infer_squeeze``)."""
    if call.attrs.axis is not None:
        return tuple(int(i) for i in call.attrs.axis)
    shape = getattr(call.args[0].struct_info, "shape", None)
    values = getattr(shape, "values", None)
    if values is None:
        return None
    return tuple(i for i, d in enumerate(values) if isinstance(d, IntImm) and d.value == 1)


def _int(e, sym: dict) -> int:
    """The value of a PrimExpr (IntImm or an expression over known symbolic vars)."""
    if isinstance(e, IntImm):
        return int(e.value)
    if isinstance(e, int):
        return e
    from ...arith import Analyzer
    from ...tir.stmt_functor import substitute

    out = Analyzer().simplify(substitute(e, {v: IntImm(v.dtype, n) for v, n in sym.items()}))
    if not isinstance(out, IntImm):
        raise NoReference(f"cannot evaluate the dimension {e}")
    return int(out.value)


def _axes(a, ndim: int) -> tuple | None:
    if a is None:
        return None
    a = (a,) if isinstance(a, int) else tuple(int(x) for x in a)
    return tuple(x % ndim if ndim else 0 for x in a)


def _reduce(fn):
    def impl(call, args, sym):
        x = args[0]
        axis = _axes(call.attrs.axis, x.ndim)
        out = np.asarray(fn(x, axis=axis, keepdims=bool(call.attrs.keepdims)))
        return out.astype(x.dtype) if x.dtype.kind in "iub" else out
    return impl


def _arg(fn):
    def impl(call, args, sym):
        x = args[0]
        axis = call.attrs.axis
        out = fn(x, axis=axis)
        if call.attrs.keepdims:
            out = np.expand_dims(out, tuple(range(x.ndim)) if axis is None else axis)
        return out.astype("int64")
    return impl


def _strided_slice(call, args, sym):
    x = args[0]
    a = call.attrs
    idx = [slice(None)] * x.ndim
    strides = a.strides or [1] * len(a.axes)
    for ax, b, e, s in zip(a.axes, a.begin, a.end, strides, strict=True):
        b, e, s = int(b), int(e), int(s)
        size = x.shape[ax]
        # Relax/TVM clamp begin/end into the axis (end -1 - size means "past the start")
        if s > 0:
            b = min(max(b + size if b < 0 else b, 0), size)
            e = min(max(e + size if e < 0 else e, 0), size)
            idx[ax] = slice(b, e, s)
        else:
            b = min(max(b + size if b < 0 else b, -1), size - 1)
            e = min(max(e + size if e < 0 else e, -1), size - 1)
            idx[ax] = slice(b, e if e >= 0 else None, s)
    return x[tuple(idx)]


def _split(call, args, sym):
    x = args[0]
    spec = call.attrs.indices_or_sections
    axis = int(call.attrs.axis)
    spec = int(spec) if isinstance(spec, int | IntImm) else [int(i) for i in spec]
    if isinstance(spec, int):
        return tuple(np.split(x, spec, axis=axis))
    return tuple(np.split(x, spec, axis=axis))


def _shape_arg(call, sym) -> tuple:
    s = call.args[1]
    if not isinstance(s, ShapeExpr):
        raise NoReference("a shape given by a variable")
    return tuple(_int(v, sym) for v in s.values)


def _reshape(call, args, sym):
    return args[0].reshape(_shape_arg(call, sym))


def _acc(dtype) -> str:
    """The dtype a normalization accumulates in: the tensor's own (float16: float32)."""
    return "float32" if np.dtype(dtype) == np.float16 else str(np.dtype(dtype))


def _layer_norm(call, args, sym):
    x, g, b = args
    axes = _axes(call.attrs.axes, x.ndim)
    xf = x.astype(_acc(x.dtype))  # in the tensor's precision: IEEE overflow as compiled
    mean = xf.mean(axis=axes, keepdims=True)
    var = ((xf - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (xf - mean) / np.sqrt(var + call.attrs.epsilon)
    if call.attrs.scale:
        out = out * g
    if call.attrs.center:
        out = out + b
    return out.astype(x.dtype)


def _rms_norm(call, args, sym):
    x, g = args
    axes = _axes(call.attrs.axes, x.ndim)
    xf = x.astype(_acc(x.dtype))
    out = xf / np.sqrt((xf * xf).mean(axis=axes, keepdims=True) + call.attrs.epsilon) * g
    return out.astype(x.dtype)


def _erf64(x):
    from math import erf

    return np.vectorize(erf, otypes=["float64"])(x) if x.size else x.astype("float64")


def _gelu(call, args, sym):
    x = args[0].astype("float64")
    return (0.5 * x * (1 + _erf64(x / np.sqrt(2)))).astype(args[0].dtype)


def _adaptive_avg_pool2d(call, args, sym):
    x = args[0]
    oh, ow = (int(v) for v in call.attrs.output_size)
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow), "float64")
    for i in range(oh):
        h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, :, i, j] = x[:, :, h0:h1, w0:w1].astype("float64").mean(axis=(2, 3))
    return out.astype(x.dtype)


def _where(call, args, sym):
    return np.where(*args)


def _astype(call, args, sym):
    with np.errstate(invalid="ignore", over="ignore"):
        return args[0].astype(call.attrs.dtype)


def _tri(fn):
    def impl(call, args, sym):
        return fn(args[0], int(call.attrs.k))
    return impl


def _take(call, args, sym):
    return np.take(args[0], args[1].astype("int64"), axis=call.attrs.axis)


def _repeat(call, args, sym):
    return np.repeat(args[0], int(call.attrs.repeats), axis=call.attrs.axis)


def _cumsum(call, args, sym):
    x = args[0]
    dt = call.attrs.dtype if call.attrs.dtype not in (None, "void", "") else x.dtype
    return np.cumsum(x, axis=call.attrs.axis, dtype=dt)


def _matmul(call, args, sym):
    """``out_dtype`` (when set) is the dtype the product is accumulated and returned in."""
    dt = call.attrs.out_dtype if call.attrs is not None and \
        call.attrs.out_dtype not in (None, "void", "") else None
    a, b = (args[0], args[1]) if dt is None else (args[0].astype(dt), args[1].astype(dt))
    return np.matmul(a, b)


def _clip(call, args, sym):
    lo, hi = (float(a.value.value) if hasattr(a.value, "value") else float(a.value)
              for a in call.args[1:])
    return clip_values(args[0], lo, hi)


def _float_fn(fn):
    def impl(call, args, sym):
        x = args[0]
        return fn(x.astype("float64") if x.dtype == np.float16 else x).astype(x.dtype)
    return impl


_DIRECT = {
    "sum": _reduce(np.sum), "mean": _reduce(np.mean), "max": _reduce(np.max),
    "min": _reduce(np.min), "prod": _reduce(np.prod), "variance": _reduce(np.var),
    "std": _reduce(np.std), "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "strided_slice": _strided_slice, "split": _split, "reshape": _reshape,
    "broadcast_to": lambda c, a, s: np.broadcast_to(a[0], _shape_arg(c, s)).copy(),
    "concat": lambda c, a, s: np.concatenate(a, axis=int(c.attrs.axis)),
    "expand_dims": lambda c, a, s: _expand(a[0], c.attrs.axis),
    "squeeze": lambda c, a, s: np.squeeze(a[0], axis=_squeezed_axes(c)),
    "flatten": lambda c, a, s: a[0].reshape(-1),
    "permute_dims": lambda c, a, s: np.transpose(a[0], c.attrs.axes),
    "nn.layer_norm": _layer_norm, "nn.rms_norm": _rms_norm, "nn.gelu": _gelu,
    "nn.silu": _float_fn(lambda x: x / (1 + np.exp(-x))),
    "nn.relu": lambda c, a, s: np.maximum(a[0], np.asarray(0, a[0].dtype)),
    "nn.leakyrelu": lambda c, a, s: np.where(a[0] > 0, a[0], a[0] * np.asarray(
        c.attrs.alpha, a[0].dtype)).astype(a[0].dtype),
    "nn.adaptive_avg_pool2d": _adaptive_avg_pool2d, "where": _where, "astype": _astype,
    "tril": _tri(np.tril), "triu": _tri(np.triu), "take": _take, "repeat": _repeat,
    "cumsum": _cumsum, "clip": _clip, "matmul": _matmul,
    "square": lambda c, a, s: a[0] * a[0],
    "erf": _float_fn(_erf64), "atan": _float_fn(np.arctan),
}


def _expand(x, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(int(i) for i in axis)
    return np.expand_dims(x, axes)


def _reduces_empty_axis(call: Call, x: np.ndarray) -> bool:
    """Does reduction ``call`` reduce an axis of ``x`` of size 0 (every axis when none is
    named)?"""
    axis = getattr(call.attrs, "axis", None)
    if axis is None:
        return x.size == 0
    axes = [int(a) for a in axis] if isinstance(axis, (list, tuple)) or hasattr(axis, "__len__") \
        else [int(axis)]
    return any(x.shape[a % x.ndim] == 0 for a in axes) if x.ndim else False


def _call_op(call: Call, args: list, sym: dict, sinfo):
    from ...relax.transform.fold_constant import _AttrsView, op_reference

    name = call.op.name[len("relax."):]
    shape = None
    if isinstance(sinfo, TensorStructInfo) and sinfo.dims() is not None:
        shape = tuple(_int(d, sym) for d in sinfo.dims())
    impl = _DIRECT.get(name)
    if name in _NO_IDENTITY and any(a.size == 0 for a in args) and \
            _reduces_empty_axis(call, args[0]):
        # no identity value: an empty reduced axis has no result even where the output is
        # empty too (argmax over axis 1 of (0, 0)), as the VM's check_nonempty and the static
        # struct-info check refuse it
        raise EmptyReduction(f"relax.{name} of an empty tensor {args[0].shape}")
    if shape is not None and 0 in shape:
        return np.zeros(shape, sinfo.dtype)  # an empty result (softmax of an empty axis...)
    if name in ("max", "min") and args[0].size == 0 and shape is not None:
        return np.full(shape, _identity(name, np.dtype(sinfo.dtype)), sinfo.dtype)
    with np.errstate(all="ignore"):
        if impl is not None:
            out = impl(call, args, sym)
        else:
            ref = op_reference(call.op)
            if ref is None or shape is None:
                raise NoReference(f"no numpy reference for {call.op.name}")
            out = ref(_AttrsView(call.attrs), args, TensorType(shape, sinfo.dtype))
    if isinstance(out, tuple):
        return out
    out = np.asarray(out)
    if isinstance(sinfo, TensorStructInfo) and not sinfo.is_unknown_dtype \
            and str(out.dtype) != sinfo.dtype:
        if impl is None and out.shape == shape:  # references compute in their own dtype
            out = out.astype(sinfo.dtype)
    return out


def _check(value, sinfo, sym: dict, where: str) -> None:
    if isinstance(sinfo, TensorStructInfo):
        if not isinstance(value, np.ndarray):
            raise StructInfoMismatch(f"{where}: a tensor expected, got {type(value).__name__}")
        if not sinfo.is_unknown_dtype and str(value.dtype) != sinfo.dtype:
            raise StructInfoMismatch(f"{where}: dtype {value.dtype}, struct info {sinfo}")
        dims = sinfo.dims()
        if dims is not None:
            want = tuple(_int(d, sym) for d in dims)
            if want != value.shape:
                raise StructInfoMismatch(f"{where}: shape {value.shape}, struct info {sinfo} "
                                         f"= {want}")
    elif isinstance(sinfo, TupleStructInfo):
        if not isinstance(value, tuple) or len(value) != len(sinfo.fields):
            raise StructInfoMismatch(f"{where}: a tuple of {len(sinfo.fields)} expected")
        for k, (v, s) in enumerate(zip(value, sinfo.fields, strict=True)):
            _check(v, s, sym, f"{where}[{k}]")


def _bind_sym(sinfo, value, sym: dict) -> None:
    if isinstance(sinfo, TensorStructInfo) and isinstance(value, np.ndarray):
        dims = sinfo.dims()
        if dims is not None and len(dims) == value.ndim:
            for d, n in zip(dims, value.shape, strict=True):
                if not isinstance(d, IntImm) and hasattr(d, "name") and d not in sym:
                    sym[d] = n


def _eval_leaf(e, env: dict, sym: dict):
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Constant):
        return e.data.numpy()
    if isinstance(e, Tuple):
        return tuple(_eval_leaf(f, env, sym) for f in e.fields)
    if isinstance(e, TupleGetItem):
        return _eval_leaf(e.tuple_value, env, sym)[e.index]
    if isinstance(e, PrimValue | ShapeExpr):
        return e
    if isinstance(e, Call) and isinstance(e.op, Op):
        args = [_eval_leaf(a, env, sym) for a in e.args
                if not isinstance(a, PrimValue | ShapeExpr)]
        if e.op.name == "relax.concat":
            args = list(args[0])
        return _call_op(e, args, sym, e.struct_info)
    raise NoReference(f"cannot evaluate {type(e).__name__}")


def binding_uses(func) -> tuple[dict, list]:
    """Every binding of ``func`` (in branches too), in order, and ``uses[var]``: the variables
    its value reads (an If's: its condition and the variables its branches' results read; a
    branch's bindings have their own entries)."""
    from ...relax.analysis import free_vars

    uses: dict = {}
    order: list = []
    stack = [func.body] if isinstance(func.body, SeqExpr) else []
    while stack:
        seq = stack.pop()
        for block in seq.blocks:
            for b in block.bindings:
                v = b.value
                order.append(b)
                if isinstance(v, If):  # the branches' own bindings have their own entries
                    branches = (v.true_branch, v.false_branch)
                    uses[b.var] = free_vars(v.cond) + [
                        u for br in branches
                        for u in free_vars(br.body if isinstance(br, SeqExpr) else br)]
                    stack += [br for br in branches if isinstance(br, SeqExpr)]
                elif isinstance(v, SeqExpr):
                    uses[b.var] = free_vars(v.body)
                    stack.append(v)
                else:
                    uses[b.var] = free_vars(v)
    return uses, order


def _implied(cast: MatchCast) -> bool:
    """Whether ``cast`` checks nothing its value's struct info does not already state (and so
    binds no new size)."""
    from ...ir.structural import structural_equal

    have = getattr(cast.value, "struct_info_", None) or getattr(cast.value, "_struct_info",
                                                                 None)
    if have is None:
        try:
            have = cast.value.struct_info
        except Exception:  # noqa: BLE001 - unknown: the cast stays
            return False
    return structural_equal(have, cast.struct_info)


def feeding(roots: list, uses: dict) -> set:
    """The variables ``roots`` read, transitively."""
    seen: set = set()
    todo = list(roots)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        todo += uses.get(v, ())
    return seen


def _field_reads(order: list, uses: dict) -> dict:
    """The bindings of ``order`` whose value is a field of a tuple literal's variable
    (``t = (a, b); c = t[1]``, nested too), mapped to that field's expression (``b``); their
    ``uses`` entries are narrowed to it, so the tuple and its other fields stay dead when
    nothing else reads them."""
    from ...relax.analysis import free_vars

    tuples = {b.var: b.value for b in order
              if isinstance(b, VarBinding) and isinstance(b.value, Tuple)}
    direct: dict = {}
    for b in order:
        e = b.value
        if not isinstance(b, VarBinding) or not isinstance(e, TupleGetItem):
            continue
        while isinstance(e, TupleGetItem) and e.tuple_value in tuples:
            e = tuples[e.tuple_value].fields[e.index]
        if e is not b.value:
            direct[b.var] = e
            uses[b.var] = [e] if isinstance(e, Var) else free_vars(e)
    return direct


def evaluate(mod, args: list, name: str = "main", env: dict | None = None,
             implied_casts: bool = True, whole_tuples: bool = True):
    """``mod[name](*args)`` evaluated with numpy: an array or a tuple of them. ``env``, when
    given, is filled with every variable's value (params and the bindings that ran).
    ``implied_casts=False``: a match_cast to the struct info its value already has does not
    keep that value live (``CanonicalizeBindings`` removes such casts); ``whole_tuples=False``:
    a field read of a tuple literal's variable reads only that field (CanonicalizeBindings
    forwards it, then the tuple and its other fields are dead: an argmin read only by an
    unread field, Relax pass-sequence seed 700515)."""
    from ...relax.analysis import free_vars

    func = mod[name]
    env = {} if env is None else env
    # bindings no result reads are not evaluated (the build drops them: a max over an empty
    # axis there has no value and needs none); match_casts stay, they bind sizes and the
    # build checks them -- with ``implied_casts=False`` not one that casts to the struct info
    # its value already has (CanonicalizeBindings drops it, as TVM's does: an argmin read
    # only by such a cast is then dead, Relax pass-sequence seed 600211)
    uses, order = binding_uses(func)
    direct = {} if whole_tuples else _field_reads(order, uses)
    result_expr = func.body.body if isinstance(func.body, SeqExpr) else func.body
    casts = [b for b in order if isinstance(b, MatchCast) and (implied_casts or
                                                               not _implied(b))]
    live = feeding(free_vars(result_expr) + [u for b in casts for u in uses[b.var]], uses)
    live |= {b.var for b in casts}
    sym: dict = {}
    for p, a in zip(func.params, args, strict=True):
        a = np.asarray(a)
        _bind_sym(p.struct_info, a, sym)
        env[p] = a
    # frames: [bindings, index, body, target var of the enclosing If binding or None]
    blocks = func.body.blocks if isinstance(func.body, SeqExpr) else []
    stack = [[[b for blk in blocks for b in blk.bindings], 0,
              func.body.body if isinstance(func.body, SeqExpr) else func.body, None]]
    result = None
    while stack:
        frame = stack[-1]
        bindings, i, body, target = frame
        if i == len(bindings):
            stack.pop()
            value = _eval_leaf(body, env, sym)
            if target is None:
                result = value
            else:
                _check(value, target.struct_info, sym, target.name_hint)
                env[target] = value
            continue
        frame[1] = i + 1
        b = bindings[i]
        if b.var not in live:
            continue
        value_expr = b.value
        if isinstance(value_expr, If):
            cond = bool(np.asarray(_eval_leaf(value_expr.cond, env, sym)))
            br = value_expr.true_branch if cond else value_expr.false_branch
            if isinstance(br, SeqExpr):
                stack.append([[x for blk in br.blocks for x in blk.bindings], 0, br.body,
                               b.var])
            else:
                stack.append([[], 0, br, b.var])
            continue
        if isinstance(value_expr, SeqExpr):
            stack.append([[x for blk in value_expr.blocks for x in blk.bindings], 0,
                          value_expr.body, b.var])
            continue
        value = _eval_leaf(direct.get(b.var, value_expr), env, sym)
        if isinstance(b, MatchCast):
            _bind_sym(b.struct_info, value, sym)
            _check(value, b.struct_info, sym, f"match_cast {b.var.name_hint}")
        _check(value, b.var.struct_info, sym, b.var.name_hint)
        env[b.var] = value
    return result

"""Ill-typed Relay and Relax programs built by API: InferType / BlockBuilder normalization /
build must refuse them with an error naming the op, or accept what numpy accepts.

A table of ops (both dialects' constructors beside numpy's meaning) gives valid arguments; a case
damages one: an operand's shape (a dim changed, zeroed, dropped or added), its dtype, or an
attribute (an axis out of range, duplicated axes, a shape whose size does not match, a zero
stride, a window larger than the input, a dtype that does not exist, a value of the wrong Python
type). Oracle: numpy on arrays of the same shapes; when minitvm accepts, numpy must too and
give the same result shape and dtype (some accepted cases are built and run, and compared by
value); when minitvm refuses, the error must name the op.
"""

from __future__ import annotations

import random

import numpy as np

from .damage import DamageCase, Wrong

__all__ = ["cases", "OPS"]


def _softmax(x, axis=-1):
    if x.dtype.kind != "f":
        return None  # (no meaning to check: both dialects type it as the input's dtype)
    if x.size == 0:
        np.sum(x, axis=axis)  # (the axis must still exist)
        return x.copy()
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d(x, w):
    if x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
        raise ValueError("conv2d shapes")
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    if kh > h or kw > wd:
        raise ValueError("kernel larger than input")  # (an empty kernel: a sum of nothing)
    out = np.zeros((n, o, h - kh + 1, wd - kw + 1), np.result_type(x, w))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, i:i + h - kh + 1, j:j + wd - kw + 1],
                             w[:, :, i, j])
    return out


def _max_pool2d(x, pool_size):
    if x.ndim != 4:
        raise ValueError("rank")
    kh, kw = tuple(pool_size) * 2 if len(pool_size) == 1 else pool_size
    h, w = x.shape[2:]
    if not (0 < kh <= h and 0 < kw <= w):
        raise ValueError("window")
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return win.max(axis=(-2, -1))


def _split(x, sections, axis):
    return tuple(np.split(x, sections, axis=axis))


def _relax_split(x, sections, axis):
    """Relax's split: an int ``sections`` cuts pieces of ceil(n / sections), the last ones
    shorter or empty (TVM's Relax semantics; numpy.split refuses an uneven split)."""
    if isinstance(sections, int) and sections > 0:
        n = x.shape[axis]
        step = -(-n // sections)
        sections = [min(step * k, n) for k in range(1, sections)]
    return _split(x, sections, axis)


def _strided_slice(x, begin, end, strides):
    if not (len(begin) == len(end) == len(strides) <= x.ndim):
        raise ValueError("lengths")
    if 0 in strides:
        raise ValueError("zero stride")
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides, strict=True))]


def _squeeze(x, axis):
    return np.squeeze(x, axis=tuple(axis))


def _take(x, idx, axis):
    if idx.dtype.kind not in "iu":
        raise TypeError("indices must be integers")
    return np.take(x, idx, axis=axis, mode="clip")


def _reshape(x, shape):
    if any(d < -1 for d in shape):
        raise ValueError("negative size")
    return np.reshape(x, shape)


def _where(c, a, b):
    if a.dtype != b.dtype:
        raise TypeError("dtypes differ")
    return np.where(c, a, b)


def _same_dtype(fn):
    """numpy's function, refusing operands of different dtypes (Relay / Relax do not promote)."""
    def ref(*args, **kw):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if len({a.dtype for a in arrays}) > 1:
            raise TypeError("dtypes differ")
        return fn(*args, **kw)
    return ref


# name -> (relay builder, relax builder, numpy, operands [(shape, dtype)], attrs, attr damages)
def _ops():
    from ... import relay
    from ...relax import op as R

    f, i = "float32", "int32"
    return {
        "add": (relay.add, R.add, _same_dtype(np.add), [((2, 3), f), ((1, 3), f)], {}, {}),
        "multiply": (relay.multiply, R.multiply, _same_dtype(np.multiply),
                     [((4, 1, 3), f), ((2, 3), f)], {}, {}),
        "dense/matmul": (relay.nn.dense, R.matmul, None, [((2, 4), f), ((5, 4), f)], {}, {}),
        "concat": (lambda a, b, axis: relay.concatenate([a, b], axis),
                   lambda a, b, axis: R.concat([a, b], axis),
                   _same_dtype(lambda a, b, axis: np.concatenate([a, b], axis)),
                   [((2, 3), f), ((4, 3), f)], {"axis": 0}, {"axis": [2, -3, 99, 1.5, "0"]}),
        "reshape": (lambda x, shape: relay.reshape(x, shape), lambda x, shape: R.reshape(x, shape),
                    _reshape, [((2, 3, 4), f)], {"shape": [6, 4]},
                    {"shape": [[5, 5], [-1, -1], [-7, 24], [0, 24], [2.5, 4], [24, 1, 1], "ab"]}),
        "transpose": (lambda x, axes: relay.transpose(x, axes),
                      lambda x, axes: R.permute_dims(x, axes),
                      lambda x, axes: np.transpose(x, axes), [((2, 3, 4), f)],
                      {"axes": [2, 0, 1]}, {"axes": [[0, 0, 1], [0, 1], [0, 1, 3], [0, 1, -4],
                                                     [0, 1, 2, 3]]}),
        "sum": (lambda x, axis: relay.sum(x, axis), lambda x, axis: R.sum(x, axis),
                lambda x, axis: np.sum(x, axis=tuple(axis)), [((2, 3, 4), f)],
                {"axis": [1]}, {"axis": [[3], [-4], [0, 0], [1, -2], [7]]}),
        "take": (lambda x, idx, axis: relay.take(x, idx, axis),
                 lambda x, idx, axis: R.take(x, idx, axis), _take,
                 [((3, 4), f), ((2,), i)], {"axis": 1}, {"axis": [2, -3, 50]}),
        "conv2d": (relay.nn.conv2d, R.nn.conv2d, _conv2d,
                   [((1, 3, 6, 6), f), ((4, 3, 3, 3), f)], {}, {}),
        "max_pool2d": (lambda x, pool_size: relay.nn.max_pool2d(x, pool_size),
                       lambda x, pool_size: R.nn.max_pool2d(x, pool_size), _max_pool2d,
                       [((1, 2, 4, 4), f)], {"pool_size": (2, 2)},
                       {"pool_size": [(5, 5), (0, 2), (2,), (-1, 2)]}),
        "strided_slice": (lambda x, begin, end, strides: relay.strided_slice(x, begin, end,
                                                                             strides),
                          lambda x, begin, end, strides: R.strided_slice(
                              x, list(range(len(begin))), begin, end, strides),
                          _strided_slice, [((4, 5), f)],
                          {"begin": [0, 1], "end": [3, 5], "strides": [1, 2]},
                          {"strides": [[0, 1], [0, 0], [-0, 2]], "begin": [[0, 9], [-9, 0]],
                           "end": [[-9, 5], [0, 0]]}),
        "expand_dims": (lambda x, axis: relay.expand_dims(x, axis),
                        lambda x, axis: R.expand_dims(x, axis),
                        lambda x, axis: np.expand_dims(x, axis), [((2, 3), f)], {"axis": 1},
                        {"axis": [4, -4, 9]}),
        "squeeze": (lambda x, axis: relay.squeeze(x, axis), lambda x, axis: R.squeeze(x, axis),
                    _squeeze, [((2, 1, 3), f)], {"axis": [1]},
                    {"axis": [[0], [3], [-4], [1, 1]]}),
        "split": (lambda x, sections, axis: relay.split(x, sections, axis).astuple(),
                  lambda x, sections, axis: R.split(x, sections, axis), _split,
                  [((6, 4), f)], {"sections": 3, "axis": 0},
                  {"sections": [4, 0, -2, [7, 2]], "axis": [2, -3]}),
        "where": (relay.where, R.where, _where,
                  [((2, 3), "bool"), ((2, 3), f), ((1, 3), f)], {}, {}),
        "softmax": (lambda x, axis: relay.nn.softmax(x, axis),
                    lambda x, axis: R.nn.softmax(x, axis), _softmax, [((2, 3), f)],
                    {"axis": -1}, {"axis": [2, -3, 10]}),
        "cast": (lambda x, dtype: relay.cast(x, dtype), lambda x, dtype: R.astype(x, dtype),
                 lambda x, dtype: x.astype(dtype), [((2, 3), f)], {"dtype": "int32"},
                 {"dtype": ["float7", "", "int", "tensor"]}),
    }


_OPS: dict = {}


def OPS() -> dict:
    """The op table (built on first use: it imports both dialects)."""
    if not _OPS:
        _OPS.update(_ops())
    return _OPS


def _matmul_ref(dialect):
    if dialect == "relay":  # nn.dense: x (..., k) by w (n, k)
        def dense(x, w):
            if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
                raise ValueError("dense shapes")
            return x @ w.T
        return dense

    def matmul(x, w):
        if x.dtype != w.dtype:
            raise TypeError("dtypes differ")
        return np.matmul(x, w)
    return matmul


def _damage_shape(shape, rng):
    s = list(shape)
    kind = rng.choice(["plus", "zero", "drop", "add", "swap"])
    if kind == "plus" and s:
        k = rng.randrange(len(s))
        s[k] += rng.choice([1, 2])
    elif kind == "zero" and s:
        s[rng.randrange(len(s))] = 0
    elif kind == "drop" and s:
        del s[rng.randrange(len(s))]
    elif kind == "add":
        s.insert(rng.randrange(len(s) + 1), rng.choice([1, 2, 3]))
    elif len(s) > 1:
        s[0], s[-1] = s[-1], s[0]
    return tuple(s), kind


def _random_array(shape, dtype, nrng):
    if dtype == "bool":
        return nrng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return nrng.integers(0, 2, shape).astype(dtype)
    return nrng.standard_normal(shape).astype(dtype)


def _relay_run(fn, specs, attrs, build, arrays):
    import minitvm as tvm
    from minitvm import relay

    vs = [relay.var(f"p{k}", shape=s, dtype=d) for k, (s, d) in enumerate(specs)]
    call = fn(*vs, **attrs)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(vs, call)))
    ty = mod["main"].body.checked_type
    fields = ty.fields if hasattr(ty, "fields") else [ty]
    shapes = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in fields]
    values = None
    if build:
        with tvm.transform.PassContext(opt_level=0):
            f = relay.create_executor("graph", mod=mod, target="llvm").evaluate()
        out = f(*arrays)
        values = [o.numpy() for o in (out if hasattr(out, "__len__") and not hasattr(
            out, "numpy") else [out])]
    return shapes, values


def _relax_run(fn, specs, attrs, build, arrays):
    import minitvm as tvm
    from minitvm import relax
    from minitvm.relax import BlockBuilder, Var
    from minitvm.relax.struct_info import TensorStructInfo, TupleStructInfo

    vs = [Var(f"p{k}", TensorStructInfo(list(s), d)) for k, (s, d) in enumerate(specs)]
    bb = BlockBuilder()
    with bb.function("main", vs):
        with bb.dataflow():
            gv = bb.emit_output(fn(*vs, **attrs))
        bb.emit_func_output(gv)
    sinfo = gv.struct_info
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else [sinfo]
    shapes = [(tuple(int(d) for d in t.shape.values), str(t.dtype)) for t in fields]
    values = None
    if build:
        vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), tvm.cpu())
        out = vm["main"](*arrays)
        values = [np.asarray(o.numpy()) for o in (out if isinstance(out, list | tuple)
                                                  else [out])]
    return shapes, values


def _make_case(index: int, rng: random.Random, dialect: str) -> DamageCase:
    ops = OPS()
    name = rng.choice(sorted(ops))
    relay_fn, relax_fn, ref, specs, attrs, attr_bad = ops[name]
    fn = relay_fn if dialect == "relay" else relax_fn
    ref = ref or _matmul_ref(dialect)
    if name == "split" and dialect == "relax":
        ref = _relax_split
    specs, attrs = list(specs), dict(attrs)
    roll = rng.random()
    if attr_bad and roll < 0.4:
        key = rng.choice(sorted(attr_bad))
        attrs[key] = rng.choice(attr_bad[key])
        what = f"{key}={attrs[key]!r}"
    elif roll < 0.8:
        k = rng.randrange(len(specs))
        shape, kind = _damage_shape(specs[k][0], rng)
        specs[k] = (shape, specs[k][1])
        what = f"operand {k} shape {kind} -> {shape}"
    else:
        k = rng.randrange(len(specs))
        dt = rng.choice(["int32", "float16", "bool", "int64", "float64"])
        specs[k] = (specs[k][0], dt)
        what = f"operand {k} dtype -> {dt}"
    build = rng.random() < 0.3
    seed = rng.randrange(1 << 30)
    op_words = {"dense/matmul": ("dense", "matmul"), "concat": ("concat",),
                "transpose": ("transpose", "permute_dims"), "cast": ("cast", "astype")}
    expect = op_words.get(name, (name,))

    def run():
        nrng = np.random.default_rng(seed)
        arrays = [_random_array(s, d, nrng) for s, d in specs]
        shapes, values = (_relay_run if dialect == "relay" else _relax_run)(
            fn, specs, attrs, build, arrays)
        try:
            want = ref(*arrays, **attrs)
        except Exception as err:  # noqa: BLE001 - numpy refuses: so must we
            raise Wrong(f"accepted ({shapes}); numpy refuses: {type(err).__name__}: "
                        f"{err}") from None
        if want is None:
            return
        want = list(want) if isinstance(want, tuple) else [want]
        want_shapes = [tuple(w.shape) for w in want]
        if [s for s, _ in shapes] != want_shapes:
            raise Wrong(f"inferred shapes {shapes}, numpy gives {want_shapes}")
        if values is not None and len({a.dtype for a in arrays[:2]}) == 1:
            # (mixed operand dtypes: the dialect's result dtype is one operand's, numpy
            # promotes; only the shapes are compared)
            for g, w in zip(values, want, strict=True):
                w = w.astype(g.dtype)  # (sum of bools: numpy counts, the dialects keep bool)
                tol = 1e-2 if g.dtype == np.float16 else 1e-4
                if g.shape != w.shape or not np.allclose(g.astype("float64"),
                                                         w.astype("float64"), rtol=tol,
                                                         atol=tol, equal_nan=True):
                    raise Wrong(f"built and ran: values differ from numpy's ({g.shape})")

    return DamageCase(f"ir/{dialect}/{name}", f"ir#{index} {dialect} {name} {what}"
                      f"{' build' if build else ''}", run, expect)


def cases(seed: int, n: int) -> list[DamageCase]:
    """``n`` damaged op calls, alternating Relay and Relax."""
    rng = random.Random(seed)
    return [_make_case(i, rng, "relay" if i % 2 == 0 else "relax") for i in range(n)]

"""argmax / argmin as native kernels (``topi.reduction.arg_reduce``, Relay's compute in
``topi/reduce.py``, Relax's legalization): the extreme, then the first (or, Relay's
``select_last_index``, the last) index holding it, counted row-major over the reduced axes.
Against numpy: ties, NaN (the first NaN wins, as numpy), -inf/+inf, several axes, ``exclude``,
``keepdims``, static and symbolic shapes; no kernel falls back to numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, te, tir
from minitvm.contrib import graph_executor
from minitvm.topi import reduction


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _np_arg(kind, x, axes, keepdims=False, last=False):
    """numpy's argmax/argmin over ``axes`` moved last and flattened (Relay's definition)."""
    fn = np.argmax if kind == "max" else np.argmin
    keep = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, keep + list(axes))
    flat = moved.reshape([x.shape[d] for d in keep] + [-1])
    idx = flat.shape[-1] - 1 - fn(flat[..., ::-1], axis=-1) if last else fn(flat, axis=-1)
    if keepdims:
        idx = idx.reshape([1 if d in axes else x.shape[d] for d in range(x.ndim)])
    return idx


def _sample(shape, rng, ties=True, specials=True):
    x = rng.standard_normal(shape).astype("float32")
    if ties:  # a few repeated values: the first (last) of equal extremes must be picked
        x = np.round(x * 2) / 2
    if specials and x.size > 40:
        flat = x.reshape(-1)
        flat[3] = np.nan
        flat[17] = np.nan
        flat[25] = np.inf
        flat[31] = -np.inf
    return x


def _relay_run(x, make, dtype="float32"):
    v = relay.var("x", shape=x.shape, dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([v], make(v)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    kinds = {n: k.kind for n, k in lib.get_lib().kernels.items()}
    assert all(k == "native" for k in kinds.values()), kinds
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    return g.get_output(0).numpy()


RELAY_CASES = [
    ((16, 1000), (-1,), False, False),
    ((16, 1000), (1,), True, False),
    ((1, 21, 128, 128), (1,), False, False),
    ((1, 21, 32, 40), (1,), True, True),
    ((3, 5, 7), (0, 2), False, False),
    ((3, 5, 7), (0, 2), False, True),
    ((4, 6, 33), None, False, False),
    ((4, 6, 33), None, True, True),
    ((37,), (0,), False, False),
]


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("shape, axis, keepdims, last", RELAY_CASES)
def test_relay_matches_numpy(kind, shape, axis, keepdims, last, rng):
    x = _sample(shape, rng)
    op = relay.argmax if kind == "max" else relay.argmin
    got = _relay_run(x, lambda v: op(v, axis=axis, keepdims=keepdims, select_last_index=last))
    axes = list(range(len(shape))) if axis is None else sorted(a % len(shape) for a in axis)
    want = _np_arg(kind, x, axes, keepdims, last)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_relay_exclude_reduces_the_other_axes(rng):
    x = _sample((4, 5, 6), rng)
    got = _relay_run(x, lambda v: relay.argmin(v, axis=[1], exclude=True))
    np.testing.assert_array_equal(got, _np_arg("min", x, [0, 2]))


def test_relay_int_input_and_int64_cast(rng):
    x = rng.integers(-5, 5, size=(8, 300)).astype("int32")
    got = _relay_run(x, lambda v: relay.cast(relay.argmax(v, axis=1), "int64"), dtype="int32")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.argmax(x, axis=1))


def test_nan_rows_give_the_first_nan(rng):
    x = rng.standard_normal((5, 100)).astype("float32")
    x[1, 70] = x[1, 40] = np.nan
    x[2, 99] = np.nan
    x[3, :] = np.nan
    for kind, op in (("max", relay.argmax), ("min", relay.argmin)):
        got = _relay_run(x, lambda v, op=op: op(v, axis=-1))
        np.testing.assert_array_equal(got, _np_arg(kind, x, [1]))
        assert list(got[1:4]) == [40, 99, 0]


def test_arg_reduce_without_axes_is_refused():
    x = te.placeholder((3,), name="x")
    with pytest.raises(ValueError, match="argmax: no axis"):
        reduction.arg_reduce("max", x, [])


# ------------------------------------------------------------------------------------ Relax
def _relax_vm(make, shape):
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(make(x))
        bb.emit_func_output(gv)
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("shape, axis, keepdims", [
    ((16, 1000), -1, False),
    ((1, 21, 128, 128), 1, False),
    ((1, 21, 20, 24), 1, True),
    ((4, 6, 33), None, False),
    ((4, 6, 33), None, True),
])
def test_relax_matches_numpy(kind, shape, axis, keepdims, rng):
    fn = relax.op.argmax if kind == "max" else relax.op.argmin
    vm = _relax_vm(lambda v: fn(v, axis=axis, keepdims=keepdims), list(shape))
    x = _sample(shape, rng)
    got = vm["main"](tvm.nd.array(x)).numpy()
    np_fn = np.argmax if kind == "max" else np.argmin
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np_fn(x, axis=axis, keepdims=keepdims))


def test_relax_symbolic_length(rng):
    n = tir.Var("n", "int64")
    vm = _relax_vm(lambda v: relax.op.argmax(v, axis=1), [3, n])
    for length in (1, 17, 1000):
        x = _sample((3, length), rng)
        np.testing.assert_array_equal(vm["main"](tvm.nd.array(x)).numpy(),
                                      np.argmax(x, axis=1))

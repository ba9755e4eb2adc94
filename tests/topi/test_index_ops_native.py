"""Native computes of one_hot, scatter_nd, scatter_elements, trilu, sequence_mask, slice_like,
matrix_set_diag, invert_permutation and searchsorted (``topi.index_ops``) match the ops' numpy
references (the debug interpreter runs those) and numpy itself; the builds are strict, so a
numpy fallback fails them."""

import numpy as np
import pytest
from native_cases import native_and_reference

import minitvm
from minitvm import relay
from minitvm.contrib import graph_executor

RNG = np.random.default_rng(0)


def _v(name, a):
    return relay.var(name, shape=a.shape, dtype=str(a.dtype))


@pytest.mark.parametrize("indices, depth, axis", [
    ([0, 2, -1, 3, 5], 4, -1),            # a negative and an out-of-range index: all off
    ([[1, 0, 2], [2, 2, -3]], 3, 0),
    ([[1, 0, 2], [2, 2, 1]], 3, 1),
])
@pytest.mark.parametrize("on, off, dtype", [(1.0, 0.0, "float32"), (5, -2, "int32"),
                                            (-0.5, 2.25, "float32")])
def test_one_hot(indices, depth, axis, on, off, dtype):
    i = np.array(indices, "int32")
    expr = relay.one_hot(_v("i", i), relay.const(on, dtype), relay.const(off, dtype), depth,
                         axis, dtype)
    got, want = native_and_reference(expr, {"i": i})
    np.testing.assert_array_equal(got, want)
    hot = np.moveaxis(np.arange(depth) == i[..., None], -1, axis % (i.ndim + 1))
    np.testing.assert_array_equal(got, np.where(hot, on, off).astype(dtype))


def _scatter_nd_np(data, idx, upd, mode):
    out = data.copy()
    m = idx.shape[0]
    flat = idx.reshape(m, -1)
    upd = upd.reshape((flat.shape[1],) + data.shape[m:])
    for j in range(flat.shape[1]):
        t = tuple(flat[:, j])
        out[t] = upd[j] if mode == "update" else \
            {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[mode](
                out[t], upd[j])
    return out


@pytest.mark.parametrize("mode", ["update", "add", "mul", "min", "max"])
@pytest.mark.parametrize("dshape, indices", [
    ((5, 4), [[0, 3, -1, 3]]),                         # repeated row 3, negative row -1
    ((4, 5, 3), [[[0, 1], [3, 0]], [[2, 4], [-5, 2]]]),  # index tuples on the first dim
    ((3, 4), [[1, 1, 2, 1], [0, 0, 3, 0]]),              # (1, 0) three times
    ((4, 6), [2, -1]),                                   # one index tuple, a scalar update
])
def test_scatter_nd(mode, dshape, indices):
    data = RNG.standard_normal(dshape).astype("float32")
    idx = np.array(indices, "int64")
    upd = RNG.standard_normal(idx.shape[1:] + dshape[idx.shape[0]:]).astype("float32")
    expr = relay.scatter_nd(_v("d", data), _v("i", idx), _v("u", upd), mode)
    got, want = native_and_reference(expr, {"d": data, "i": idx, "u": upd})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, _scatter_nd_np(data, idx, upd, mode), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("reduction", ["update", "add", "max"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements(reduction, axis):
    data = RNG.standard_normal((4, 5)).astype("float32")
    n = data.shape[axis]
    idx = np.array([[0, -1, 2, 0], [1, 1, -n, 3], [0, 0, 0, 2]], "int64") % n
    idx[0, 1] = -1  # a negative index counts from the end
    upd = RNG.standard_normal(idx.shape).astype("float32")
    expr = relay.scatter_elements(_v("d", data), _v("i", idx), _v("u", upd), axis, reduction)
    got, want = native_and_reference(expr, {"d": data, "i": idx, "u": upd})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 6), (2, 5, 3)])
@pytest.mark.parametrize("k", [0, 2, -1])
@pytest.mark.parametrize("upper", [True, False])
def test_trilu(shape, k, upper):
    x = RNG.standard_normal(shape).astype("float32")
    got, want = native_and_reference(relay.trilu(_v("x", x), k, upper), {"x": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.triu(x, k) if upper else np.tril(x, k))


def test_trilu_k_from_an_input():
    x = RNG.standard_normal((5, 5)).astype("float32")
    k = np.array(-2, "int64")
    got, _ = native_and_reference(relay.trilu(_v("x", x), _v("k", k), False), {"x": x, "k": k})
    np.testing.assert_array_equal(got, np.tril(x, -2))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("trailing", [(), (3,)])
def test_sequence_mask(axis, trailing):
    t, b = 6, 4
    x = RNG.standard_normal(((t, b) if axis == 0 else (b, t)) + trailing).astype("float32")
    lengths = np.array([0, 6, 2, 9], "int32")  # empty, full, partial, past the end
    expr = relay.sequence_mask(_v("x", x), _v("l", lengths), -7.5, axis)
    got, want = native_and_reference(expr, {"x": x, "l": lengths})
    np.testing.assert_array_equal(got, want)
    steps = np.arange(t)
    keep = steps[:, None] < lengths[None] if axis == 0 else lengths[:, None] > steps[None]
    np.testing.assert_array_equal(
        got, np.where(keep.reshape(keep.shape + (1,) * len(trailing)), x, -7.5))


def test_sequence_mask_float_lengths():
    x = RNG.standard_normal((5, 3)).astype("float32")
    lengths = np.array([2.5, 0.0, 4.0], "float32")
    got, want = native_and_reference(relay.sequence_mask(_v("x", x), _v("l", lengths)),
                                     {"x": x, "l": lengths})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:, 0], np.r_[x[:3, 0], 0, 0])


@pytest.mark.parametrize("like_shape, axes", [((2, 3), None), ((3, 1, 2), (0, 2)),
                                               ((9, 9, 2), (-1,))])
def test_slice_like(like_shape, axes):
    x = RNG.standard_normal((4, 5, 3)).astype("float32")
    like = np.zeros(like_shape, "float32")
    got, want = native_and_reference(relay.slice_like(_v("x", x), _v("y", like), axes),
                                      {"x": x, "y": like})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape, k, align", [
    ((4, 5), 0, "RIGHT_LEFT"),
    ((2, 5, 4), 1, "RIGHT_LEFT"),
    ((5, 3), -2, "RIGHT_LEFT"),
    ((4, 5), (-1, 2), "RIGHT_LEFT"),
    ((2, 4, 4), (-2, 1), "LEFT_RIGHT"),
    ((3, 5), (0, 2), "LEFT_LEFT"),
    ((5, 3), (-3, -1), "RIGHT_RIGHT"),
])
def test_matrix_set_diag(shape, k, align):
    x = RNG.standard_normal(shape).astype("float32")
    rows, cols = shape[-2:]
    k1, k2 = (k, k) if isinstance(k, int) else k
    width = max(min(rows + min(d, 0), cols - max(d, 0)) for d in range(k1, k2 + 1))
    dshape = shape[:-2] + ((width,) if k1 == k2 else (k2 - k1 + 1, width))
    diag = RNG.standard_normal(dshape).astype("float32")
    expr = relay.matrix_set_diag(_v("x", x), _v("d", diag), k, align)
    got, want = native_and_reference(expr, {"x": x, "d": diag})
    np.testing.assert_array_equal(got, want)
    band = np.arange(cols)[None] - np.arange(rows)[:, None]
    outside = (band < k1) | (band > k2)
    np.testing.assert_array_equal(got[..., outside], x[..., outside])
    if k1 == k2:  # one diagonal: its entries in order
        np.testing.assert_array_equal(np.diagonal(got, k1, -2, -1), diag)


@pytest.mark.parametrize("n, dtype", [(1, "int32"), (7, "int32"), (12, "int64")])
def test_invert_permutation(n, dtype):
    p = RNG.permutation(n).astype(dtype)
    got, want = native_and_reference(relay.invert_permutation(_v("p", p)), {"p": p})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.argsort(p))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("seq_shape, val_shape", [((6,), (4,)), ((6,), (2, 3)),
                                                   ((3, 5), (3, 4)), ((2, 2, 7), (2, 2, 3))])
def test_searchsorted(right, seq_shape, val_shape):
    seq = np.sort(RNG.integers(-4, 5, seq_shape), axis=-1).astype("float32")  # ties
    vals = RNG.integers(-6, 7, val_shape).astype("float32")
    expr = relay.searchsorted(_v("s", seq), _v("v", vals), right, "int64")
    got, want = native_and_reference(expr, {"s": seq, "v": vals})
    np.testing.assert_array_equal(got, want)


def test_scatter_nd_unknown_mode_is_a_type_error():
    data, idx = np.zeros((4, 2), "float32"), np.array([[1, 2]], "int64")
    upd = np.ones((2, 2), "float32")
    with pytest.raises(TypeError, match="mode must be one of"):
        native_and_reference(relay.scatter_nd(_v("d", data), _v("i", idx), _v("u", upd), "sub"),
                             {"d": data, "i": idx, "u": upd})


def _big_scatter_add():
    data = RNG.standard_normal((256, 64)).astype("float32")
    idx = RNG.integers(0, 256, (1, 128)).astype("int64")
    upd = RNG.standard_normal((128, 64)).astype("float32")
    expr = relay.scatter_nd(_v("d", data), _v("i", idx), _v("u", upd), "add")
    mod = minitvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    want = data.copy()
    np.add.at(want, idx[0], upd)
    return mod, {"d": data, "i": idx, "u": upd}, want


def test_large_scatter_is_native_in_one_pass():
    """A scatter whose te form would compare more than SCATTER_MAX_PAIRS positions (here
    256 x 64 outputs x 128 updates) runs as the one-pass stage (``topi.scatter_linear``) in a
    strict build; it ran in numpy before."""
    mod, inputs, want = _big_scatter_add()
    with minitvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)

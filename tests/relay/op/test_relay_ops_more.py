"""Sorting, scans, scatters, einsum, matrix, index, image and rearranging ops: types, numpy
semantics through the interpreter, compiled == interpreter, text round trip, clear errors."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(0)


def _mod(build, *arrays):
    vs = [relay.var(f"x{i}", shape=a.shape, dtype=str(a.dtype)) for i, a in enumerate(arrays)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, build(*vs)))
    return relay.transform.InferType()(mod)


def _check(build, *arrays, expect=None, exact=True):
    """Interpreter result (checked against ``expect``), equal to the compiled one (to float32
    rounding unless ``exact``: native float32 interpolation beside the float64 reference), and
    the module survives print/parse."""
    mod = _mod(build, *arrays)
    tvm.ir.assert_structural_equal(relay.parse(mod.astext()), mod)
    got = relay.create_executor("debug", mod=mod).evaluate()(*arrays)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f"x{i}", a)
    m.run()
    outs = got if isinstance(got, (list, tuple)) or hasattr(got, "fields") else [got]
    outs = [o.numpy() for o in outs]
    for k, o in enumerate(outs):
        if exact:
            np.testing.assert_array_equal(m.get_output(k).numpy(), o)
        else:
            np.testing.assert_allclose(m.get_output(k).numpy(), o, rtol=1e-5, atol=1e-5)
    if expect is not None:
        expect = expect if isinstance(expect, (list, tuple)) else [expect]
        for o, e in zip(outs, expect):
            np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-6)
    return outs


def test_sort_argsort_topk_searchsorted():
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0]], "float32")
    _check(lambda a: relay.sort(a, axis=1), x, expect=np.sort(x, 1))
    _check(lambda a: relay.sort(a, axis=1, is_ascend=False), x, expect=-np.sort(-x, 1))
    _check(lambda a: relay.argsort(a, axis=1), x, expect=np.argsort(x, 1, kind="stable"))
    _check(lambda a: relay.argsort(a, axis=0, is_ascend=False, dtype="int64"), x,
           expect=np.argsort(-x, 0, kind="stable"))
    vals, idx = _check(lambda a: relay.topk(a, k=2, axis=1).astuple(), x)
    np.testing.assert_array_equal(vals, [[3.0, 2.0], [5.0, 5.0]])
    np.testing.assert_array_equal(idx, [[0, 2], [2, 3]])
    _check(lambda a: relay.topk(a, k=1, ret_type="indices", is_ascend=True), x,
           expect=np.array([[1], [1]]))
    seq = np.array([1.0, 3.0, 5.0, 7.0], "float32")
    v = np.array([0.0, 3.0, 6.0, 9.0], "float32")
    _check(lambda s, a: relay.searchsorted(s, a), seq, v, expect=np.searchsorted(seq, v))
    _check(lambda s, a: relay.searchsorted(s, a, right=True), seq, v,
           expect=np.searchsorted(seq, v, side="right"))


def test_scans_and_scatters():
    x = RNG.integers(-3, 4, (3, 4)).astype("int32")
    _check(lambda a: relay.cumsum(a, axis=1), x, expect=np.cumsum(x, 1))
    _check(lambda a: relay.cumsum(a), x, expect=np.cumsum(x))
    _check(lambda a: relay.cumprod(a, axis=0, exclusive=True), x,
           expect=np.concatenate([np.ones((1, 4)), np.cumprod(x, 0)[:-1]]))
    data = np.zeros((3, 3), "float32")
    idx = np.array([[1, 0, 2], [0, 2, 1]], "int64")
    upd = np.array([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], "float32")
    want = data.copy()
    for i in range(2):
        for j in range(3):
            want[idx[i, j], j] = upd[i, j]
    _check(lambda d, i, u: relay.scatter_elements(d, i, u, axis=0), data, idx, upd, expect=want)
    _check(lambda d, i, u: relay.scatter_elements(d, i, u, axis=0, reduction="add"),
           data + 1, idx, upd, expect=want + 1 + (want != 0) * 0)
    nd_idx = np.array([[0, 1], [1, 2]], "int64")  # (m=2, n=2): points (0, 1) and (1, 2)
    nd_upd = np.array([5.0, 6.0], "float32")
    want = np.zeros((3, 3), "float32")
    want[0, 1], want[1, 2] = 5.0, 6.0
    _check(lambda d, i, u: relay.scatter_nd(d, i, u), data, nd_idx, nd_upd, expect=want)


def test_einsum_trilu_matrix_set_diag():
    a, b = RNG.standard_normal((2, 3, 4)).astype("float32"), RNG.standard_normal(
        (2, 4, 5)).astype("float32")
    # native einsum sums in float32 in its own order: equal to float32 rounding
    _check(lambda x, y: relay.einsum([x, y], "bij,bjk->bik"), a, b,
           expect=np.einsum("bij,bjk->bik", a, b), exact=False)
    _check(lambda x: relay.einsum([x], "bij->ji"), a, expect=np.einsum("bij->ji", a),
           exact=False)
    _check(lambda x, y: relay.einsum([x, y], "...ij,...jk"), a, b,
           expect=np.einsum("...ij,...jk", a, b), exact=False)
    m = RNG.standard_normal((2, 4, 4)).astype("float32")
    _check(lambda x: relay.trilu(x, 1), m, expect=np.triu(m, 1))
    _check(lambda x: relay.trilu(x, -1, upper=False), m, expect=np.tril(m, -1))
    diag = np.arange(8, dtype="float32").reshape(2, 4)
    want = m.copy()
    for k in range(2):
        np.fill_diagonal(want[k], diag[k])
    _check(lambda x, d: relay.matrix_set_diag(x, d), m, diag, expect=want)


@pytest.mark.numpy_fallback("sparse_to_dense has no native compute")
def test_index_ops():
    idx = np.array([5, 0, 11], "int32")
    _check(lambda i: relay.unravel_index(i, (3, 4)), idx,
           expect=np.array(np.unravel_index(idx, (3, 4))))
    sp = np.array([[0, 1], [2, 3]], "int32")
    vals = np.array([7.0, 8.0], "float32")
    want = np.full((3, 4), -1.0, "float32")
    want[0, 1], want[2, 3] = 7.0, 8.0
    _check(lambda i, v: relay.sparse_to_dense(i, (3, 4), v, relay.const(-1.0)), sp, vals,
           expect=want)
    perm = np.array([2, 0, 3, 1], "int32")
    _check(relay.invert_permutation, perm, expect=np.argsort(perm))
    x = np.array([100, -100, 7, 2**20], "int32")
    # multiplier 2^30 with shift 0 halves: x * 2^30 / 2^31, rounded half up
    _check(lambda a: relay.fixed_point_multiply(a, 2**30, 0), x,
           expect=np.floor(x / 2 + 0.5).astype("int32"))


@pytest.mark.parametrize("method,mode", [("nearest_neighbor", "asymmetric"),
                                         ("linear", "half_pixel"),
                                         ("linear", "align_corners"),
                                         ("cubic", "half_pixel")])
def test_resize2d(method, mode):
    x = RNG.standard_normal((1, 2, 4, 5)).astype("float32")
    out = _check(lambda a: relay.image.resize2d(a, (8, 3), method=method,
                                                coordinate_transformation_mode=mode), x,
                 exact=False)[0]
    assert out.shape == (1, 2, 8, 3)
    if method == "nearest_neighbor":
        rows = np.floor(np.arange(8) * 4 / 8).astype(int)
        cols = np.floor(np.arange(3) * 5 / 3).astype(int)
        np.testing.assert_array_equal(out, x[:, :, rows][:, :, :, cols])
    if mode == "align_corners":
        np.testing.assert_allclose(out[..., 0, 0], x[..., 0, 0], rtol=1e-6)
        np.testing.assert_allclose(out[..., -1, -1], x[..., -1, -1], rtol=1e-6)
    same = _check(lambda a: relay.image.resize2d(a, (4, 5), method=method,
                                                 coordinate_transformation_mode=mode), x,
                  exact=False)[0]
    np.testing.assert_allclose(same, x, rtol=1e-5, atol=1e-5)


def test_rearranging_nn_ops():
    x = RNG.standard_normal((1, 8, 2, 3)).astype("float32")
    d2s = _check(lambda a: relay.nn.depth_to_space(a, 2), x)[0]
    assert d2s.shape == (1, 2, 4, 6)
    _check(lambda a: relay.nn.space_to_depth(relay.nn.depth_to_space(a, 2), 2), x, expect=x)
    nhwc = x.transpose(0, 2, 3, 1).copy()
    out = _check(lambda a: relay.nn.depth_to_space(a, 2, layout="NHWC", mode="CRD"), nhwc)[0]
    want = _check(lambda a: relay.nn.depth_to_space(a, 2, mode="CRD"), x)[0]
    np.testing.assert_array_equal(out, want.transpose(0, 2, 3, 1))
    y = RNG.standard_normal((2, 3)).astype("float32")
    _check(lambda a: relay.nn.mirror_pad(a, ((1, 1), (2, 0))), y,
           expect=np.pad(y, ((1, 1), (2, 0)), mode="symmetric"))
    _check(lambda a: relay.nn.mirror_pad(a, ((1, 0), (2, 1)), mode="REFLECT"), y,
           expect=np.pad(y, ((1, 0), (2, 1)), mode="reflect"))
    dil = _check(lambda a: relay.nn.dilate(a, (2, 3), 9.0), y)[0]
    assert dil.shape == (3, 7) and dil[1, 0] == 9.0 and dil[2, 6] == y[1, 2]


@pytest.mark.parametrize("build,shapes,msg", [
    (lambda a: relay.topk(a, ret_type="all"), [(2, 3)], "ret_type"),
    (lambda a: relay.sort(a, axis=2), [(2, 3)], "axis 2 is out of range"),
    (lambda a, b: relay.einsum([a, b], "ij,jk->ik"), [(2, 3), (4, 5)], "label 'j'"),
    (lambda a: relay.einsum([a], "ijk->i"), [(2, 3)], "rank 2"),
    (lambda a: relay.nn.depth_to_space(a, 2), [(1, 6, 2, 2)], "divisible"),
    (lambda a: relay.nn.mirror_pad(a, ((3, 0), (0, 0)), mode="REFLECT"), [(3, 3)], "too large"),
    (lambda a: relay.image.resize2d(a, (4, 4), method="area"), [(1, 1, 2, 2)], "method"),
    (lambda a, i, u: relay.scatter_elements(a, i, u), [(3, 3), (2, 3), (2, 2)], "indices"),
])
def test_errors_name_the_problem(build, shapes, msg):
    dtypes = ["float32", "int64", "float32"]
    vs = [relay.var(f"v{i}", shape=s, dtype=dtypes[i] if "scatter" in msg or i == 0 else
                    "float32") for i, s in enumerate(shapes)]
    with pytest.raises(Exception, match=msg):
        relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(vs, build(*vs))))


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_depth_space_rearranges_type_a_dynamic_batch(layout):
    """A dynamic batch (``Any``) passes through depth_to_space / space_to_depth's types (a
    TFLite model imported for any batch); the other dims stay checked."""
    from minitvm.relay.transform import InferType

    x = relay.var("x", shape=(relay.Any(), 4, 4, 8), dtype="float32")
    for f, want in ((relay.nn.space_to_depth, {"NHWC": "(?, 2, 2, 32)", "NCHW": "(?, 16, 2, 4)"}),
                    (relay.nn.depth_to_space, {"NHWC": "(?, 8, 8, 2)", "NCHW": "(?, 1, 8, 16)"})):
        mod = InferType()(tvm.IRModule.from_expr(relay.Function([x], f(x, 2, layout=layout))))
        assert str(mod["main"].ret_type) == f"Tensor[{want[layout]}, float32]"
    with pytest.raises(Exception, match="divisible"):
        InferType()(tvm.IRModule.from_expr(relay.Function(
            [x], relay.nn.space_to_depth(x, 3, layout=layout))))

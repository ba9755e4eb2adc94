"""LegalizeOps of the ops added for TVM coverage: the lowered module (TVMScript Expected for
flip and tile over a symbolic dim), one ``call_tir`` per op to a PrimFunc named after it, and
the PrimFuncs run directly against numpy on static odd shapes."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm import relax
from minitvm.ir import structural_equal
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps
from minitvm.script import from_source

FLIP_BEFORE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        n = T.int64()
        gv: R.Tensor((n, 3), dtype="float32") = R.flip(x, axis=0)
        return gv
'''

FLIP_EXPECTED = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def flip(var_x: T.handle, var_T_reverse_sequence: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(3)))
        T_reverse_sequence = T.match_buffer(var_T_reverse_sequence, (n, T.int64(3)))
        for ax0, ax1 in T.grid(n, T.int64(3)):
            with T.block("T_reverse_sequence"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[n - T.int64(1) - v_ax0, v_ax1])
                T.writes(T_reverse_sequence[v_ax0, v_ax1])
                T_reverse_sequence[v_ax0, v_ax1] = x[n - T.int64(1) - v_ax0, v_ax1]

    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        n = T.int64()
        cls = Module
        gv = R.call_tir(cls.flip, (x,), out_sinfo=R.Tensor((n, 3), dtype="float32"))
        return gv
'''

TILE_BEFORE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 2), dtype="int32")) -> R.Tensor((3, "n", 4), dtype="int32"):
        n = T.int64()
        gv: R.Tensor((3, n, 4), dtype="int32") = R.tile(x, repeats=[3, 1, 2])
        return gv
'''

TILE_EXPECTED = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def tile(var_x: T.handle, var_T_tile: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(2)), "int32")
        T_tile = T.match_buffer(var_T_tile, (T.int64(3), n, T.int64(4)), "int32")
        for ax0, ax1, ax2 in T.grid(T.int64(3), n, T.int64(4)):
            with T.block("T_tile"):
                v_ax0, v_ax1, v_ax2 = T.axis.remap("SSS", [ax0, ax1, ax2])
                T.reads(x[v_ax1, v_ax2 % T.int64(2)])
                T.writes(T_tile[v_ax0, v_ax1, v_ax2])
                T_tile[v_ax0, v_ax1, v_ax2] = x[v_ax1, v_ax2 % T.int64(2)]

    @R.function
    def main(x: R.Tensor(("n", 2), dtype="int32")) -> R.Tensor((3, "n", 4), dtype="int32"):
        n = T.int64()
        cls = Module
        gv = R.call_tir(cls.tile, (x,), out_sinfo=R.Tensor((3, n, 4), dtype="int32"))
        return gv
'''


@pytest.mark.parametrize("before,expected", [(FLIP_BEFORE, FLIP_EXPECTED),
                                             (TILE_BEFORE, TILE_EXPECTED)])
def test_legalized_module_matches_expected(before, expected):
    after = LegalizeOps()(from_source(before))
    want = from_source(expected)
    assert structural_equal(after, want), after.script()


def _legalized_names(make, sinfos):
    from legalize_util import bindings, one_op_module

    mod = LegalizeOps()(one_op_module(make, sinfos))
    calls = [b.value for b in bindings(mod["main"]) if isinstance(b.value, relax.Call)]
    assert all(c.op.name == "relax.call_tir" for c in calls), [c.op.name for c in calls]
    return [c.args[0].name_hint for c in calls]


@pytest.mark.parametrize("make,sinfos,name", [
    (lambda x: R.stack([x, x]), [tensor([3, 2])], "stack"),
    (lambda i: R.one_hot(i, 1.0, 0.0, 3), [tensor([3], "int64")], "one_hot"),
    (lambda x: R.sort(x), [tensor([3, 2])], "sort"),
    (lambda x: R.argsort(x), [tensor([3, 2])], "argsort"),
    (lambda x: R.topk(x, 1), [tensor([3, 2])], "topk"),
    (lambda x: R.nn.selu(x), [tensor([3])], "selu"),
    (lambda x: R.nn.batch_flatten(x), [tensor([3, 2, 2])], "batch_flatten"),
    (lambda a, b: R.collapse_sum_like(a, b), [tensor([3, 2]), tensor([2])], "collapse_sum"),
])
def test_each_op_is_one_call_tir_named_after_it(make, sinfos, name):
    assert _legalized_names(make, sinfos) == [name]


def test_numeric_data_movement():
    a = rand((3, 5))
    check(lambda x: R.flip(x, axis=1), [tensor(a.shape)], [a], a[:, ::-1])
    check(lambda x: R.tile(x, [2, 1]), [tensor(a.shape)], [a], np.tile(a, [2, 1]))
    check(lambda x, y: R.stack((x, y), axis=2), [tensor(a.shape)] * 2, [a, a + 1],
          np.stack([a, a + 1], 2))
    i = np.array([0, 2, 1], "int64")
    check(lambda t: R.one_hot(t, 2, 0, 3), [tensor([3], "int64")], [i],
          2 * np.eye(3, dtype="int64")[i].astype("int32"))
    gi = np.array([[4, 0], [1, 1], [3, 2]], "int64")
    check(lambda x, t: R.gather_elements(x, t, axis=1), [tensor(a.shape), tensor([3, 2],
                                                                                 "int64")],
          [a, gi], np.take_along_axis(a, gi, 1))
    ni = np.array([[2, 4], [0, 0]], "int64")
    check(lambda x, t: R.gather_nd(x, t), [tensor(a.shape), tensor([2, 2], "int64")], [a, ni],
          a[ni[:, 0], ni[:, 1]])
    check(lambda x: R.collapse_sum_to(x, relax.ShapeExpr([1, 5])), [tensor(a.shape)], [a],
          a.sum(0, keepdims=True), rtol=1e-5)
    b = rand((5,))
    check(lambda x, y: R.collapse_sum_like(x, y), [tensor(a.shape), tensor([5])], [a, b],
          a.sum(0), rtol=1e-5)
    v, w = rand((3,)), rand((4,))
    grids = np.meshgrid(v, w, indexing="ij")
    check(lambda p, q: R.meshgrid((p, q)), [tensor([3]), tensor([4])], [v, w], tuple(grids))
    check(lambda p, q: R.outer(p, q), [tensor([3]), tensor([4])], [v, w], np.outer(v, w))
    check(lambda x: R.eye(3, 4, -1), [tensor([1])], [rand((1,))], np.eye(3, 4, -1,
                                                                         dtype="float32"))
    check(lambda x: R.eye_like(x, 2), [tensor(a.shape)], [a], np.eye(3, 5, 2, dtype="float32"))


def test_numeric_scatters():
    a = rand((3, 4))
    idx = np.array([[1], [3], [0]], "int64")
    upd = rand((3, 1))
    want = a.copy()
    np.put_along_axis(want, idx, upd, 1)
    check(lambda x, i, u: R.scatter_elements(x, i, u, axis=1),
          [tensor(a.shape), tensor([3, 1], "int64"), tensor([3, 1])], [a, idx, upd], want)
    nidx = np.array([[2], [0], [2]], "int64")
    nupd = rand((3, 4))
    want = a.copy()
    np.add.at(want, nidx[:, 0], nupd)
    check(lambda x, i, u: R.scatter_nd(x, i, u, "add"),
          [tensor(a.shape), tensor([3, 1], "int64"), tensor([3, 4])], [a, nidx, nupd], want,
          rtol=1e-5)


def test_numeric_sorting_and_search():
    a = np.array([[3, 1, 2, 1], [0, -1, 5, 5], [2, 2, 2, 2]], "float32")
    check(lambda x: R.sort(x, axis=1), [tensor(a.shape)], [a], np.sort(a, 1))
    check(lambda x: R.argsort(x, axis=1, descending=True), [tensor(a.shape)], [a],
          np.argsort(-a, 1, kind="stable").astype("int32"))
    check(lambda x: R.topk(x, 2, axis=0, largest=False), [tensor(a.shape)], [a],
          (np.sort(a, 0)[:2], np.argsort(a, 0, kind="stable")[:2].astype("int32")))
    bnd = np.array([0.0, 2.0, 4.0], "float32")
    check(lambda x, b: R.bucketize(x, b, right=True), [tensor(a.shape), tensor([3])], [a, bnd],
          np.searchsorted(bnd, a, side="right"))


def test_numeric_elementwise_and_qdq():
    a = rand((3, 5))
    b = rand((3, 5))
    check(lambda x, y: R.log_add_exp(x, y), [tensor(a.shape)] * 2, [a, b], np.logaddexp(a, b))
    check(lambda x, y, z: R.ewise_fma(x, y, z), [tensor(a.shape)] * 3, [a, b, a], a * b + a)
    q = R.quantize
    check(lambda x: q(x, relax.const(0.05, "float32"), relax.const(-3, "int8")),
          [tensor(a.shape)], [a],
          np.clip(np.round(a / np.float32(0.05)) - 3, -128, 127).astype("int8"))
    qi = np.arange(-7, 8, dtype="int8").reshape(3, 5)
    check(lambda x: R.dequantize(x, relax.const(0.25, "float32"), relax.const(2, "int8")),
          [tensor(qi.shape, "int8")], [qi], ((qi.astype("int32") - 2) * 0.25).astype("float32"))


def test_numeric_nn():
    a = rand((2, 3, 4))
    al = rand((3,))
    check(lambda x, p: R.nn.prelu(x, p), [tensor(a.shape), tensor([3])], [a, al],
          np.where(a > 0, a, a * al[:, None]))
    check(lambda x: R.nn.softplus(x, beta=0.5), [tensor(a.shape)], [a],
          np.log1p(np.exp(0.5 * a)) / 0.5, rtol=1e-5)
    check(lambda x: R.nn.selu(x), [tensor(a.shape)], [a],
          1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a)), rtol=1e-5)
    img = rand((1, 12, 3, 1))
    check(lambda x: R.nn.pixel_shuffle(x, 2), [tensor(img.shape)], [img],
          img.reshape(1, 3, 2, 2, 3, 1).transpose(0, 1, 4, 2, 5, 3).reshape(1, 3, 6, 2))
    check(lambda x: R.nn.batch_flatten(x), [tensor(a.shape)], [a], a.reshape(2, 12))
    g, bt = rand((3,)), rand((3,))
    norm = (a - a.mean(2, keepdims=True)) / np.sqrt(a.var(2, keepdims=True) + 1e-5)
    check(lambda x, p, q: R.nn.instance_norm(x, p, q, channel_axis=1, axes=[2]),
          [tensor(a.shape), tensor([3]), tensor([3])], [a, g, bt],
          norm * g[:, None] + bt[:, None], rtol=1e-4, atol=1e-5)


def test_instance_norm_symbolic_channels():
    (c,) = sym("c")
    a, g, bt = rand((2, 3, 4)), rand((3,)), rand((3,))
    norm = (a - a.mean(2, keepdims=True)) / np.sqrt(a.var(2, keepdims=True) + 1e-5)
    check(lambda x, p, q: R.nn.instance_norm(x, p, q, 1, [2], center=False),
          [tensor([2, c, 4]), tensor([c]), tensor([c])], [a, g, bt], norm * g[:, None],
          rtol=1e-4, atol=1e-5)


def test_numeric_indexing_second_batch():
    a = rand((4, 3))
    i0, i1 = np.array([3, 0, 3], "int64"), np.array([2, -1, 0], "int64")
    check(lambda x, p, q: R.index_tensor(x, (p, q)),
          [tensor(a.shape), tensor([3], "int64"), tensor([3], "int64")], [a, i0, i1], a[i0, i1])
    vals = rand((3,))
    want = a.copy()
    np.add.at(want, (i0, i1), vals)
    check(lambda x, p, q, u: R.index_put(x, (p, q), u, accumulate=True),
          [tensor(a.shape), tensor([3], "int64"), tensor([3], "int64"), tensor([3])],
          [a, i0, i1, vals], want, rtol=1e-5)
    src = rand((2, 3))
    want = a.copy()
    want[1::2] = src
    check(lambda x, s: R.slice_scatter(x, s, 1, 4, 2), [tensor(a.shape), tensor([2, 3])],
          [a, src], want)
    check(lambda x: R.hamming_window(6, False, 0.54, 0.46), [tensor([1])], [rand((1,))],
          np.hamming(6).astype("float32"), rtol=1e-5, atol=1e-6)


def test_numeric_nn_second_batch():
    x, w = rand((1, 2, 2, 2, 1)), rand((2, 3, 1, 1, 1))
    want = np.einsum("ncdhw,co->nodhw", x, w[:, :, 0, 0, 0])
    check(lambda d, k: R.nn.conv3d_transpose(d, k), [tensor(x.shape), tensor(w.shape)], [x, w],
          want, rtol=1e-5)
    q, bias = rand((1, 3, 1, 2)), rand((1, 1, 3, 3))
    s = np.einsum("bqhd,bkhd->bhqk", q, q) / np.sqrt(2) + bias
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    check(lambda a, b: R.nn.attention_bias(a, a, a, b), [tensor(q.shape), tensor(bias.shape)],
          [q, bias], np.einsum("bhqk,bkhd->bqhd", p, q), rtol=1e-5)
    pr, lab = rand((3, 4)), rand((3, 4))
    check(lambda a, b: R.nn.cross_entropy_with_logits(a, b), [tensor(pr.shape)] * 2, [pr, lab],
          np.array(-(pr * lab).sum() / 3, "float32"), rtol=1e-5)
    t = np.array([1, 3, 0], "int64")
    check(lambda a, b: R.nn.nll_loss(a, b, reduction="sum"), [tensor(pr.shape),
                                                              tensor([3], "int64")],
          [pr, t], np.array(-pr[np.arange(3), t].sum(), "float32"), rtol=1e-5)


def test_numeric_power_wrap_param_multinomial():
    a = np.array([[2, -3, 1], [0, 5, -1]], "int32")
    b = np.array([3, 2, -2], "int32")
    check(lambda x, y: R.power(x, y), [tensor(a.shape, "int32"), tensor([3], "int32")], [a, b],
          np.array([[8, 9, 1], [0, 25, 1]], "int32"))
    w = rand((2, 3))
    check(lambda x: R.wrap_param(x, "float16"), [tensor(w.shape)], [w], w.astype("float16"),
          rtol=1e-3, atol=1e-3)
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]], "float32")
    u = np.array([[0.05], [0.31], [0.99], [0.6]], "float32")
    rows = np.array([[0], [0], [0], [1]], "int64")
    check(lambda x, y, z: R.multinomial_from_uniform(x, y, z),
          [tensor(p.shape), tensor(u.shape), tensor(rows.shape, "int64")], [p, u, rows],
          np.array([[0], [2], [2], [1]], "int64"))


def test_nonzero_unique_lower_to_runtime_packed_functions():
    """Data-dependent shapes: legalized to ``relax.run.*`` packed calls even with unknown
    argument shapes (TVM's RequiresArgumentShapes=false), registered in the runtime."""
    from legalize_util import bindings, one_op_module

    import minitvm as tvm

    x = relax.TensorStructInfo(dtype="float32", ndim=2)
    for make, func in ((lambda a: R.nonzero(a), "relax.run.nonzero"),
                       (lambda a: R.unique(a, return_counts=True), "relax.run.unique")):
        mod = LegalizeOps()(one_op_module(make, [x]))
        call = bindings(mod["main"])[0].value
        assert call.op.name == "relax.call_pure_packed" and call.args[0].global_symbol == func
        assert tvm.get_global_func(func) is not None
    got = tvm.get_global_func("relax.run.unique")(np.array([2, 0, 2], "int32"), True, False,
                                                  False, True, None)
    np.testing.assert_array_equal(got[0], [0, 2])
    np.testing.assert_array_equal(got[1], [1, 2])


def test_dynamic_strided_slice_lowers_to_two_kernels_and_a_match_cast():
    from legalize_util import bindings, one_op_module

    (n,) = sym("n")
    mod = LegalizeOps()(one_op_module(lambda x, b, e, s: R.dynamic_strided_slice(x, b, e, s),
                                      [tensor([n, 4])] + [tensor([2], "int64")] * 3))
    binds = bindings(mod["main"])
    values = [b.value for b in binds]
    kinds = [type(b).__name__ if not isinstance(b.value, relax.Call) else b.value.op.name
             for b in binds]
    assert kinds[:4] == ["relax.call_tir", "relax.call_pure_packed", "MatchCast",
                         "relax.call_tir"], kinds
    assert [v.args[0].name_hint for v in values if isinstance(v, relax.Call) and
            v.op.name == "relax.call_tir"] == ["dynamic_strided_slice_shape",
                                               "dynamic_strided_slice"]
    # bounds of unknown length: the kernels could not know how many to read; left as a call
    mod = LegalizeOps()(one_op_module(lambda x, b, e, s: R.dynamic_strided_slice(x, b, e, s),
                                      [tensor([n, 4])] + [tensor(sym("k"), "int64")] * 3))
    assert bindings(mod["main"])[0].value.op.name == "relax.dynamic_strided_slice"

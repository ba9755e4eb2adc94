"""LegalizeOps of relax.layout_transform: the lowered module against a TVMScript Expected (a
padded NCHW4c split over a symbolic batch: the output reads the input at the inverse map, the
padding holds pad_value) and the lowered PrimFuncs run against numpy (transpose, fused, split,
padded split with the default zero padding)."""

import numpy as np
import pytest
from legalize_util import check, one_op_module, rand, tensor

from minitvm import relax, tir
from minitvm.ir import structural_equal
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps
from minitvm.relax.transform.legalize_ops import LegalizeError
from minitvm.script import from_source

EXPECTED = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def te_layout_transform(var_x: T.handle, var_te_layout_transform: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(6), T.int64(2)))
        te_layout_transform = T.match_buffer(var_te_layout_transform,
                                             (n, T.int64(2), T.int64(2), T.int64(4)))
        for i0, i1, i2, i3 in T.grid(n, T.int64(2), T.int64(2), T.int64(4)):
            with T.block("te_layout_transform"):
                v_i0, v_i1, v_i2, v_i3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                T.reads(x[v_i0, v_i1 * T.int64(4) + v_i3, v_i2])
                T.writes(te_layout_transform[v_i0, v_i1, v_i2, v_i3])
                te_layout_transform[v_i0, v_i1, v_i2, v_i3] = T.if_then_else(
                    T.int64(6) <= v_i1 * T.int64(4) + v_i3, T.float32(1.5),
                    x[v_i0, v_i1 * T.int64(4) + v_i3, v_i2])

    @R.function
    def main(x: R.Tensor(("n", 6, 2), dtype="float32")) -> R.Tensor(("n", 2, 2, 4), dtype="float32"):
        n = T.int64()
        cls = Module
        gv = R.call_tir(cls.te_layout_transform, (x,),
                        out_sinfo=R.Tensor((n, 2, 2, 4), dtype="float32"))
        return gv
'''


def _before():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 6, 2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        gv = bb.emit(R.layout_transform(x, lambda a, c, w: (a, c // 4, w, c % 4), pad_value=1.5),
                     "gv")
        bb.emit_func_output(gv)
    return bb.get()


def test_legalized_module_matches_expected():
    after = LegalizeOps()(_before())
    assert structural_equal(after, from_source(EXPECTED)), after.script()


def _split_pad(a, k, pad):
    n, c, w = a.shape
    cp = -(-c // k) * k
    p = np.full((n, cp, w), pad, a.dtype)
    p[:, :c] = a
    return p.reshape(n, cp // k, k, w).transpose(0, 1, 3, 2)


@pytest.mark.parametrize("shape, fn, ref", [
    ([3, 5], lambda i, j: (j, i), lambda a: a.T),
    ([4, 3], lambda i, j: (i * 3 + j,), lambda a: a.reshape(12)),
    ([2, 8, 3], lambda a, c, w: (a, c // 4, w, c % 4), lambda a: _split_pad(a, 4, 0)),
    ([2, 6, 3], lambda a, c, w: (a, c // 4, w, c % 4), lambda a: _split_pad(a, 4, 0)),
])
def test_numeric(shape, fn, ref):
    a = rand(shape)
    check(lambda x: R.layout_transform(x, fn), [tensor(shape)], [a], ref(a))


def test_numeric_pad_value_int():
    a = rand([5], "int32", -9, 9)
    want = np.concatenate([a, np.full(1, 7, "int32")]).reshape(3, 2)
    check(lambda x: R.layout_transform(x, lambda i: (i // 2, i % 2), pad_value=7),
          [tensor([5], "int32")], [a], want)


def test_axis_separators_rejected():
    def make(x):
        return R.layout_transform(x, lambda i: (i // 2, i % 2), axis_separators=[1])

    with pytest.raises(LegalizeError, match="relax.layout_transform: axis_separators"):
        LegalizeOps()(one_op_module(make, [tensor([4])]))

"""Struct-info inference of matmul/linear, reductions, argmax/argmin, where and creation ops."""

import pytest
from sinfo_util import T, assert_sinfo, tvar

from minitvm import relax, tir
from minitvm.ir import Op, OpPattern
from minitvm.relax import op as R

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")
inf = R.infer_struct_info


# --------------------------------------------------------------------------- matmul
def test_matmul_attrs_and_registry():
    call = R.matmul(tvar("x", [2, 3]), tvar("w", [3, 4]))
    assert call.attrs.type_key == "relax.attrs.MatmulAttrs" and call.attrs.out_dtype == "void"
    op = Op.get("relax.matmul")
    assert op.get_attr("TOpPattern") == OpPattern.OUT_ELEMWISE_FUSABLE
    assert op.get_attr("FPurity") is True
    assert_sinfo(inf(call), T([2, 4]))


def test_matmul_shapes():
    assert_sinfo(inf(R.matmul(tvar("x", [5, 2, 3]), tvar("w", [3, 4]))), T([5, 2, 4]))
    assert_sinfo(inf(R.matmul(tvar("x", [5, 1, 2, 3]), tvar("w", [7, 3, 4]))), T([5, 7, 2, 4]))
    assert_sinfo(inf(R.matmul(tvar("x", [3]), tvar("w", [3, 4]))), T([4]))
    assert_sinfo(inf(R.matmul(tvar("x", [2, 3]), tvar("w", [3]))), T([2]))
    assert_sinfo(inf(R.matmul(tvar("x", [3]), tvar("w", [3]))), T([]))
    assert_sinfo(inf(R.matmul(tvar("x", [2, 3]), tvar("w", [3, 4]), out_dtype="float16")),
                 T([2, 4], "float16"))


def test_matmul_symbolic_and_unknown():
    assert_sinfo(inf(R.matmul(tvar("x", [n, 784]), tvar("w", [784, 128]))), T([n, 128]))
    assert_sinfo(inf(R.matmul(tvar("x", [n, m]), tvar("w", [m, 4]))), T([n, 4]))
    # unprovable reduction lengths are trusted (TVM only rejects provably unequal ones)
    assert_sinfo(inf(R.matmul(tvar("x", [2, n]), tvar("w", [m, 4]))), T([2, 4]))
    assert_sinfo(inf(R.matmul(tvar("x", [n, 2, 3]), tvar("w", [m, 3, 4]))), T(ndim=3))
    assert_sinfo(inf(R.matmul(tvar("x", ndim=3), tvar("w", [3, 4]))), T(ndim=3))
    assert_sinfo(inf(R.matmul(tvar("x", ndim=-1), tvar("w", [3, 4]))), T(ndim=-1))
    assert_sinfo(inf(R.matmul(tvar("x", ndim=1), tvar("w", ndim=1))), T(ndim=0))


def test_matmul_errors():
    with pytest.raises(R.StructInfoError, match=r"relax.matmul.*reduction.*3 and 4"):
        inf(R.matmul(tvar("x", [2, 3]), tvar("w", [4, 5])))
    with pytest.raises(R.StructInfoError, match="at least 1 dimension"):
        inf(R.matmul(tvar("x", []), tvar("w", [4, 5])))
    with pytest.raises(R.StructInfoError, match="float32 and float16"):
        inf(R.matmul(tvar("x", [2, 3]), tvar("w", [3, 5], "float16")))
    with pytest.raises(R.StructInfoError, match="not broadcastable"):
        inf(R.matmul(tvar("x", [2, 2, 3]), tvar("w", [4, 3, 5])))


def test_linear_composes_permute_matmul_add():
    x, w, b = tvar("x", [n, 784]), tvar("w", [128, 784]), tvar("b", [128])
    out = R.linear(x, w, b)
    assert out.op.name == "relax.add"
    mm = out.args[0]
    assert mm.op.name == "relax.matmul" and mm.args[1].op.name == "relax.permute_dims"
    assert R.nn.linear is R.linear
    assert R.linear(x, w).op.name == "relax.matmul"


# --------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "variance", "std"])
def test_reductions(name):
    f = getattr(R, name)
    op = Op.get("relax." + name)
    assert op.get_attr("TOpPattern") == OpPattern.COMM_REDUCE
    call = f(tvar("x", [2, n, 4]), axis=1)
    assert call.attrs.type_key == "relax.attrs.StatisticalAttrs"
    assert call.attrs.axis == (1,) and call.attrs.keepdims is False
    assert_sinfo(inf(call), T([2, 4]))
    assert_sinfo(inf(f(tvar("x", [2, n, 4]), axis=[0, -1], keepdims=True)), T([1, n, 1]))
    assert_sinfo(inf(f(tvar("x", [2, n, 4]))), T([]))
    assert_sinfo(inf(f(tvar("x", [2, n, 4]), keepdims=True)), T([1, 1, 1]))
    assert_sinfo(inf(f(tvar("x", ndim=3), axis=1)), T(ndim=2))
    assert_sinfo(inf(f(tvar("x", ndim=3), keepdims=True)), T([1, 1, 1]))
    assert_sinfo(inf(f(tvar("x", ndim=-1), axis=1)), T(ndim=-1))
    assert_sinfo(inf(f(tvar("x", ndim=-1))), T([]))
    assert_sinfo(inf(f(tvar("x", [3], "int32"))), T([], "int32"))


def test_reduction_errors():
    with pytest.raises(R.StructInfoError, match="relax.sum.*out of range"):
        inf(R.sum(tvar("x", [2, 3]), axis=2))
    with pytest.raises(R.StructInfoError, match="distinct"):
        inf(R.mean(tvar("x", [2, 3]), axis=[1, -1]))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name):
    f = getattr(R, name)
    call = f(tvar("x", [2, n, 4]), axis=1)
    assert call.attrs.type_key == "relax.attrs.ArgmaxArgminAttrs"
    assert_sinfo(inf(call), T([2, 4], "int64"))
    assert_sinfo(inf(f(tvar("x", [2, n]), axis=-1, keepdims=True)), T([2, 1], "int64"))
    assert_sinfo(inf(f(tvar("x", [2, n]))), T([], "int64"))
    assert_sinfo(inf(f(tvar("x", [2, n]), keepdims=True)), T([1, 1], "int64"))
    assert_sinfo(inf(f(tvar("x", ndim=3), axis=0)), T(ndim=2, dtype="int64"))
    with pytest.raises(R.StructInfoError, match="out of range"):
        inf(f(tvar("x", [2]), axis=1))


# --------------------------------------------------------------------------- where
def test_where():
    c, x, y = tvar("c", [n, 1], "bool"), tvar("x", [1, 4]), tvar("y", [4])
    assert_sinfo(inf(R.where(c, x, y)), T([n, 4]))
    assert Op.get("relax.where").get_attr("TOpPattern") == OpPattern.BROADCAST
    assert_sinfo(inf(R.where(tvar("c", ndim=2, dtype="bool"), x, y)), T(ndim=2))
    with pytest.raises(R.StructInfoError, match="boolean condition"):
        inf(R.where(tvar("c", [4]), x, y))
    with pytest.raises(R.StructInfoError, match="float32 and int32"):
        inf(R.where(c, x, tvar("y", [4], "int32")))
    with pytest.raises(R.StructInfoError, match="not broadcastable"):
        inf(R.where(tvar("c", [3], "bool"), x, y))


# --------------------------------------------------------------------------- creation
def test_full_ones_zeros():
    fill = relax.const(1.5, "float32")
    call = R.full([2, n], fill)
    assert call.attrs.type_key == "relax.attrs.InitAttrs" and call.attrs.dtype == "void"
    assert_sinfo(inf(call), T([2, n]))
    assert_sinfo(inf(R.full((2, 3), fill, "float16")), T([2, 3], "float16"))
    assert_sinfo(inf(R.full((2, 3), 7, "int32")), T([2, 3], "int32"))
    assert_sinfo(inf(R.ones([n, 3], "float32")), T([n, 3]))
    assert_sinfo(inf(R.zeros(relax.ShapeExpr([4]), "int8")), T([4], "int8"))
    s = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    out = inf(R.zeros(s, "float32"))
    assert out.shape is s and out.ndim == 2
    with pytest.raises(R.StructInfoError, match="zero-rank"):
        inf(R.full([2], relax.const([1.0, 2.0])))
    with pytest.raises(TypeError, match="shape value"):
        inf(relax.Call(Op.get("relax.ones"), [tvar("x", [2])], R.op_attrs.InitAttrs(dtype="int8")))


def test_like_ops():
    x = tvar("x", [n, 3])
    assert inf(R.zeros_like(x)) is x.struct_info
    assert_sinfo(inf(R.ones_like(x, "int32")), T([n, 3], "int32"))
    assert_sinfo(inf(R.full_like(x, 2.0)), T([n, 3]))
    assert_sinfo(inf(R.full_like(x, relax.const(2, "int64"), "int64")), T([n, 3], "int64"))
    with pytest.raises(R.StructInfoError, match="zero-rank"):
        inf(R.full_like(x, relax.const([2.0])))


def test_arange():
    call = R.arange(10)
    assert [type(a) for a in call.args] == [relax.PrimValue] * 3
    assert call.attrs.dtype == "int64"
    assert_sinfo(inf(call), T([10], "int64"))
    assert_sinfo(inf(R.arange(2, 11, 3)), T([3], "int64"))
    assert_sinfo(inf(R.arange(10, 0, -2)), T([5], "int64"))
    assert_sinfo(inf(R.arange(0, 1.0, 0.25)), T([4], "float32"))
    assert_sinfo(inf(R.arange(5, 1)), T([0], "int64"))
    assert_sinfo(inf(R.arange(0, 10, dtype="float32")), T([10], "float32"))
    assert_sinfo(inf(R.arange(n)), T([n], "int64"))
    assert_sinfo(inf(R.arange(1, n, 2)), T([(n - 1 + 1) // 2], "int64"))
    with pytest.raises(R.StructInfoError, match="non-zero"):
        inf(R.arange(0, 3, 0))
    with pytest.raises(TypeError, match="R.Prim"):
        inf(relax.Call(Op.get("relax.arange"), [tvar("x", [1])] * 3,
                       R.op_attrs.InitAttrs(dtype="int64")))


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu(name):
    x = tvar("x", [n, 4, 4])
    call = getattr(R, name)(x, 1)
    assert call.attrs.type_key == "relax.attrs.TriluAttrs" and call.attrs.k == 1
    assert inf(call) is x.struct_info
    with pytest.raises(R.StructInfoError, match="at least 2"):
        inf(getattr(R, name)(tvar("y", [4])))


def test_arange_of_a_symbolic_or_negative_step_has_a_length():
    """A step that is a symbolic dim, or negative with symbolic bounds: the length is
    ceil((end - start) / step), none below 0 (it was an unknown 1-D shape, which the VM
    could not lower); built and run over several sizes."""
    import numpy as np

    import minitvm as tvm

    for call in (R.arange(0, 20, n), R.arange(n, 0, -2), R.arange(3 * n, 0, 0 - n)):
        (dim,) = inf(call).shape.values
        assert isinstance(dim, tir.PrimExpr)
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            up = bb.emit(R.arange(0, 20, n))
            down = bb.emit(R.arange(n, 0, -2))
            gv = bb.emit_output(relax.Tuple([up, down]))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for size in (1, 3, 7, 25):
        got = vm["main"](tvm.nd.array(np.zeros(size, "float32")))
        np.testing.assert_array_equal(got[0].numpy(), np.arange(0, 20, size))
        np.testing.assert_array_equal(got[1].numpy(), np.arange(size, 0, -2))

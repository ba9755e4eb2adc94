"""Struct-info inference, errors and TVMScript round trips of cumsum/cumprod, einsum,
image.resize2d, nn.conv3d, the 1-D / 3-D pooling ops, shape_to_tensor / tensor_to_shape and the
impure print / assert_op."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir import Op
from minitvm.relax import op as R
from minitvm.relax.analysis import struct_info_base_check
from minitvm.relax.op.base import StructInfoError

n = tir.Var("n", "int64")
m = tir.Var("m", "int64")
inf = R.infer_struct_info


def tvar(name, shape=None, dtype="float32", ndim=-1):
    return relax.Var(name, relax.TensorStructInfo(shape, dtype, ndim=ndim))


def T(shape=None, dtype="float32", ndim=-1):
    return relax.TensorStructInfo(shape, dtype, ndim=ndim)


def same(actual, expected):
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, relax.TensorStructInfo):
        assert actual.dtype == expected.dtype and actual.ndim == expected.ndim, (actual, expected)
        assert (actual.shape is None) == (expected.shape is None), (actual, expected)
    assert struct_info_base_check(expected, actual) and struct_info_base_check(actual, expected), \
        (str(actual), str(expected))


def roundtrip(make, *params):
    """Build ``main(params) = make(params)``, print it, parse it back: structurally equal."""
    bb = relax.BlockBuilder()
    with bb.function("main", list(params)):
        out = bb.emit(make(*params))
        bb.emit_func_output(out)
    mod = bb.get()
    text = mod.script()
    back = tvm.script.from_source(text)
    assert tvm.ir.structural_equal(mod, back), text
    return text


# ------------------------------------------------------------------ cumsum / cumprod
def test_scan_struct_info():
    x = tvar("x", [2, n])
    same(inf(R.cumsum(x, axis=1)), T([2, n]))
    same(inf(R.cumprod(x, axis=-2, dtype="float64")), T([2, n], "float64"))
    same(inf(R.cumsum(x)), T([2 * n]))
    same(inf(R.cumsum(tvar("y", ndim=3))), T(None, ndim=1))
    same(inf(R.cumsum(tvar("y", ndim=3), axis=2)), T(None, ndim=3))
    a = R.cumsum(x, axis=1, exclusive=True).attrs
    assert a.type_key == "relax.attrs.ScanopAttrs"
    assert (a.axis, a.dtype, a.exclusive) == (1, "void", True)
    with pytest.raises(StructInfoError, match=r"relax.cumsum: axis 2 is out of range"):
        inf(R.cumsum(x, axis=2))
    with pytest.raises(StructInfoError, match="relax.cumprod: requires argument 0"):
        inf(R.cumprod(relax.Var("s", relax.ShapeStructInfo([1]))))
    text = roundtrip(lambda v: R.cumsum(v, axis=1, dtype="int64", exclusive=True), x)
    assert 'R.cumsum(x, axis=1, dtype="int64", exclusive=True)' in text
    roundtrip(lambda v: R.cumprod(v), x)


# ------------------------------------------------------------------ einsum
def test_einsum_struct_info():
    a, b = tvar("a", [n, 4]), tvar("b", [4, m])
    same(inf(R.einsum((a, b), "ij,jk->ik")), T([n, m]))
    same(inf(R.einsum((a, b), "ij,jk")), T([n, m]))
    same(inf(R.einsum((a,), "ij->ji")), T([4, n]))
    same(inf(R.einsum((tvar("s", [5, 5]),), "ii")), T([]))
    same(inf(R.einsum((tvar("c", [2, 1, 3, 4]), tvar("d", [7, 4, 5])), "...ij,...jk")),
         T([2, 7, 3, 5]))
    same(inf(R.einsum((tvar("u", ndim=2), b), "ij,jk->ik")), T(None, ndim=2))
    assert R.einsum([a, b], "ij,jk").attrs.subscripts == "ij,jk"
    with pytest.raises(StructInfoError, match=r"label 'j' is 4 in one operand and 5"):
        inf(R.einsum((a, tvar("e", [5, 2])), "ij,jk"))
    with pytest.raises(StructInfoError, match="operand 1 .* has 2 dims but its subscripts"):
        inf(R.einsum((a, b), "ij,jkl"))
    with pytest.raises(StructInfoError, match="name 1 operands, but 2 are given"):
        inf(R.einsum((a, b), "ij"))
    with pytest.raises(StructInfoError, match="output label 'z'"):
        inf(R.einsum((a, b), "ij,jk->z"))
    with pytest.raises(StructInfoError, match="one dtype"):
        inf(R.einsum((a, tvar("f", [4, 2], "float16")), "ij,jk"))
    text = roundtrip(lambda x, y: R.einsum((x, y), "ij,jk->ik"), a, b)
    assert 'R.einsum((a, b), subscripts="ij,jk->ik")' in text


# ------------------------------------------------------------------ resize2d
def test_resize2d_struct_info():
    x = tvar("x", [n, 3, 8, 8])
    same(inf(R.image.resize2d(x, (16, 12))), T([n, 3, 16, 12]))
    same(inf(R.image.resize2d(x, 5, out_dtype="float16")), T([n, 3, 5, 5], "float16"))
    same(inf(R.image.resize2d(tvar("y", [1, 8, 8, 3]), (m, 4), layout="NHWC")),
         T([1, m, 4, 3]))
    s = relax.Var("s", relax.ShapeStructInfo(ndim=2))
    same(inf(R.image.resize2d(x, s)), T(None, ndim=4))
    a = R.image.resize2d(x, (2, 2)).attrs
    assert a.type_key == "relax.attrs.Resize2DAttrs"
    assert [f for f, _ in a.list_field_info()] == [
        "roi", "layout", "method", "coordinate_transformation_mode", "rounding_method",
        "cubic_alpha", "cubic_exclude", "extrapolation_value", "out_dtype"]
    with pytest.raises(StructInfoError, match="image.resize2d: expects the data to have 4 dim"):
        inf(R.image.resize2d(tvar("z", [3, 8, 8]), (2, 2)))
    with pytest.raises(StructInfoError, match="2-dim shape"):
        inf(R.image.resize2d(x, relax.Var("s3", relax.ShapeStructInfo(ndim=3))))
    with pytest.raises(StructInfoError, match="output image size to be a shape"):
        inf(R.image.resize2d(x, tvar("t", [2], "int64")))
    with pytest.raises(StructInfoError, match="permutation of NCHW"):
        inf(R.image.resize2d(x, (2, 2), layout="NCDH"))
    with pytest.raises(ValueError, match="method must be one of"):
        R.image.resize2d(x, (2, 2), method="bilinear")
    text = roundtrip(lambda v: R.image.resize2d(v, (16, 4), method="nearest_neighbor",
                                                coordinate_transformation_mode="asymmetric",
                                                rounding_method="floor"), x)
    assert 'R.image.resize2d(x, R.shape([16, 4]), roi=' in text


# ------------------------------------------------------------------ conv3d / pooling
def test_conv3d_struct_info():
    x, w = tvar("x", [n, 4, 8, 9, 10]), tvar("w", [6, 2, 3, 3, 3])
    same(inf(R.nn.conv3d(x, w, groups=2)), T([n, 6, 6, 7, 8]))
    same(inf(R.nn.conv3d(x, w, strides=2, padding=1, groups=2)), T([n, 6, 4, 5, 5]))
    same(inf(R.nn.conv3d(tvar("y", [1, 8, 9, 10, 4]), tvar("k", [3, 3, 3, 4, 6]),
                         data_layout="NDHWC", kernel_layout="DHWIO", out_dtype="float64")),
         T([1, 6, 7, 8, 6], "float64"))
    assert R.nn.conv3d(x, w, padding=(1, 2, 3)).attrs.padding == (1, 2, 3, 1, 2, 3)
    with pytest.raises(StructInfoError, match="nn.conv3d: the data has 4 channels"):
        inf(R.nn.conv3d(x, w))
    with pytest.raises(StructInfoError, match="5 dimensions under layout NCDHW"):
        inf(R.nn.conv3d(tvar("z", [1, 4, 8, 8]), w, groups=2))
    roundtrip(lambda a, b: R.nn.conv3d(a, b, strides=(1, 2, 1), groups=2), x, w)


def test_pool_nd_struct_info():
    x1 = tvar("x1", [n, 3, 11])
    same(inf(R.nn.max_pool1d(x1, 3, 2, 1)), T([n, 3, 6]))
    same(inf(R.nn.avg_pool1d(x1, 2, 2, ceil_mode=True)), T([n, 3, 6]))
    same(inf(R.nn.adaptive_avg_pool1d(x1, 4)), T([n, 3, 4]))
    same(inf(R.nn.adaptive_avg_pool1d(x1)), T([n, 3, 11]))
    x3 = tvar("x3", [2, 3, 8, m, 6])
    same(inf(R.nn.max_pool3d(x3, 2, 2)), T([2, 3, 4, (m - 2) // 2 + 1, 3]))
    same(inf(R.nn.avg_pool3d(x3, (3, 3, 3), padding=1)), T([2, 3, 8, m, 6]))
    same(inf(R.nn.adaptive_avg_pool3d(x3, (1, 2, 3))), T([2, 3, 1, 2, 3]))
    same(inf(R.nn.max_pool3d(tvar("u", ndim=5))), T(None, ndim=5))
    same(inf(R.nn.max_pool3d(tvar("v", [2, 8, 8, 8, 3]), 2, 2, layout="NDHWC")),
         T([2, 4, 4, 4, 3]))
    assert R.nn.max_pool3d(x3).attrs.type_key == "relax.attrs.Pool3DAttrs"
    assert R.nn.adaptive_avg_pool1d(x1).attrs.type_key == "relax.attrs.AdaptivePool1DAttrs"
    with pytest.raises(StructInfoError, match="nn.max_pool3d: expects the data to have 5"):
        inf(R.nn.max_pool3d(x1))
    with pytest.raises(ValueError, match="pool_size must have 3 values"):
        R.nn.avg_pool3d(x3, (2, 2))
    for make in (lambda v: R.nn.max_pool3d(v, 2, 2, ceil_mode=True),
                 lambda v: R.nn.adaptive_avg_pool3d(v, 2)):
        roundtrip(make, x3)
    roundtrip(lambda v: R.nn.avg_pool1d(v, 3, count_include_pad=True), x1)


# ------------------------------------------------------------------ shape <-> tensor
def test_shape_tensor_conversions():
    s = relax.Var("s", relax.ShapeStructInfo([n, 4]))
    same(inf(R.shape_to_tensor(s)), T([2], "int64"))
    same(inf(R.shape_to_tensor(relax.Var("u", relax.ShapeStructInfo(ndim=-1)))),
         T(None, "int64", ndim=1))
    got = inf(R.tensor_to_shape(tvar("t", [3], "int64")))
    assert isinstance(got, relax.ShapeStructInfo) and got.ndim == 3
    assert inf(R.tensor_to_shape(tvar("t", [n], "int64"))).ndim == -1
    with pytest.raises(StructInfoError, match="tensor_to_shape: expects a 1-D tensor"):
        inf(R.tensor_to_shape(tvar("t", [2, 2], "int64")))
    with pytest.raises(StructInfoError, match="expects an integer tensor"):
        inf(R.tensor_to_shape(tvar("t", [2])))
    with pytest.raises(StructInfoError, match="shape_to_tensor: expects a shape"):
        inf(R.shape_to_tensor(tvar("t", [2])))
    roundtrip(lambda v: R.shape_to_tensor(v), s)
    roundtrip(lambda v: R.tensor_to_shape(v), tvar("t", [3], "int64"))


def test_shape_tensor_run_on_the_vm():
    src = '''
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), t: R.Tensor((2,), "int64")):
        s = R.shape_to_tensor(R.shape_of(x))
        sh = R.tensor_to_shape(t)
        return (s, sh)
'''
    mod = tvm.script.from_source(src)
    after = relax.transform.LegalizeOps()(mod)
    text = after.script()
    assert 'R.call_pure_packed("vm.builtin.shape_to_tensor"' in text
    assert 'R.call_pure_packed("vm.builtin.tensor_to_shape"' in text
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    s, sh = vm["main"](tvm.nd.array(np.ones((5, 3), "float32")), tvm.nd.array(np.array([4, 7])))
    np.testing.assert_array_equal(s.numpy(), [5, 3])
    assert [int(d) for d in sh] == [4, 7]


# ------------------------------------------------------------------ print / assert_op
def test_print_assert_struct_info_and_purity():
    x = tvar("x", [2])
    c = tvar("c", [], "bool")
    p = R.print(x, format="x = {}")
    assert p.args[0].value == "x = {}" and p.args[1] is x
    same(inf(p), relax.TupleStructInfo([]))
    same(inf(R.assert_op(c, x, format="bad {}")), relax.TupleStructInfo([]))
    same(inf(R.assert_op(relax.PrimValue(tir.IntImm("bool", 1)), [x, x])),
         relax.TupleStructInfo([]))
    assert list(R.assert_op(c, [x, x]).args[2:]) == [x, x]
    assert Op.get("relax.print").get_attr("FPurity") is False
    assert Op.get("relax.assert_op").get_attr("FPurity") is False
    with pytest.raises(StructInfoError, match="condition to be a boolean scalar"):
        inf(R.assert_op(x))
    with pytest.raises(TypeError, match="format must be a str"):
        R.print(x, format=3)


def test_print_assert_tvmscript_round_trip_and_run():
    src = '''
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")) -> R.Tensor((2, 3), "float32"):
        y = R.add(x, x)
        R.print(y, format=R.str("y = {}"))
        R.assert_op(c, y, format=R.str("bad {}"))
        return y
'''
    mod = tvm.script.from_source(src)
    text = mod.script()
    assert 'R.print(y, format=R.str("y = {}"))' in text
    assert 'R.assert_op(c, y, format=R.str("bad {}"))' in text
    assert tvm.ir.structural_equal(tvm.script.from_source(text), mod)
    run_print = tvm.get_global_func("relax.run.print")
    run_assert = tvm.get_global_func("relax.run.assert_op")
    run_assert(np.array(True), "never {}", 1)
    with pytest.raises(AssertionError, match="bad 7"):
        run_assert(np.array(False), "bad {}", 7)
    run_print("v = {}", np.array([1, 2]))
    assert Op.get("relax.print").get_attr("FCallPacked") == "relax.run.print"


# ------------------------------------------------------------------ call_inplace_packed
def test_call_inplace_packed():
    c = relax.Var("c", relax.ObjectStructInfo())
    x = tvar("x", [2])
    call = R.call_inplace_packed("f", c, x, inplace_indices=0, sinfo_args=relax.ObjectStructInfo())
    assert call.attrs.inplace_indices == (0,) and call.args[0].global_symbol == "f"
    same(inf(call), relax.ObjectStructInfo())
    two = R.call_inplace_packed("g", c, x, inplace_indices=[1, -1],
                                sinfo_args=[T([2]), relax.ObjectStructInfo()])
    same(inf(two), relax.TupleStructInfo([T([2]), relax.ObjectStructInfo()]))
    with pytest.raises(StructInfoError, match="inplace index 2 is out of range"):
        inf(R.call_inplace_packed("f", c, x, inplace_indices=2,
                                  sinfo_args=relax.ObjectStructInfo()))
    with pytest.raises(StructInfoError, match="has 1 output.* but 2 inplace_indices"):
        inf(R.call_inplace_packed("f", c, x, inplace_indices=[0, 1],
                                  sinfo_args=relax.ObjectStructInfo()))
    with pytest.raises(StructInfoError, match="at least one in-place output"):
        inf(R.call_inplace_packed("f", c, inplace_indices=-1,
                                  sinfo_args=relax.ObjectStructInfo()))
    text = roundtrip(lambda a, b: R.call_inplace_packed("f", a, b, inplace_indices=[0],
                                                       sinfo_args=relax.ObjectStructInfo()), c, x)
    assert 'R.call_inplace_packed("f", c, x, inplace_indices=[0], sinfo_args=(R.Object,))' in text

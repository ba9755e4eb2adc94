"""relax.op.layout_transform: struct-info inference (static, padded, symbolic, unknown rank),
the errors naming the op, the TVMScript text of its IndexMap attribute, and modules built once
with relax.build and run on the VirtualMachine at two sizes against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax.op.base import StructInfoError
from minitvm.tir import IndexMap

NCHW4C = staticmethod(lambda n, c, h, w: (n, c // 4, h, w, c % 4))


def _infer(x_sinfo, fn, **kw):
    x = relax.Var("x", x_sinfo)
    return relax.BlockBuilder().normalize(R.layout_transform(x, fn, **kw)).struct_info


def _dims(s):
    return [int(d) if isinstance(d, tir.IntImm) else d for d in s.shape.values]


def test_sinfo_transpose_and_split():
    s = _infer(relax.TensorStructInfo([3, 5], "float32"), lambda i, j: (j, i))
    assert _dims(s) == [5, 3] and s.dtype == "float32"
    s = _infer(relax.TensorStructInfo([2, 8, 3, 3], "float16"), NCHW4C.__func__)
    assert _dims(s) == [2, 2, 3, 3, 4] and s.dtype == "float16"
    s = _infer(relax.TensorStructInfo([2, 10, 3, 3], "float32"), NCHW4C.__func__,
               pad_value=0.5)
    assert _dims(s) == [2, 3, 3, 3, 4]


def test_sinfo_symbolic_and_unknown():
    n = tir.Var("n", "int64")
    s = _infer(relax.TensorStructInfo([n, 8, 3, 3], "float32"), NCHW4C.__func__)
    assert _dims(s)[0] is n and _dims(s)[1:] == [2, 3, 3, 4]
    c = tir.Var("c", "int64")
    s = _infer(relax.TensorStructInfo([1, c, 2, 2], "float32"), NCHW4C.__func__)
    ana = tvm.arith.Analyzer()
    assert ana.can_prove_equal(s.shape.values[1], (c + 3) // 4)
    s = _infer(relax.TensorStructInfo(dtype="float32", ndim=-1), NCHW4C.__func__)
    assert s.ndim == 5 and s.shape is None
    s = _infer(relax.TensorStructInfo(dtype="int8", ndim=4), NCHW4C.__func__)
    assert s.ndim == 5 and s.dtype == "int8"


def test_errors_name_the_op():
    with pytest.raises(StructInfoError, match="relax.layout_transform: .*takes 2"):
        _infer(relax.TensorStructInfo([3, 5, 7], "float32"), lambda i, j: (j, i))
    with pytest.raises(StructInfoError, match="relax.layout_transform: .*dtype"):
        x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
        call = R.layout_transform(x, lambda i: (i // 2, i % 2),
                                  pad_value=relax.PrimValue(tir.IntImm("int32", 1)))
        relax.BlockBuilder().normalize(call)
    with pytest.raises(TypeError, match="index_map"):
        R.layout_transform(relax.Var("x", relax.TensorStructInfo([4], "float32")), 3)


def _module(shape, fn, pad_value=None):
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(R.layout_transform(x, fn, pad_value=pad_value)))
        bb.emit_func_output(out)
    return bb.get()


def test_script_prints_index_map():
    text = _module([2, 10, 3, 3], NCHW4C.__func__, pad_value=-1.0).script()
    assert ("R.layout_transform(x, index_map=T.index_map(lambda n, c, h, w: "
            "(n, c // 4, h, w, c % 4)), pad_value=R.prim_value(T.float32(-1.0)), "
            "axis_separators=[], input_axis_separators=[])") in text


def _nchw4c(a, pad):
    n, c, h, w = a.shape
    cp = -(-c // 4) * 4
    p = np.full((n, cp, h, w), pad, a.dtype)
    p[:, :c] = a
    return p.reshape(n, cp // 4, 4, h, w).transpose(0, 1, 3, 4, 2)


@pytest.mark.parametrize("channels, pad", [(8, None), (10, None), (10, -3.0)])
def test_vm_nchw4c_symbolic_batch(channels, pad):
    n = tir.Var("n", "int64")
    mod = _module([n, channels, 3, 2], NCHW4C.__func__, pad_value=pad)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(channels)
    for batch in (1, 3):
        a = rng.standard_normal((batch, channels, 3, 2)).astype("float32")
        got = vm["main"](tvm.nd.array(a)).numpy()
        np.testing.assert_array_equal(got, _nchw4c(a, 0.0 if pad is None else pad))


def test_vm_transpose_and_fusion():
    n = tir.Var("n", "int64")
    mod = _module([n, 5], lambda i, j: (j, i))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for rows in (2, 7):
        a = np.arange(rows * 5, dtype="float32").reshape(rows, 5)
        np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(), a.T)
    fused = _module([4, 3], IndexMap.from_func(lambda i, j: (i * 3 + j,)))
    vm = relax.VirtualMachine(relax.build(fused, "llvm"), tvm.cpu())
    a = np.arange(12, dtype="float32").reshape(4, 3)
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(), a.reshape(12))

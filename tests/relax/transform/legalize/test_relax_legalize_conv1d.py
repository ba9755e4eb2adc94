"""LegalizeOps of ``relax.nn.conv1d``: a conv2d over one row (``expand_dims`` -> ``conv2d`` ->
``squeeze``), so that a conv1d from any producer (the torch frontend, user code) gets the native
conv2d schedules instead of a plain loop nest; numerics against numpy for strides, padding,
dilation, groups and layouts."""

import numpy as np
import pytest
from legalize_util import bindings, check, one_op_module, rand, run_legalized, sym, tensor

import minitvm as tvm
from minitvm import relax
from minitvm.ir.structural import structural_equal
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps
from minitvm.script import from_source


def conv1d_ref(x, w, stride=1, pad=(0, 0), dil=1, groups=1):
    """NCW data, OIW kernel, by one product per kernel tap (float64)."""
    n, c, width = x.shape
    o, cg, k = w.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), pad))
    ow = (xp.shape[2] - (k - 1) * dil - 1) // stride + 1
    out = np.zeros((n, o, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for t in range(k):
            patch = xp[:, g * cg:(g + 1) * cg, t * dil:t * dil + stride * (ow - 1) + 1:stride]
            out[:, oc] += np.einsum("ncw,c->nw", patch, w[oc, :, t])
    return out.astype("float32")


def _called(mod) -> list[str]:
    return [b.value.args[0].name_hint for b in bindings(mod["main"])
            if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"]


BEFORE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 9), dtype="float32"), w: R.Tensor((6, 2, 3), dtype="float32")) -> R.Tensor((2, 6, 4), dtype="float32"):
        with R.dataflow():
            gv: R.Tensor((2, 6, 4), dtype="float32") = R.nn.conv1d(x, w, strides=[2], padding=[1, 2], dilation=[2], groups=2, data_layout="NCW", kernel_layout="OIW", out_layout="NCW", out_dtype="void")
            R.output(gv)
        return gv
"""

# the same program written as the one-row conv2d (legalized below: its PrimFuncs are the
# conv2d's native-schedule compute, not a conv1d loop nest)
ONE_ROW = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 9), dtype="float32"), w: R.Tensor((6, 2, 3), dtype="float32")) -> R.Tensor((2, 6, 4), dtype="float32"):
        with R.dataflow():
            lv: R.Tensor((2, 4, 1, 9), dtype="float32") = R.expand_dims(x, axis=[2])
            lv1: R.Tensor((6, 2, 1, 3), dtype="float32") = R.expand_dims(w, axis=[2])
            lv2: R.Tensor((2, 6, 1, 4), dtype="float32") = R.nn.conv2d(lv, lv1, strides=[1, 2], padding=[0, 1, 0, 2], dilation=[1, 2], groups=2, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype="float32")
            gv: R.Tensor((2, 6, 4), dtype="float32") = R.squeeze(lv2, axis=[2])
            R.output(gv)
        return gv
"""


def test_legalized_conv1d_is_the_one_row_conv2d():
    before = from_source(BEFORE)
    after = LegalizeOps()(before)
    expected = LegalizeOps()(from_source(ONE_ROW))
    assert structural_equal(after, expected), after.script()
    assert structural_equal(before, from_source(BEFORE))  # the input is left as it was
    assert _called(after) == ["expand_dims", "expand_dims1", "conv2d", "squeeze"]
    x, w = rand((2, 4, 9)), rand((6, 2, 3))
    np.testing.assert_allclose(run_legalized(after, [x, w]),
                               conv1d_ref(x, w, 2, (1, 2), 2, 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,wshape,stride,pad,dil,groups", [
    ((2, 3, 9), (5, 3, 3), 1, (0, 0), 1, 1),
    ((2, 3, 9), (5, 3, 3), 2, (1, 1), 1, 1),
    ((1, 4, 11), (6, 2, 3), 1, (2, 0), 2, 2),
    ((2, 6, 10), (6, 1, 5), 3, (2, 3), 1, 6),  # depthwise
    ((1, 4, 12), (8, 1, 3), 2, (1, 1), 3, 4),  # channel multiplier 2, dilated
    ((1, 2, 5), (3, 2, 5), 1, (0, 0), 1, 1),   # one output column
])
def test_numerics(shape, wshape, stride, pad, dil, groups):
    x, w = rand(shape), rand(wshape)
    check(lambda a, b: nn.conv1d(a, b, stride, pad, dil, groups),
          [tensor(shape), tensor(wshape)], [x, w], conv1d_ref(x, w, stride, pad, dil, groups),
          rtol=1e-4, atol=1e-4)


def test_constant_weight_is_reshaped_at_legalization():
    x, w = rand((2, 4, 9)), rand((6, 4, 3))
    mod = LegalizeOps()(one_op_module(lambda a: nn.conv1d(a, relax.const(w), padding=1),
                                      [tensor(x.shape)]))
    assert _called(mod) == ["expand_dims", "conv2d", "squeeze"]
    np.testing.assert_allclose(run_legalized(mod, [x]), conv1d_ref(x, w, pad=(1, 1)),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("data_layout,kernel_layout,out_layout", [
    ("NWC", "WIO", "NWC"),
    ("NCW", "OIW", "NWC"),
    ("NWC", "OIW", "NCW"),
])
def test_layouts(data_layout, kernel_layout, out_layout):
    x, w = rand((2, 4, 9)), rand((6, 2, 3))
    ref = conv1d_ref(x, w, 2, (1, 0), 1, 2)
    perm = {"NCW": (0, 1, 2), "NWC": (0, 2, 1)}
    xs = x.transpose(perm[data_layout]).copy()
    ws = w if kernel_layout == "OIW" else w.transpose(2, 1, 0).copy()
    check(lambda a, b: nn.conv1d(a, b, 2, (1, 0), 1, 2, data_layout, kernel_layout, out_layout),
          [tensor(xs.shape), tensor(ws.shape)], [xs, ws], ref.transpose(perm[out_layout]),
          rtol=1e-4, atol=1e-4)


def test_symbolic_batch():
    (n,) = sym("n")
    x, w = rand((3, 4, 8)), rand((5, 4, 3))
    check(lambda a, b: nn.conv1d(a, b, padding=1), [tensor([n, 4, 8]), tensor(w.shape)],
          [x, w], conv1d_ref(x, w, pad=(1, 1)), rtol=1e-4, atol=1e-4)


def test_out_dtype():
    x, w = rand((1, 3, 7)), rand((4, 3, 2))
    mod = LegalizeOps()(one_op_module(lambda a, b: nn.conv1d(a, b, out_dtype="float64"),
                                      [tensor(x.shape), tensor(w.shape)]))
    got = run_legalized(mod, [x, w])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, conv1d_ref(x, w), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups", [1, 4])
def test_built_with_the_native_schedules(groups):
    # the whole pipeline (fusion with the bias and activation, native conv2d schedules)
    x, w, b = rand((2, 8, 40)), rand((8, 8 // groups, 3)), rand((1, 8, 1))
    p = relax.Var("x", relax.TensorStructInfo(x.shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [p]):
        with bb.dataflow():
            y = bb.emit(nn.conv1d(p, relax.const(w), 2, 1, 1, groups))
            y = bb.emit(nn.relu(relax.op.add(y, relax.const(b))))
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x)).numpy()
    want = np.maximum(conv1d_ref(x, w, 2, (1, 1), 1, groups) + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

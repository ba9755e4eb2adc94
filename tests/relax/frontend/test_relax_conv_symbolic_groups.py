"""relax.frontend.torch's convolution with a symbolic group count (aten_conv_groups): built
with a BlockBuilder (no torch needed), its windows-times-kernels form checked structurally,
against numpy's grouped conv at several group counts from one build, and its run-time check of
the shapes the grouping assumes."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.frontend.torch.aten_conv_groups import conv_symbolic_groups
from minitvm.relax.frontend.torch.context import AtenContext
from minitvm.topi.testing.conv import conv2d_nchw_python


def grouped_conv_program(stride, pads, dilation):
    """main(x: (1, c, 7, 6), w: (o, 2, 3, 3), g_of: (g,)) -> x conv w with ``groups = g``."""
    c, o, g = (tir.Var(n, "int64") for n in ("c", "o", "g"))
    x = relax.Var("x", relax.TensorStructInfo([1, c, 7, 6], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([o, 2, 3, 3], "float32"))
    g_of = relax.Var("g_of", relax.TensorStructInfo([g], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, g_of]):
        with bb.dataflow():
            y = conv_symbolic_groups(AtenContext(bb), x, w, stride, pads, dilation, g)
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get()


def test_grouped_conv_is_windows_times_kernels():
    mod = grouped_conv_program([1, 1], [1, 1], [1, 1])
    text = mod.script()
    assert "R.nn.conv2d" not in text
    assert text.count("R.strided_slice") == 9 and text.count("R.matmul") == 1
    assert text.count("R.match_cast") == 2 and "R.nn.pad" in text
    n, ch, h, w = mod["main"].ret_struct_info.shape.values
    assert (int(n), int(h), int(w)) == (1, 7, 6) and str(ch) == "(g * (o // g))"


def test_grouped_conv_matches_numpy_and_checks_the_grouping_at_run_time():
    """One build (stride 2 x 1, padding 0 x 1, dilation 1 x 2) at 1, 2 and 4 groups against
    numpy; input channels other than groups x the weight's, or output channels not a multiple
    of the groups, fail when the program runs."""
    stride, pads, dilation = [2, 1], [0, 1], [1, 2]
    vm = relax.VirtualMachine(relax.build(grouped_conv_program(stride, pads, dilation), "llvm"),
                              tvm.cpu())
    rng = np.random.default_rng(0)
    for g in (1, 2, 4):
        x = rng.standard_normal((1, 2 * g, 7, 6)).astype("float32")
        w = rng.standard_normal((3 * g, 2, 3, 3)).astype("float32")
        got = vm["main"](x, w, np.zeros(g, "float32")).numpy()
        wd = np.zeros((3 * g, 2, 3, 5), "float32")
        wd[:, :, :, ::2] = w  # (the reference has no dilation)
        ref = conv2d_nchw_python(x, wd, stride, pads, groups=g)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=f"groups {g}")
    x = np.zeros((1, 6, 7, 6), "float32")
    with pytest.raises(ValueError, match="match_cast"):  # 6 channels, 2 groups of 2
        vm["main"](x, np.zeros((6, 2, 3, 3), "float32"), np.zeros(2, "float32"))
    with pytest.raises(ValueError, match="match_cast"):  # 10 kernels, 3 groups
        vm["main"](x, np.zeros((10, 2, 3, 3), "float32"), np.zeros(3, "float32"))

"""Filter rows that read only padding are skipped: a ``conv_lanes`` tile or a ``conv_direct``
panel runs only the filter rows its output rows need (``conv_lanes.tap_rows``), for dilated
convs, small planes and wide padding; the 1x1 conv packs its input when the plane's rows alias
in L1 (``conv_pointwise.aliased_rows``). Numerics against a float64 reference."""

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relay
from minitvm.arith import Analyzer
from minitvm.contrib import graph_executor
from minitvm.schedule import conv_lanes, conv_pointwise
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _geometry(h, oh, kh=3, dh=1, sh=1, pt=1):
    return dict(h=h, oh=oh, kh=kh, dh=dh, sh=sh, pt=pt)


def _needed(g, oy):
    """Filter rows reading an input row at output row ``oy``, by brute force."""
    return [ky for ky in range(g["kh"]) if 0 <= oy * g["sh"] - g["pt"] + ky * g["dh"] < g["h"]]


@pytest.mark.parametrize("h,kh,dh,sh,pt,pb", [
    (32, 3, 6, 1, 6, 6), (32, 3, 2, 1, 2, 2), (7, 3, 1, 1, 1, 1), (14, 3, 1, 2, 1, 1),
    (4, 3, 1, 1, 3, 3), (9, 5, 2, 2, 0, 5), (10, 7, 3, 1, 9, 2)])
def test_tap_rows_cover_exactly_the_rows_read(h, kh, dh, sh, pt, pb):
    """For every pair of output rows, ``tap_rows`` spans the union of their needed filter rows
    (and no row outside it that both rows leave unread); an all-padding row gets none."""
    oh = (h + pt + pb - (kh - 1) * dh - 1) // sh + 1
    g = _geometry(h, oh, kh, dh, sh, pt)
    ana = Analyzer()
    for first in range(oh):
        for last in range(first, min(oh, first + 3)):
            need = sorted({k for oy in range(first, last + 1) for k in _needed(g, oy)})
            lo, count = (ana.simplify(e) for e in conv_lanes.tap_rows(
                g, E.IntImm("int32", first), E.IntImm("int32", last)))
            got = list(range(int(lo.value), int(lo.value) + int(count.value)))
            assert set(need) <= set(got)
            if need:
                assert got[0] == need[0] and got[-1] == need[-1]
            else:
                assert got == []
    assert conv_lanes.trims_rows(g) == any(len(_needed(g, oy)) < kh for oy in range(oh))


def _run(shape, o, k, strides, pads, dil, groups=1, seed=0):
    """conv2d + bias + relu of a constant weight through relay.build: (kernel, got, want)."""
    rng = np.random.default_rng(seed)
    wv = rng.standard_normal((o, shape[1] // groups, k, k)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    if groups == 1:
        want = conv_ref(xv, wv, strides, pads, dil)
    else:
        cg, og = shape[1] // groups, o // groups
        want = np.concatenate([conv_ref(xv[:, i * cg:(i + 1) * cg], wv[i * og:(i + 1) * og],
                                        strides, pads, dil) for i in range(groups)], axis=1)
    want = np.maximum(want + bias[:, None, None], 0)
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=strides, padding=pads, dilation=dil,
                        kernel_size=(k, k), channels=o, groups=groups)
    y = relay.nn.relu(relay.nn.bias_add(y, relay.const(bias)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("x", xv)
    gm.run()
    (kernel,) = [kk for name, kk in lib.get_lib().kernels.items() if "conv2d" in name]
    return kernel, gm.get_output(0).numpy(), want


def _trimmed_ky(kernel, kh=3) -> bool:
    """Does the kernel have a filter-row loop with a computed start (``tap_rows``), or one
    over fewer than the filter's rows (``conv_lanes.pixel_classes``' border classes)?"""
    return any(isinstance(s, S.For) and s.loop_var.name.startswith("ky") and (
        not isinstance(s.min, E.IntImm) or s.min.value > 0 or
        isinstance(s.extent, E.IntImm) and s.extent.value < kh)
        for s in walk_stmts(kernel.prim_func.body))


def _uses_lanes(kernel) -> bool:
    return any(isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"
               for s in walk_stmts(kernel.prim_func.body))


@pytest.mark.parametrize("shape,o,strides,pads,dil,groups,lanes", [
    ((1, 8, 16, 16), 8, (1, 1), (4, 4, 4, 4), (4, 4), 1, False),  # conv_direct, row mode
    ((1, 8, 16, 16), 8, (1, 1), (2, 2, 2, 2), (2, 2), 1, False),
    ((1, 8, 13, 13), 32, (1, 1), (3, 3, 3, 3), (3, 3), 1, True),  # conv_lanes
    ((1, 8, 13, 13), 32, (1, 1), (6, 6, 6, 6), (6, 6), 1, True),
    ((1, 64, 14, 14), 64, (2, 2), (1, 1, 1, 1), (1, 1), 4, True),  # grouped, stride 2
    ((1, 64, 7, 7), 64, (1, 1), (1, 1, 1, 1), (1, 1), 4, True),
    ((1, 8, 4, 9), 16, (1, 1), (3, 3, 3, 3), (1, 1), 1, True),  # rows with no tap at all
    ((1, 8, 4, 14), 8, (1, 1), (3, 1, 3, 1), (1, 1), 1, False),
    ((2, 8, 11, 10), 16, (2, 1), (0, 1, 2, 1), (2, 1), 1, True),  # uneven padding, batch
])
def test_trimmed_convs_match_reference(shape, o, strides, pads, dil, groups, lanes, request):
    if not lanes:  # (conv_lanes takes any output channels: pin conv_direct's row mode)
        request.getfixturevalue("direct_conv_only")
    kernel, got, want = _run(shape, o, 3, strides, pads, dil, groups)
    assert _uses_lanes(kernel) == lanes
    assert _trimmed_ky(kernel)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_no_trim_without_padding_rows():
    """A conv whose every output row reads all filter rows keeps the constant filter-row
    loop."""
    kernel, got, want = _run((1, 8, 13, 13), 32, 3, (1, 1), (0, 0, 0, 0), (1, 1))
    assert _uses_lanes(kernel) and not _trimmed_ky(kernel)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_aliased_rows():
    """Planes whose rows are a multiple of 4 KB apart (32x32, 64x64) alias in L1 with more
    than 8 channels; 16x16 (1 KB, 4 sets) from 33 channels; 56x56 and 28x28 never."""
    assert conv_pointwise.aliased_rows(256, 32 * 32)
    assert conv_pointwise.aliased_rows(16, 64 * 64)
    assert not conv_pointwise.aliased_rows(8, 32 * 32)
    assert conv_pointwise.aliased_rows(33, 16 * 16) and not conv_pointwise.aliased_rows(32, 256)
    assert not conv_pointwise.aliased_rows(1024, 56 * 56)
    assert not conv_pointwise.aliased_rows(1024, 28 * 28)


@pytest.mark.parametrize("hw,packed", [(32, True), (28, False)])
def test_pointwise_packs_aliased_plane(hw, packed):
    """A 1x1 conv of 16 output channels at 32x32 (pixel vectors, which packed only for 256
    outputs or more) packs its input, at 28x28 not; the results match numpy."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((1, 48, hw, hw)).astype("float32")
    wv = rng.standard_normal((16, 48, 1, 1)).astype("float32")
    x = relay.var("x", shape=xv.shape)
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(wv), kernel_size=(1, 1), channels=16))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    (kernel,) = [k for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    stages = [s for s in walk_stmts(kernel.prim_func.body) if isinstance(s, S.DeclBuffer)]
    assert any(s.buffer.name == "pw_panel" for s in stages) == packed  # (_pack_panels)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("x", xv)
    gm.run()
    want = np.maximum(conv_ref(xv, wv), 0)
    np.testing.assert_allclose(gm.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)

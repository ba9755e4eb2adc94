"""LegalizeOps of a dilated 3x3 ``relax.nn.conv2d``: one undilated conv over its image-major
dilation phases (``topi.dilated_phases``, the rule Relay's Legalize uses), static or symbolic
batch, matching a float64 definition of the dilated conv at several batch sizes; the convs the
rule cannot take keep their dilation (the rule's cases: ``tests/topi/test_dilated_phases.py``)."""

import numpy as np
import pytest
from legalize_util import bindings, one_op_module, rand, sym, tensor

import minitvm as tvm
from minitvm import relax
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps
from minitvm.schedule import batch_loop
from minitvm.topi.reference.nn import conv2d_nchw


def _dilated_conv(x, w, pad, dil):
    """The dilated 3x3 conv in float64 (``topi.reference``); ``pad`` is (top, left, bottom,
    right)."""
    return conv2d_nchw(x.astype(np.float64), w.astype(np.float64), (1, 1), tuple(pad),
                       tuple(dil), 1, "float64")


def _convs(mod) -> list:
    """The conv2d PrimFuncs ``mod``'s main calls after LegalizeOps, with their argument's
    struct info."""
    out = []
    for b in bindings(mod["main"]):
        v = b.value
        if getattr(getattr(v, "op", None), "name", "") == "relax.call_tir" and \
                v.args[0].name_hint.startswith("conv2d"):
            out.append((mod[v.args[0]], v.args[1].fields[0].struct_info))
    return out


def _module(chw, o, pad, dil, batch):
    w = rand((o, chw[0], 3, 3), lo=-0.5, hi=0.5)
    mod = one_op_module(lambda a: nn.conv2d(a, relax.const(w), padding=pad, dilation=dil),
                        [tensor([batch, *chw])])
    return mod, w


def test_symbolic_batch_becomes_one_conv_over_image_major_phases():
    (n,) = sym("n")
    mod, _ = _module((32, 32, 32), 16, 2, 2, n)
    ((conv, arg),) = _convs(LegalizeOps()(mod))
    lead = arg.shape.values[0]
    assert batch_loop.rows_per_image(lead, n) == 4  # (n * 4: an image's four phases together)
    assert [int(d) for d in arg.shape.values[1:]] == [32, 16, 16]
    out = conv.buffer_map[conv.params[2]].shape  # (undilated: 16x16 out of each phase)
    assert [int(d) for d in out[1:]] == [16, 16, 16]
    ret = LegalizeOps()(mod)["main"].struct_info.ret.shape.values
    assert ret[0] is n and [int(d) for d in ret[1:]] == [16, 32, 32]


@pytest.mark.parametrize("chw,o,pad,dil", [
    ((32, 32, 32), 16, (2, 2, 2, 2), (2, 2)),   # DeepLab's branch, dilation 2
    ((16, 32, 40), 24, (4, 4, 4, 4), (4, 4)),   # a non-square plane, dilation 4
    ((24, 16, 24), 16, (2, 3, 2, 3), (2, 3)),   # dilations differ by axis
    ((16, 24, 16), 16, (0, 2, 4, 2), (2, 2)),   # asymmetric padding (multiples of the dilation)
])
def test_built_matches_the_definition(chw, o, pad, dil):
    (n,) = sym("n")
    mod, w = _module(chw, o, pad, dil, n)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for batch in (1, 3):
        x = rand((batch, *chw))
        np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                                   _dilated_conv(x, w, pad, dil), rtol=1e-4, atol=1e-4)


def test_static_batch_matches_the_definition():
    mod, w = _module((16, 16, 16), 16, 2, 2, 2)
    ((_, arg),) = _convs(LegalizeOps()(mod))
    assert [int(d) for d in arg.shape.values] == [8, 16, 8, 8]
    x = rand((2, 16, 16, 16))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                               _dilated_conv(x, w, (2, 2, 2, 2), (2, 2)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("chw,o,pad,dil", [
    ((32, 30, 30), 16, 6, 6),  # 30 / 6 = 5: phases under MIN_PHASE pixels a side
    ((8, 32, 32), 16, 2, 2),   # fewer than MIN_CHANNELS input channels
    ((32, 32, 32), 16, 2, 4),  # padding 2 is not a multiple of the dilation 4
])
def test_convs_the_rule_cannot_take_keep_their_dilation(chw, o, pad, dil):
    (n,) = sym("n")
    mod, w = _module(chw, o, pad, dil, n)
    ((_, arg),) = _convs(LegalizeOps()(mod))
    assert [int(d) for d in arg.shape.values[1:]] == list(chw)  # (the input as it is)
    x = rand((2, *chw))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                               _dilated_conv(x, w, (pad,) * 4, (dil, dil)), rtol=1e-4,
                               atol=1e-4)

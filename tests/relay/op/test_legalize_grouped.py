"""The Legalize rule of ``relay.op.nn._legalize_grouped``: a grouped conv2d of few groups with
few output channels a group and a weight computed at run time runs as one ungrouped conv per
group, concatenated; the built model matches a float64 definition of the grouped conv, and the
convs the rule cannot take stay grouped."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.expr import Call
from minitvm.relay.expr_functor import dataflow_post_order
from minitvm.topi.reference.nn import conv2d_nchw


def _mod(shape, wshape, const_weight=None, **kw):
    x = relay.var("x", shape=shape)
    w = relay.const(const_weight) if const_weight is not None else relay.var("w", shape=wshape)
    kw = {"kernel_size": wshape[2:], "channels": wshape[0], **kw}
    y = relay.nn.conv2d(x, w, **kw)
    params = [x] if const_weight is not None else [x, w]
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, y)))


def _convs(mod) -> list:
    body = relay.transform.Legalize()(mod)["main"].body
    return [e for e in dataflow_post_order(body)
            if isinstance(e, Call) and e.op.name == "nn.conv2d"]


def test_siamfc_correlation_becomes_one_conv_per_group():
    mod = _mod((1, 128, 24, 24), (2, 64, 8, 8), groups=2)
    legal = relay.transform.Legalize()(mod)["main"]
    convs = _convs(mod)
    assert [int(c.attrs.groups) for c in convs] == [1, 1]
    assert [tuple(int(d) for d in c.args[0].checked_type.shape) for c in convs] == \
        [(1, 64, 24, 24)] * 2
    assert [tuple(int(d) for d in c.args[1].checked_type.shape) for c in convs] == \
        [(1, 64, 8, 8)] * 2
    assert legal.body.op.name == "concatenate"
    assert legal.checked_type == mod["main"].checked_type
    assert mod["main"].body.attrs.groups == 2  # (the input module is unchanged)


@pytest.mark.parametrize("shape,wshape,kw", [
    ((1, 128, 24, 24), (2, 64, 8, 8), dict(groups=2)),  # SiamFC's correlation
    ((2, 96, 22, 22), (3, 32, 6, 6), dict(groups=3)),  # batch 2, three groups
    ((1, 64, 47, 45), (8, 16, 3, 3), dict(groups=4, padding=(1, 2), strides=(2, 1))),
])
def test_built_matches_the_definition(shape, wshape, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    w = (rng.standard_normal(wshape) / 10).astype("float32")
    mod = _mod(shape, wshape, **kw)
    assert {int(c.attrs.groups) for c in _convs(mod)} == {1}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.set_input("w", w)
    g.run()
    pad = kw.get("padding", (0, 0))
    want = conv2d_nchw(x.astype(np.float64), w.astype(np.float64), kw.get("strides", (1, 1)),
                       (pad[0], pad[1], pad[0], pad[1]), (1, 1), kw["groups"], "float64")
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,wshape,kw", [
    ((1, 128, 24, 24), (2, 64, 8, 8), dict(groups=2, dilation=(2, 2))),  # dilated
    ((1, 160, 24, 24), (5, 32, 8, 8), dict(groups=5)),  # more than MAX_GROUPS
    ((1, 128, 24, 24), (16, 64, 8, 8), dict(groups=2)),  # 8 outputs a group
    ((1, 48, 10, 10), (6, 16, 3, 3), dict(groups=3)),  # too little work a group
    ((1, 64, 24, 24), (64, 1, 3, 3), dict(groups=64)),  # depthwise
    ((1, 24, 24, 128), (8, 8, 64, 2), dict(groups=2, data_layout="NHWC", kernel_layout="HWIO",
                                           kernel_size=(8, 8), channels=2)),  # another layout
])
def test_other_grouped_convs_stay_grouped(shape, wshape, kw):
    convs = _convs(_mod(shape, wshape, **kw))
    assert all(int(c.attrs.groups) == kw["groups"] for c in convs)


def test_a_constant_weight_stays_grouped():
    w = np.ones((2, 64, 8, 8), "float32")
    (conv,) = _convs(_mod((1, 128, 24, 24), w.shape, const_weight=w, groups=2))
    assert int(conv.attrs.groups) == 2


def test_switched_off_stays_grouped(monkeypatch):
    from minitvm.topi import grouped_split

    monkeypatch.setattr(grouped_split, "ENABLED", False)
    convs = _convs(_mod((1, 128, 24, 24), (2, 64, 8, 8), groups=2))
    assert [int(c.attrs.groups) for c in convs] == [2]

"""The Legalize rule of ``relay.op.nn._legalize_conv2d_layout``: an ``nn.conv2d`` in another
layout than NCHW/OIHW becomes ``layout_transform``s around an NCHW/OIHW conv, which builds to
native kernels only and matches the op's numpy reference."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.expr import Call
from minitvm.relay.expr_functor import dataflow_post_order


def _mod(shape, wshape, **kw):
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=wshape)
    y = relay.nn.relu(relay.nn.conv2d(x, w, **kw))
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))


def _calls(expr) -> list[Call]:
    return [e for e in dataflow_post_order(expr) if isinstance(e, Call)]


CASES = [
    # TFLite / TF: NHWC data, HWIO weight, strided with asymmetric padding
    ((1, 9, 7, 6), (3, 3, 6, 5), dict(strides=(2, 2), padding=(1, 0, 1, 1),
                                      data_layout="NHWC", kernel_layout="HWIO")),
    # TFLite depthwise: HWOI weight, channel multiplier 2
    ((2, 6, 6, 4), (3, 3, 8, 1), dict(padding=(1, 1), groups=4, data_layout="NHWC",
                                      kernel_layout="HWOI")),
    # grouped and dilated NHWC
    ((1, 10, 10, 6), (3, 3, 3, 4), dict(padding=(2, 2), dilation=(2, 2), groups=2,
                                        data_layout="NHWC", kernel_layout="HWIO")),
    # blocked NCHW4c / OIHW4i4o
    ((1, 2, 5, 5, 4), (3, 2, 3, 3, 4, 4), dict(padding=(1, 1), data_layout="NCHW4c",
                                               kernel_layout="OIHW4i4o")),
    # NHWC in, NCHW out; and NCHW data with an HWIO weight
    ((1, 5, 6, 3), (1, 1, 3, 7), dict(data_layout="NHWC", kernel_layout="HWIO",
                                      out_layout="NCHW")),
    ((1, 3, 5, 6), (2, 2, 3, 4), dict(data_layout="NCHW", kernel_layout="HWIO")),
]


@pytest.mark.parametrize("shape,wshape,kw", CASES)
def test_relaid_out_conv_builds_natively_and_matches_the_reference(shape, wshape, kw):
    mod = _mod(shape, wshape, **kw)
    legal = relay.transform.Legalize()(mod)["main"]
    convs = [c for c in _calls(legal.body) if c.op.name == "nn.conv2d"]
    assert len(convs) == 1
    assert (convs[0].attrs.data_layout, convs[0].attrs.kernel_layout) == ("NCHW", "OIHW")
    assert legal.checked_type == mod["main"].checked_type
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"w": w})
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    with tvm.transform.PassContext(opt_level=0):
        ref = relay.create_executor("debug", mod, target="llvm").evaluate()(x, w).numpy()
    np.testing.assert_allclose(g.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_nchw_conv_is_kept():
    mod = _mod((1, 3, 5, 5), (4, 3, 3, 3))
    assert tvm.ir.structural_equal(relay.transform.Legalize()(mod), mod)
    from minitvm.relay.op.nn._legalize_conv2d_layout import legalize_conv2d_layout

    conv = mod["main"].body.args[0]
    assert legalize_conv2d_layout(conv.attrs, conv.args, []) is None


def test_nhwc_weight_transform_folds_to_a_constant():
    mod = _mod((1, 6, 6, 3), (3, 3, 3, 4), padding=(1, 1), data_layout="NHWC",
               kernel_layout="HWIO")
    w = np.ones((3, 3, 3, 4), "float32")
    mod = relay.build_module.bind_params_by_name(mod["main"], {"w": w})
    mod = tvm.IRModule.from_expr(mod)
    seq = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.Legalize(),
                                    relay.transform.FoldConstant()])
    body = seq(mod)["main"].body
    lts = [c for c in _calls(body) if c.op.name == "layout_transform"]
    assert [(c.attrs.src_layout, c.attrs.dst_layout) for c in lts] == [
        ("NHWC", "NCHW"), ("NCHW", "NHWC")]


def test_conv_after_space_to_batch_is_kept_for_flatten_atrous_conv():
    x = relay.var("x", shape=(1, 8, 8, 3))
    w = relay.var("w", shape=(3, 3, 3, 4))
    s2b = relay.nn.space_to_batch_nd(x, block_shape=[2, 2], paddings=[[2, 2], [2, 2]])
    y = relay.nn.conv2d(s2b, w, data_layout="NHWC", kernel_layout="HWIO")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
    assert tvm.ir.structural_equal(relay.transform.Legalize()(mod), mod)

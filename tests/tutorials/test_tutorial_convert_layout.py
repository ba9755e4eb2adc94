"""TVM's "Convert Layout Pass" how-to with ``import minitvm as tvm``: the NHWC two-conv graph
converted to NCHW by ``relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})``
(the exact program the how-to prints: two data transforms, one per weight), the batch-norm /
pad / sum layout inference it describes, a user ``register_convert_op_layout`` callback, and
its usage section (a TFLite NHWC model, ``RemoveUnusedFunctions`` + ``ConvertLayout`` under
opt_level 3, ``relay.build_config`` and the old ``graph, lib, params = relay.build(...)``)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def nhwc_two_convs():
    x = relay.var("x", shape=(1, 10, 10, 8))
    weight1 = relay.var("weight1", shape=(3, 3, 8, 6))
    weight2 = relay.var("weight2", shape=(3, 3, 6, 6))
    y = relay.nn.conv2d(x, weight1, padding=(1, 1), channels=6, kernel_size=(3, 3),
                        data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.relu(y)
    y = relay.nn.conv2d(y, weight2, padding=(1, 1), channels=6, kernel_size=(3, 3),
                        data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.relu(y)
    return tvm.IRModule.from_expr(relay.Function([x, weight1, weight2], y))


def expected_nchw():
    """The how-to's "after ConvertLayout" program, written by hand."""
    x = relay.var("x", shape=(1, 10, 10, 8))
    weight1 = relay.var("weight1", shape=(3, 3, 8, 6))
    weight2 = relay.var("weight2", shape=(3, 3, 6, 6))
    y = relay.layout_transform(x, "NHWC", "NCHW")
    w1 = relay.layout_transform(weight1, "HWIO", "OIHW")
    y = relay.nn.relu(relay.nn.conv2d(y, w1, padding=(1, 1), channels=6, kernel_size=(3, 3)))
    w2 = relay.layout_transform(weight2, "HWIO", "OIHW")
    y = relay.nn.relu(relay.nn.conv2d(y, w2, padding=(1, 1), channels=6, kernel_size=(3, 3)))
    y = relay.layout_transform(y, "NCHW", "NHWC")
    return relay.transform.InferType()(
        tvm.IRModule.from_expr(relay.Function([x, weight1, weight2], y)))


def run(mod, *args):
    return relay.create_executor("graph", mod=mod, device=tvm.cpu(), target="llvm").evaluate()(
        *args).numpy()


def numpy_reference(x, w1, w2):
    """Two NHWC/HWIO 3x3 SAME convolutions with ReLU, in numpy."""
    def conv_relu(h, w):
        return np.maximum(np.einsum("nhwijc,ijco->nhwo", _patches(h), w), 0)

    return conv_relu(conv_relu(x, w1), w2)


def test_convert_nhwc_graph_to_nchw():
    mod = nhwc_two_convs()
    desired_layouts = {"nn.conv2d": ["NCHW", "default"]}
    with tvm.transform.PassContext(opt_level=3):
        converted = relay.transform.ConvertLayout(desired_layouts)(mod)
    assert tvm.ir.structural_equal(converted, expected_nchw())
    text = converted["main"].astext()
    assert text.count("layout_transform(") == 4
    assert ('%0 = layout_transform(%x, src_layout="NHWC", dst_layout="NCHW") '
            "/* ty=Tensor[(1, 8, 10, 10), float32] */;") in text
    assert ('layout_transform(%6, src_layout="NCHW", dst_layout="NHWC") '
            "/* ty=Tensor[(1, 10, 10, 6), float32] */") in text
    # {"nn.conv2d": ["NCHW", "default"]} == {"nn.conv2d": ["NCHW", "OIHW"]}
    with tvm.transform.PassContext(opt_level=3):
        explicit = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "OIHW"]})(mod)
    assert tvm.ir.structural_equal(explicit, converted)

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type_annotation.concrete_shape).astype("float32")
            for p in mod["main"].params]
    np.testing.assert_allclose(run(converted, *args), numpy_reference(*args), rtol=1e-4,
                               atol=1e-4)


def test_light_layout_sensitive_ops_adapt():
    """batch_norm's axis, pad's pad_width and sum's axis follow the new layout; no transform
    is inserted between them."""
    x = relay.var("x", shape=(1, 6, 6, 4))
    w = relay.var("w", shape=(3, 3, 4, 5))
    gamma, beta, mean, var = (relay.var(n, shape=(5,)) for n in ("g", "b", "m", "v"))
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=5, kernel_size=(3, 3),
                        data_layout="NHWC", kernel_layout="HWIO")
    y = relay.nn.batch_norm(y, gamma, beta, mean, var, axis=3)[0]
    y = relay.nn.pad(y, ((0, 0), (1, 1), (2, 2), (0, 0)))
    y = relay.sum(y, axis=[3], keepdims=True)
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    with tvm.transform.PassContext(opt_level=3):
        converted = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
    text = converted["main"].astext()
    assert text.count("layout_transform(") == 3  # data in, weight, result out
    assert "nn.batch_norm(%2, %g, %b, %m, %v) " in text  # axis=1: TVM's default, not printed
    assert "pad_width=[[0, 0], [0, 0], [1, 1], [2, 2]]" in text
    assert "sum(%5, axis=[1], keepdims=True)" in text
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(p.type_annotation.concrete_shape).astype("float32")
            for p in mod["main"].params]
    args[-1] = np.abs(args[-1]) + 0.5  # a variance
    np.testing.assert_allclose(run(converted, *args), run(mod, *args), rtol=1e-4, atol=1e-4)


def test_user_convert_op_layout_callback():
    """The how-to's FTVMConvertLayout callback for nn.conv2d, installed for the test."""
    seen = []

    def convert_conv2d(attrs, inputs, tinfos, desired_layouts):
        data, weight = inputs
        new_attrs = dict(attrs)
        assert len(desired_layouts) == 2, "A desired layout is expected for both inputs"
        desired_data_layout, desired_kernel_layout = map(str, desired_layouts)
        assert desired_data_layout != "default", "Data layout cannot be default"
        new_attrs["data_layout"] = desired_data_layout
        seen.append((desired_data_layout, desired_kernel_layout))
        if desired_data_layout == "NCHW":
            if desired_kernel_layout != "default":
                new_attrs["kernel_layout"] = desired_kernel_layout
            else:
                new_attrs["kernel_layout"] = "OIHW"
            return relay.nn.conv2d(data, weight, **new_attrs)
        raise ValueError(f"Layout {desired_data_layout} is not yet supported")

    mod = nhwc_two_convs()
    with TempOpAttr("nn.conv2d", "FTVMConvertOpLayout", convert_conv2d):
        with tvm.transform.PassContext(opt_level=3):
            converted = relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})(mod)
        assert seen == [("NCHW", "default")] * 2
        assert tvm.ir.structural_equal(converted, expected_nchw())
        with pytest.raises(Exception, match="Layout NCHW16c is not yet supported"):
            with tvm.transform.PassContext(opt_level=3):
                relay.transform.ConvertLayout({"nn.conv2d": ["NCHW16c", "default"]})(mod)


def test_usage_with_tflite_model():
    tflite = pytest.importorskip("tflite", reason="the usage section imports a TFLite model")
    from minitvm.relay.frontend.tflite.builder import ModelBuilder

    rng = np.random.default_rng(2)
    b = ModelBuilder()
    x = b.input("input", (1, 8, 8, 3))
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.5).astype("float32")  # OHWI
    conv = b.tensor("conv", (1, 8, 8, 4))
    b.operator("CONV_2D", [x, b.constant("w", w), b.constant("b", np.zeros(4, "float32"))],
               [conv], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1, DilationHFactor=1,
               DilationWFactor=1, FusedActivationFunction=1)
    b.output(conv)
    tflite_model = tflite.Model.GetRootAsModel(b.finish(), 0)
    shape_dict, dtype_dict = {"input": (1, 8, 8, 3)}, {"input": "float32"}

    mod, params = relay.frontend.from_tflite(tflite_model, shape_dict=shape_dict,
                                             dtype_dict=dtype_dict)
    assert 'data_layout="NHWC"' in mod.astext(show_meta_data=False)
    desired_layouts = {"nn.conv2d": ["NCHW", "default"]}
    seq = tvm.transform.Sequential([relay.transform.RemoveUnusedFunctions(),
                                    relay.transform.ConvertLayout(desired_layouts)])
    with tvm.transform.PassContext(opt_level=3):
        converted = seq(mod)
    text = converted.astext(show_meta_data=False)
    assert 'data_layout="NHWC"' not in text and 'dst_layout="NCHW"' in text

    with pytest.warns(DeprecationWarning, match="build_config"):
        with relay.build_config(opt_level=3):
            graph, lib, params = relay.build(converted, "llvm", params=params)
    module = graph_executor.create(graph, lib, tvm.cpu())
    module.set_input(**params)
    data = rng.standard_normal((1, 8, 8, 3)).astype("float32")
    module.set_input("input", data)
    module.run()
    expected = np.maximum(np.einsum("nhwijc,oijc->nhwo", _patches(data), w), 0)
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)


def _patches(data):
    """(N, H, W, 3, 3, C) windows of ``data`` padded by one (SAME, stride 1)."""
    padded = np.pad(data, ((0, 0), (1, 1), (1, 1), (0, 0)))
    n, h, w, c = data.shape
    out = np.empty((n, h, w, 3, 3, c), data.dtype)
    for i in range(3):
        for j in range(3):
            out[:, :, :, i, j] = padded[:, i:i + h, j:j + w]
    return out

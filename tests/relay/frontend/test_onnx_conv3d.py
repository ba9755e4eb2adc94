"""relay.frontend.from_onnx on a 3-D Conv (video / volumetric models: the temporal non-local
block of tsm_nonlocal, C3D): asymmetric pads, strides, dilations, groups and auto_pad, built at
opt_level 3 strict-native and compared with PyTorch's conv3d."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
torch = pytest.importorskip("torch", reason="reference outputs come from PyTorch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


def _conv3d_model(xshape, w, b, **attrs):
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if b is not
                                                  None else [])
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if b is not None else []), ["y"],
                            **attrs)
    graph = helper.make_graph([node], "conv3d",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, x):
    mod, params = relay.frontend.from_onnx(model, {"x": x.shape})
    assert "nn.conv3d" in mod.astext()
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("x", x)
    gm.run()
    return gm.get_output(0).numpy()


@pytest.mark.parametrize("pads,strides,dil,group,bias", [
    ([0, 0, 0, 0, 0, 0], [1, 1, 1], [1, 1, 1], 1, True),
    ([1, 0, 2, 0, 1, 1], [1, 2, 2], [1, 1, 1], 1, False),  # asymmetric begin / end
    ([1, 1, 1, 1, 1, 1], [1, 1, 1], [2, 1, 1], 2, True),  # dilated in time, grouped
])
def test_conv3d_matches_torch(pads, strides, dil, group, bias):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 5, 7, 6)).astype("float32")
    w = rng.standard_normal((6, 4 // group, 3, 3, 2)).astype("float32")
    b = rng.standard_normal(6).astype("float32") if bias else None
    out = _run(_conv3d_model(x.shape, w, b, pads=pads, strides=strides, dilations=dil,
                             group=group), x)
    # torch pads symmetrically: pad the input first (F.pad takes the last axis first)
    xt = torch.nn.functional.pad(torch.from_numpy(x), [pads[2], pads[5], pads[1], pads[4],
                                                      pads[0], pads[3]])
    ref = torch.nn.functional.conv3d(xt, torch.from_numpy(w),
                                     None if b is None else torch.from_numpy(b),
                                     stride=strides, dilation=dil, groups=group).numpy()
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv3d_same_upper():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 4, 6, 6)).astype("float32")
    w = rng.standard_normal((5, 3, 3, 3, 3)).astype("float32")
    out = _run(_conv3d_model(x.shape, w, None, auto_pad="SAME_UPPER"), x)
    ref = torch.nn.functional.conv3d(torch.from_numpy(x), torch.from_numpy(w),
                                     padding="same").numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)

"""ResNet-18-, MobileNetV2- and BERT-layer-shaped PyTorch models exported to ONNX, imported,
compiled at opt_level 3 and compared with PyTorch (and ONNX Runtime when installed)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="building the test models needs `torch`")
onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from frontend_models import bert_layer, build_and_run, mobilenet_v2, resnet18  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.runtime.vm import VirtualMachine  # noqa: E402


def export(model, args, opset: int, names) -> onnx.ModelProto:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, buf, opset_version=opset, input_names=names,
                          dynamo=False)
    return onnx.load_from_string(buf.getvalue())


def check(model, args, names, opset):
    proto = export(model, args, opset, names)
    mod, params = relay.frontend.from_onnx(proto)
    with torch.no_grad():
        ref = model(*args).numpy()
    out = build_and_run(mod, params, {n: a.numpy() for n, a in zip(names, args)})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    return mod


@pytest.mark.parametrize("opset", [11, 17])
def test_resnet18_shaped(opset):
    x = torch.randn(1, 3, 64, 64)
    mod = check(resnet18(width=16), (x,), ["data"], opset)
    text = mod.astext()
    assert text.count("nn.conv2d(") == 20  # 17 3x3/7x7 convs + 3 downsampling 1x1 convs


@pytest.mark.parametrize("opset", [13, 18])
def test_mobilenet_v2_shaped(opset):
    x = torch.randn(1, 3, 64, 64)
    mod = check(mobilenet_v2(width_mult=0.5), (x,), ["data"], opset)
    assert "groups=" in mod.astext()  # depthwise convolutions stay grouped


@pytest.mark.parametrize("opset", [14, 17, 20])
def test_bert_layer_shaped(opset):
    x = torch.randn(2, 16, 64)
    mask = torch.ones(2, 16)
    mask[1, 10:] = 0
    mod = check(bert_layer(), (x, mask), ["x", "mask"], opset)
    text = mod.astext()
    # shape subgraphs (Shape -> Gather -> Concat -> Reshape) were folded to constants
    assert "shape_of" not in text
    assert "nn.batch_matmul" in text


def test_matches_onnxruntime_on_the_same_file():
    ort = pytest.importorskip("onnxruntime", reason="side-by-side check needs onnxruntime")
    x = torch.randn(1, 3, 64, 64)
    proto = export(resnet18(width=8), (x,), 17, ["data"])
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"data": x.numpy()})[0]
    mod, params = relay.frontend.from_onnx(proto)
    out = build_and_run(mod, params, {"data": x.numpy()})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_gpt_shaped_with_dynamic_axes():
    from frontend_models import gpt

    model = gpt()
    idx = torch.randint(0, 100, (2, 16))
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (idx,), buf, opset_version=17, input_names=["idx"],
                          dynamo=False, dynamic_axes={"idx": {0: "B", 1: "T"}})
    proto = onnx.load_from_string(buf.getvalue())
    # no shape=: B and T import as relay.Any() (positions by a run-time arange, the causal mask
    # sliced to T at run time); one Relay VM build serves two sizes
    with pytest.warns(UserWarning, match=r"axes 0 \(B\), 1 \(T\)"):
        dyn_mod, dyn_params = relay.frontend.from_onnx(proto)
    assert str(dyn_mod["main"].ret_type) == "Tensor[(?, ?, 100), float32]"
    vm = VirtualMachine(relay.vm.compile(dyn_mod, "llvm", params=dyn_params), tvm.cpu())
    for b, t in ((3, 7), (1, 16)):
        other = torch.randint(0, 100, (b, t))
        with torch.no_grad():
            np.testing.assert_allclose(vm.run(other.numpy()).numpy(), model(other).numpy(),
                                       rtol=1e-4, atol=1e-4)
    mod, params = relay.frontend.from_onnx(proto, shape={"idx": (2, 16)})
    out = build_and_run(mod, params, {"idx": idx.numpy()})[0]
    with torch.no_grad():
        np.testing.assert_allclose(out, model(idx).numpy(), rtol=1e-4, atol=1e-4)

"""relax.frontend.onnx.from_onnx on Col2Im (opset 18, torch's export of nn.Fold), static and
with a symbolic batch, built and run on the Relax VM against a direct numpy fold."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.onnx import ONNXImportError, from_onnx  # noqa: E402


def fold_reference(cols, size, kernel, dilation, pads, stride):
    n, ck, _ = cols.shape
    (h, w), (kh, kw), (dh, dw), (sh, sw) = size, kernel, dilation, stride
    pt, pl, pb, pr = pads
    c = ck // (kh * kw)
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    img = np.zeros((n, c, h + pt + pb, w + pl + pr), cols.dtype)
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    for i in range(kh):
        for j in range(kw):
            img[:, :, i * dh:i * dh + sh * oh:sh, j * dw:j * dw + sw * ow:sw] += blocks[:, :, i, j]
    return img[:, :, pt:pt + h, pl:pl + w]


CASES = [  # (input shape, image, block, dilations, pads, strides)
    ((1, 2 * 49, 121), (32, 32), (7, 7), (1, 1), (3, 3, 3, 3), (3, 3)),
    ((2, 3 * 6, 15), (5, 7), (2, 3), (2, 1), (1, 0, 1, 0), (1, 2)),
    ((2, 1 * 4, 16), (4, 6), (2, 2), (1, 1), (1, 2, 0, 1), (2, 1)),
]


def _model(shape, size, block, dil, pads, strides, batch=None):
    node = helper.make_node("Col2Im", ["x", "size", "block"], ["y"], dilations=list(dil),
                            pads=list(pads), strides=list(strides))
    dims = [batch or shape[0], *shape[1:]]
    graph = helper.make_graph(
        [node], "col2im", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(size, "int64"), "size"),
         numpy_helper.from_array(np.array(block, "int64"), "block")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_col2im(case, symbolic):
    shape, size, block, dil, pads, strides = case
    mod = from_onnx(_model(*case, batch="n" if symbolic else None))
    assert mod.script().count("R.take") == 2
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n in ((1, 3) if symbolic else (shape[0],)):
        x = np.random.default_rng(n).standard_normal((n, *shape[1:])).astype("float32")
        out = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(out, fold_reference(x, size, block, dil, pads, strides),
                                   rtol=1e-5, atol=1e-5)


def test_col2im_window_count_mismatch_is_an_error():
    with pytest.raises(ONNXImportError, match="10 windows given.*has 11x11"):
        from_onnx(_model((1, 98, 10), (32, 32), (7, 7), (1, 1), (3, 3, 3, 3), (3, 3)))

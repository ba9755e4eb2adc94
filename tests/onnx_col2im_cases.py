"""One-node ONNX Col2Im models (opset 18, torch's export of nn.Fold) and a direct numpy fold,
shared by the Relay and Relax importer tests. Needs onnx (the importing test skips first)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

CASES = [  # (input shape, image, block, dilations, pads, strides)
    ((1, 2 * 49, 121), (32, 32), (7, 7), (1, 1), (3, 3, 3, 3), (3, 3)),   # FuseFormer's
    ((2, 3 * 6, 15), (5, 7), (2, 3), (2, 1), (1, 0, 1, 0), (1, 2)),
    ((1, 4 * 9, 4), (7, 7), (3, 3), (1, 1), (0, 0, 0, 0), (3, 3)),        # an uncovered row
    ((2, 1 * 4, 16), (4, 6), (2, 2), (1, 1), (1, 2, 0, 1), (2, 1)),       # asymmetric pads
]


def fold_reference(cols, size, kernel, dilation, pads, stride):
    """Each window's taps added into a padded image, the padding cut off (numpy)."""
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


def col2im_model(shape, size, block, dil, pads, strides, batch=None):
    """A Col2Im of input ``x`` (its batch named ``batch`` when given) with constant image and
    block shapes."""
    node = helper.make_node("Col2Im", ["x", "size", "block"], ["y"], dilations=list(dil),
                            pads=list(pads), strides=list(strides))
    dims = [batch or shape[0], *shape[1:]]
    graph = helper.make_graph(
        [node], "col2im", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(size, "int64"), "size"),
         numpy_helper.from_array(np.array(block, "int64"), "block")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])

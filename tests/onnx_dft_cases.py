"""ONNX DFT cases both importers' tests run: a one-node model per case and numpy's FFT of the
same signal as the reference (``np.fft`` with ONNX's conventions: the inverse scaled by 1/n,
the signal zero-padded or cropped to ``dft_length``)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

# (input shape, axis, inverse, onesided, dft_length, opset)
CASES = [
    ((2, 16, 1), 1, 0, 0, None, 17),       # real, full spectrum
    ((2, 16, 1), 1, 0, 1, None, 17),       # RFFT
    ((2, 15, 1), 1, 0, 1, None, 17),       # RFFT, odd length
    ((3, 8, 2), 1, 0, 0, None, 17),        # complex forward
    ((3, 8, 2), 1, 1, 0, None, 17),        # complex inverse
    ((2, 6, 5, 2), 1, 0, 0, None, 17),     # an inner axis
    ((2, 6, 5, 1), -2, 0, 1, None, 20),    # opset 20's axis input, the last signal axis
    ((2, 12, 1), 1, 0, 0, 16, 17),         # zero-padded
    ((2, 12, 2), 1, 1, 0, 8, 20),          # cropped, inverse
    ((2, 9, 2), 1, 1, 1, None, 20),        # IRFFT to 16 points
    ((2, 9, 2), 1, 1, 1, 17, 20),          # IRFFT to an odd length
]


def dft_model(shape, axis, inverse, onesided, length, opset, batch=None):
    """A model ``y = DFT(x)``; ``batch`` names a symbolic first dim."""
    inputs, inits = ["x", "", ""], []
    if length is not None:
        inits.append(numpy_helper.from_array(np.array(length, "int64"), "len"))
        inputs[1] = "len"
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20:
        inits.append(numpy_helper.from_array(np.array(axis, "int64"), "axis"))
        inputs[2] = "axis"
    else:
        attrs["axis"] = axis
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("DFT", inputs, ["y"], **attrs)
    dims = [batch or shape[0], *shape[1:]]
    graph = helper.make_graph([node], "dft",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def dft_reference(x, axis, inverse, onesided, length):
    """numpy's FFT with ONNX's conventions, as a [..., 2] (or [..., 1] for IRFFT) array."""
    axis %= x.ndim
    z = x[..., 0].astype(np.float64)
    if x.shape[-1] == 2:
        z = z + 1j * x[..., 1]
    if onesided and inverse:
        n = length if length is not None else 2 * (x.shape[axis] - 1)
        return np.fft.irfft(z, n=n, axis=axis)[..., None]
    n = length if length is not None else x.shape[axis]
    if onesided:
        y = np.fft.rfft(z, n=n, axis=axis)
    else:
        y = np.fft.ifft(z, n=n, axis=axis) if inverse else np.fft.fft(z, n=n, axis=axis)
    return np.stack([y.real, y.imag], -1)

"""ONNX audio front-end cases both importers' tests run: STFT (with a window made by a window
op, fed as an input, or none), the three window ops and MelWeightMatrix, each a small model
checked against onnx's reference implementation."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

# name -> (signal shape, frame_step, window: None / "hann" / "hamming" / "blackman" / "input",
#          frame_length or None, onesided)
STFT_CASES = {
    "hann_onesided": ((2, 64, 1), 8, "hann", None, 1),
    "hamming_full": ((1, 40, 1), 10, "hamming", 16, 0),
    "blackman_odd": ((2, 50, 1), 7, "blackman", 15, 1),
    "no_window_length": ((2, 32, 1), 4, None, 8, 1),
    "complex_input_window": ((1, 30, 2), 5, "input", None, 0),
}


def stft_model(case, batch=None):
    """``y = STFT(x, step, [window], [length])``: a named window comes from its window op
    (a constant subgraph), "input" makes the window a graph input."""
    shape, step, win, length, onesided = case
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array(step, "int64"), "step")]
    nodes, inputs = [], [vi("x", f, [batch or shape[0], *shape[1:]])]
    names = ["x", "step", "", ""]
    wlen = length or 16
    if win == "input":
        inputs.append(vi("w", f, [wlen]))
        names[2] = "w"
    elif win is not None:
        inits.append(numpy_helper.from_array(np.array(wlen, "int64"), "wlen"))
        op = {"hann": "HannWindow", "hamming": "HammingWindow", "blackman": "BlackmanWindow"}
        nodes.append(helper.make_node(op[win], ["wlen"], ["w"], periodic=int(win != "hamming")))
        names[2] = "w"
    if length is not None:
        inits.append(numpy_helper.from_array(np.array(length, "int64"), "len"))
        names[3] = "len"
    while names[-1] == "":
        names.pop()
    nodes.append(helper.make_node("STFT", names, ["y"], onesided=onesided))
    graph = helper.make_graph(nodes, "stft", inputs, [vi("y", f, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def stft_inputs(case, b=None, seed=0) -> dict:
    shape, _, win, length, _ = case
    rng = np.random.default_rng(seed)
    feeds = {"x": rng.standard_normal((b or shape[0], *shape[1:])).astype("float32")}
    if win == "input":
        feeds["w"] = rng.uniform(0, 1, length or 16).astype("float32")
    return feeds


# (op, size, periodic, output_datatype)
WINDOW_CASES = [
    ("HannWindow", 10, 1, 1), ("HannWindow", 9, 0, 1), ("HammingWindow", 10, 1, 1),
    ("HammingWindow", 7, 0, 11), ("BlackmanWindow", 12, 1, 1), ("BlackmanWindow", 5, 0, 1),
]


def window_model(op, size, periodic, dtype_code):
    """``y = x * OP(size)``: the window scales a run-time input, so the output is computed."""
    f = TensorProto.FLOAT if dtype_code == 1 else TensorProto.DOUBLE
    vi = helper.make_tensor_value_info
    init = numpy_helper.from_array(np.array(size, "int64"), "size")
    nodes = [helper.make_node(op, ["size"], ["w"], periodic=periodic,
                              output_datatype=dtype_code),
             helper.make_node("Mul", ["x", "w"], ["y"])]
    graph = helper.make_graph(nodes, "window", [vi("x", f, [2, size])], [vi("y", f, None)],
                              [init])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# (num_mel_bins, dft_length, sample_rate, lower_hz, upper_hz)
MEL_CASES = [(8, 16, 8192, 0.0, 4096.0), (20, 64, 16000, 20.0, 8000.0), (5, 32, 22050, 300.0,
                                                                          5000.0)]


def mel_model(case):
    """``y = STFT magnitudes-like input [frames, bins] @ MelWeightMatrix(...)``."""
    mel, n_fft, rate, lo, hi = case
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array(mel, "int64"), "mel"),
             numpy_helper.from_array(np.array(n_fft, "int64"), "n_fft"),
             numpy_helper.from_array(np.array(rate, "int64"), "rate"),
             numpy_helper.from_array(np.array(lo, "float32"), "lo"),
             numpy_helper.from_array(np.array(hi, "float32"), "hi")]
    nodes = [helper.make_node("MelWeightMatrix", ["mel", "n_fft", "rate", "lo", "hi"], ["m"]),
             helper.make_node("MatMul", ["x", "m"], ["y"])]
    graph = helper.make_graph(nodes, "mel", [vi("x", f, [3, n_fft // 2 + 1])],
                              [vi("y", f, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

"""onnxruntime as an exact reference for 8-bit integer products on every x86 host.

Without VNNI (an AVX2 CPU), onnxruntime's uint8 x int8 kernels multiply-add byte pairs into
int16 (``vpmaddubsw``), which saturates: ``255 * 127 * 2 = 64770`` becomes 32767, and a
MatMulInteger, QLinearConv, QGemm or a fused QDQ MatMul is off by thousands (ORT documents
``reduce_range`` for non-VNNI CPUs for this). Its uint8 x uint8 kernels widen to int16 first
and are exact. So where this host's onnxruntime saturates (``ort_saturates``, asked of ORT
itself), ``exact_weights`` rewrites a model's constant int8 weights as the same values in
uint8 with their zero points moved by 128 (``(w + 128) - (z + 128) = w - z``): the same model,
which ORT then computes exactly. Needs onnx and onnxruntime (imported when called)."""

from __future__ import annotations

import functools

import numpy as np

# (weight input, its zero point's input) of each op whose 8-bit weight ORT multiplies as such,
# and the input of the 8-bit activation it multiplies (None: quantized to uint8 inside the op,
# or, for a DequantizeLinear, paired as ORT's QDQ fusion chooses)
_WEIGHTS = {
    ("", "DequantizeLinear"): (((0, 2),), None),
    ("", "MatMulInteger"): (((1, 3),), 0),
    ("", "ConvInteger"): (((1, 3),), 0),
    ("", "QLinearConv"): (((3, 5),), 0),
    ("", "QLinearMatMul"): (((3, 5),), 0),
    ("com.microsoft", "QGemm"): (((3, 5),), 0),
    ("com.microsoft", "DynamicQuantizeMatMul"): (((1, 3),), None),
    ("com.microsoft", "MatMulIntegerToFloat"): (((1, 5),), 0),
    ("com.microsoft", "DynamicQuantizeLSTM"): (((1, 9), (2, 11)), None),
}
# the input holding the scale whose shape a missing zero point takes (default: the one before)
_SCALE_OF = {("", "DequantizeLinear"): 1, ("", "MatMulInteger"): None,
             ("", "ConvInteger"): None}


@functools.cache
def ort_saturates() -> bool:
    """Does this host's onnxruntime saturate uint8 x int8 products (``[255, 255] . [127,
    127]`` not 64770)? True on x86 CPUs without VNNI."""
    import onnx
    from onnx import TensorProto as P
    from onnx import helper

    b = onnx.numpy_helper.from_array(np.full((2, 1), 127, "int8"), "b")
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe",
                              [helper.make_tensor_value_info("a", P.UINT8, [1, 2])],
                              [helper.make_tensor_value_info("y", P.INT32, [1, 1])],
                              initializer=[b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    y = _session(model).run(None, {"a": np.full((1, 2), 255, "uint8")})[0]
    return int(y[0, 0]) != 255 * 127 * 2


def _session(model, threads: int = 0):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def _elem_types(model) -> dict:
    """ONNX element type of each value of ``model`` that its inputs, initializers or shape
    inference give."""
    import onnx

    try:
        graph = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # (an op without inference: what the graph itself says)
        graph = model.graph
    out = {i.name: i.data_type for i in graph.initializer}
    for v in [*graph.input, *graph.value_info, *graph.output]:
        out.setdefault(v.name, v.type.tensor_type.elem_type)
    return out


def _activation_type(node, act: int, types: dict) -> int | None:
    """The element type of ``node``'s 8-bit activation input ``act``: its own, or its zero
    point's (the input two on; MatMulIntegerToFloat's four) where inference does not know."""
    zp = act + (4 if node.op_type == "MatMulIntegerToFloat" else 2)
    return types.get(node.input[act]) or (types.get(node.input[zp])
                                          if zp < len(node.input) else None)


def exact_weights(model, feeds: dict) -> tuple:
    """(a copy of ``model``, ``feeds``) where every int8 weight multiplied by a uint8 activation
    (a constant, or a graph input only weights read) and its int8 zero point (0 where none is
    given) are uint8, shifted by 128: the same values, read by onnxruntime's exact uint8 x
    uint8 kernels."""
    from onnx import TensorProto, numpy_helper

    model = type(model).FromString(model.SerializeToString())
    graph, feeds = model.graph, dict(feeds)
    arrays = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    types = _elem_types(model)
    inputs = {i.name: i for i in graph.input if i.name not in arrays}
    added: dict[str, str] = {}

    def int8(name: str) -> bool:
        return types.get(name) == TensorProto.INT8

    def shifted(name: str) -> str:
        if name in inputs:  # (its feed shifted, the input retyped)
            if name not in added:
                feeds[name] = (np.asarray(feeds[name]).astype(np.int16) + 128).astype("uint8")
                inputs[name].type.tensor_type.elem_type = TensorProto.UINT8
                added[name] = name
        elif name not in added:
            added[name] = f"{name}__u8"
            graph.initializer.append(numpy_helper.from_array(
                (arrays[name].astype(np.int16) + 128).astype("uint8"), added[name]))
        return added[name]

    rewritten: list[tuple] = []
    for k, node in enumerate(graph.node):
        key = (node.domain if node.domain != "ai.onnx" else "", node.op_type)
        pairs, act = _WEIGHTS.get(key, ((), None))
        if act is not None and _activation_type(node, act, types) != TensorProto.UINT8:
            continue  # (int8 activations: ORT's int8 x int8 kernels are exact)
        ins = list(node.input) + [""] * max(0, max((z for _, z in pairs), default=0) + 1
                                            - len(node.input))
        for wi, zi in pairs:
            w, z = ins[wi], ins[zi]
            movable = w in arrays or (w in inputs and w in feeds)
            if not (int8(w) and movable and (not z or (int8(z) and z in arrays))):
                continue
            rewritten.append((w, node))
            ins[wi] = shifted(w)
            if z:
                ins[zi] = shifted(z)
            else:  # (no zero point: 0, as uint8 128, shaped as the scale where it has one)
                si = _SCALE_OF.get(key, zi - 1)
                shape = np.shape(arrays.get(ins[si], 0)) if si is not None else ()
                ins[zi] = f"{w}__u8_zp{k}"
                graph.initializer.append(numpy_helper.from_array(
                    np.full(shape, 128, "uint8"), ins[zi]))
        if ins[:len(node.input)] != list(node.input) or len(ins) > len(node.input) and any(
                ins[len(node.input):]):
            del node.input[:]
            node.input.extend(ins)
    for name in [n for n in inputs if n in added]:  # (a retyped input must be read as weights
        uses = sum(1 for n in graph.node for i in n.input if i == name)  # only)
        if uses != sum(1 for w, _ in rewritten if w == name):
            raise ValueError(f"int8 input {name!r} is read as more than a weight")
    return model, feeds


def ort_run(model, feeds, threads: int = 0) -> list:
    """onnxruntime's outputs of ``model`` on ``feeds`` (``threads`` intra-op threads, 0: its
    default), exact in the 8-bit products on every host (``exact_weights`` where
    ``ort_saturates``)."""
    if ort_saturates():
        model, feeds = exact_weights(model, feeds)
    return _session(model, threads).run(None, feeds)

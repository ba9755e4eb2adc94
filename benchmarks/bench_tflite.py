"""TFLite models beside ONNX Runtime: a fully-quantized (uint8 activations, int8 per-channel
weights) MobileNetV2-like model written with the flatbuffer builder (``tflite_qtwin``), and the
same network in float32 (its weights dequantized), each imported with
relay.frontend.from_tflite (NHWC, as the file is; no ConvertLayout) and built at opt_level 3.

ORT runs the same computation from an ONNX model written here with ``onnx.helper`` from the
same builder: QLinearConv / com.microsoft QLinearAdd, QLinearGlobalAveragePool, QGemm (the
QOperator format) for the quantized model, Conv / Clip / Add / GlobalAveragePool / Gemm for
the float one (NCHW). minitvm also imports that ONNX file (the ``via ONNX`` column), which
says what the TFLite route costs over the ONNX one for the same network.

A BERT-like transformer encoder (``tflite_qtwin.transformer_encoder``: FULLY_CONNECTED with
keep_num_dims, BATCH_MATMUL of two activations, SOFTMAX, GELU, LayerNorm decomposed into
MEAN / SQUARED_DIFFERENCE / RSQRT / MUL) fully quantized to int8 and in float32, beside ORT
running ``transformer_to_onnx``'s ONNX of it (QDQ when quantized).

LiteRT (``ai_edge_litert``, where installed) runs the same .tflite file: its builtin kernels
(``LiteRT ms``, the reference minitvm's quantized import follows value for value: ``off
LiteRT`` counts the outputs that differ) and with its default XNNPACK delegate (``XNNPACK
ms``).

One thread each, thread CPU time, rounds interleaved (benchmarks/interleave.py).

    python benchmarks/bench_tflite.py [--size 112] [--mult 2] [--width 16] [--full]
        [--rounds 5] [--reps 20] [--models mobilenet,transformer] [--tokens 128] [--dim 256]
        [--layers 2] [--kernels]

MobileNetV2 1.0 (TFLite's mobilenet_v2_1.0_224_quant's layers): ``--size 224 --mult 1 --width 32
--full``; its first five blocks only without ``--full``.

``--kernels``: for the MobileNetV2-like models, also each conv kernel's time (thread CPU time,
median of 9 calls in graph order; ``bench_layers_ort.kernel_times``) beside ONNX Runtime's
QLinearConv node for the same layer (its per-node profile, wall clock; a residual's QLinearAdd,
which minitvm fuses into the projection conv's kernel, added to the conv before it), the
layer's multiply-adds and both rates: which layers lose to ORT.

``--models detection``: the SSD head alone (TFLite_Detection_PostProcess at ssd_mobilenet's size:
1917 anchors, 90 classes and a background column, 10 detections, score threshold 1e-8, IoU
0.6), fast and regular NMS (100 per class), minitvm's time per call (ORT has no such operator).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "relay", "frontend"))


def _array(b, t) -> np.ndarray | None:
    name, shape, dtype, buf = b.tensors[t]
    if not buf:
        return None
    return np.frombuffer(b.buffers[buf], dtype=dtype).reshape(shape)


def _dequantized(b, t) -> np.ndarray:
    scale, zp, dim = b.quant[t]
    v = _array(b, t).astype("float64")
    shape = [1] * v.ndim
    if scale.size > 1:
        shape[dim] = -1
    return ((v - zp.reshape(shape)) * scale.astype("float64").reshape(shape)).astype("float32")


def float_copy(b):
    """The same network in float32: quantized constants dequantized, activations float."""
    from minitvm.relay.frontend.tflite.builder import ModelBuilder

    f = ModelBuilder()
    for t, (name, shape, _, buf) in enumerate(b.tensors):
        data = _dequantized(b, t) if buf and t in b.quant else _array(b, t) if buf else None
        f.tensor(name, shape, "float32" if data is None else str(data.dtype), data)
    f.inputs, f.outputs, f.opcodes, f.ops = list(b.inputs), list(b.outputs), b.opcodes, b.ops
    return f


def _same_pads(h, w, k, s):
    out = []
    for n in (h, w):
        o = -(-n // s)
        total = max((o - 1) * s + k - n, 0)
        out.append((total // 2, total - total // 2))
    return [out[0][0], out[1][0], out[0][1], out[1][1]]


def to_onnx(b, quantized: bool):
    """The builder's MobileNet-like network as an ONNX model (NCHW), ORT's own formats."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, seen = [], [], set()
    names = {t: b.tensors[t][0] for t in range(len(b.tensors))}

    def const(name, arr):
        if name not in seen:  # (an activation's parameters: once, however many readers)
            seen.add(name)
            inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def qp(t):  # scale and zero point initializers of an activation
        s, z, _ = b.quant[t]
        dt = b.tensors[t][2]
        return [const(f"{names[t]}_s", np.float32(s[0])),
                const(f"{names[t]}_z", np.array(z[0], dt))]

    for code, ins, outs, _, fields, _custom in b.ops:
        op = b.opcodes[code]
        x, y = ins[0], outs[0]
        if op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            w, bias = _array(b, ins[1]), _array(b, ins[2])
            dw = op == "DEPTHWISE_CONV_2D"
            w_oihw = w.transpose(3, 0, 1, 2) if dw else w.transpose(0, 3, 1, 2)
            _, h, wd, c = b.tensors[x][1]
            k, s = w_oihw.shape[2], fields["StrideH"]
            attrs = {"pads": _same_pads(h, wd, k, s) if fields["Padding"] == 0 else [0] * 4,
                     "strides": [s, s], "group": c if dw else 1,
                     "kernel_shape": [k, k]}
            if quantized:
                ws, _, _ = b.quant[ins[1]]
                wn = const(f"{names[ins[1]]}_q", w_oihw)
                nodes.append(helper.make_node(
                    "QLinearConv", [names[x], *qp(x), wn,
                                    const(f"{wn}_s", ws.astype("float32")),
                                    const(f"{wn}_z", np.zeros(ws.size, "int8")), *qp(y),
                                    const(f"{names[ins[2]]}_b", bias)], [names[y]], **attrs))
                continue  # (the output's range is the fused activation's: it saturates)
            conv = names[y] + "_conv"
            nodes.append(helper.make_node("Conv", [names[x], const(f"{names[ins[1]]}_w", w_oihw),
                                                   const(f"{names[ins[2]]}_b", bias)],
                                          [conv], **attrs))
            act = fields.get("FusedActivationFunction", 0)
            if act == 3:
                nodes.append(helper.make_node("Clip", [conv, const(f"{conv}_lo", np.float32(0)),
                                                       const(f"{conv}_hi", np.float32(6))],
                                              [names[y]]))
            elif act == 1:
                nodes.append(helper.make_node("Relu", [conv], [names[y]]))
            else:
                nodes.append(helper.make_node("Identity", [conv], [names[y]]))
        elif op == "ADD":
            if quantized:
                nodes.append(helper.make_node("QLinearAdd", [names[x], *qp(x), names[ins[1]],
                                                             *qp(ins[1]), *qp(y)], [names[y]],
                                              domain="com.microsoft"))
            else:
                nodes.append(helper.make_node("Add", [names[x], names[ins[1]]], [names[y]]))
        elif op == "AVERAGE_POOL_2D":  # (global, in these models)
            if quantized:
                nodes.append(helper.make_node("QLinearGlobalAveragePool",
                                              [names[x], *qp(x), *qp(y)], [names[y]],
                                              domain="com.microsoft", channels_last=0))
            else:
                nodes.append(helper.make_node("GlobalAveragePool", [names[x]], [names[y]]))
        elif op == "RESHAPE":
            shape = const(f"{names[y]}_shape", np.array(b.tensors[y][1], "int64"))
            nodes.append(helper.make_node("Reshape", [names[x], shape], [names[y]]))
        elif op == "FULLY_CONNECTED":
            w, bias = _array(b, ins[1]), _array(b, ins[2])
            wn, bn = const(f"{names[ins[1]]}_w", w), const(f"{names[ins[2]]}_b", bias)
            if quantized:
                ws, _, _ = b.quant[ins[1]]
                nodes.append(helper.make_node(
                    "QGemm", [names[x], *qp(x), wn, const(f"{wn}_s", np.float32(ws[0])),
                              const(f"{wn}_z", np.array(0, "int8")), bn, *qp(y)],
                    [names[y]], domain="com.microsoft", transB=1))
            else:
                nodes.append(helper.make_node("Gemm", [names[x], wn, bn], [names[y]], transB=1))
        elif op == "SOFTMAX":
            if quantized:
                d, s = names[y] + "_f", names[y] + "_sm"
                nodes += [helper.make_node("DequantizeLinear", [names[x], *qp(x)], [d]),
                          helper.make_node("Softmax", [d], [s], axis=-1),
                          helper.make_node("QuantizeLinear", [s, *qp(y)], [names[y]])]
            else:
                nodes.append(helper.make_node("Softmax", [names[x]], [names[y]], axis=-1))
        else:
            raise ValueError(f"to_onnx: {op} is not written")
    elem = TensorProto.FLOAT if not quantized else \
        TensorProto.INT8 if b.tensors[b.inputs[0]][2] == "int8" else TensorProto.UINT8

    def nchw(shape):
        return [shape[0], shape[3], shape[1], shape[2]] if len(shape) == 4 else list(shape)

    inputs = [helper.make_tensor_value_info(names[t], elem, nchw(b.tensors[t][1]))
              for t in b.inputs]
    outputs = [helper.make_tensor_value_info(names[t], elem, list(b.tensors[t][1]))
               for t in b.outputs]
    graph = helper.make_graph(nodes, "mobilenet_v2_like", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


def transformer_to_onnx(b, quantized: bool):
    """The builder's transformer encoder as ONNX: MatMul / Add / Reshape / Transpose / Softmax /
    ReduceMean / Sqrt / Reciprocal / Erf in float32; quantized, the QDQ form of the same graph
    (each op between DequantizeLinear of its 8-bit inputs and QuantizeLinear of its output,
    int8 weights and int32 biases behind DequantizeLinear), which ORT fuses into its integer
    kernels."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, seen, dequantized = [], [], set(), {}
    names = {t: b.tensors[t][0] for t in range(len(b.tensors))}
    acts = set(b.inputs) | {o for op in b.ops for o in op[2]}

    def const(name, arr):
        if name not in seen:
            seen.add(name)
            inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(op, ins, outs=None, **attrs):
        out = outs or [f"n{len(nodes)}_{op}"]
        nodes.append(helper.make_node(op, ins, out, **attrs))
        return out[0]

    def qparams(t):
        s, z, _ = b.quant[t]
        dt = b.tensors[t][2]
        return [const(f"{names[t]}_s", s.astype("float32") if s.size > 1 else np.float32(s[0])),
                const(f"{names[t]}_z", z.astype(dt) if z.size > 1 else np.array(z[0], dt))]

    def value(t, transpose=False):
        """A float view of tensor ``t``: an activation (dequantized when quantized) or a
        constant (weights transposed for MatMul when asked)."""
        if t in acts:
            if quantized and t in b.quant:
                if t not in dequantized:  # (one DequantizeLinear however many readers)
                    dequantized[t] = node("DequantizeLinear", [names[t], *qparams(t)])
                return dequantized[t]
            return names[t]
        arr = _array(b, t)
        if arr.dtype.kind in "iu" and t in b.quant and not quantized:
            arr = _dequantized(b, t)
        if transpose:
            arr = np.ascontiguousarray(arr.T)
        if quantized and t in b.quant:
            s, z, _ = b.quant[t]
            q = const(names[t] + ("_qT" if transpose else "_q"), arr)
            return node("DequantizeLinear", [q, const(f"{q}_s", np.float32(s[0])),
                                             const(f"{q}_z", np.array(z[0], arr.dtype))])
        return const(names[t] + ("_T" if transpose else "_c"), arr.astype("float32"))

    for code, ins, outs, _, fields, _custom in b.ops:
        op, y = b.opcodes[code], outs[0]
        a = value(ins[0]) if op != "FULLY_CONNECTED" else None
        if op == "FULLY_CONNECTED":
            r = node("Add", [node("MatMul", [value(ins[0]), value(ins[1], transpose=True)]),
                             value(ins[2])])
        elif op == "BATCH_MATMUL":
            rhs = value(ins[1])
            if fields.get("AdjY"):
                nd = len(b.tensors[ins[1]][1])
                rhs = node("Transpose", [rhs], perm=[*range(nd - 2), nd - 1, nd - 2])
            r = node("MatMul", [a, rhs])
        elif op == "RESHAPE":
            r = node("Reshape", [a, const(f"{names[y]}_shape", np.array(b.tensors[y][1],
                                                                          "int64"))])
        elif op == "TRANSPOSE":
            r = node("Transpose", [a], perm=[int(v) for v in _array(b, ins[1])])
        elif op == "SOFTMAX":
            beta = const(f"{names[y]}_beta", np.float32(fields.get("Beta", 1.0)))
            r = node("Softmax", [node("Mul", [a, beta])], axis=-1)
        elif op in ("ADD", "SUB", "MUL"):
            r = node({"ADD": "Add", "SUB": "Sub", "MUL": "Mul"}[op], [a, value(ins[1])])
        elif op == "SQUARED_DIFFERENCE":
            d = node("Sub", [a, value(ins[1])])
            r = node("Mul", [d, d])
        elif op == "MEAN":
            r = node("ReduceMean", [a], axes=[int(v) for v in _array(b, ins[1])], keepdims=1)
        elif op == "RSQRT":
            r = node("Reciprocal", [node("Sqrt", [a])])
        elif op == "GELU":
            e = node("Erf", [node("Div", [a, const("sqrt2", np.float32(np.sqrt(2)))])])
            r = node("Mul", [node("Mul", [a, node("Add", [e, const("one", np.float32(1))])]),
                             const("half", np.float32(0.5))])
        else:
            raise ValueError(f"transformer_to_onnx: {op} is not written")
        if quantized:
            node("QuantizeLinear", [r, *qparams(y)], [names[y]])
        else:
            node("Identity", [r], [names[y]])
    elem = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
            "float32": TensorProto.FLOAT}
    io = [[helper.make_tensor_value_info(names[t], elem[b.tensors[t][2]], list(b.tensors[t][1]))
           for t in ts] for ts in (b.inputs, b.outputs)]
    graph = helper.make_graph(nodes, "transformer_encoder", *io, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def detection_head(regular: bool, anchors: int = 1917, classes: int = 90):
    """(model bytes, box encodings, class scores) of an SSD head on random data."""
    from flatbuffers import flexbuffers

    from minitvm.relay.frontend.tflite.builder import ModelBuilder

    rng = np.random.default_rng(0)
    anchor = np.concatenate([rng.uniform(0.05, 0.95, (anchors, 2)),
                             rng.uniform(0.05, 0.5, (anchors, 2))], 1).astype("float32")
    enc = rng.normal(0.0, 1.0, (1, anchors, 4)).astype("float32")
    cls = rng.uniform(0.0, 1.0, (1, anchors, classes + 1)).astype("float32")
    opts = {"max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 100,
            "nms_score_threshold": 1e-8, "nms_iou_threshold": 0.6, "num_classes": classes,
            "use_regular_nms": regular, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0,
            "w_scale": 5.0}
    b = ModelBuilder()
    e, c = b.input("enc", enc.shape), b.input("cls", cls.shape)
    a = b.constant("anchors", anchor)
    outs = [b.tensor("boxes", (1, 10, 4)), b.tensor("classes", (1, 10)),
            b.tensor("scores", (1, 10)), b.tensor("count", (1,))]
    b.operator("CUSTOM:TFLite_Detection_PostProcess", [e, c, a], outs,
               custom_options=bytes(flexbuffers.Dumps(opts)))
    for o in outs:
        b.output(o)
    return b.finish(), enc, cls


def packed_macs(gm) -> list[int]:
    """Per step of ``gm``: the multiply-adds of its conv where its weight is packed for the
    VNNI kernels (``[O/16][C/4][KH][KW][16][4]``: output channels rounded up to a vector,
    input channels to a word) times its output pixels, else 0 (stem, depthwise)."""
    entries = gm._plan["entries"]
    out = []
    for _, kern, ins, outs in gm._plan["steps"]:
        shapes = [tuple(entries[e][2]) for e in ins] + [tuple(c.shape) for c in kern.consts]
        packed = [sh for sh in shapes if len(sh) == 6]
        pixels = int(np.prod(entries[outs[0]][2][2:]))
        out.append(int(np.prod(packed[0])) * pixels if packed else 0)
    return out


def print_kernels(label: str, gm, proto, x_nchw: np.ndarray) -> None:
    """Each conv kernel of ``gm`` in graph order beside ORT's QLinearConv node of the same
    layer (the n-th conv with the n-th; a QLinearAdd added to the conv before it)."""
    from bench_layers_ort import kernel_times, ort_node_times

    ours = [(*r, m) for r, m in zip(kernel_times(gm), packed_macs(gm))
            if m or "conv2d" in r[0]]  # (a long fused name is cut: the conv in it unnamed)
    theirs: list[list] = []
    for _, op, t, _, _, _ in ort_node_times(proto.SerializeToString(), {"input": x_nchw}):
        if op == "QLinearConv":
            theirs.append([t, 0.0])
        elif op == "QLinearAdd" and theirs:
            theirs[-1][1] += t
    print(f"{label}: conv kernels (minitvm, graph order) beside ORT's nodes")
    print(f"{'kernel':<48}{'data -> output':>32}{'ours us':>9}{'ORT us':>8}{'(+add)':>7}"
          f"{'ours/ORT':>9}{'GMAC/s':>8}")
    print("  (GMAC/s: minitvm's rate on the VNNI convs' packed weights)")
    for k, (name, desc, t, _, _, _, macs) in enumerate(ours):
        ort_t, add = theirs[k] if k < len(theirs) else (None, 0.0)
        rate = f"{macs / t / 1e9:8.0f}" if macs and t else f"{'-':>8}"
        if ort_t is None:
            print(f"{name[:48]:<48}{desc:>32}{t * 1e6:9.0f}{'-':>8}{'':>7}{'-':>9}{rate}")
            continue
        total = ort_t + add
        print(f"{name[:48]:<48}{desc:>32}{t * 1e6:9.0f}{ort_t * 1e6:8.0f}"
              f"{f'+{add * 1e6:.0f}' if add else '':>7}{t / total:9.2f}{rate}")
    print(f"{'sum':<80}{sum(r[2] for r in ours) * 1e6:9.0f}"
          f"{sum(a + b for a, b in theirs) * 1e6:8.0f}")


def litert_runner(blob: bytes, x: np.ndarray, delegates: bool):
    """A LiteRT interpreter of ``blob`` at one thread with input ``x`` set: (invoke, output),
    or None without ``ai_edge_litert``. ``delegates``: its default XNNPACK delegate, else the
    builtin kernels alone."""
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError:
        return None
    kind = litert.OpResolverType.AUTO if delegates else \
        litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = litert.Interpreter(model_content=blob, num_threads=1,
                            experimental_op_resolver_type=kind)
    try:
        it.allocate_tensors()
    except RuntimeError:  # (uint8 activations with int8 per-channel weights: no kernel)
        return None
    it.set_tensor(it.get_input_details()[0]["index"], x)
    out = it.get_output_details()[0]["index"]
    return it.invoke, lambda: it.get_tensor(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--mult", type=int, default=2, help="widens every block")
    ap.add_argument("--width", type=int, default=16,
                    help="the stem's channels before --mult (32 with --mult 1: MobileNetV2 1.0)")
    ap.add_argument("--full", action="store_true",
                    help="all 17 inverted residual blocks and the 1280-channel head, not 5")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20, help="calls per round (median taken)")
    ap.add_argument("--models", default="mobilenet,transformer",
                    help="comma-separated: mobilenet, transformer, detection")
    ap.add_argument("--tokens", type=int, default=128, help="transformer sequence length")
    ap.add_argument("--dim", type=int, default=256, help="transformer width (4 heads)")
    ap.add_argument("--layers", type=int, default=2, help="transformer layers")
    ap.add_argument("--kernels", action="store_true",
                    help="per-conv-kernel times beside ORT's nodes (MobileNetV2-like models)")
    args = ap.parse_args(argv)

    import onnxruntime as ort
    import tflite_qtwin
    from interleave import settled_rounds

    import minitvm as tvm
    from minitvm import relay
    from minitvm.contrib import graph_executor
    from minitvm.runtime import threadpool

    threadpool.set_num_threads(1)
    kinds = args.models.split(",")
    models = {}  # label: (builder, quantized, input, ONNX writer, NHWC input)
    if "mobilenet" in kinds:
        twin, _ = tflite_qtwin.mobilenet_v2("uint8", size=args.size, mult=args.mult,
                                            width=args.width, full=args.full)
        xq = twin.inputs()["input"]
        models["mobilenet uint8"] = (twin.b, True, xq, to_onnx, True)
        twin8, _ = tflite_qtwin.mobilenet_v2("int8", size=args.size, mult=args.mult,
                                             width=args.width, full=args.full)
        models["mobilenet int8"] = (twin8.b, True, twin8.inputs()["input"], to_onnx, True)
        models["mobilenet f32"] = (float_copy(twin.b), False, ((xq.astype("float32") - 128)
                                                                / 128).astype("float32"),
                                   to_onnx, True)
    if "transformer" in kinds:
        twin, _ = tflite_qtwin.transformer_encoder(
            "int8", tokens=args.tokens, dim=args.dim, heads=4, ffn=4 * args.dim,
            layers=args.layers)
        xq = twin.inputs()["input"]
        models["transformer int8"] = (twin.b, True, xq, transformer_to_onnx, False)
        models["transformer f32"] = (float_copy(twin.b), False,
                                     (xq.astype("float32") * 0.05).astype("float32"),
                                     transformer_to_onnx, False)

    def build(mod, params):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        return graph_executor.GraphModule(lib["default"](tvm.cpu()))

    if "detection" in kinds:
        heads = {}
        for regular in (False, True):
            blob, enc, cls = detection_head(regular)
            g = build(*relay.frontend.from_tflite(blob))
            g.set_input("enc", enc)
            g.set_input("cls", cls)
            heads["regular NMS" if regular else "fast NMS"] = g.run
        times = settled_rounds(heads, args.rounds, args.reps, clock=time.thread_time)
        print("SSD detection head (1917 anchors x 90 classes, 10 detections), one thread:")
        for label, ts in times.items():
            print(f"  {label:<12}{statistics.median(ts) * 1e3:8.3f} ms")
    rows = []
    for label, (b, quantized, x, writer, nhwc) in models.items():
        blob = b.finish()
        gm = build(*relay.frontend.from_tflite(blob))
        gm.set_input("input", x)
        proto = writer(b, quantized)
        gx = build(*relay.frontend.from_onnx(proto))
        x_nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nhwc else x
        gx.set_input("input", x_nchw)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(proto.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        gm.run()
        gx.run()
        ref = sess.run(None, {"input": x_nchw})[0]
        err = float(np.abs(gm.get_output(0).numpy().astype("float64") - ref).max())
        if args.kernels and label.startswith("mobilenet") and quantized:
            print_kernels(label, gm, proto, x_nchw)
        impls = {"tflite": gm.run, "onnx": gx.run,
                 "ort": lambda s=sess, x=x_nchw: s.run(None, {"input": x})}
        off = None
        for key, delegates in (("litert", False), ("xnnpack", True)):
            runner = litert_runner(blob, x, delegates)
            if runner is None:
                continue
            impls[key] = runner[0]
            if key == "litert":
                runner[0]()
                off = int((gm.get_output(0).numpy() != runner[1]()).sum())
        times = settled_rounds(impls, args.rounds, args.reps, clock=time.thread_time)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        rows.append((label, med["tflite"], med["onnx"], med["ort"], med.get("litert"),
                     med.get("xnnpack"), err, off if quantized else None))
        print(f"{label}: done", file=sys.stderr, flush=True)
    if not rows:
        return 0
    blocks = "17 blocks" if args.full else "5 blocks"
    print(f"MobileNetV2-like ({blocks}), {args.size}x{args.size}, stem {args.width} x{args.mult} "
          f"channels; transformer encoder, {args.tokens} tokens x {args.dim}, 4 heads, "
          f"{args.layers} layers; one thread; thread CPU time; median of interleaved rounds")
    print(f"{'model':<18}{'TFLite ms':>10}{'via ONNX':>10}{'ORT ms':>9}{'LiteRT ms':>10}"
          f"{'XNNPACK ms':>11}{'TFLite/ORT':>11}{'/LiteRT':>8}{'off LiteRT':>11}"
          "  max |diff| from ORT (outputs; 8-bit steps when quantized)")

    def ms(v):
        return "-" if v is None else f"{v:.3f}"

    for label, a, o, r, lt, xn, err, off in rows:
        ratio = "-" if lt is None else f"{a / lt:.2f}"
        print(f"{label:<18}{a:>10.3f}{o:>10.3f}{r:>9.3f}{ms(lt):>10}{ms(xn):>11}{a / r:>11.2f}"
              f"{ratio:>8}{'-' if off is None else off:>11}  {err:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

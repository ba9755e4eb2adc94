"""TFLite models imported once for any batch: ``shape_dict={"x": (relay.Any(), ...)}`` (or -1),
``relay.vm.compile``d once and run at batch 1, 2 and 5 against LiteRT (its interpreter resized
to each batch; where the model's RESHAPE writes the stored batch 1, which LiteRT cannot resize,
against LiteRT at batch 1 on each sample). Float outputs: allclose; quantized: within one
step, as the other quantized tests accept. A model with a shape_signature but no shape_dict,
and the converters' clear errors where the batch cannot be carried."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

import tflite_qtwin  # noqa: E402
from tflite_qtwin import QTwin  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402
from minitvm.runtime import vm as runtime_vm  # noqa: E402

BATCHES = (1, 2, 5)


def _litert():
    return pytest.importorskip("ai_edge_litert.interpreter",
                               reason="the reference needs ai_edge_litert")


def litert_run(blob: bytes, feeds: dict, resize: bool = True) -> list[np.ndarray]:
    """LiteRT's builtin kernels (no delegate) on ``feeds``, the inputs resized to their batch
    (``resize``), else each sample at the stored batch 1, the outputs stacked."""
    litert = _litert()

    def once(feed):
        it = litert.Interpreter(
            model_content=blob, num_threads=1,
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        for d in it.get_input_details():
            it.resize_tensor_input(d["index"], feed[d["name"]].shape)
        it.allocate_tensors()
        for d in it.get_input_details():
            it.set_tensor(d["index"], feed[d["name"]])
        it.invoke()
        return [it.get_tensor(d["index"]) for d in it.get_output_details()]

    if resize:
        return once(feeds)
    batch = next(iter(feeds.values())).shape[0]
    runs = [once({k: v[i:i + 1] for k, v in feeds.items()}) for i in range(batch)]
    return [np.concatenate(outs, 0) for outs in zip(*runs, strict=True)]


def build_once(blob: bytes, shapes: dict):
    """from_tflite with a dynamic batch, compiled once for the Relay VM: (mod, vm)."""
    mod, params = relay.frontend.from_tflite(blob, shape_dict=shapes)
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm", params=params)
    return mod, runtime_vm.VirtualMachine(exe, tvm.cpu())


def vm_run(mod, vm, feeds: dict) -> list[np.ndarray]:
    out = vm.invoke("main", *[tvm.nd.array(feeds[p.name_hint]) for p in mod["main"].params])
    if hasattr(out, "numpy"):
        return [out.numpy()]
    return [out[i].numpy() for i in range(len(out))]  # (a tuple: the VM's ADT)


def batched(sample: dict, batch: int, seed: int = 0) -> dict:
    """``batch`` samples: the twin's input, then random ones of its dtype and range."""
    rng = np.random.default_rng(seed + batch)
    out = {}
    for k, v in sample.items():
        if v.dtype.kind == "f":
            more = rng.standard_normal((batch - 1,) + v.shape[1:]).astype(v.dtype)
        else:
            info = np.iinfo(v.dtype)
            more = rng.integers(info.min, info.max + 1, (batch - 1,) + v.shape[1:]).astype(
                v.dtype)
        out[k] = np.concatenate([v, more], 0)
    return out


def check_batches(blob, sample: dict, resize: bool = True, steps: int | None = None,
                  rtol: float = 1e-4, atol: float = 1e-5):
    """Build once with every input's batch ``relay.Any()``; at each batch compare with LiteRT
    (quantized outputs: at most ``steps`` apart, float ones allclose). Returns the module and
    the largest quantized difference seen."""
    shapes = {k: (relay.Any(),) + v.shape[1:] for k, v in sample.items()}
    mod, vm = build_once(blob, shapes)
    worst = 0
    for b in BATCHES:
        feeds = batched(sample, b)
        refs = litert_run(blob, feeds, resize)
        outs = vm_run(mod, vm, feeds)
        assert len(outs) == len(refs)
        for out, ref in zip(outs, refs, strict=True):
            assert out.shape == ref.shape and out.shape[0] in (b, 1), (out.shape, ref.shape)
            assert out.dtype == ref.dtype
            if ref.dtype.kind == "f":
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
            else:
                diff = int(np.abs(out.astype("int64") - ref.astype("int64")).max())
                worst = max(worst, diff)
                assert diff <= (steps if steps is not None else 1), f"batch {b}: {diff} steps"
    return mod, worst


def _sig(t: QTwin | ModelBuilder, shape):
    """Mark the (first) input's batch -1 in its shape_signature, as the converter writes a
    dynamic batch."""
    b = t.b if isinstance(t, QTwin) else t
    b.signatures[b.inputs[0]] = (-1,) + tuple(shape[1:])


# ---------------------------------------------------------------------------- whole models
@pytest.mark.parametrize("dtype", ["int8", "int16"])  # (LiteRT has no uint8 x int8 conv)
@pytest.mark.parametrize("lead", [-1, 1])
def test_quantized_mobilenet_v2_any_batch(dtype, lead):
    """The head's RESHAPE writes -1 (LiteRT resized) or the stored batch 1 (carried through;
    LiteRT per sample)."""
    t, _ = tflite_qtwin.mobilenet_v2(dtype, size=16, width=8, lead=lead)
    _sig(t, (1, 16, 16, 3))
    mod, _ = check_batches(t.b.finish(), t.inputs(), resize=lead == -1)
    assert str(mod["main"].params[0].type_annotation.shape[0]) == "?"
    assert [str(f.shape[0]) for f in mod["main"].ret_type.fields] == ["?", "?"]


@pytest.mark.parametrize("dtype,lead", [("int8", -1), ("int8", 1)])  # (LiteRT's int16
def test_quantized_transformer_encoder_any_batch(dtype, lead):  # SOFTMAX wants another scale)
    """RESHAPE into heads, 4-D TRANSPOSE, BATCH_MATMUL of two activations over the batch,
    FULLY_CONNECTED keep_num_dims on a 3-D input with a dynamic batch."""
    t, _ = tflite_qtwin.transformer_encoder(dtype, tokens=8, dim=16, heads=2, ffn=32, layers=1,
                                            lead=lead)
    _sig(t, (1, 8, 16))
    check_batches(t.b.finish(), t.inputs(), resize=lead == -1)


def test_float_mobilenet_v2_any_batch():
    pytest.importorskip("torch", reason="tflite_twin computes its reference with torch")
    import tflite_twin

    t, (blob, _) = tflite_twin.mobilenet_v2()
    check_batches(blob, t.inputs())


def test_float_attention_any_batch():
    """FULLY_CONNECTED keep_num_dims, RESHAPE with -1, 4-D TRANSPOSE and BATCH_MATMUL, SOFTMAX,
    the LayerNorm of MEAN / RSQRT, on a (batch, tokens, hidden) input."""
    pytest.importorskip("torch", reason="tflite_twin computes its reference with torch")
    import tflite_twin

    t = tflite_twin.Twin(5)
    seq, hidden, heads = 6, 16, 2
    d = hidden // heads
    x = t.input("x", (1, seq, hidden))

    def heads_of(v):
        return t.transpose(t.reshape(v, (-1, seq, heads, d)), (0, 2, 1, 3))

    q, k, v = (heads_of(t.fully_connected(x, hidden, keep_dims=True)) for _ in range(3))
    p = t.softmax(t.binary("MUL", t.batch_matmul(q, k, adj_y=True),
                           t.const(np.array([1 / np.sqrt(d)], "float32"))))
    a = t.reshape(t.transpose(t.batch_matmul(p, v), (0, 2, 1, 3)), (-1, seq, hidden))
    y = tflite_twin._layer_norm(t, t.binary("ADD", x, t.fully_connected(a, hidden,
                                                                       keep_dims=True)), hidden)
    blob, _ = t.finish([y])
    check_batches(blob, t.inputs())


# ---------------------------------------------------------------------------- common ops
def _float_ops_model(lead: int = -1):
    """Float ops, shapes at batch 1; batch -1 in the input's signature; ``lead``: the batch of
    the head's RESHAPE target (-1, or the stored 1: carried through)."""
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    x = b.input("x", (1, 8, 8, 4), signature=(-1, 8, 8, 4))

    def const(a):
        return b.constant(f"c{len(b.tensors)}", np.asarray(a))

    def op(name, ins, shape, options=None, **fields):
        y = b.tensor(f"t{len(b.tensors)}", shape)
        b.operator(name, ins, [y], options, **fields)
        return y

    conv = dict(DilationHFactor=1, DilationWFactor=1)
    c = op("CONV_2D", [x, const(rng.standard_normal((6, 3, 3, 4)).astype("float32")),
                       const(rng.standard_normal(6).astype("float32"))], (1, 8, 8, 6),
           "Conv2DOptions", Padding=0, StrideH=1, StrideW=1, FusedActivationFunction=1, **conv)
    dw = op("DEPTHWISE_CONV_2D", [c, const(rng.standard_normal((1, 3, 3, 6)).astype("float32")),
                                  const(np.zeros(6, "float32"))], (1, 4, 4, 6),
            "DepthwiseConv2DOptions", Padding=0, StrideH=2, StrideW=2, DepthMultiplier=1,
            FusedActivationFunction=3, **conv)
    p = op("PAD", [dw, const(np.array([[0, 0], [1, 1], [1, 1], [0, 0]], "int32"))],
           (1, 6, 6, 6))
    pool = dict(Padding=1, StrideH=2, StrideW=2, FilterHeight=2, FilterWidth=2,
                FusedActivationFunction=0)
    mp = op("MAX_POOL_2D", [p], (1, 3, 3, 6), "Pool2DOptions", **pool)
    ap = op("AVERAGE_POOL_2D", [p], (1, 3, 3, 6), "Pool2DOptions", **pool)
    cat = op("CONCATENATION", [mp, ap], (1, 3, 3, 12), "ConcatenationOptions", Axis=3,
             FusedActivationFunction=0)
    # the batch axis whole by its masks, rows 1:3, every other channel
    sl = op("STRIDED_SLICE", [cat, const(np.array([0, 1, 0, 0], "int32")),
                              const(np.array([0, 3, 3, 12], "int32")),
                              const(np.array([1, 1, 1, 2], "int32"))], (1, 2, 3, 6),
            "StridedSliceOptions", BeginMask=1, EndMask=1, EllipsisMask=0, NewAxisMask=0,
            ShrinkAxisMask=0)
    mn = op("MEAN", [sl, const(np.array([1], "int32"))], (1, 1, 3, 6), "ReducerOptions",
            KeepDims=True)
    r = op("RESHAPE", [mn, const(np.array([lead, 18], "int32"))], (1, 18), "ReshapeOptions",
           NewShape=[lead, 18])
    fc = op("FULLY_CONNECTED", [r, const(rng.standard_normal((10, 18)).astype("float32")),
                                const(rng.standard_normal(10).astype("float32"))], (1, 10),
            "FullyConnectedOptions", FusedActivationFunction=0, KeepNumDims=False)
    sm = op("SOFTMAX", [fc], (1, 10), "SoftmaxOptions", Beta=1.0)
    r2 = op("RESHAPE", [cat, const(np.array([-1, 3, 36], "int32"))], (1, 3, 36),
            "ReshapeOptions", NewShape=[-1, 3, 36])
    fc2 = op("FULLY_CONNECTED", [r2, const(rng.standard_normal((5, 36)).astype("float32"))],
             (1, 3, 5), "FullyConnectedOptions", FusedActivationFunction=0, KeepNumDims=True)
    b.output(sm)
    b.output(fc2)
    return b.finish()


@pytest.mark.parametrize("lead", [-1, 1])
def test_float_common_ops_any_batch(lead):
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 4)).astype("float32")
    mod, _ = check_batches(_float_ops_model(lead), {"x": x}, resize=lead == -1)
    assert [str(f) for f in mod["main"].ret_type.fields] == [
        "Tensor[(?, 10), float32]", "Tensor[(?, 3, 5), float32]"]


@pytest.mark.parametrize("dtype", ["int8"])  # (int16: LiteRT's CONCATENATION copies values
@pytest.mark.parametrize("lead", [-1, 1])  # of differing scales raw; the twin writes them)
def test_quantized_common_ops_any_batch(dtype, lead):
    """QUANTIZE of a float input, conv, depthwise, PAD, both pools, CONCATENATION, a
    STRIDED_SLICE to a far end, MEAN, RESHAPEs (stored batch, -1), FULLY_CONNECTED (2-D,
    keep_num_dims 3-D), SOFTMAX, DEQUANTIZE."""
    t = QTwin(dtype, 6)
    x = t.float_input("x", (1, 8, 8, 4))
    c = t.conv(t.quantize_float(x), 8, 3, 1, "relu6")
    d = t.conv(c, 0, 3, 2, "relu6", depthwise=True)
    p = t.pad(d, [[0, 0], [1, 1], [1, 1], [0, 0]])
    cat = t.concat([t.pool("max", p, 2, 2), t.pool("avg", p, 2, 2)], 3)
    s = t.strided_slice(cat, [0, 1, 0, 0], [1 << 20, 3, 3, 16], [1, 1, 1, 2])
    r = t.reshape(t.mean(s, [1], True), (lead, 24))
    f = t.fully_connected(r, 10)
    sm = t.unary("SOFTMAX", f)
    f2 = t.fully_connected(t.reshape(cat, (-1, 3, 48)), 5, keep_num_dims=True)
    t.finish([sm, f2, t.dequantize(f)])
    _sig(t, (1, 8, 8, 4))
    s_f = t.qp[f][0]
    _, worst = check_batches(t.b.finish(), {"x": t.val[x].astype("float32")},
                             resize=lead == -1, atol=s_f * 1.01)
    assert worst <= 1


# ---------------------------------------------------------------------------- static, errors
def test_signature_without_shape_dict_keeps_the_stored_shape():
    """A file whose batch is -1 in its signature imports at its stored batch 1 (as before),
    relay.build and LiteRT agree; with the shape_dict it is dynamic."""
    blob = _float_ops_model()
    mod, params = relay.frontend.from_tflite(blob)
    assert str(mod["main"].params[0].type_annotation) == "Tensor[(1, 8, 8, 4), float32]"
    assert str(mod["main"].ret_type.fields[0]) == "Tensor[(1, 10), float32]"
    from frontend_models import build_and_run

    x = np.random.default_rng(1).standard_normal((1, 8, 8, 4)).astype("float32")
    outs = build_and_run(mod, params, {"x": x})
    for out, ref in zip(outs, litert_run(blob, {"x": x}), strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    for dyn in (-1, None):
        mod, _ = relay.frontend.from_tflite(blob, shape_dict={"x": (dyn, 8, 8, 4)})
        assert str(mod["main"].params[0].type_annotation) == "Tensor[(?, 8, 8, 4), float32]"


def test_builder_writes_shape_signature():
    import tflite

    b = ModelBuilder()
    x = b.input("x", (1, 3), signature=(-1, 3))
    y = b.tensor("y", (1, 3))
    b.operator("RELU", [x], [y])
    b.output(y)
    sg = tflite.Model.GetRootAsModel(b.finish(), 0).Subgraphs(0)
    assert list(sg.Tensors(0).ShapeSignatureAsNumpy()) == [-1, 3]
    assert sg.Tensors(1).ShapeSignatureLength() == 0
    with pytest.raises(ValueError, match="signature"):
        b.tensor("z", (1, 3), signature=(-1, 4))


def _reshape_model(new_shape, out_shape):
    b = ModelBuilder()
    x = b.input("x", (1, 4, 6))
    y = b.tensor("y", out_shape)
    b.operator("RESHAPE", [x, b.constant("s", np.array(new_shape, "int32"))], [y],
               "ReshapeOptions", NewShape=list(new_shape))
    b.output(y)
    return b.finish()


def test_reshape_targets_with_a_dynamic_batch():
    """-1 kept; the stored batch carried; a target folding the batch: a clear error."""
    dyn = {"x": (relay.Any(), 4, 6)}
    mod, _ = relay.frontend.from_tflite(_reshape_model([1, 24], (1, 24)), shape_dict=dyn)
    assert str(mod["main"].ret_type) == "Tensor[(?, 24), float32]"
    mod, _ = relay.frontend.from_tflite(_reshape_model([-1, 2, 12], (1, 2, 12)), shape_dict=dyn)
    assert str(mod["main"].ret_type) == "Tensor[(?, 2, 12), float32]"
    with pytest.raises(ImportError_, match=r"RESHAPE.*folds the dynamic batch.*\(\?, 4, 6\)"):
        relay.frontend.from_tflite(_reshape_model([4, 6], (4, 6)), shape_dict=dyn)
    with pytest.raises(ImportError_, match="rank 2"):
        relay.frontend.from_tflite(_reshape_model([4, 6], (4, 6)), shape_dict={"x": (-1, 24)})


def test_an_operator_needing_the_batch_size_names_the_dynamic_input():
    """UNPACK along the batch needs its size (the count of its results): a clear error naming
    the dynamic shape."""
    b = ModelBuilder()
    x = b.input("x", (2, 3))
    ys = [b.tensor(f"y{k}", (3,)) for k in range(2)]
    b.operator("UNPACK", [x], ys, "UnpackOptions", Num=2, Axis=0)
    for y in ys:
        b.output(y)
    blob = b.finish()
    assert len(relay.frontend.from_tflite(blob)[0]["main"].ret_type.fields) == 2
    with pytest.raises(ImportError_, match=r"UNPACK \(operator 0\).*dynamic shape \(\?, 3\)"):
        relay.frontend.from_tflite(blob, shape_dict={"x": (relay.Any(), 3)})


def _along_batch(name, outs, ins, options, **fields):
    """A model of one operator on a (batch, 3) input whose batch is dynamic; ``ins``: the
    operator's inputs after ``x`` as (name, array) constants (``x`` at ``x_at``)."""
    b = ModelBuilder()
    x = b.input("x", (2, 3), signature=(-1, 3))
    consts = [b.constant(k, np.asarray(v)) for k, v in ins]
    at = fields.pop("x_at", 0)
    ys = [b.tensor(f"y{k}", shape) for k, shape in enumerate(outs)]
    b.operator(name, consts[:at] + [x] + consts[at:], ys, options, **fields)
    for y in ys:
        b.output(y)
    return b.finish()


def _compare_at(blob, batches):
    mod, vm = build_once(blob, {"x": (relay.Any(), 3)})
    for n in batches:
        feeds = {"x": np.arange(n * 3, dtype="float32").reshape(n, 3)}
        refs, outs = litert_run(blob, feeds), vm_run(mod, vm, feeds)
        assert len(outs) == len(refs)
        for out, ref in zip(outs, refs, strict=True):
            np.testing.assert_array_equal(out, ref)
    return vm


_I32 = np.int32


@pytest.mark.parametrize("spec", [
    # (begin, end, strides, begin mask, end mask, shrink mask, output shape at batch 2)
    ((-1, 0), (0, 3), (1, 1), 0, 2, 1, (3,)),  # the last row
    ((-2, 0), (0, 3), (1, 1), 0, 3, 0, (2, 3)),  # the last two rows
    ((0, 0), (-1, 3), (1, 1), 0, 2, 0, (1, 3)),  # all rows but the last
    ((0, 0), (0, 3), (-1, 1), 1, 3, 0, (2, 3)),  # reversed
    ((-1, 0), (0, 3), (-2, 1), 0, 3, 0, (1, 3)),  # every other row from the end
    ((1, 2), (0, 0), (2, -1), 0, 3, 0, (1, 3)),  # odd rows, columns reversed
], ids=["last", "tail2", "drop_last", "reversed", "step_back2", "odd_rows_rev_cols"])
def test_strided_slice_counting_from_the_end_of_the_batch(spec):
    """Negative indices and strides on the dynamic batch: strided_slice resolves them at run
    time (they were refused); equal to LiteRT at each batch."""
    begin, end, strides, bm, em, sm, shape = spec
    blob = _along_batch("STRIDED_SLICE", [shape],
                        [("b", np.array(begin, _I32)), ("e", np.array(end, _I32)),
                         ("s", np.array(strides, _I32))], "StridedSliceOptions",
                        BeginMask=bm, EndMask=em, EllipsisMask=0, NewAxisMask=0,
                        ShrinkAxisMask=sm)
    _compare_at(blob, (1, 2, 5))


def test_split_along_the_batch():
    """SPLIT / SPLIT_V along the dynamic batch: equal sections (an odd batch fails when it
    runs, as in LiteRT), and cut sizes with the last the rest or stated."""
    blob = _along_batch("SPLIT", [(1, 3), (1, 3)], [("axis", np.array(0, _I32))],
                        "SplitOptions", NumSplits=2, x_at=1)
    vm = _compare_at(blob, (2, 6))
    with pytest.raises(ValueError, match="cannot be split into 2 equal sections"):
        vm.invoke("main", tvm.nd.array(np.zeros((3, 3), "float32")))
    rest = _along_batch("SPLIT_V", [(1, 3), (1, 3)], [("sizes", np.array([1, -1], _I32)),
                                                        ("axis", np.array([0], _I32))],
                        "SplitVOptions", NumSplits=2)
    _compare_at(rest, (1, 2, 5))
    stated = _along_batch("SPLIT_V", [(1, 3), (2, 3)], [("sizes", np.array([1, 2], _I32)),
                                                          ("axis", np.array([0], _I32))],
                          "SplitVOptions", NumSplits=2)
    vm = _compare_at(stated, (3,))
    with pytest.raises((ValueError, RuntimeError), match="cannot reshape"):
        vm.invoke("main", tvm.nd.array(np.zeros((4, 3), "float32")))


def test_converter_dynamic_reshape_and_depth_space_any_batch():
    """The pattern TF's converter writes for a dynamic batch: SHAPE -> STRIDED_SLICE (shrink)
    -> PACK [batch, 144] -> RESHAPE without a new_shape attribute (a dyn.reshape), after
    SPACE_TO_DEPTH / DEPTH_TO_SPACE of a dynamic batch."""
    rng = np.random.default_rng(8)
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 4), signature=(-1, 6, 6, 4))

    def op(name, ins, shape, options=None, dtype="float32", **fields):
        y = b.tensor(f"t{len(b.tensors)}", shape, dtype)
        b.operator(name, ins, [y], options, **fields)
        return y

    s2d = op("SPACE_TO_DEPTH", [x], (1, 3, 3, 16), "SpaceToDepthOptions", BlockSize=2)
    d2s = op("DEPTH_TO_SPACE", [s2d], (1, 6, 6, 4), "DepthToSpaceOptions", BlockSize=2)
    shape = op("SHAPE", [x], (4,), "ShapeOptions", "int32", OutType=2)
    i32 = [b.constant(f"k{k}", np.array(v, "int32")) for k, v in enumerate(([0], [1], [1]))]
    batch = op("STRIDED_SLICE", [shape, *i32], (), "StridedSliceOptions", "int32", BeginMask=0,
               EndMask=0, EllipsisMask=0, NewAxisMask=0, ShrinkAxisMask=1)
    dims = op("PACK", [batch, b.constant("rest", np.array(144, "int32"))], (2,),
              "PackOptions", "int32", ValuesCount=2, Axis=0)
    flat = op("RESHAPE", [d2s, dims], (1, 144))
    y = op("FULLY_CONNECTED", [flat, b.constant("w", rng.standard_normal((3, 144)).astype(
        "float32"))], (1, 3), "FullyConnectedOptions", FusedActivationFunction=0,
        KeepNumDims=False)
    b.output(y)
    xv = rng.standard_normal((1, 6, 6, 4)).astype("float32")
    mod, _ = check_batches(b.finish(), {"x": xv})
    assert str(mod["main"].params[0].type_annotation.shape[0]) == "?"

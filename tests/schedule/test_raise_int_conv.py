"""An integer conv2d through LegalizeOps (int32 sums of uint8 / int8 loads widened by casts)
raises to the ``conv2d_nchw`` stage Relay's compute makes, its operands the 8-bit tensors
themselves, so ``schedule/conv_vnni`` takes it where the host has VNNI; numerics against numpy
either way (``conv_vnni.available`` forced False: the generic loop nest)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import conv_vnni
from minitvm.schedule.raise_blocks import analyze_nest, segments, unwrap_root


def _module(x_dtype, w, pad, out_dtype="int32"):
    x = relax.Var("x", relax.TensorStructInfo((1, w.shape[1], 7, 7), x_dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(x, relax.const(w), padding=pad,
                                                    out_dtype=out_dtype))
        bb.emit_func_output(out)
    return bb.get()


def _conv_stage(mod):
    (func,) = [f for gv, f in mod.functions.items()
               if isinstance(f, tir.PrimFunc) and "conv2d" in gv.name_hint]
    _, stmts = unwrap_root(func)
    groups = segments([analyze_nest(st) for st in stmts],
                      {id(b) for b in func.buffer_map.values()})
    assert all(g.raised for g in groups)
    return groups[-1].outputs[-1][0]


def _ref(x, w, pad):
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, _, kh, kw = w.shape
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    out = np.zeros((1, o, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            out += np.einsum("nchw,oc->nohw", xp[:, :, ky:ky + oh, kx:kx + ow],
                             w[:, :, ky, kx].astype(np.int64))
    return out.astype(np.int32)


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
def test_int_conv_raises_with_8bit_operands(x_dtype):
    w = np.ones((16, 8, 3, 3), "int8")
    stage = _conv_stage(get_pipeline("zero")(_module(x_dtype, w, 1)))
    a = stage.op.attrs
    assert stage.op.tag == "conv2d_nchw" and stage.dtype == "int32"
    assert a["padding"] == (1, 1, 1, 1)
    x, wt = a["operands"]
    assert (x.dtype, wt.dtype) == (x_dtype, "int8")
    g = conv_vnni.geometry(stage)  # (a uint8 input is VNNI's; an int8 one is not)
    assert (g is not None) == (x_dtype == "uint8")
    if g is not None:
        assert (g["c"], g["o"], g["kh"], g["pt"], g["oh"]) == (8, 16, 3, 1, 7)


def test_float_widening_of_a_uint8_input_is_not_raised():
    """A uint8 input widened to float32 is no conv the schedules read (only an int8 weight
    widened to float32 is: ``common.int8_weight_conv``)."""
    w = np.ones((16, 8, 3, 3), "float32")
    x = relax.Var("x", relax.TensorStructInfo((1, 8, 7, 7), "uint8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(relax.op.astype(x, "float32"),
                                                    relax.const(w), out_dtype="float32"))
        bb.emit_func_output(out)
    stage = _conv_stage(get_pipeline("zero")(bb.get()))
    x_op = stage.op.attrs["operands"][0] if stage.op.tag == "conv2d_nchw" else None
    assert x_op is None or x_op.dtype == "float32"


@pytest.mark.parametrize("vnni", [True, False])
def test_int_conv_numerics(monkeypatch, vnni):
    if vnni and not conv_vnni.products_available():
        pytest.skip("the host has no AVX-512 VNNI")
    if not vnni:
        monkeypatch.setattr(conv_vnni, "available", lambda: False)
        monkeypatch.setattr(conv_vnni, "pairs_available", lambda: False)  # (and AVX2's pairs)
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (32, 20, 3, 3)).astype("int8")
    x = rng.integers(0, 256, (1, 20, 7, 7)).astype("uint8")
    ex = relax.build(_module("uint8", w, 1), "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_array_equal(got, _ref(x, w, 1))
    text = "".join(str(rec.prim_func) for rec, _ in ex.kernels.values())
    assert ("x_vnni" in text) == vnni


def _depthwise_module(x_dtype, w, stride, pad):
    c = w.shape[0]
    x = relax.Var("x", relax.TensorStructInfo((1, c, 9, 9), x_dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(x, relax.const(w), strides=stride,
                                                    padding=pad, groups=c,
                                                    out_dtype="float32"))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
def test_depthwise_conv_of_8bit_data_raises_for_the_depthwise_schedule(x_dtype):
    """A depthwise conv of uint8 / int8 data with a float32 weight and output (what the Relax
    ONNX importer writes for ``onnx_quant.depthwise_data``): LegalizeOps casts each 8-bit load
    to float32 in the sum; the raise gives the ``conv2d_nchw`` stage with the 8-bit tensor as
    its operand, which ``schedule/depthwise`` takes (before, no stage was raised and the
    generic loop nest ran it, 15x slower at 192 channels 56x56)."""
    from minitvm.schedule import depthwise

    w = np.ones((24, 1, 3, 3), "float32")
    stage = _conv_stage(get_pipeline("zero")(_depthwise_module(x_dtype, w, 2, 1)))
    a = stage.op.attrs
    assert stage.op.tag == "conv2d_nchw" and stage.dtype == "float32"
    assert a["groups"] == 24 and a["padding"] == (1, 1, 1, 1) and a["strides"] == (2, 2)
    x, wt = a["operands"]
    assert (x.dtype, wt.dtype) == (x_dtype, "float32")
    assert depthwise.widened_data(stage) and depthwise.supported(stage)


def test_grouped_conv_of_8bit_data_is_not_raised():
    """Several input channels a group: 8-bit data widened to float32 is no stage a schedule
    reads (only depthwise convs widen it as they copy each plane)."""
    w = np.ones((16, 2, 3, 3), "float32")
    x = relax.Var("x", relax.TensorStructInfo((1, 16, 7, 7), "uint8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(x, relax.const(w), padding=1, groups=8,
                                                    out_dtype="float32"))
        bb.emit_func_output(out)
    stage = _conv_stage(get_pipeline("zero")(bb.get()))
    x_op = stage.op.attrs["operands"][0] if stage.op.tag == "conv2d_nchw" else None
    assert x_op is None or x_op.dtype == "float32"


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_conv_of_8bit_data_numerics(x_dtype, stride):
    """Relax's build of that conv: exact against numpy's int64 sums, in one kernel whose input
    is the 8-bit tensor and which makes the depthwise schedule's plane copies."""
    from minitvm.tir import stmt as S
    from minitvm.tir.stmt_functor import walk_stmts

    rng = np.random.default_rng(stride)
    c = 20
    w = rng.integers(-128, 128, (c, 1, 3, 3)).astype("float32")
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, (1, c, 9, 9)).astype(x_dtype)
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(_depthwise_module(x_dtype, w, stride, 1), "llvm")
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh = (9 + 2 - 3) // stride + 1
    want = np.zeros((1, c, oh, oh), np.int64)
    for ky in range(3):
        for kx in range(3):
            win = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride,
                     kx:kx + stride * (oh - 1) + 1:stride]
            want += win * w[:, 0, ky, kx].astype(np.int64).reshape(1, -1, 1, 1)
    np.testing.assert_array_equal(got, want.astype("float32"))
    (prim,) = [rec.prim_func for rec, _ in ex.kernels.values()
               if "conv2d" in str(rec.prim_func.attrs.get("global_symbol", "conv2d"))]
    assert prim.buffer_map[prim.params[0]].dtype == x_dtype
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert names & {"dw_xph", "dw_xt", "dw_flat"}  # (the depthwise schedule's copies)

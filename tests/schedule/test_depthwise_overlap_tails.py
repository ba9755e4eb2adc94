"""Overlapping tail vectors in the depthwise schedule (``depthwise_loops._vec`` with
``OVERLAP_TAILS``): rows whose length is not a whole number of vectors (7x7 planes, stride
phases of 7) end in one more vector over the last positions instead of a scalar loop. Numbers
against numpy on odd widths, strides and epilogues; the same numbers with the tails off; no
scalar tail left in the phased copy and the crop on AVX2 and AVX-512 alike (scalar ones again
with the switch off); an epilogue reading the conv twice keeps its
scalar tail (it must not run twice at a position)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import depthwise, depthwise_loops, lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order_visit


def _lower(shape, stride, epilogue):
    c = shape[1]
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(c, 1, 3, 3))
    b = relay.var("b", shape=(1, c, 1, 1))
    y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(1, 1), groups=c) + b
    if epilogue == "relu6":
        y = relay.clip(y, 0.0, 6.0)
    elif epilogue == "hardswish":  # reads the conv twice
        y = y * relay.clip(y + relay.const(3.0), 0.0, 6.0) / relay.const(6.0)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w, b], y)))
    ins, _, outs = te_compiler.build_te(mod["main"])
    prim, ws = lower_te(ins, outs, "f")
    return prim, ws


def _reference(x, w, b, stride, epilogue):
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    out = np.zeros((n, c, oh, ow))
    for ky in range(3):
        for kx in range(3):
            win = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride,
                     kx:kx + stride * (ow - 1) + 1:stride]
            out += win * w[None, :, 0, ky, kx, None, None]
    out += b
    if epilogue == "relu6":
        out = np.clip(out, 0, 6)
    elif epilogue == "hardswish":
        out = out * np.clip(out + 3, 0, 6) / 6
    return out


def _run(prim, ws, shape, stride, epilogue, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((c, 1, 3, 3), dtype=np.float32)
    b = rng.standard_normal((1, c, 1, 1), dtype=np.float32)
    want = _reference(x, w, b, stride, epilogue)
    out = np.full(want.shape, np.nan, np.float32)
    extra = [np.zeros(max(ws, 64), np.uint8)] if ws else []
    codegen.build(prim)["f"](x, w, b, out, *extra)
    return out, want


def _scalar_loops(prim) -> list:
    """The serial loops of ``_vec``'s scalar tails (loop variables named ``dt``)."""
    found = []
    post_order_visit(prim.body, lambda n: found.append(n) if isinstance(n, S.For) and
                     n.loop_var.name.startswith("dt") else None)
    return found


CASES = [
    # shape, stride, epilogue
    ((1, 9, 7, 7), 1, "relu6"),      # 7x7: rows of 7 (two 4-lane vectors), grid mode
    ((2, 5, 14, 14), 2, "relu6"),    # phases of 7 or 8 columns, 7x7 output
    ((1, 6, 13, 13), 1, "none"),     # rows of 13 = 8 + 5 (one 8-lane vector overlapping)
    ((1, 4, 11, 17), 3, "relu6"),    # stride 3: phases of 6 columns
    ((1, 3, 5, 6), 1, "none"),       # rows of 5 and 6
    ((1, 4, 9, 9), 2, "relu6"),      # a 5x5 output
    ((2, 5, 7, 7), 1, "hardswish"),  # the crop keeps its scalar tail
]


@pytest.mark.parametrize("shape, stride, epilogue", CASES)
def test_matches_numpy_and_tails_off(shape, stride, epilogue, monkeypatch):
    prim, ws = _lower(shape, stride, epilogue)
    out, want = _run(prim, ws, shape, stride, epilogue)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(depthwise, "OVERLAP_TAILS", {"avx512": 0, "avx2": 0})
    prim0, ws0 = _lower(shape, stride, epilogue)
    out0, _ = _run(prim0, ws0, shape, stride, epilogue)
    # the same sums; the scalar tails may round a multiply-add apart from the vectors' FMA (AVX2)
    np.testing.assert_allclose(out, out0, rtol=2e-6, atol=2e-6)


def _zero_fill(loop) -> bool:
    """Is scalar tail ``loop`` a zero fill of the phased copy (padding), not a copy or crop?"""
    return isinstance(loop.body, S.BufferStore) and loop.body.buffer.name == "dw_xph" and \
        isinstance(loop.body.value, E.FloatImm) and float(loop.body.value.value) == 0.0


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_no_scalar_tails_left(isa, monkeypatch):
    # 7x7 at stride 1 (960 channels of MobileNetV2's last stage, fewer here) and 14x14 at
    # stride 2, on both ISAs (OVERLAP_TAILS): every row of the copy (7 columns) and of the crop
    # (7) is two overlapping vectors; only zero fills stay scalar: with 8 lanes those shorter
    # than 4 (padding columns), with 16 also 4 in the middle of a whole padding row of 9 (its
    # 4-lane vector, the 4 scalars and the overlapping 4-lane vector: ``_vec`` overlaps rows
    # of 5 to 8 narrower than the vector with 4-lane vectors only)
    monkeypatch.setattr(depthwise, "vector_isa", lambda: isa)
    assert depthwise.OVERLAP_TAILS[isa] == 3
    longest = 3 if depthwise.VECTOR[isa] == 8 else 4
    for shape, stride in [((1, 16, 7, 7), 1), ((1, 16, 14, 14), 2)]:
        prim, _ = _lower(shape, stride, "relu6")
        loops = _scalar_loops(prim)
        # (16 channels of a small plane: the padding zeroed once per block of channels, in
        # overlapping vectors, so there may be no scalar loop at all)
        assert all(_zero_fill(f) and int(f.extent) <= longest for f in loops), loops
        # switched off for the ISA: rows of the copy (or crop) end in scalar loops again
        monkeypatch.setitem(depthwise.OVERLAP_TAILS, isa, 0)
        prim, _ = _lower(shape, stride, "relu6")
        assert not all(_zero_fill(f) for f in _scalar_loops(prim))
        monkeypatch.setitem(depthwise.OVERLAP_TAILS, isa, 3)


def test_epilogue_reading_the_conv_twice_overlaps_its_crop_too():
    """hardswish reads the conv twice; its crop of a 7x7 grid still ends in an overlapping
    vector (the conv's value is shared, not stored and read back), no scalar tail."""
    prim, _ = _lower((1, 16, 7, 7), 1, "hardswish")

    def stores_out(loop):
        found = []
        post_order_visit(loop.body, lambda n: found.append(n) if isinstance(
            n, S.BufferStore) and n.buffer.name == "out0" else None)
        return bool(found)

    assert not any(stores_out(f) for f in _scalar_loops(prim))


def test_vec_covers_each_position():
    """``_vec`` with ``overlap``: every position of ``[0, extent)`` is written, none outside."""
    from minitvm.schedule.common import LowerCtx
    from minitvm.tir import expr as E
    from minitvm.tir.buffer import decl_buffer

    buf = decl_buffer((64,), "int32", "seen")
    for extent in range(1, 40):
        stmt = depthwise_loops._vec(LowerCtx(), extent, 8, lambda j: S.BufferStore(
            buf, E.BufferLoad(buf, [j]) + 1, [j]), overlap=True)
        prim = tvm.tir.PrimFunc([buf.data], stmt, buffer_map={buf.data: buf})
        seen = np.zeros(64, np.int32)
        codegen.build(prim.with_attr("global_symbol", "f"))["f"](seen)
        assert (seen[:extent] >= 1).all() and (seen[extent:] == 0).all(), extent
        assert seen.max() <= 2, extent

"""How ``conv_vnni`` streams its operands: an input read whole (a 1x1 stride-1 conv without
padding) packed a plane at a time (``PACK_PLANES``, no test of padding rows), the
channel-lanes tiles' prefetch of the next channel tile's weight (``PREFETCH_NEXT_CHANNELS``),
and the pixel tiles' accumulators started from a per-channel offset of the epilogue
(``PIXEL_OFFSET_INIT``) and stored channel by channel (``PIXEL_STORE_ROWS``). Exact against
numpy's integer conv: channel counts not a multiple of 4 (a tail word), a batch, planes of
pixel and of channel lanes, a last channel tile of fewer channels, one and two threads."""

import numpy as np
import pytest
from conv_reference import conv_kernel, conv_ref, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.schedule import conv_vnni
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _build(x_shape, w, pads=(0, 0, 0, 0)):
    """A uint8 x int8 conv summed in int32, requantized to uint8 in its epilogue."""
    x = relay.var("x", shape=x_shape, dtype="uint8")
    y = relay.nn.conv2d(x, relay.const(w), padding=pads, channels=w.shape[0],
                        kernel_size=w.shape[2:], out_dtype="int32")
    y = relay.add(relay.round(relay.multiply(relay.cast(y, "float32"),
                                             relay.const(np.float32(1 / 4096)))),
                  relay.const(np.float32(100)))
    y = relay.cast(relay.clip(y, 0, 255), "uint8")
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")


def _want(x, w, pads=(0, 0, 0, 0)):
    y = conv_ref(x, w, pads=pads).astype("int32").astype("float32")
    return np.clip(np.round(y * np.float32(1 / 4096)) + np.float32(100), 0, 255).astype("uint8")


def _case(shape, o, k, seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(-128, 128, (o, shape[1], k, k)).astype("int8")
    x = rng.integers(0, 256, shape).astype("uint8")
    x[0, -1, -1, -1], w[-1, -1, 0, 0] = 255, -128  # (the extremes, in the tail word)
    return x, w


def _calls(lib, name: str) -> int:
    """``tir.<name>`` calls in the conv kernel's statements."""
    n = 0
    for s in walk_stmts(conv_kernel(lib).prim_func.body):
        if isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and \
                s.value.op_name == f"tir.{name}":
            n += 1
    return n


def _branches(lib) -> int:
    return sum(isinstance(s, S.IfThenElse) for s in walk_stmts(conv_kernel(lib).prim_func.body))


@pytest.mark.parametrize("shape, o", [
    ((1, 18, 14, 14), 32),   # pixel lanes: 196 pixels, a tail word of 2 channels
    ((2, 33, 7, 7), 64),     # channel lanes (a 7x7 plane), a batch, a tail word of 1
])
def test_plane_packing_is_exact(shape, o):
    x, w = _case(shape, o, 1, o + shape[1])
    lib = _build(shape, w)
    np.testing.assert_array_equal(run_graph(lib, {"x": x}), _want(x, w))
    if conv_vnni.available():  # (rows are packed behind a test of the padding rows)
        assert (_branches(lib) == 0) == conv_vnni.PACK_PLANES


@pytest.mark.parametrize("o, k", [
    (96, 1),  # three channel tiles of 32: the first two prefetch
    (40, 3),  # 3x3 taps (a padded input), tiles of 16, the last of 8 channels (no prefetch)
])
def test_next_channel_prefetch_is_exact(o, k):
    x, w = _case((1, 36, 7, 7), o, k, o + k)
    pads = (k // 2,) * 4
    lib = _build(x.shape, w, pads)
    want = _want(x, w, pads)
    for threads in (1, 2):
        np.testing.assert_array_equal(run_graph(lib, {"x": x}, threads), want)
    if conv_vnni.available():  # (the first pixel tile's taps: a prefetch per weight vector)
        width = 32 if o % 32 == 0 else 16
        assert _calls(lib, "prefetch") == (width // 16 if conv_vnni.PREFETCH_NEXT_CHANNELS
                                           else 0)
        assert (_branches(lib) > 0) == (k > 1)  # (a padded input: packed row by row)


def _offset_build(x, w, kind):
    """A pixel-lanes conv whose epilogue first adds an int32 per output channel (``sub``:
    subtracts it; ``radd``: adds it on the left) or a per-pixel int32 plane (``plane``), then
    requantizes to uint8."""
    o = w.shape[0]
    xv = relay.var("x", shape=x.shape, dtype="uint8")
    params, feeds = [xv], {"x": x}
    y = relay.nn.conv2d(xv, relay.const(w), channels=o, kernel_size=(1, 1), out_dtype="int32")
    c = (np.arange(o, dtype="int32") * 977 - 20000).reshape(1, -1, 1, 1)
    if kind == "plane":
        c = np.random.default_rng(2).integers(-30000, 30000, (1, o) + x.shape[2:]).astype("int32")
        r = relay.var("r", shape=c.shape, dtype="int32")
        params.append(r)
        feeds["r"] = c
        y = relay.add(y, r)
    elif kind == "sub":
        y = relay.subtract(y, relay.const(c))
    else:
        y = relay.add(relay.const(c), y)
    y = relay.add(relay.round(relay.multiply(relay.cast(y, "float32"),
                                             relay.const(np.float32(1 / 4096)))),
                  relay.const(np.float32(100)))
    y = relay.cast(relay.clip(y, 0, 255), "uint8")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")
    s = conv_ref(x, w) + (-c if kind == "sub" else c)
    s = s.astype("int32").astype("float32")
    want = np.clip(np.round(s * np.float32(1 / 4096)) + np.float32(100), 0, 255).astype("uint8")
    return lib, feeds, want


@pytest.mark.parametrize("kind", ["sub", "radd", "plane"])
def test_per_channel_offset_starts_the_accumulators(kind):
    """An int32 added (or subtracted) per output channel at the head of a pixel tile's epilogue
    is where its accumulators start (``PIXEL_OFFSET_INIT``); one laid out like the output
    plane stays in the stores. Exact either way. The tile stores channel by channel
    (``PIXEL_STORE_ROWS``): its unrolled loop over the channels holds one vector store per
    pixel vector."""
    x, w = _case((1, 24, 8, 8), 24, 1, 11)
    lib, feeds, want = _offset_build(x, w, kind)
    np.testing.assert_array_equal(run_graph(lib, feeds), want)
    if not conv_vnni.available():
        return
    starts = [s.value for s in walk_stmts(conv_kernel(lib).prim_func.body)
              if isinstance(s, S.BufferStore) and s.buffer.name == "vp_acc" and
              not (isinstance(s.value, E.Call) and s.value.op_name == conv_vnni.DOT)]
    assert starts
    zero = all(isinstance(v, E.IntImm) and v.value == 0 for v in starts)
    assert zero == (kind == "plane" or not conv_vnni.PIXEL_OFFSET_INIT)
    rows = [s for s in walk_stmts(conv_kernel(lib).prim_func.body) if isinstance(s, S.For) and
            s.kind == S.ForKind.UNROLLED and s.loop_var.name.startswith("rr") and
            any(isinstance(t, S.BufferStore) and t.buffer.name.endswith("_flat")
                for t in walk_stmts(s.body))]
    # (64 pixels: a block of PIXEL_VECTORS vectors, then one of the 16 pixels past it)
    per_row = sorted(sum(isinstance(s, S.For) and s.kind == S.ForKind.VECTORIZED
                         for s in walk_stmts(r.body)) for r in rows)
    assert per_row == [1, conv_vnni.PIXEL_VECTORS] if conv_vnni.PIXEL_STORE_ROWS else \
        set(per_row) == {1}

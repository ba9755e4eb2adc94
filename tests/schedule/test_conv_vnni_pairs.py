"""``conv_vnni`` on int16 data (``Words`` ``PAIRS``: two int16 a word, ``vpdpwssd`` or
``vpmaddwd``) with an int16 or an int8 weight (sign-extended as it is packed), summed in int32:
equal to numpy's int64 convolution at odd channel counts (a zero half in the last word),
strides, uneven padding, dilation, a batch, 1x1 convs with pixels in the lanes, a weight
passed at run time, a fused epilogue and the extremes of both dtypes; the packed layout."""

import numpy as np
import pytest
from conv_reference import conv_kernel, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.schedule import conv_vnni
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_pairs = pytest.mark.skipif(not conv_vnni.pairs_available(),
                                 reason="the host has neither AVX-512BW nor AVX2")


def conv_int64(x, w, strides, pads, dil):
    """NCHW conv2d of integers in int64 (a correlation), pads (top, left, bottom, right)."""
    o, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dil
    pt, pl, pb, pr = pads
    xp = np.pad(x.astype("int64"), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], o, oh, ow), "int64")
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                       kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx].astype("int64"))
    return out


def _build(x_shape, w, strides, pads, dil, const_weight=True, epilogue=False):
    x = relay.var("x", shape=x_shape, dtype="int16")
    wv = relay.const(w) if const_weight else relay.var("w", shape=w.shape, dtype=str(w.dtype))
    y = relay.nn.conv2d(x, wv, strides=strides, padding=pads, dilation=dil,
                        channels=w.shape[0], kernel_size=w.shape[2:], out_dtype="int32")
    if epilogue:  # (a bias and a requantizing multiply in float64, as the 16x8 importer's)
        y = relay.multiply(relay.cast(relay.add(y, relay.const(
            np.arange(w.shape[0], dtype="int32").reshape(1, -1, 1, 1) * 7)), "float64"),
            relay.const(0.25, "float64"))
    params = [x] if const_weight else [x, wv]
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(params, y)), target="llvm")


def _names(lib) -> set[str]:
    return {s.buffer.name for s in walk_stmts(conv_kernel(lib).prim_func.body)
            if isinstance(s, S.DeclBuffer)}


CASES = [  # (input shape, output channels, kernel, stride, pads (t, l, b, r), dilation)
    ((1, 16, 9, 9), 32, 3, 1, (1, 1, 1, 1), 1),    # 32-channel tiles
    ((1, 3, 11, 11), 16, 3, 2, (0, 0, 1, 1), 1),   # a stem: 3 channels (a half word), stride 2
    ((1, 13, 7, 6), 24, 3, 1, (0, 1, 2, 0), 1),    # uneven padding, 24 = a last tile of 8
    ((2, 10, 8, 8), 16, 3, 1, (2, 2, 2, 2), 2),    # a batch, dilation 2
    ((1, 17, 8, 8), 40, 1, 1, (0, 0, 0, 0), 1),    # 1x1: pixels in the lanes, 17 channels
    ((1, 24, 7, 7), 8, 1, 2, (0, 0, 0, 0), 1),     # 1x1 stride 2, 8 output channels
]


@needs_pairs
@pytest.mark.parametrize("shape, o, k, s, pads, d", CASES)
@pytest.mark.parametrize("w_dtype", ["int8", "int16"])
def test_int16_conv_is_exact(shape, o, k, s, pads, d, w_dtype):
    rng = np.random.default_rng(o + k + shape[1])
    lo, hi = (-128, 128) if w_dtype == "int8" else (-300, 300)
    w = rng.integers(lo, hi, (o, shape[1], k, k)).astype(w_dtype)
    x = rng.integers(-32768, 32768, shape).astype("int16")
    x[0, 0, -1, -1], x[0, -1, 0, 0], w[0, 0, -1, -1], w[0, -1, 0, 0] = -32768, 32767, lo, hi - 1
    want = conv_int64(x, w, (s, s), pads, (d, d))
    assert np.abs(want).max() < 2**31
    lib = _build(shape, w, (s, s), pads, (d, d))
    np.testing.assert_array_equal(run_graph(lib, {"x": x}, 1), want.astype("int32"))
    names = _names(lib)
    assert "vn_acc" in names or "vp_acc" in names
    prim = conv_kernel(lib).prim_func
    shapes = [tuple(int(v) for v in prim.buffer_map[p].shape) for p in prim.params]
    words = 4 if w_dtype == "int8" else 2  # (an int8 weight's packed int16 as bytes)
    assert (-(-o // 16), -(-shape[1] // 2), k, k, 16, words) in shapes


@needs_pairs
@pytest.mark.parametrize("w_dtype", ["int8", "int16"])
def test_int16_conv_weight_at_run_time_and_epilogue(w_dtype):
    """A weight that is no constant is packed by the kernel into int16 pairs (``w_vnni``); a
    float64 epilogue is applied in the tile's store; two threads."""
    rng = np.random.default_rng(5)
    shape, o = (1, 21, 12, 12), 48
    w = rng.integers(-128, 128, (o, 21, 3, 3)).astype(w_dtype)
    x = rng.integers(-32768, 32768, shape).astype("int16")
    want = conv_int64(x, w, (1, 1), (1, 1, 1, 1), (1, 1))
    lib = _build(shape, w, (1, 1), (1, 1, 1, 1), (1, 1), const_weight=False)
    np.testing.assert_array_equal(run_graph(lib, {"x": x, "w": w}, 2), want.astype("int32"))
    assert {"vn_acc", "w_vnni"} <= _names(lib)
    lib = _build(shape, w, (1, 1), (1, 1, 1, 1), (1, 1), epilogue=True)
    got = run_graph(lib, {"x": x}, 2)
    np.testing.assert_array_equal(got, (want + np.arange(o).reshape(1, -1, 1, 1) * 7) * 0.25)
    assert "conv2d" not in _names(lib)


def test_pack_weight_pairs_layout():
    """``PackWeight`` of int16 data: ``[O/16, C/2, KH, KW, 16, 2]`` int16, element ``[ob, c2,
    ky, kx, l, k]`` the weight at output channel ``16*ob + l``, input channel ``2*c2 + k``;
    an int8 weight's is the same int16 seen as bytes (sign-extended)."""
    rng = np.random.default_rng(1)
    w = rng.integers(-128, 128, (24, 5, 2, 3)).astype("int8")
    p = conv_vnni.PackWeight(24, 5, 2, 3, "int16", "int16")(w.astype("int16"))
    assert p.shape == (2, 3, 2, 3, 16, 2) and p.dtype == np.int16
    assert p[1, 1, 0, 2, 5, 1] == w[21, 3, 0, 2]
    assert not p[:, 2, :, :, :, 1].any() and not p[1, :, :, :, 8:].any()
    b = conv_vnni.PackWeight(24, 5, 2, 3, "int16", "int8")(w)
    assert b.shape == (2, 3, 2, 3, 16, 4) and b.dtype == np.int8
    np.testing.assert_array_equal(b.view("int16"), p)


def test_int16_conv_on_an_avx2_host(monkeypatch):
    """A host without AVX-512 (hidden from the schedule and the code generator): 16-channel
    tiles (16 ymm), the products by AVX2's ``vpmaddwd`` on halves of each vector; exact."""
    from minitvm import backend, codegen
    from minitvm.runtime import jit

    real = jit.host_has
    monkeypatch.setattr(jit, "host_has", lambda *f: real(*f) and not any(
        v.startswith("avx512") for v in f))
    monkeypatch.setattr(conv_vnni, "vector_isa", lambda: "avx2")
    backend.clear_cache()
    codegen.clear_cache()
    rng = np.random.default_rng(11)
    shape, o = (1, 9, 7, 7), 32
    w = rng.integers(-128, 128, (o, 9, 3, 3)).astype("int8")
    x = relay.var("x", shape=shape, dtype="int16")
    y = relay.nn.conv2d(x, relay.const(w), padding=(1, 1), channels=o, kernel_size=(3, 3),
                        out_dtype="int32")
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.use_disk_cache": False}):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    xv = rng.integers(-32768, 32768, shape).astype("int16")
    got = run_graph(lib, {"x": xv}, 1)
    backend.clear_cache()
    codegen.clear_cache()
    np.testing.assert_array_equal(got, conv_int64(xv, w, (1, 1), (1, 1, 1, 1), (1, 1)))
    ir = conv_kernel(lib).ir
    assert "avx2.pmadd.wd" in ir and "vpdpwssd" not in ir and "avx512" not in ir

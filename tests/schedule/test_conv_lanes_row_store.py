"""``conv_lanes``' tiles in rows (``lanes_rowstore``, AVX-512, 16-lane tiles read directly):
a class of the plane at least ``ROW_STORE_MIN_COLUMNS`` wide has each row cut in tiles of
``row_tile_pixels``, and a tile's 16 output channels are stored as vectors of its pixels after
a 16x16 transpose in registers (``tir.vector_shuffle``). Each layout matches numpy on grouped
convs (RegNet's 16 channels a group), strides, odd planes, a channel tail, a batch and the
fused epilogue with a residual, at one and two threads."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, run_graph

from minitvm.backend import kernel_cache
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.schedule import conv_direct, conv_lanes, lane_transpose
from minitvm.schedule.common import host_key, vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order_visit, walk_stmts

AVX512 = vector_isa() == "avx512"
pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _shuffles(kernel) -> int:
    """The ``tir.vector_shuffle`` calls of the kernel's PrimFunc."""
    found = []
    post_order_visit(kernel.prim_func.body, lambda n: found.append(n) if isinstance(
        n, E.Call) and n.op_name == "tir.vector_shuffle" else None)
    return len(found)


@pytest.mark.parametrize("cols, most", [(8, 8), (12, 12), (14, 7), (18, 9), (26, 13),
                                        (30, 10), (54, 11), (110, 13)])
def test_row_tile_pixels_16_lanes(cols, most):
    """A row of 16-lane tiles (12 pixels, ``NARROW_PIXELS``) is cut in the nearest number of
    12-pixel tiles where none exceeds 13 (``ROW_TILE_SLACK``), else in the fewest of at
    most 12 (14 columns: two of 7)."""
    g = dict(lanes_width=16)
    if not AVX512:
        pytest.skip("16-lane tiles hold 12 pixels on AVX-512")
    assert conv_lanes.row_tile_pixels(g, cols) == most
    tiles = conv_lanes.even_tiles(cols, most)
    assert sum(p * m for _, p, m in tiles) == cols


CASES = [  # shape, output channels, strides, groups, epilogue
    ((1, 48, 30, 30), 48, (1, 1), 3, "bias_relu"),  # RegNet: 16 a group, 28-wide interior
    ((1, 96, 29, 27), 96, (2, 2), 6, "residual_relu"),  # stride 2, odd plane
    ((2, 32, 17, 21), 32, (1, 1), 2, "residual_relu"),  # a batch
    ((1, 24, 20, 20), 40, (1, 1), 1, "bias_relu"),  # 40 channels: a tail of 8 in 16 lanes
    ((1, 16, 12, 12), 16, (1, 1), 1, "none"),  # one tile of channels, no epilogue
]


# (the row store on every case; tiles across rows, which test_conv_lanes_width runs on eleven
# geometries at every width, here on the RegNet groups and on the channel tail)
@pytest.mark.parametrize("case, rowstore", [
    *(pytest.param(case, True, id=f"True-case{i}") for i, case in enumerate(CASES)),
    *(pytest.param(CASES[i], False, id=f"False-case{i}") for i in (0, 3))])
def test_row_store_matches_numpy(case, rowstore, force_knobs, monkeypatch, restore_threads):
    """Either layout matches numpy at one and two threads; the row store is a transpose of 64
    shuffles per tile shape stored (16-lane tiles read directly: AVX-512's, AVX2's strided
    convs'), none without it."""
    shape, o, strides, groups, epi = case
    monkeypatch.setitem(conv_lanes.ROW_STORE, vector_isa(), rowstore)
    force_knobs(lanes_width=16, lanes_rowstore=rowstore)
    lib, inputs, want = build_conv(shape, o, 3, strides, (1, 1), (1, 1), epi,
                                   np.random.default_rng(o + groups), groups)
    kernel = conv_kernel(lib)
    shuffles = _shuffles(kernel)
    # (the row store needs tiles that read the input directly: on AVX2 a strided conv's)
    if rowstore and conv_lanes.direct_default(dict(sh=strides[0], sw=strides[1])):
        assert shuffles and shuffles % 64 == 0, shuffles
    else:
        assert shuffles == 0
    for threads in (1, 2):
        got = run_graph(lib, inputs, threads)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-4)


def _tile_pixels(kernel) -> set[int]:
    """The pixels of the kernel's tiles (its accumulators' first axis)."""
    return {int(s.buffer.shape[0]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


@pytest.mark.parametrize("rowstore", [False, True])
def test_row_tiles_follow_rows(rowstore, force_knobs):
    """A 30x30 plane's 28-wide interior (and its top and bottom rows) runs rows of three tiles
    of 10, 9 and 9 pixels with the row store; without it, tiles of 12 across rows."""
    if not AVX512:
        pytest.skip("the row store is AVX-512's")
    force_knobs(lanes_width=16, lanes_rowstore=rowstore)
    lib, _, _ = build_conv((1, 48, 30, 30), 48, 3, (1, 1), (1, 1), (1, 1), "bias_relu",
                           np.random.default_rng(0), 3)
    sizes = _tile_pixels(conv_kernel(lib))
    assert conv_lanes.row_tile_pixels(dict(lanes_width=16), 28) == 10
    if rowstore:
        assert {10, 9} <= sizes and max(sizes) == 10
    else:
        assert max(sizes) == 12


def test_vector_shuffle_checks_its_operands():
    """``tir.vector_shuffle`` of two vectors of different types, or an index past both, is a
    clear error from the code generator."""
    from minitvm import tir

    a = tir.decl_buffer((32,), "float32", "a")
    out = tir.decl_buffer((16,), "float32", "out")
    ramp = E.Ramp(E.IntImm("int32", 0), E.IntImm("int32", 1), 16)
    ramp8 = E.Ramp(E.IntImm("int32", 16), E.IntImm("int32", 1), 8)
    for second, mask in ((E.BufferLoad(a, [ramp8]), list(range(16))),
                         (E.BufferLoad(a, [ramp]), [40] * 16)):
        call = E.Call("float32x16", "tir.vector_shuffle", [E.BufferLoad(a, [ramp]), second,
                                                            *[E.IntImm("int32", m) for m in mask]])
        func = tir.PrimFunc([a, out], tir.BufferStore(out, call, [ramp]))
        with pytest.raises(ValueError, match="vector_shuffle takes two vectors of one type"):
            CodeGenLLVM(func, "kern", fast_math=True, gomp=False).generate()


def _tile_widths(kernel) -> set[int]:
    """The output channels of the kernel's tiles (its accumulators' second axis)."""
    return {int(s.buffer.shape[1]) for s in walk_stmts(kernel.prim_func.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_acc"}


@pytest.mark.parametrize("shape, o, k, stride, pad, width", [
    ((1, 64, 32, 32), 64, 3, 2, 1, 16),  # stride 2 to 16x16: 16 lanes in rows
    ((1, 64, 16, 16), 96, 3, 2, 1, 32),  # to 8x8: no class of 8 columns, 32 lanes
    ((1, 3, 128, 128), 128, 8, 8, 0, 32),  # 8x8 patches to 16x16: over 9 taps, not 16
])
def test_strided_default_width(shape, o, k, stride, pad, width, restore_threads, monkeypatch):
    """By default a strided conv of at most 9 taps a filter whose plane has a class at least
    ``ROW_STORE_MIN_COLUMNS`` wide runs 16-lane tiles in rows on AVX-512; the rest keep their
    width. Each matches numpy. (The 16x16 plane goes to ``conv_lanes`` as on a Zen 4: other
    hosts keep it in ``conv_direct``'s row mode, ``STRIDED_ROWS_LANES_MAX_PIXELS``.)"""
    table = conv_direct.STRIDED_ROWS_LANES_MAX_PIXELS
    monkeypatch.setitem(table, host_key(table), 256)
    wide = conv_lanes.WIDE_STRIDED_ANY_PLANE  # (as on a Zen 4: not 64 lanes at any plane)
    monkeypatch.setitem(wide, host_key(wide), False)
    kernel_cache.clear_cache()
    lib, inputs, want = build_conv(shape, o, k, (stride, stride), (pad, pad), (1, 1),
                                   "bias_relu", np.random.default_rng(3))
    kernel = conv_kernel(lib)
    if AVX512 and width == 16:
        assert _tile_widths(kernel) == {16} and _shuffles(kernel) > 0
    elif AVX512:  # (on conv_lanes at its own width, or on conv_direct: no tiles of 16 lanes)
        assert 16 not in _tile_widths(kernel) and _shuffles(kernel) == 0
    np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()


def test_transpose16_takes_at_most_16_rows():
    """A tile of more than 16 pixels (or none) has no 16x16 transpose: a clear error."""
    from minitvm.tir.buffer import decl_buffer

    src = decl_buffer((17, 16), "float32", "acc")
    for rows in (0, 17):
        with pytest.raises(ValueError, match="do not transpose"):
            lane_transpose.transpose16(src, rows, lambda tr: None)


def _silu_conv(shape, o, stride, residual, rng):
    """A Relay 3x3 conv (padding 1) + bias, then SiLU (x * sigmoid(x)), then a residual add
    when asked, built at opt_level 3: (lib, inputs, expected)."""
    from conv_reference import conv_ref

    import minitvm as tvm
    from minitvm import relay

    wv = rng.standard_normal((o, shape[1], 3, 3)).astype("float32") * 0.2
    bv = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    want = conv_ref(xv, wv, (stride, stride), (1, 1, 1, 1)) + bv[:, None, None]
    want = want / (1 + np.exp(-want))
    x = relay.var("x", shape=shape)
    y = relay.nn.bias_add(relay.nn.conv2d(x, relay.const(wv), strides=(stride, stride),
                                          padding=(1, 1), kernel_size=(3, 3), channels=o),
                          relay.const(bv))
    y = y * relay.sigmoid(y)
    args, inputs = [x], {"x": xv}
    if residual:
        rv = rng.standard_normal(want.shape).astype("float32")
        r = relay.var("r", shape=want.shape)
        y, want = y + r, want + rv
        args.append(r)
        inputs["r"] = rv
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, y)), target="llvm")
    return lib, inputs, want


@pytest.mark.parametrize("shape, o, stride, residual, in_rows", [
    ((1, 16, 42, 42), 32, 2, False, True),  # SiLU alone: before the transpose, 16 channels
    ((1, 16, 20, 20), 16, 1, True, False),  # SiLU then a residual: tiles across rows
])
def test_silu_epilogue_placement(shape, o, stride, residual, in_rows, force_knobs,
                                 restore_threads):
    """An epilogue that calls a function runs on whole 16-channel vectors: before the
    transpose when it reads no operand at the pixel, else the conv keeps tiles across rows.
    Both match numpy."""
    force_knobs(lanes_width=16, lanes_rowstore=True)
    lib, inputs, want = _silu_conv(shape, o, stride, residual, np.random.default_rng(5))
    kernel = conv_kernel(lib)
    if AVX512 and _tile_widths(kernel) == {16}:
        assert (_shuffles(kernel) > 0) == in_rows
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=2e-4, atol=2e-4)


def test_epilogue_probes():
    """``reads_plane`` tells a residual (indexed by the pixel) from a bias (by the channel);
    ``costly_plane_epilogue`` also wants a call."""
    from minitvm.tir.buffer import decl_buffer

    bias = decl_buffer((64,), "float32", "bias")
    res = decl_buffer((1, 64, 8, 8), "float32", "res")

    def biased(idx, v):
        return E.Max(v + bias[idx[1]], E.FloatImm("float32", 0.0))

    def residual(idx, v):
        return v + E.BufferLoad(res, list(idx))

    def silu_residual(idx, v):
        return v * E.Call("float32", "tir.sigmoid", [v]) + E.BufferLoad(res, list(idx))

    n, c = E.Var("n", "int32"), E.Var("c", "int32")
    assert not lane_transpose.reads_plane(biased, n, c)
    assert lane_transpose.reads_plane(residual, n, c)
    assert not lane_transpose.costly_plane_epilogue(biased)
    assert not lane_transpose.costly_plane_epilogue(residual)
    assert lane_transpose.costly_plane_epilogue(silu_residual)


def test_partial_sums_have_room_for_the_widest_row_tile(force_knobs):
    """ArcFace's 64 -> 64 stride-2 3x3 at 28x28 in the "bands" order with blocks of input
    channels: its 13-column rows are single tiles of 13 pixels (one more than ``tile_pixels``,
    ``ROW_TILE_SLACK``), so the scratch of partial sums between channel blocks must hold 13
    pixels a tile; sized for 12 it overflowed (a segfault in the whole model). The scratch
    has room for 13 pixels a tile, and the conv matches numpy."""
    if not AVX512:
        pytest.skip("the row store is AVX-512's")
    force_knobs(lanes_width=16, lanes_rowstore=True, lanes_order="bands", lanes_cblock=16384,
                lanes_direct=True)
    lib, inputs, want = build_conv((1, 64, 28, 28), 64, 3, (2, 2), (1, 1), (1, 1),
                                   "residual_relu", np.random.default_rng(3))
    kernel = conv_kernel(lib)
    assert 13 in _tile_pixels(kernel)
    body = kernel.prim_func.body
    sums = [s.buffer for s in walk_stmts(body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "cl_sums"]
    assert sums, "no partial sums: the channels were not blocked"
    # room for the band's tiles of 13 pixels x 16 lanes each (the bug: 12 pixels a tile)
    assert all(int(b.shape[0]) % (13 * 16) == 0 for b in sums), [b.shape for b in sums]
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=2e-5, atol=2e-4)

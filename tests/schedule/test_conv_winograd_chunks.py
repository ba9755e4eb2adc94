"""``conv_winograd`` computes a band's products a chunk of output channels at a time where all
of them would pass ``M_CHUNK_BYTES`` and twice the band's transformed input (``out_chunk``): the chunk sizes divide the channels and
fit the budget; a chunked conv loops over its chunks with a chunk's products as scratch, and
matches a float64 reference (F(2x2) and F(4x4), batch 2, a grouped conv, a weight computed in
the graph, one and two threads)."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_prim, grouped_conv_ref, knob_table, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.schedule import conv_winograd, knobs
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

BUDGET = 110 * 1024


@pytest.fixture
def small_chunks(monkeypatch):
    """A 110 KB budget: the small convs below split into chunks of 16 output channels (their
    products 101 KB and 56 KB a chunk, past twice V in all; 24 or 32 channels would not fit)."""
    monkeypatch.setattr(conv_winograd, "M_CHUNK_BYTES", BUDGET)
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.mark.parametrize("og,channel_bytes,c,want", [
    (64, 36 * 98 * 4, 16, 16),  # SqueezeNet's 16->64 expand at 55x55, F(4x4): 884 KB in all
    (64, 1024, 64, 64),  # fits: one chunk
    (128, 36 * 49 * 4, 32, 32),  # 32 * 7 KB fits 256 KB, 64 does not
    (128, 36 * 49 * 4, 128, 128),  # as many input channels: the products fit V's 884 KB
    (256, 36 * 32 * 4, 128, 256),  # twice V (UNet's 128->256 at 16x16): one chunk
    (256, 36 * 32 * 4, 64, 64),  # past twice V (SqueezeNet's last expand): chunks of V
    (48, 64 * 1024, 16, 16),  # none fits: the fewest of at least MIN_CHUNK_CHANNELS
    (20, 64 * 1024, 16, 20),  # no divisor of at least 16 below 20: all of them
])
def test_out_chunk_divides_within_the_budget(og, channel_bytes, c, want, monkeypatch):
    monkeypatch.setattr(conv_winograd, "M_CHUNK_BYTES", 256 * 1024)
    assert conv_winograd.out_chunk(og, channel_bytes, c * channel_bytes) == want


def _chunk_loops(prim) -> list:
    return [s for s in walk_stmts(prim.body)
            if isinstance(s, S.For) and s.loop_var.name.startswith("wg_oc")]


def _check(lib, inputs, want, atol):
    scale = np.max(np.abs(want))
    for threads in (1, 2):
        got = run_graph(lib, inputs, threads)
        np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=atol)


@pytest.mark.parametrize("shape,o,m", [((1, 16, 20, 20), 48, 2), ((2, 16, 19, 19), 64, 4)])
def test_chunked_conv_matches_reference(shape, o, m, small_chunks):
    x = relay.var("x", shape=shape)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(
        x, relay.const(np.zeros((o, shape[1], 3, 3), "float32")), padding=(1, 1))))
    table = knob_table(mod, impl="winograd", wino_m=m)
    with knobs.use_knobs(table):
        lib, inputs, want = build_conv(shape, o, 3, epi="residual_relu")
    prim = conv_prim(lib)
    (loop,) = _chunk_loops(prim)
    assert int(loop.extent) == o // 16
    (mt,) = [s.buffer for s in walk_stmts(prim.body)
             if isinstance(s, S.DeclBuffer) and s.buffer.name == "wg_m"]
    assert 4 * int(mt.shape[0]) <= BUDGET  # (a chunk's products)
    _check(lib, inputs, want, 1e-5 if m == 2 else 5e-5)


def test_chunked_grouped_conv_of_a_computed_weight(small_chunks, monkeypatch):
    """Each group's output channels in chunks (its 64 products past twice its 16 channels' V;
    a chunk of V's size: 16), its weight transformed per call chunk by chunk."""
    monkeypatch.setattr(conv_winograd, "M_CHUNK_BYTES", 1024)
    rng = np.random.default_rng(1)
    shape, o, groups = (1, 32, 32, 32), 128, 2
    wv = rng.standard_normal((o, shape[1] // groups, 3, 3)).astype("float32")
    sv = (rng.random((o, 1, 1, 1)) + 0.5).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    x, s = relay.var("x", shape=shape), relay.var("s", shape=sv.shape)
    y = relay.nn.relu(relay.nn.conv2d(x, relay.multiply(relay.const(wv), s), padding=(1, 1),
                                      groups=groups, kernel_size=(3, 3), channels=o))
    mod = tvm.IRModule.from_expr(relay.Function([x, s], y))
    with knobs.use_knobs(knob_table(mod, impl="winograd", wino_m=2)), \
            tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    prim = conv_prim(lib)
    names = {d.buffer.name for d in walk_stmts(prim.body) if isinstance(d, S.DeclBuffer)}
    assert {"wg_u", "wg_m"} <= names
    assert [int(lp.extent) for lp in _chunk_loops(prim)] == [4]
    assert {int(lp.extent) for lp in walk_stmts(prim.body)  # (the per-call weight transform's)
            if isinstance(lp, S.For) and lp.loop_var.name.startswith("uch")} == {4}
    want = np.maximum(grouped_conv_ref(xv, wv * sv, groups, (1, 1), (1,) * 4), 0)
    _check(lib, {"x": xv, "s": sv}, want, 1e-5)

"""conv_direct's wide filters (5x5, 7x7, 1x7): tiles whose accumulators and unrolled filter
columns' pixel vectors fill the vector registers ask for LLVM's O1 pipeline
(``conv_direct.LOOP_PASSES``), so their filter-row loop keeps the accumulators in registers;
on a Rocket Lake host they take 14 x 32 tiles (``WIDE_FILTER_TILE``); the convs match numpy."""

import sys

import numpy as np
import pytest
from asm_loops import fma_loops
from conv_reference import build_conv, run_graph
from conv_reference import conv_kernel as _conv_kernel

import minitvm as tvm
from minitvm import relay
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.runtime import jit
from minitvm.schedule import common, conv_direct, conv_lanes
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

cg = sys.modules["minitvm.codegen.build"]  # the module (``codegen.build`` is the function)
AVX512 = vector_isa() == "avx512"


@pytest.mark.parametrize("isa, rows, nr, columns, want", [
    ("avx512", 12, 32, 5, True),  # 24 accumulators + 10 pixel vectors
    ("avx512", 12, 32, 7, True),
    ("avx512", 12, 32, 3, False),  # 24 + 6 + a broadcast: 31 registers
    ("avx512", 8, 32, 7, False),  # 16 + 14 + 1
    ("avx512", 12, 32, 1, False),  # the columns as a loop
    ("avx2", 6, 16, 7, False)])  # (not measured: off)
def test_loop_passes_where_the_registers_run_out(isa, rows, nr, columns, want, monkeypatch):
    monkeypatch.setattr(common, "vector_isa", lambda: isa)
    monkeypatch.setattr(conv_direct, "vector_isa", lambda: isa)
    assert conv_direct.loop_passes(dict(nr=nr), rows, columns) is want


def test_annotated_kernel_takes_the_light_pipeline():
    """The build's pipeline choice follows the annotation on a 1 -> 12 7x7 conv at 112x112 (a
    12 x 32 tile, 7 columns unrolled), and not on its 3x3 sibling."""
    for k, want in ((7, True), (3, False)):
        lib, _, _ = build_conv((1, 1, 112, 112), 12, k, pads=(k // 2, k // 2),
                               rng=np.random.default_rng(0))
        func = _conv_kernel(lib).prim_func
        marked = any(isinstance(s, S.For) and s.annotations.get(cg.LOOP_PASSES)
                     for s in walk_stmts(func.body))
        assert marked is (want and AVX512)
        if marked:
            assert cg.ir_pipeline_level(func, 3) == cg.LIGHT_PIPELINE_LEVEL


@pytest.mark.skipif(not AVX512, reason="the 12 x 32 tile is AVX-512's")
def test_seven_column_tile_keeps_its_accumulators_in_registers():
    """1 -> 12 7x7 at 112x112: the minimal pipeline's code spilled its 24 accumulators to the
    stack and back each filter row (60 stack moves a row); the light one's filter-row loop has
    7 x 24 register FMAs and no stack access. Outputs match numpy."""
    rng = np.random.default_rng(1)
    lib, inputs, want = build_conv((1, 1, 112, 112), 12, 7, pads=(3, 3), rng=rng)
    func = _conv_kernel(lib).prim_func
    level = cg.ir_pipeline_level(func, 3)
    asm = jit.assembly(CodeGenLLVM(func, "kern", fast_math=True, gomp=False).generate(), level)
    rows = [b for b in fma_loops(asm) if b.count("vfmadd") == 7 * 24]
    assert rows, [b.count("vfmadd") for b in fma_loops(asm)]
    for b in rows:
        assert "rsp" not in b and "rbp" not in b  # no spill / reload
    np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)


def test_light_pipeline_tiles_match_numpy():
    """A 5x5 and a 7x7 conv whose tiles take the light pipeline, in bands and not, with a
    residual epilogue: the outputs match numpy."""
    rng = np.random.default_rng(2)
    for shape, o, k, epi in (((1, 32, 96, 96), 12, 5, "residual_relu"),  # (bands)
                             ((2, 3, 48, 48), 24, 7, "bias_relu")):
        lib, inputs, want = build_conv(shape, o, k, pads=(k // 2, k // 2), epi=epi, rng=rng)
        np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)


def _conv_stage(k):
    """The conv2d stage of a 16 -> 64 ``k`` conv at 32x32."""
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=(1, 16, 32, 32)), relay.var("w", shape=(64, 16, *k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, padding=(k[0] // 2, k[1] // 2)))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


@pytest.mark.parametrize("cpu, k, want", [
    ("rocketlake", (5, 5), (14, 32)), ("rocketlake", (1, 7), (14, 32)),
    ("rocketlake", (3, 3), None), ("rocketlake", (7, 1), None), ("sapphirerapids", (5, 5), None)])
def test_wide_filter_tile_by_host(cpu, k, want, monkeypatch):
    """Filters of 5 or more columns take ``WIDE_FILTER_TILE``'s tile on a Rocket Lake host;
    other filters and hosts the ISA's (``TILES``)."""
    monkeypatch.setattr(jit, "host_cpu", lambda: (cpu, "+avx512f,+avx2"))
    monkeypatch.setattr(common, "vector_isa", lambda: "avx512")
    monkeypatch.setattr(conv_direct, "vector_isa", lambda: "avx512")
    assert conv_direct.default_tile(_conv_stage(k)) == (want or conv_direct.TILES["avx512"])


@pytest.mark.parametrize("o", [64, 32])
def test_fourteen_row_tiles_match_numpy(o, monkeypatch):
    """14-row tiles with their short tails (64 channels: 14 x 4 + 8; 32: 14 + two of 9) of a
    5x5 conv with a residual epilogue match numpy."""
    monkeypatch.setattr(conv_direct, "WIDE_FILTER_TILE",
                        {"avx512": (14, 32), "avx2": None, "rocketlake": (14, 32)})
    lib, inputs, want = build_conv((1, 8, 48, 48), o, 5, pads=(2, 2), epi="residual_relu",
                                   rng=np.random.default_rng(3))
    if AVX512:
        rows = {int(s.buffer.shape[0]) for s in walk_stmts(_conv_kernel(lib).prim_func.body)
                if isinstance(s, S.DeclBuffer) and s.buffer.name == "acc"}
        assert 14 in rows
    np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cpu, kw, want", [
    ("rocketlake", 5, True), ("rocketlake", 7, True), ("rocketlake", 3, True),
    ("sapphirerapids", 5, False), ("sapphirerapids", 3, True)])
def test_lanes_columns_unrolled_by_host(cpu, kw, want, monkeypatch):
    """``conv_lanes`` unrolls filters of up to 7 columns by default on a Rocket Lake host
    (``UNROLL_COLUMNS``), up to 3 elsewhere (``UNROLL_TAPS``)."""
    monkeypatch.setattr(jit, "host_cpu", lambda: (cpu, "+avx512f,+avx2"))
    monkeypatch.setattr(common, "vector_isa", lambda: "avx512")
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    g = conv_lanes.geometry(_conv_stage((kw, kw)))
    assert conv_lanes.default_knobs(g)["lanes_unroll_kx"] is want


def test_lanes_unrolled_columns_match_numpy(monkeypatch):
    """A 5x5 and a 7x7 conv on ``conv_lanes`` (output planes not whole vectors) with their
    columns unrolled, 32- and 64-channel tiles, batch 2: the outputs match numpy."""
    monkeypatch.setattr(conv_lanes, "UNROLL_COLUMNS", {"rocketlake": 7, "avx512": 7, "avx2": 7})
    rng = np.random.default_rng(4)
    for shape, o, k in (((2, 16, 20, 20), 64, 5), ((1, 8, 18, 18), 32, 7)):
        lib, inputs, want = build_conv(shape, o, k, pads=(k // 2, k // 2), rng=rng)
        np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=1e-4, atol=1e-4)

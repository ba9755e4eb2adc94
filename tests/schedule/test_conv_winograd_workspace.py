"""``conv_winograd``'s band scratch (``wg_x``, ``wg_v``, ``wg_m``) is a slice of the kernel's
workspace, not an allocation per band (malloc'd and freed per band per call before): bands on
the pool run on one slice per thread of the call (at most ``SCRATCH_SLOTS`` slices), the others
share one. The convs match a float64 reference at 1, 2 and 3 threads, also with fewer slices
than threads and more bands than slices."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, conv_prim, run_graph

from minitvm.backend import kernel_cache
from minitvm.schedule import conv_winograd
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

BAND_BUFFERS = ("wg_x", "wg_v", "wg_m")


@pytest.fixture
def fresh_kernels():
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _band_views(prim) -> dict:
    """{name: buffer} of the band scratch declared in ``prim``."""
    return {s.buffer.name: s.buffer for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name in BAND_BUFFERS}


def _threads_lets(prim) -> list:
    """The LetStmts binding the thread count a band loop runs on."""
    return [s for s in walk_stmts(prim.body) if isinstance(s, S.LetStmt) and
            isinstance(s.value, E.Min) and isinstance(s.value.a, E.Call) and
            s.value.a.op_name == "tir.num_threads"]


# (input shape, output channels, slices of the workspace): bands on the pool (5 of them on
# AVX-512, 7 of AVX2's narrower tiles), the channel loops on the pool instead (one band), 2
# images x 5 or 7 bands (more than SCRATCH_SLOTS)
SHAPES = [((1, 64, 56, 56), 64, {"avx512": 5, "avx2": 7}), ((1, 128, 28, 28), 128, 1),
          ((2, 64, 56, 56), 64, 8)]


@pytest.mark.parametrize("shape,o,slices", SHAPES)
def test_band_scratch_is_a_workspace_slice(shape, o, slices, fresh_kernels):
    if isinstance(slices, dict):
        slices = slices[conv_winograd.vector_isa()]
    lib, _, _ = build_conv(shape, o, 3, epi="residual_relu")
    prim = conv_prim(lib)
    views = _band_views(prim)
    assert set(views) == set(BAND_BUFFERS)  # the conv runs on Winograd
    ws = prim.params[-1]
    assert ws.name == "workspace"
    assert all(b.data is ws for b in views.values())
    allocated = {id(s.buffer_var) for s in walk_stmts(prim.body) if isinstance(s, S.Allocate)}
    assert id(ws) not in allocated
    per_slice = 4 * sum(int(b.shape[0]) for b in views.values())
    assert conv_kernel(lib).ws_bytes >= slices * per_slice
    lets = _threads_lets(prim)
    if slices == 1:  # one slice, no loop over threads
        assert not lets and conv_kernel(lib).ws_bytes < 2 * per_slice
    else:
        (let,) = lets
        assert int(let.value.b) == slices
        assert isinstance(let.body, S.For) and let.body.kind == S.ForKind.PARALLEL


@pytest.mark.parametrize("shape,o,slots", [((1, 64, 56, 56), 64, 2), ((2, 64, 56, 56), 64, 8)])
def test_sliced_scratch_matches_reference_per_thread_count(shape, o, slots, monkeypatch,
                                                            fresh_kernels):
    monkeypatch.setattr(conv_winograd, "SCRATCH_SLOTS", slots)
    lib, inputs, want = build_conv(shape, o, 3, epi="residual_relu")
    assert _band_views(conv_prim(lib))
    scale = np.max(np.abs(want))
    for threads in (1, 2, 3):
        got = run_graph(lib, inputs, threads)
        np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=5e-5)

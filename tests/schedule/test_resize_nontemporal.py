"""The resize schedule's non-temporal output (``schedule/resize.py``, ``NONTEMPORAL_MIN_BYTES``):
an output of at least that many bytes (by host) is written under a ``NONTEMPORAL_STORE``
scope, both forms (rows first, rows last with the 2x pairs); smaller outputs, a fused
epilogue's temporary and hosts switched off are not. The values equal the ordinary build's,
bit for bit, at aligned and misaligned output addresses, and the reference."""

import platform

import numpy as np
import pytest
from relay_build import run_against_interpreter

from minitvm import codegen, relay, te
from minitvm.codegen.llvm.stmt import NONTEMPORAL_STORE
from minitvm.schedule import lower_te
from minitvm.schedule import resize as rs
from minitvm.schedule.common import host_key
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi import image_resize

x86 = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                         reason="non-temporal stores: x86 only")


@pytest.fixture
def streaming(monkeypatch):
    """Non-temporal stores from ``least`` bytes on this host: ``streaming(least)``."""

    def set_least(least):
        table = dict(rs.NONTEMPORAL_MIN_BYTES)
        table[host_key(table)] = least
        monkeypatch.setattr(rs, "NONTEMPORAL_MIN_BYTES", table)

    return set_least


def _lowered(shape, size, **kw):
    x = te.placeholder(shape, name="x")
    t = image_resize.resize(x, (2, 3), size, **kw)
    f, _ = lower_te([x], [t], "f")
    return f


def _scopes(f) -> list:
    return [s for s in walk_stmts(f.body)
            if isinstance(s, S.AttrStmt) and s.attr_key == NONTEMPORAL_STORE]


def _out(shape, shift_bytes):
    size = int(np.prod(shape)) * 4
    raw = np.empty(size + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + shift_bytes
    out = raw[start:start + size].view(np.float32).reshape(shape)
    out[:] = np.nan
    return out


CASES = [
    ((1, 21, 32, 32), (256, 256), {}),                                  # deeplab's 8x: rows first
    ((1, 3, 7, 11), (19, 23), {"method": "cubic"}),                     # odd rows, ragged rows
    ((2, 3, 16, 40), (32, 80), {}),                                     # the 2x pair form
    ((1, 2, 9, 30), (5, 17), {"coordinate_transformation_mode": "align_corners"}),  # shrinks
    ((1, 4, 6, 6), (13, 50), {"method": "nearest_neighbor"}),
]


@pytest.mark.parametrize("shape,size,kw", CASES)
def test_large_outputs_take_the_scope(streaming, shape, size, kw):
    out_bytes = int(np.prod(shape[:2])) * size[0] * size[1] * 4
    streaming(out_bytes)
    f = _lowered(shape, size, **kw)
    (scope,) = _scopes(f)
    assert scope.node is f.buffer_map[f.params[-1]].data  # the output's stores
    streaming(out_bytes + 1)
    assert not _scopes(_lowered(shape, size, **kw))
    streaming(None)
    assert not _scopes(_lowered(shape, size, **kw))


@x86
@pytest.mark.parametrize("shape,size,kw", CASES)
@pytest.mark.parametrize("shift", [0, 4, 32])
def test_values_equal_the_ordinary_build(streaming, shape, size, kw, shift):
    x = np.random.default_rng(3).standard_normal(shape).astype("float32")
    oshape = (*shape[:2], *size)
    streaming(None)
    want = _out(oshape, 0)
    codegen.build(_lowered(shape, size, **kw))["f"](x, want)
    streaming(1)
    f = _lowered(shape, size, **kw)
    assert _scopes(f)
    kernel = codegen.build(f)
    assert "!nontemporal" in kernel.get_source("ll")
    got = _out(oshape, shift)
    kernel["f"](x, got)
    np.testing.assert_array_equal(got, want)


@x86
def test_relay_build_against_the_interpreter(streaming, tmp_path, monkeypatch):
    """Through relay.build (the stage's output buffer; a fused epilogue applied in the store),
    against the interpreter, with the threshold below the outputs."""
    from minitvm.backend import kernel_cache

    streaming(1)
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / "cache"))
    kernel_cache.clear_cache()
    try:
        rng = np.random.default_rng(4)
        x = rng.standard_normal((1, 5, 9, 12)).astype("float32")
        got, want = run_against_interpreter(lambda a: relay.nn.relu(relay.image.resize2d(
            a, (37, 61))), x)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
        got, want = run_against_interpreter(lambda a: relay.image.resize2d(
            a, (18, 24), method="nearest_neighbor"), x)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    finally:
        kernel_cache.clear_cache()


def test_default_is_off_except_where_measured():
    assert rs.NONTEMPORAL_MIN_BYTES["avx512"] is None and rs.NONTEMPORAL_MIN_BYTES["avx2"] is None
    assert set(rs.NONTEMPORAL_MIN_BYTES) == {"rocketlake", "avx512", "avx2"}

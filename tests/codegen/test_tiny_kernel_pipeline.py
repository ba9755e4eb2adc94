"""Tiny static scalar kernels (``codegen.build.TINY_KERNEL_WORK``) skip LLVM's O3 pipeline: the
minimal one when very small with nothing to hoist out of a loop, else the light one (O1);
kernels with more work or a run-time size keep O3. Each computes what numpy does."""

import sys

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import jit

cg = sys.modules[codegen.__name__ + ".build"]  # the module (``codegen.build`` is the function)
F32 = "float32"


def _scale_add(rows, cols: int = 8):
    """``B[i, j] = A[i, j] * 3 + A[i, 0]``, scalar loops; ``rows`` an int or a ``tir.Var``
    (then a parameter: a run-time size)."""
    A = tir.decl_buffer((rows, cols), F32, "A")
    B = tir.decl_buffer((rows, cols), F32, "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    body = tir.For(i, 0, rows, 0, tir.For(j, 0, cols, 0, tir.BufferStore(
        B, A[i, j] * tir.const(3.0, F32) + A[i, 0], [i, j])))
    params = [A, B] if isinstance(rows, int) else [A, B, rows]
    return tir.PrimFunc(params, body, attrs={"tir.noalias": True})


def _row_sums(rows: int, cols: int):
    """``S[i] = sum_j A[i, j]`` accumulated in ``S[i]``: an access LLVM's LICM keeps in a
    register."""
    A = tir.decl_buffer((rows, cols), F32, "A")
    S = tir.decl_buffer((rows,), F32, "S")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    body = tir.For(i, 0, rows, 0, tir.SeqStmt([
        tir.BufferStore(S, tir.const(0.0, F32), [i]),
        tir.For(j, 0, cols, 0, tir.BufferStore(S, S[i] + A[i, j], [i]))]))
    return tir.PrimFunc([A, S], body, attrs={"tir.noalias": True})


def _bounded_by(n: tir.Var):
    """Static buffers, but the loop runs ``min(n, 4)`` times: a run-time extent."""
    A = tir.decl_buffer((4, 8), F32, "A")
    B = tir.decl_buffer((4, 8), F32, "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    body = tir.For(i, 0, tir.Min(n, 4), 0, tir.For(j, 0, 8, 0, tir.BufferStore(
        B, A[i, j] * tir.const(3.0, F32) + A[i, 0], [i, j])))
    return tir.PrimFunc([A, B, n], body, attrs={"tir.noalias": True})


def test_static_work_counts_every_statement_per_iteration():
    # the outer loop once, the inner loop 4 times, the store 4 * 8 times
    assert cg.static_work(_scale_add(4), 10**6) == 1 + 4 + 32
    # seq + zeroing store per row, inner loop per row, accumulation per element
    assert cg.static_work(_row_sums(4, 16), 10**6) == 1 + 4 * (1 + 1 + 1) + 4 * 16
    assert cg.static_work(_scale_add(4), 36) is None  # over the limit
    assert cg.static_work(_scale_add(tir.Var("n", "int32")), 10**6) is None  # run-time shape
    assert cg.static_work(_bounded_by(tir.Var("n", "int32")), 10**6) is None  # run-time extent


def test_tiny_static_kernels_take_a_light_pipeline(monkeypatch):
    assert cg.ir_pipeline_level(_scale_add(4), 3) == jit.MINIMAL_PIPELINE  # nothing to hoist
    assert cg.ir_pipeline_level(_row_sums(4, 16), 3) == cg.LIGHT_PIPELINE_LEVEL  # S[i]
    # 1641 statements: past MINIMAL_KERNEL_WORK, O1 bounds what each call loses
    assert cg.ir_pipeline_level(_scale_add(40, 40), 3) == cg.LIGHT_PIPELINE_LEVEL
    # the threshold itself is inside the tier, one statement more is not
    work = cg.static_work(_scale_add(4), 10**6)
    monkeypatch.setattr(cg, "TINY_KERNEL_WORK", work)
    assert cg.ir_pipeline_level(_scale_add(4), 3) == jit.MINIMAL_PIPELINE
    monkeypatch.setattr(cg, "TINY_KERNEL_WORK", work - 1)
    assert cg.ir_pipeline_level(_scale_add(4), 3) == 3


def test_large_or_symbolic_kernels_keep_the_full_pipeline():
    assert cg.ir_pipeline_level(_scale_add(128, 64), 3) == 3  # 8K stores: LLVM vectorizes it
    assert cg.ir_pipeline_level(_row_sums(64, 128), 3) == 3
    assert cg.ir_pipeline_level(_scale_add(tir.Var("n", "int32")), 3) == 3
    assert cg.ir_pipeline_level(_bounded_by(tir.Var("n", "int32")), 3) == 3
    # never raised above the level asked for
    assert cg.ir_pipeline_level(_scale_add(4), 1) == 1
    assert cg.ir_pipeline_level(_scale_add(4), 0) == 0


@pytest.mark.parametrize("make, level", [
    (lambda: _scale_add(4), jit.MINIMAL_PIPELINE),  # minimal pipeline path
    (lambda: _row_sums(4, 16), cg.LIGHT_PIPELINE_LEVEL),  # light pipeline path
], ids=["minimal", "light"])
def test_tiny_kernels_compute_what_numpy_does(make, level, fresh, rng):
    func = make()
    kernel, _ = cg.compile_prim_func(func, "f", object_cache=fresh)
    assert cg.object_code(kernel._compiled.symbol)[1] == level  # compiled in the tier
    shapes = [tuple(int(d) for d in b.shape) for b in func.buffer_map.values()]
    a = rng.standard_normal(shapes[0]).astype(F32)
    out = np.zeros(shapes[1], F32)
    kernel(a, out)
    want = a.sum(axis=1) if level == cg.LIGHT_PIPELINE_LEVEL else a * 3 + a[:, :1]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    # and as O3 computes it
    sym = f"tiny_o3_{level}"
    ir = cg.CodeGenLLVM(func, sym).generate()
    full = jit.compile_ir(ir, sym, 3, cg.MACHINE_CODE_LEVEL)
    o3 = np.zeros_like(out)
    cg.KernelFunction("f", cg.KernelSignature(func, "f"), full.address, full)(a, o3)
    np.testing.assert_allclose(out, o3, rtol=1e-6, atol=1e-6)

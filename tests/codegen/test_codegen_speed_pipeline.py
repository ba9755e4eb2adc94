"""Compile-speed paths of the code generator: explicitly vectorized kernels take the minimal
LLVM IR pipeline, or the light one when they have loop-invariant accesses worth hoisting (same
results as the full one), object code is remembered per symbol for the
whole-build cache, and ``runtime.jit.load_objects`` links several kernels into one engine."""

import sys

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import jit

cg = sys.modules[codegen.__name__ + ".build"]  # the module (``codegen.build`` is the function)


def _kernel(vectorized: bool, lanes: int = 8, scale: float = 3.0):
    """``B[i, j] = A[i, j] * scale + A[i, 0]`` with the inner loop vectorized or serial."""
    A = tir.decl_buffer((4, lanes), "float32", "A")
    B = tir.decl_buffer((4, lanes), "float32", "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    kind = tir.ForKind.VECTORIZED if vectorized else tir.ForKind.SERIAL
    body = tir.For(i, 0, 4, 0, tir.For(j, 0, lanes, kind, tir.BufferStore(
        B, A[i, j] * tir.const(scale, "float32") + A[i, 0], [i, j])))
    return tir.PrimFunc([A, B], body, attrs={"tir.noalias": True})


def _row_sums(lanes: int = 8):
    """``S[i] = sum_j A[i, j]``: the inner loop reads and writes ``S[i]`` in every iteration,
    a store LLVM's loop passes keep in a register."""
    A = tir.decl_buffer((4, 4 * lanes), "float32", "A")
    S = tir.decl_buffer((4,), "float32", "S")
    i, j, v = tir.Var("i", "int32"), tir.Var("j", "int32"), tir.Var("v", "int32")
    body = tir.For(i, 0, 4, 0, tir.SeqStmt([
        tir.BufferStore(S, tir.const(0.0, "float32"), [i]),
        tir.For(j, 0, 4, 0, tir.For(v, 0, lanes, tir.ForKind.SERIAL, tir.BufferStore(
            S, S[i] + A[i, j * lanes + v], [i])))]))
    mark = tir.decl_buffer((lanes,), "float32", "M")  # (a vectorized loop somewhere)
    k = tir.Var("k", "int32")
    body = tir.SeqStmt([body, tir.For(k, 0, lanes, tir.ForKind.VECTORIZED,
                                      tir.BufferStore(mark, A[0, k], [k]))])
    return tir.PrimFunc([A, S, mark], body, attrs={"tir.noalias": True})


def _symbolic(extent_only: bool):
    """``B[i, j] = A[i, j] * 2`` over ``n`` rows: a symbolic loop extent, and (unless
    ``extent_only``) symbolic buffer shapes."""
    n = tir.Var("n", "int32")
    rows = 4 if extent_only else n
    A = tir.decl_buffer((rows, 8), "float32", "A")
    B = tir.decl_buffer((rows, 8), "float32", "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    body = tir.For(i, 0, tir.Min(n, 4) if extent_only else n, 0, tir.For(
        j, 0, 8, tir.ForKind.VECTORIZED, tir.BufferStore(B, A[i, j] * tir.const(2.0, "float32"),
                                                         [i, j])))
    params = [A, B] if not extent_only else [A, B, n]
    return tir.PrimFunc(params, body, attrs={"tir.noalias": True})


def test_pipeline_level_follows_explicit_vectorization(monkeypatch):
    # these 4 x 8 kernels are tiny (tests/codegen/test_tiny_kernel_pipeline.py): with the tiny
    # tier off they stand for kernels of any static size
    monkeypatch.setattr(cg, "TINY_KERNEL_WORK", 0)
    assert cg.ir_pipeline_level(_kernel(True), 3) == jit.MINIMAL_PIPELINE  # nothing to hoist
    assert cg.ir_pipeline_level(_row_sums(), 3) == cg.LIGHT_PIPELINE_LEVEL  # S[i] to hoist
    # symbolic sizes: run-time strides and bounds for LLVM's loop passes to hoist (a Relax
    # BERT layer of symbolic length ran 10x slower without them)
    assert cg.ir_pipeline_level(_symbolic(True), 3) == cg.LIGHT_PIPELINE_LEVEL
    assert cg.ir_pipeline_level(_symbolic(False), 3) == cg.LIGHT_PIPELINE_LEVEL
    assert cg.ir_pipeline_level(_kernel(False), 3) == 3  # LLVM may vectorize it: full pipeline
    assert cg.ir_pipeline_level(_kernel(True), 0) == 0  # never raised above the request
    assert cg.ir_pipeline_level(_kernel(True), 1) == 1
    monkeypatch.setattr(cg, "HUGE_FUNCTION_STMTS", 1)
    assert cg.ir_pipeline_level(_kernel(True), 3) == 0  # huge: O0 as before


def test_loop_passes_annotation_asks_for_the_light_pipeline(monkeypatch):
    """A static vectorized kernel with nothing to hoist takes the minimal pipeline unless one
    of its loops carries ``LOOP_PASSES`` (conv_direct's register-bound tiles)."""
    monkeypatch.setattr(cg, "TINY_KERNEL_WORK", 0)
    plain = _kernel(True)
    loop = plain.body
    marked = tir.PrimFunc(plain.params, tir.For(loop.loop_var, loop.min, loop.extent, loop.kind,
                                                loop.body, annotations={cg.LOOP_PASSES: True}),
                          buffer_map=plain.buffer_map, attrs=plain.attrs)
    assert cg.ir_pipeline_level(plain, 3) == jit.MINIMAL_PIPELINE
    assert cg.ir_pipeline_level(marked, 3) == cg.LIGHT_PIPELINE_LEVEL
    assert cg.ir_pipeline_level(marked, 1) == 1  # never raised above the request


@pytest.mark.parametrize("vectorized", [True, False])
def test_light_and_full_pipeline_compute_the_same(vectorized, fresh, rng):
    a = rng.standard_normal((4, 8)).astype("float32")
    outs = []
    for level in (3, cg.LIGHT_PIPELINE_LEVEL, jit.MINIMAL_PIPELINE):
        sym = f"speed_k{level}{int(vectorized)}"
        compiled, obj = jit.compile_ir_to_object(cg.CodeGenLLVM(_kernel(vectorized), sym)
                                                 .generate(), sym, level, codegen_opt=3)
        assert obj and compiled.address
        f = cg.KernelFunction("f", cg.KernelSignature(_kernel(vectorized), "f"),
                              compiled.address, compiled)
        b = np.empty_like(a)
        f(a, b)
        outs.append(b)
    np.testing.assert_array_equal(outs[0], outs[1])  # bit for bit
    np.testing.assert_array_equal(outs[0], outs[2])
    # and through compile_prim_func, which picks the level itself
    k, _ = cg.compile_prim_func(_kernel(vectorized), "f", object_cache=fresh)
    b = np.empty_like(a)
    k(a, b)
    np.testing.assert_allclose(b, a * 3 + a[:, :1], rtol=1e-6)


def test_object_code_is_remembered_only_with_a_disk_cache(fresh):
    k, _ = cg.compile_prim_func(_kernel(True, scale=5.0), "f")
    assert cg.object_code(k._compiled.symbol) is None  # compiled without an object cache
    cg.clear_cache()
    k, _ = cg.compile_prim_func(_kernel(True, scale=5.0), "f", object_cache=fresh)
    obj, level = cg.object_code(k._compiled.symbol)
    assert isinstance(obj, bytes) and obj and level == jit.MINIMAL_PIPELINE
    cg.clear_cache()  # loaded back from disk: remembered too, with the same level
    k2, _ = cg.compile_prim_func(_kernel(True, scale=5.0), "f", object_cache=fresh)
    assert k2._compiled.from_disk and cg.object_code(k2._compiled.symbol) == (obj, level)
    assert "fmul" in k2._compiled.optimized_ir  # recomputed at the same level


def test_load_objects_links_several_kernels_into_one_engine(fresh, rng):
    items = []
    for n, scale in enumerate((2.0, 7.0)):
        sym = f"speed_multi_{n}"
        ir = cg.CodeGenLLVM(_kernel(True, scale=scale), sym).generate()
        _, obj = jit.compile_ir_to_object(ir, sym, 1, codegen_opt=3)
        items.append((obj, sym, ir, 1, jit.external_symbols(ir)))
    loaded = jit.load_objects(items)
    assert loaded[0].engine is loaded[1].engine and loaded[0].address != loaded[1].address
    a = rng.standard_normal((4, 8)).astype("float32")
    for c, scale in zip(loaded, (2.0, 7.0)):
        f = cg.KernelFunction("f", cg.KernelSignature(_kernel(True), "f"), c.address, c)
        b = np.empty_like(a)
        f(a, b)
        np.testing.assert_allclose(b, a * scale + a[:, :1], rtol=1e-6)
    with pytest.raises(ValueError, match="unknown symbols"):
        jit.load_objects([(items[0][0], items[0][1], None, 1, ["mtvm_no_such_symbol"])])
    with pytest.raises(ValueError, match="defines no symbol"):
        jit.load_objects([(items[0][0], "mtvm_not_in_it", None, 1, [])])


def test_row_sums_compute_the_same_at_every_level(fresh, rng):
    a = rng.standard_normal((4, 32)).astype("float32")
    outs = []
    for level in (3, cg.LIGHT_PIPELINE_LEVEL, jit.MINIMAL_PIPELINE):
        sym = f"rowsum_k{level}"
        compiled, _ = jit.compile_ir_to_object(cg.CodeGenLLVM(_row_sums(), sym).generate(), sym,
                                               level, codegen_opt=3)
        f = cg.KernelFunction("f", cg.KernelSignature(_row_sums(), "f"), compiled.address,
                              compiled)
        s, m = np.empty(4, "float32"), np.empty(8, "float32")
        f(a, s, m)
        outs.append(s)
        np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-5)
        np.testing.assert_array_equal(m, a[0, :8])
    np.testing.assert_array_equal(outs[0], outs[1])


def _clipped_window(bound_by_param: bool = False):
    """``B[i, d, :] = A[i + d - 1, :]`` for the rows ``i + d - 1`` of a 3-row window inside
    ``[0, 6)``, zeros elsewhere: a window clipped at the borders, as a padded convolution's, its
    loop bounds computed from the enclosing loop variable (or, with ``bound_by_param``, also
    from a parameter ``n``: a run-time size)."""
    A = tir.decl_buffer((6, 8), "float32", "A")
    B = tir.decl_buffer((6, 24), "float32", "B")
    i, k, j = tir.Var("i", "int32"), tir.Var("k", "int32"), tir.Var("j", "int32")
    lo = tir.Max(i - 1, 0)
    hi = tir.Var("hi", "int32")
    copy = tir.BufferStore(B, A[k, j], [i, (k - i + 1) * 8 + j])
    window = tir.For(k, lo, hi - lo, tir.ForKind.SERIAL,
                     tir.For(j, 0, 8, tir.ForKind.VECTORIZED, copy))
    n = tir.Var("n", "int32")
    top = tir.Min(n, 6) if bound_by_param else tir.const(6, "int32")
    body = tir.For(i, 0, 6, tir.ForKind.SERIAL, tir.SeqStmt([
        tir.For(j, 0, 24, tir.ForKind.VECTORIZED,
                tir.BufferStore(B, tir.const(0.0, "float32"), [i, j])),
        tir.LetStmt(hi, tir.Min(i + 2, top), window)]))
    params = [A, B, n] if bound_by_param else [A, B]
    return tir.PrimFunc(params, body, attrs={"tir.noalias": True})


def test_loops_bounded_by_computed_values_take_the_minimal_pipeline():
    # bounds from an enclosing loop variable (through a let): nothing run-time to hoist
    assert cg.ir_pipeline_level(_clipped_window(), 3) == jit.MINIMAL_PIPELINE
    # a bound that depends on a parameter is a run-time size: the light pipeline, as before
    assert cg.ir_pipeline_level(_clipped_window(bound_by_param=True), 3) == \
        cg.LIGHT_PIPELINE_LEVEL


def test_clipped_window_computes_the_same_at_every_level(fresh, rng):
    a = rng.standard_normal((6, 8)).astype("float32")
    want = np.zeros((6, 3, 8), "float32")
    for i in range(6):
        for d in range(3):
            if 0 <= i + d - 1 < 6:
                want[i, d] = a[i + d - 1]
    want = want.reshape(6, 24)
    outs = []
    for level in (3, cg.LIGHT_PIPELINE_LEVEL, jit.MINIMAL_PIPELINE):
        sym = f"clipped_k{level}"
        compiled, _ = jit.compile_ir_to_object(cg.CodeGenLLVM(_clipped_window(), sym).generate(),
                                               sym, level, codegen_opt=3)
        f = cg.KernelFunction("f", cg.KernelSignature(_clipped_window(), "f"), compiled.address,
                              compiled)
        b = np.full((6, 24), np.nan, "float32")
        f(a, b)
        np.testing.assert_array_equal(b, want)
        outs.append(b)
    np.testing.assert_array_equal(outs[0], outs[2])


def _plain_assembly(ir_text: str) -> str:
    """Host assembly of ``ir_text`` at the minimal pipeline, generated outside
    ``jit.codegen_options`` (LLVM's default code generator options)."""
    with jit._LOCK:
        jit.init()
        tm = jit.target_machine(3)
        mod = jit._parse(ir_text, tm)
        jit.optimize(mod, tm, jit.MINIMAL_PIPELINE)
        return tm.emit_assembly(mod)


def test_codegen_options_hold_inside_the_jit_only(monkeypatch):
    """The kernels' code generator options (no post-RA scheduler) change the machine code the
    JIT emits, and LLVM's defaults are back for anyone else afterwards. The assembly is for a
    Zen 4 (whose scheduling model runs the post-RA scheduler; Intel models such as Rocket Lake
    do not, so there the option changes nothing to see); it is only printed, never run."""
    monkeypatch.setattr(jit, "host_cpu", lambda: ("znver4", ""))
    ir = cg.CodeGenLLVM(_kernel(True, lanes=64), "speed_opts").generate()
    before = _plain_assembly(ir)
    ours = jit.assembly(ir, jit.MINIMAL_PIPELINE)
    assert ours != before  # the options took effect (instruction order)
    assert _plain_assembly(ir) == before  # and were switched off again


def test_kernels_machine_code_level_is_capped(fresh, monkeypatch):
    """Kernels' machine code is generated at ``MACHINE_CODE_LEVEL`` (not the IR pipeline's
    level), and still computes the same."""
    seen = []
    compile_ir_to_object = jit.compile_ir_to_object

    def spy(ir_text, symbol, opt=3, codegen_opt=None):
        seen.append((opt, codegen_opt))
        return compile_ir_to_object(ir_text, symbol, opt, codegen_opt)

    monkeypatch.setattr(jit, "compile_ir_to_object", spy)
    k, _ = cg.compile_prim_func(_kernel(True, scale=11.0), "f", object_cache=fresh)
    assert seen == [(jit.MINIMAL_PIPELINE, min(3, cg.MACHINE_CODE_LEVEL))]
    a = np.arange(32, dtype="float32").reshape(4, 8)
    b = np.empty_like(a)
    k(a, b)
    np.testing.assert_allclose(b, a * 11 + a[:, :1], rtol=1e-6)

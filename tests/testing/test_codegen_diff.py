"""testing.codegen_diff: a kernel's machine code at several codegen levels, compared bit for bit.

The full corpus run is scripts/codegen_diff_corpus.py; here a few kernels, each well under a
second: the flag stripping, random inputs, aliased buffers, whole programs through the twin
kernels, and a real LLVM 22.1 miscompile (llvm-project#198197) found by the no-AVX-512VL variant
once the JIT's own check of it is switched off."""

import llvmlite.binding as llvm
import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te
from minitvm.contrib import graph_executor
from minitvm.runtime import jit
from minitvm.testing import codegen_diff as cd


def test_exact_ir_drops_every_fast_math_flag_and_nothing_else():
    text = ('  %a = fadd contract float %x, %y\n  %b = fmul reassoc nsz contract <4 x float> %p, %q\n'
            '  %c = call fast float @llvm.exp.f32(float %a)\n  %d = fcmp nnan ninf olt float %a, %c\n'
            '  call fastcc void @contractor(ptr %"contract.buf")\n')
    assert cd.exact_ir(text) == (
        '  %a = fadd float %x, %y\n  %b = fmul <4 x float> %p, %q\n'
        '  %c = call float @llvm.exp.f32(float %a)\n  %d = fcmp olt float %a, %c\n'
        '  call fastcc void @contractor(ptr %"contract.buf")\n')


def test_random_args_hold_special_values():
    a = te.placeholder((64,), name="a")
    i = te.placeholder((64,), name="i", dtype="int32")
    b = te.compute((64,), lambda k: a[k] * 2.0, name="b")
    fa, fi, _ = cd.random_args(te.create_prim_func([a, i, b]), seed=3)
    assert np.isnan(fa).any() and np.isinf(fa).any() and (fa == 0).any() and (fa < 0).any()
    assert fi.dtype == np.int32 and fi.min() < 0 <= fi.max() and (fi == 0).any()


def test_levels_agree_on_a_fused_multiply_add_and_a_reduction():
    """FMA contraction and sums: the IR as built at levels 1 and 3, and without fast-math
    flags at 1, 3, 0 (and without AVX-512VL), give the same bits on inputs with NaN, inf, -0.0,
    but for NaN payloads (IEEE leaves them open: x86 propagates the first operand's, and the
    levels order some operands differently)."""
    a = te.placeholder((9, 17), name="a")
    w = te.placeholder((17,), name="w")
    k = te.reduce_axis((0, 17), name="k")
    fma = te.compute((9, 17), lambda r, c: a[r, c] * w[c] + a[r, c], name="fma")
    s = te.compute((9,), lambda r: te.sum(fma[r, k] * w[k], axis=k), name="s")
    found = cd.check_prim_func(te.create_prim_func([a, w, s]), pipeline=1, seed=1)
    assert [d for d in found if not d.nan_only] == []


def test_aliased_buffers_share_one_copy():
    """An in-place kernel (its input and output one array) runs on one copy of that memory at
    every level, and the caller's array is left as it was."""
    a = te.placeholder((40,), name="a", dtype="int32")
    b = te.compute((40,), lambda k: a[k] * 3 - 1, name="b")
    func = te.create_prim_func([a, b])
    x = np.arange(-20, 20, dtype=np.int32)
    before = x.copy()
    assert cd.check_ir(*_generated(func), func, [x, x]) == []
    np.testing.assert_array_equal(x, before)


def _generated(func):
    from minitvm.codegen.llvm.codegen import CodeGenLLVM

    return CodeGenLLVM(func, "mtvm_test_codegen_diff", gomp=False).generate(), \
        "mtvm_test_codegen_diff"


def test_twin_kernels_check_a_program_and_keep_its_results():
    """Every kernel relay.build compiles inside is checked on its first calls; the program's
    outputs are its own code's (numpy's here)."""
    x = relay.var("x", shape=(8, 24), dtype="float32")
    y = relay.nn.relu(relay.exp(x) * relay.const(2.0625) - x)  # (a kernel of its own)
    config = {"relay.backend.use_disk_cache": False}
    with cd.twin_kernels(per_kernel=1) as session, \
            tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
        g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        data = np.random.default_rng(0).standard_normal((8, 24)).astype("float32")
        for _ in range(2):
            g.set_input("x", data)
            g.run()
    if session.kernels == 0:
        pytest.skip("the kernel came from a code cache (built earlier in this process)")
    assert session.calls == session.kernels  # (one checked call each: per_kernel=1)
    assert session.differences == [] and session.errors == []
    want = np.maximum(np.exp(data) * 2.0625 - data, 0)
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-5)
    assert jit.compile_ir is not None and cd.CodeGenLLVM.generate.__name__ == "generate"


# llvm-project#198197 in the kernel ABI (``args``: in0, in1, x, out): the sign mask of a 4 x i64
# product read whole into a GPR, its high half or-ed with another mask; k0 set to all ones
# first, so the miscompiled code's second result is 3 whatever the signs.
_TIED = """
define void @mtvm_test_tied(ptr %args, ptr %vars, i32 %nth) {
  call void asm sideeffect "kxnorw %k0, %k0, %k0", "~{k0}"()
  %p0 = load ptr, ptr %args
  %g1 = getelementptr ptr, ptr %args, i64 1
  %p1 = load ptr, ptr %g1
  %g2 = getelementptr ptr, ptr %args, i64 2
  %p2 = load ptr, ptr %g2
  %g3 = getelementptr ptr, ptr %args, i64 3
  %p3 = load ptr, ptr %g3
  %a = load <4 x i64>, ptr %p0, align 8
  %c = load <4 x i64>, ptr %p1, align 8
  %v = mul <4 x i64> %a, %c
  %m = icmp slt <4 x i64> %v, zeroinitializer
  %b = bitcast <4 x i1> %m to i4
  %bz = zext i4 %b to i64
  store i64 %bz, ptr %p3
  %hi = shufflevector <4 x i1> %m, <4 x i1> poison, <2 x i32> <i32 2, i32 3>
  %xv = load <2 x i64>, ptr %p2, align 8
  %m2 = icmp sgt <2 x i64> %xv, zeroinitializer
  %mm = or <2 x i1> %hi, %m2
  %hb = bitcast <2 x i1> %mm to i2
  %hz = zext i2 %hb to i64
  %o1 = getelementptr i64, ptr %p3, i64 1
  store i64 %hz, ptr %o1
  ret void
}
"""


def test_the_no_avx512vl_variant_finds_the_erased_mask_definition(monkeypatch):
    """With the JIT's check of llvm-project#198197 off, levels 1, 3 and 0 all carry the fold
    and agree; the variant without AVX-512VL computes the high half's bits and disagrees."""
    if not jit.host_has("avx512vl"):
        pytest.skip("the fold needs AVX-512VL")
    llvm.initialize_native_asmparser()  # (for the inline asm)
    monkeypatch.setattr(jit, "mask_read_after_movmsk", lambda asm: False)
    names = [te.placeholder(s, name=n, dtype="int64")
             for n, s in (("in0", (4,)), ("in1", (4,)), ("x", (2,)))]
    out = te.compute((2,), lambda k: names[2][k], name="out")
    func = te.create_prim_func([*names, out])
    args = [np.array([3, 5, 7, 9], np.int64), np.array([1, 1, 1, 1], np.int64),
            np.array([-1, -1], np.int64), np.zeros(2, np.int64)]
    found = cd.check_ir(_TIED, "mtvm_test_tied", func, args, pipeline=1, perturb=False)
    if not found:
        pytest.skip("this LLVM keeps the vpmovq2m (llvm-project#198197 fixed)")
    assert {(d.flags, d.buffer) for d in found} == {(cd.NO_VL, "out")}
    assert found[0].first == [(1, 3, 0)] and not found[0].nan_only

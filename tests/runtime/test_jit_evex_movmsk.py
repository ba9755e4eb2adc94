"""LLVM 22's EVEX compression folds ``vpmovq2m %xmmN, %k; kmov %k, %r`` into the VEX
``vmovmskpd %xmmN, %r`` even for N >= 16, which VEX cannot encode (llvm-project#191304): the
machine code reads another register. ``jit`` recognizes such code and generates it again.

The IR below keeps 28 vectors live so the sign-tested one lands in xmm16-31 on an AVX-512 host;
its two lane tests then pick ``a`` / ``b``. Without the check, the kernel stored the sign bits of
an unrelated register. The symbolic-kernel case that found it (the 8-bit TFLite bilinear resize
to a run-time size, a row index wrapped when negative) is checked in
tests/relay/backend/test_relay_vm_symbolic_fused_takes.py."""

import ctypes
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from minitvm.runtime import jit

_N, _K = 28, 15  # live vectors, the one sign-tested (found to land in xmm16-31 on Rocket Lake)


def _ir(n: int, k: int) -> str:
    lines = ["define void @mtvm_test_movmsk(ptr noalias %in, ptr noalias %out, i64 %a, i64 %b) {",
             "entry:"]
    for i in range(n):
        lines += [f"  %p{i} = getelementptr <2 x i64>, ptr %in, i64 {i}",
                  f"  %v{i} = load <2 x i64>, ptr %p{i}, align 16"]
    lines += [f"  %w{i} = mul <2 x i64> %v{i}, %v{(i + 1) % n}" for i in range(n)]
    lines += [f"  %m = icmp slt <2 x i64> %w{k}, zeroinitializer",
              "  %m0 = extractelement <2 x i1> %m, i64 0",
              "  %m1 = extractelement <2 x i1> %m, i64 1",
              "  %s0 = select i1 %m0, i64 %a, i64 0",
              "  %s1 = select i1 %m1, i64 %b, i64 0"]
    acc = "%w0"
    for i in range(1, n):
        lines.append(f"  %acc{i} = add <2 x i64> {acc}, %w{i}")
        acc = f"%acc{i}"
    lines += [f"  store <2 x i64> {acc}, ptr %out, align 16",
              "  %o2 = getelementptr i64, ptr %out, i64 2", "  store i64 %s0, ptr %o2",
              "  %o3 = getelementptr i64, ptr %out, i64 3", "  store i64 %s1, ptr %o3",
              "  ret void", "}"]
    return "\n".join(lines) + "\n"


def _expected(v: np.ndarray, a: int, b: int) -> np.ndarray:
    w = v * np.roll(v, -1, axis=0)
    return np.concatenate([w.sum(axis=0), [a if w[_K, 0] < 0 else 0, b if w[_K, 1] < 0 else 0]])


def test_movmsk_of_an_extended_register_is_recognized():
    """The assembly check: a VEX mask move from xmm16-31 / ymm16-31 is the miscompiled fold;
    from xmm0-15 (or an EVEX kmov) it is not."""
    assert jit.movmsk_miscompiled("\tvmovmskpd\t%xmm17, %edx\n")
    assert jit.movmsk_miscompiled("\tvpmovmskb\t%ymm31, %eax\n")
    assert jit.movmsk_miscompiled("\tvmovmskps %xmm16, %ecx")
    assert not jit.movmsk_miscompiled("\tvmovmskpd\t%xmm1, %edx\n\tkmovd\t%k0, %eax\n")
    assert not jit.movmsk_miscompiled("\tvmovmskps\t%ymm15, %eax\n\tvmovaps\t%xmm17, %xmm2\n")


@pytest.mark.parametrize("signs", [(-1, 1), (1, -1), (-1, -1), (1, 1)])
def test_sign_mask_of_a_vector_in_xmm16_31_is_right(signs):
    """The kernel's lane tests agree with numpy's at each sign of the two lanes, on every host
    (on an AVX-512 one its machine code was generated again without AVX-512VL; before, the
    stores followed an unrelated register's signs)."""
    v = np.random.default_rng(0).integers(1, 1000, (_N, 2)).astype(np.int64)
    v[_K] *= signs  # w[K] = v[K] * v[K + 1], v[K + 1] > 0
    obj = jit.compile_ir(_ir(_N, _K), "mtvm_test_movmsk", opt=1, codegen_opt=1)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                          ctypes.c_int64)(obj.address)
    out = np.zeros(4, np.int64)
    fn(v.ctypes.data, out.ctypes.data, 111, 222)
    np.testing.assert_array_equal(out, _expected(v, 111, 222))


def test_the_regenerated_code_has_no_extended_movmsk(monkeypatch):
    """On an AVX-512VL host this IR does hit the fold (else the test shows nothing there), and
    the code made without AVX-512VL has no VEX mask move from an extended register."""
    if not jit.host_has("avx512vl"):
        pytest.skip("the fold needs AVX-512VL (128-bit EVEX vpmovq2m)")
    monkeypatch.delenv("MINITVM_CACHE_DIR", raising=False)  # (compiled here, not loaded)
    before = jit.STATS["movmsk_regenerated"]
    asm = jit.assembly(_ir(_N, _K), opt=1)
    if not jit.movmsk_miscompiled(asm):
        pytest.skip("this LLVM / CPU allocates the sign-tested vector below xmm16")
    jit.compile_ir(_ir(_N, _K), "mtvm_test_movmsk", opt=1, codegen_opt=1)
    assert jit.STATS["movmsk_regenerated"] == before + 1
    tm = jit.target_machine(1, jit.SAFE_MOVMSK_FEATURES)
    safe = tm.emit_assembly(jit._optimized(_ir(_N, _K), tm, 1))
    # (without VL the sign test is a 512-bit vpmovq2m, which the fold leaves alone)
    assert not jit.movmsk_miscompiled(safe)
    assert not re.search(r"vpmov[bdq]2m\s+%[xy]mm", safe)


# llvm-project#198197: the fold erases the vpmov*2m while a kshiftr still reads (and writes) its
# mask: ``vmovmskpd %ymm0, %eax; ...; kshiftrb $2, %k0, %k0; korw %k1, %k0, %k0`` read a k0
# nothing wrote. The sign mask of a 4 x i64 product goes to a GPR whole, and its high half is
# or-ed with another mask. (The inline asm sets k0 to all ones first, so that the miscompiled
# code's answer is known: 3.)
_TIED_IR = """
define void @mtvm_test_tied(ptr noalias %in, ptr noalias %in2, ptr noalias %x, ptr noalias %out,
                            ptr noalias %o2, i64 %k) {
  call void asm sideeffect "kxnorw %k0, %k0, %k0", "~{k0}"()
  %a = load <4 x i64>, ptr %in, align 8
  %c = load <4 x i64>, ptr %in2, align 8
  %v = mul <4 x i64> %a, %c
  %m = icmp slt <4 x i64> %v, zeroinitializer
  %b = bitcast <4 x i1> %m to i4
  %bz = zext i4 %b to i64
  %r = add i64 %bz, %k
  store i64 %r, ptr %out
  %hi = shufflevector <4 x i1> %m, <4 x i1> poison, <2 x i32> <i32 2, i32 3>
  %xv = load <2 x i64>, ptr %x, align 8
  %m2 = icmp sgt <2 x i64> %xv, zeroinitializer
  %mm = or <2 x i1> %hi, %m2
  %hb = bitcast <2 x i1> %mm to i2
  %hz = zext i2 %hb to i64
  store i64 %hz, ptr %o2
  ret void
}
"""


def test_mask_read_after_movmsk_is_recognized():
    """The assembly check: a k register read after a VEX mask move in its block, before any
    write of it, is the erased definition; a write first, another block, or kxnor's
    dependency-breaking idiom are not."""
    bad = "\tvmovmskpd\t%ymm0, %eax\n\taddq\t%r9, %rax\n\tkshiftrb\t$2, %k0, %k0\n"
    assert jit.mask_read_after_movmsk(bad)
    assert jit.mask_read_after_movmsk("\tvpmovmskb\t%xmm0, %eax\n\tkortestb\t%k3, %k3\n")
    assert jit.mask_read_after_movmsk(
        "\tvmovmskps\t%xmm1, %ecx\n\tvmovdqa32\t%xmm0, %xmm0 {%k1} {z}\n")
    assert not jit.mask_read_after_movmsk(
        "\tvmovmskps\t%xmm1, %ecx\n\tvpcmpgtd\t%xmm1, %xmm0, %k1\n\tkmovb\t%k1, %eax\n")
    assert not jit.mask_read_after_movmsk(
        "\tvmovmskpd\t%ymm0, %eax\n.LBB0_2:\n\tkshiftrb\t$2, %k0, %k0\n")
    assert not jit.mask_read_after_movmsk(
        "\tvmovmskpd\t%ymm0, %eax\n\tkxnorw\t%k0, %k0, %k1\n\tkmovw\t%k1, %ecx\n")
    assert not jit.mask_read_after_movmsk("\tvpmovq2m\t%ymm0, %k0\n\tkshiftrb\t$2, %k0, %k0\n")


_SET_K0 = '  call void asm sideeffect "kxnorw %k0, %k0, %k0", "~{k0}"()\n'


def _run_tied(a, c, x, k):
    llvm.initialize_native_asmparser()  # (for the inline asm)
    # (a CPU without AVX-512 has no k registers: kxnorw would stop it with SIGILL; its code
    # tests the sign mask without them, and the answer is checked all the same)
    ir = _TIED_IR if jit.host_has("avx512f") else _TIED_IR.replace(_SET_K0, "")
    assert _SET_K0 in _TIED_IR
    obj = jit.compile_ir(ir, "mtvm_test_tied", opt=1, codegen_opt=1)
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 5, ctypes.c_int64)(obj.address)
    out, o2 = np.zeros(1, np.int64), np.zeros(1, np.int64)
    fn(a.ctypes.data, c.ctypes.data, x.ctypes.data, out.ctypes.data, o2.ctypes.data, k)
    return int(out[0]), int(o2[0])


@pytest.mark.parametrize("signs", [(1, 1, -1, 1), (1, -1, 1, -1), (-1, -1, -1, -1), (1,) * 4])
def test_high_half_of_a_sign_mask_read_whole_is_right(signs):
    """Both results agree with numpy's at each sign pattern (on an AVX-512 host the code was
    generated again without AVX-512VL; before, the high half came from whatever k0 held)."""
    rng = np.random.default_rng(1)
    a = rng.integers(1, 1000, 4).astype(np.int64) * np.array(signs, np.int64)
    c = rng.integers(1, 1000, 4).astype(np.int64)
    x = -rng.integers(1, 1000, 2).astype(np.int64)  # (not > 0: the high half decides)
    m = a * c < 0
    want = (int(sum(int(b) << i for i, b in enumerate(m))) + 7, int(m[2]) | int(m[3]) << 1)
    assert _run_tied(a, c, x, 7) == want, (m, x)


def test_the_tied_fold_is_made_again(monkeypatch):
    """On an AVX-512VL host LLVM 22.1 does erase the mask's definition here, and the JIT
    makes the code again (once) without AVX-512VL, where no mask read follows a mask move."""
    if not jit.host_has("avx512vl"):
        pytest.skip("the fold needs AVX-512VL (256-bit EVEX vpmovq2m)")
    monkeypatch.delenv("MINITVM_CACHE_DIR", raising=False)
    llvm.initialize_native_asmparser()
    asm = jit.assembly(_TIED_IR, opt=1)
    if not jit.mask_read_after_movmsk(asm):
        pytest.skip("this LLVM keeps the vpmovq2m (llvm-project#198197 fixed)")
    before = jit.STATS["movmsk_regenerated"]
    jit.compile_ir(_TIED_IR, "mtvm_test_tied", opt=1, codegen_opt=1)
    assert jit.STATS["movmsk_regenerated"] == before + 1
    tm = jit.target_machine(1, jit.SAFE_MOVMSK_FEATURES)
    assert not jit.mask_read_after_movmsk(tm.emit_assembly(jit._optimized(_TIED_IR, tm, 1)))


def test_x86_intrinsic_calls_are_recognized_quoted_too():
    """llvmlite quotes the intrinsics' names (``@"llvm.x86.avx512.mask.scalef.ps.256"``, the
    exp kernels'): such IR must not be made again without AVX-512VL (LLVM aborts: cannot
    select)."""
    assert jit.calls_x86_intrinsics('  %r = call <8 x float> @"llvm.x86.avx512.mask.scalef.ps.256"(')
    assert jit.calls_x86_intrinsics("declare <16 x i8> @llvm.x86.sse2.pavg.b(<16 x i8>, <16 x i8>)")
    assert not jit.calls_x86_intrinsics('  %r = call float @"llvm.exp.f32"(float %x) ; x86')

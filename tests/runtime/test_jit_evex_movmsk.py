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
    tm = jit._target_machine_with(1, jit.SAFE_MOVMSK_FEATURES)
    safe = tm.emit_assembly(jit._optimized(_ir(_N, _K), tm, 1))
    # (without VL the sign test is a 512-bit vpmovq2m, which the fold leaves alone)
    assert not jit.movmsk_miscompiled(safe)
    assert not re.search(r"vpmov[bdq]2m\s+%[xy]mm", safe)

"""x86 target facts: which CPU names (``-mcpu``) have AVX2, AVX-512 or VNNI, and the fp32 SIMD
width that follows, as TVM's ``target.x86`` tables define them."""

from __future__ import annotations

from ...target import Target

# CPU names LLVM accepts, grouped by the widest vector extension they bring
_VNNI = frozenset({"cascadelake", "icelake-client", "icelake-server", "rocketlake", "tigerlake",
                   "cooperlake", "sapphirerapids", "alderlake"})
_AVX512 = frozenset({"skylake-avx512", "skx", "knl", "knm", "x86-64-v4", "cannonlake",
                     "cascadelake", "icelake-client", "icelake-server", "rocketlake",
                     "tigerlake", "cooperlake", "sapphirerapids"})
_AVX2 = frozenset({"haswell", "core-avx2", "broadwell", "skylake", "bdver4", "znver1", "znver2",
                   "znver3", "x86-64-v3"})
_AVX = frozenset({"sandybridge", "corei7-avx", "ivybridge", "core-avx-i"})
_SSE42 = frozenset({"silvermont", "slm", "goldmont", "goldmont-plus", "tremont", "nehalem",
                    "corei7", "westmere", "bdver1", "bdver2", "bdver3", "x86-64-v2"})
_SSE41 = frozenset({"btver2", "penryn"})
_OTHER_X86 = frozenset({"x86-64", "znver4", "alderlake", "raptorlake", "meteorlake",
                        "graniterapids", "emeraldrapids"})
X86_CPUS = _VNNI | _AVX512 | _AVX2 | _AVX | _SSE42 | _SSE41 | _OTHER_X86


def target_has_vnni(mcpu: str) -> bool:
    """True when ``mcpu`` names a CPU with AVX-512 VNNI (int8 dot products)."""
    return mcpu in _VNNI


def target_has_avx512(mcpu: str) -> bool:
    """True when ``mcpu`` names a CPU with AVX-512."""
    return mcpu in _AVX512


def target_has_avx2(mcpu: str) -> bool:
    """True when ``mcpu`` names a CPU with AVX2 (AVX-512 and VNNI CPUs included)."""
    return mcpu in _AVX2 or mcpu in _AVX512 or mcpu in _VNNI


def target_has_avx(mcpu: str) -> bool:
    """True when ``mcpu`` names a CPU with AVX."""
    return mcpu in _AVX or target_has_avx2(mcpu)


def target_has_sse42(mcpu: str) -> bool:
    """True when ``mcpu`` names a CPU with SSE4.2 (the gate of TVM's x86 int8 kernels)."""
    return mcpu in _SSE42 or target_has_avx(mcpu) or mcpu in _OTHER_X86 - {"x86-64"}


def _current(target: Target | None, who: str) -> Target:
    target = target if target is not None else Target.current()
    if target is None:
        raise ValueError(f"{who} needs a target in scope: use `with tvm.target.Target(\"llvm "
                         f"-mcpu=...\")`")
    return target


def _list_attr(target: Target, name: str) -> list[str]:
    value = target.attrs.get(name, ())
    return [v for v in value.split(",") if v] if isinstance(value, str) else list(value)


def target_libs(target: Target | None = None) -> list[str]:
    """The external libraries (``-libs=cblas,mkl``) the (current) target may call."""
    target = _current(target, "target_libs")
    return _list_attr(target, "libs")


def get_simd_32bit_lanes(target: Target | None = None) -> int:
    """fp32 lanes of one vector register of the (current) target: 16 with AVX-512, 8 with
    AVX2, else 4 — the blocking factor the x86 fallback configurations start from."""
    target = _current(target, "get_simd_32bit_lanes")
    mcpu = target.mcpu
    mattr = _list_attr(target, "mattr")
    if target_has_avx512(mcpu) or "+avx512f" in mattr:
        return 16
    if target_has_avx2(mcpu) or "+avx2" in mattr:
        return 8
    return 4


def is_x86_target(target: Target | None = None) -> bool:
    """True when the (current) target is an LLVM CPU target naming an x86 ``-mcpu``: the scope
    in which the registered x86 AlterOpLayout rules re-block operators."""
    target = target if target is not None else Target.current()
    if target is None or target.kind.name != "llvm" or "arm_cpu" in target.keys or \
            target.attrs.get("device") == "arm_cpu":
        return False
    return target.mcpu in X86_CPUS

"""A build's ``-mcpu``: kernels made for the x86 CPU the target names, not only the host's.

``relay.build(mod, target="llvm -mcpu=haswell")`` on an AVX-512 machine makes the code an AVX2
CPU runs: the schedules take their AVX2 tiles and switches (``schedule.common.vector_isa``), the
built-in knob table is AVX2's, and LLVM emits no AVX-512 (no zmm register, no VNNI), whose
instructions would stop an AVX2 CPU with SIGILL. Before, only the x86 AlterOpLayout rules read
``-mcpu``; the kernels were always the host's.

The kernels still run in this process, so a target CPU is honoured only where the host has its
vector ISA (AVX2 code on an AVX-512 host; not AVX-512 code on an AVX2 host: that build makes
the host's code, with a warning). The features are the host's limited to the named CPU's
vector ISA (``limited_features``), so they never name an instruction the host lacks; LLVM
schedules for the named CPU. CPU names outside ``topi.x86.utils``' tables (an Arm
``-mcpu``, none at all) leave the host's code, as before.
"""

from __future__ import annotations

import contextlib
import warnings

from ..runtime import jit
from ..topi.x86 import utils as x86

# features turned off for a CPU of each vector ISA class: those of later classes
_LATER_THAN_AVX2 = ("avx512", "amx", "avxvnni", "avxifma", "avxneconvert", "evex512", "avx10")
_LATER_THAN_AVX512 = ("avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "avx512ifma",
                      "avx512bitalg", "avx512vpopcntdq", "amx", "avxvnni", "avx10")
_LATER_THAN_VNNI = ("amx", "avx512fp16", "avx10")
# host features each class needs (LLVM names)
_NEEDS = {"avx2": ("avx2", "fma"), "avx512": ("avx512f", "avx512bw", "avx512dq", "avx512vl"),
          "vnni": ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni")}


def isa_class(mcpu: str) -> str | None:
    """``"vnni"`` (AVX-512 VNNI), ``"avx512"`` or ``"avx2"`` for an x86 CPU name of the tables
    in ``topi.x86.utils``; None for older or unknown CPUs (no code of their own here)."""
    if mcpu == "znver4" or (x86.target_has_vnni(mcpu) and x86.target_has_avx512(mcpu)):
        return "vnni"
    if x86.target_has_avx512(mcpu):
        return "avx512"
    if x86.target_has_avx2(mcpu) or mcpu in {"alderlake", "raptorlake", "meteorlake"}:
        return "avx2"
    return None


def limited_features(host_features: str, cls: str) -> str:
    """The host's LLVM feature string (``"+avx2,+avx512f,-amx-tile,..."``) with every feature
    of a class later than ``cls`` turned off."""
    off = {"avx2": _LATER_THAN_AVX2, "avx512": _LATER_THAN_AVX512,
           "vnni": _LATER_THAN_VNNI}[cls]
    out = []
    for f in host_features.split(","):
        if f.startswith("+") and f[1:].startswith(off):
            f = "-" + f[1:]
        out.append(f)
    return ",".join(out)


def codegen_cpu(mcpu: str) -> tuple[str, str] | None:
    """(cpu, features) kernels for ``-mcpu=mcpu`` are made with on this host, or None where the
    host's own code is made (no ``mcpu``, the host's own name, an unknown or non-x86 name, or a
    vector ISA the host lacks: then with a ``UserWarning``)."""
    host, features = jit.real_host_cpu()
    if not mcpu or mcpu == host:
        return None
    cls = isa_class(mcpu)
    if cls is None:
        return None
    have = {f[1:] for f in features.split(",") if f.startswith("+")}
    if not set(_NEEDS[cls]) <= have:
        warnings.warn(f"target -mcpu={mcpu}: this host ({host}) lacks its vector ISA "
                      f"({cls}); the kernels are made for the host, which runs them",
                      stacklevel=3)
        return None
    return mcpu, limited_features(features, cls)


def code_cpu_name(target) -> str:
    """The LLVM name of the CPU a build for ``target`` makes kernels for: its ``-mcpu`` where
    builds honour it (``codegen_cpu``), else the host's."""
    cpu = codegen_cpu(_mcpu(target)) if not isinstance(target, dict) else None
    return cpu[0] if cpu is not None else jit.real_host_cpu()[0]


def same_vector_isa(cpu_a: str, cpu_b: str) -> bool:
    """Do kernels made for LLVM CPUs ``cpu_a`` and ``cpu_b`` take the same schedules (AVX2's or
    AVX-512's vector width; VNNI counts as AVX-512)? True where either name is unknown."""
    a, b = (_WIDTH.get(isa_class(c) or "") for c in (cpu_a, cpu_b))
    return a is None or b is None or a == b


_WIDTH = {"avx2": 256, "avx512": 512, "vnni": 512}


def _mcpu(target) -> str:
    from ..target import Target

    if target is None:
        target = Target.current()
    if target is None:
        return ""
    if isinstance(target, str):
        target = Target(target)
    return str(getattr(target, "mcpu", "") or "")


@contextlib.contextmanager
def for_target(target):
    """Kernels made inside are for ``target``'s ``-mcpu`` (a str, a ``Target``, or None: the
    current target's) where ``codegen_cpu`` honours it; else the host's, as before."""
    cpu = codegen_cpu(_mcpu(target)) if not isinstance(target, dict) else None
    if cpu is None:
        yield
        return
    with jit.generating_for(*cpu):
        yield

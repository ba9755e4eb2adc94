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
``-mcpu``, none at all) leave the host's code, as before. ``-mattr`` entries turn features of
that CPU on or off (``llvm -mattr=-avx512f``: the host's CPU, AVX2 code), within what the host
runs and the AVX2 floor every kernel here is made for.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence

from ..runtime import jit
from ..schedule.common import isa_class

# features turned off for a CPU of each vector ISA class: those of later classes
_LATER_THAN_AVX2 = ("avx512", "amx", "avxvnni", "avxifma", "avxneconvert", "evex512", "avx10")
_LATER_THAN_AVX512 = ("avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "avx512ifma",
                      "avx512bitalg", "avx512vpopcntdq", "amx", "avxvnni", "avx10")
_LATER_THAN_VNNI = ("amx", "avx512fp16", "avx10")
# host features each class needs (LLVM names)
_NEEDS = {"avx2": ("avx2", "fma"), "avx512": ("avx512f", "avx512bw", "avx512dq", "avx512vl"),
          "vnni": ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni")}


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


def codegen_cpu(mcpu: str, mattr: Sequence[str] = ()) -> tuple[str, str] | None:
    """(cpu, features) kernels for ``-mcpu=mcpu -mattr=...`` are made with on this host, or None
    where the host's own code is made (no ``mcpu`` nor ``mattr``, the host's own name, an
    unknown or non-x86 name, or a vector ISA the host lacks: then with a ``UserWarning``).
    ``mattr`` (``["+avx2", "-avx512f"]``) turns features of the CPU's on or off (``with_mattr``)."""
    host, features = jit.real_host_cpu()
    cpu, base = host, features
    if mcpu and mcpu != host and isa_class(mcpu) is not None:
        cls = isa_class(mcpu)
        have = {f[1:] for f in features.split(",") if f.startswith("+")}
        if set(_NEEDS[cls]) <= have:
            cpu, base = mcpu, limited_features(features, cls)
        else:
            warnings.warn(f"target -mcpu={mcpu}: this host ({host}) lacks its vector ISA "
                          f"({cls}); the kernels are made for the host, which runs them",
                          stacklevel=3)
    if mattr:
        base = with_mattr(base, features, mattr)
    return None if (cpu, base) == (host, features) else (cpu, base)


# features minitvm's kernels always use: x86 code here is AVX2 code at least
_FLOOR = ("avx", "avx2", "fma", "f16c", "sse4.1", "sse4.2", "ssse3", "sse3", "sse2", "sse")


def with_mattr(features: str, host_features: str, mattr: Sequence[str]) -> str:
    """LLVM feature string ``features`` with a target's ``-mattr`` entries applied: ``-x`` turns
    x off (``-avx512f`` every AVX-512 feature with it, as LLVM does), ``+x`` on where the host
    has it. Entries the host cannot run (``+x`` it lacks) or that take away the AVX2 floor
    every kernel is made for (``-avx2``) are left out, with a ``UserWarning``."""
    host = {f[1:] for f in host_features.split(",") if f.startswith("+")}
    state = {f[1:]: f[0] == "+" for f in features.split(",") if f[:1] in "+-" and len(f) > 1}
    for entry in mattr:
        entry = str(entry).strip()
        name = entry[1:]
        if entry[:1] not in "+-" or not name:
            warnings.warn(f"target -mattr entry {entry!r} is not '+feature' or '-feature': "
                          "left out", stacklevel=4)
        elif entry[0] == "+" and name not in host:
            warnings.warn(f"target -mattr={entry}: this host lacks {name}; left out (the "
                          "kernels run in this process)", stacklevel=4)
        elif entry[0] == "-" and name in _FLOOR:
            warnings.warn(f"target -mattr={entry}: minitvm's x86 kernels need {name}; left "
                          "out", stacklevel=4)
        else:
            state[name] = entry[0] == "+"
    out = ",".join(("+" if on else "-") + f for f, on in state.items())
    if not state.get("avx512f", False):
        out = limited_features(out, "avx2")
    elif not state.get("avx512vnni", False):
        out = limited_features(out, "avx512")
    return out


def code_cpu_name(target) -> str:
    """The LLVM name of the CPU a build for ``target`` makes kernels for: its ``-mcpu`` where
    builds honour it (``codegen_cpu``), else the host's; ``"name/avx2"`` where the code is of
    another vector ISA than that CPU's own (``-mattr=-avx512f``: AVX2 code for an AVX-512 CPU),
    so the tuning records made for it are told apart (``same_vector_isa``)."""
    made = codegen_cpu(*_mcpu_mattr(target)) if not isinstance(target, dict) else None
    cpu, features = made if made is not None else jit.real_host_cpu()
    own, code = isa_class(cpu), _feature_class(features)
    return cpu if own is None or _WIDTH[own] == _WIDTH[code] else f"{cpu}/{code}"


def saved_cpu(options) -> list[str] | None:
    """What a saved kernel records of the CPU its build made code for (``LoweringOptions.cpu``),
    so a load lowers its later kernels for it too (``loaded_cpu``)."""
    cpu = getattr(options, "cpu", None)
    return [str(cpu[0]), str(cpu[1])] if cpu else None


def loaded_cpu(saved) -> tuple[str, str] | None:
    """The (cpu, features) a loaded kernel's later lowerings (a VM's per-shape specialization)
    make code for: the saving build's (``saved_cpu``) where this host runs that code (every
    feature it turns on is the host's), so a loaded executable computes what the one that saved
    it did; else None, the host's own code (a record from a machine with more features)."""
    if not (isinstance(saved, (list, tuple)) and len(saved) == 2
            and all(isinstance(x, str) for x in saved)):
        return None
    host = {f[1:] for f in jit.real_host_cpu()[1].split(",") if f.startswith("+")}
    wants = {f[1:] for f in saved[1].split(",") if f.startswith("+")}
    return (saved[0], saved[1]) if wants <= host else None


def same_vector_isa(cpu_a: str, cpu_b: str) -> bool:
    """Do kernels made for CPUs ``cpu_a`` and ``cpu_b`` (LLVM names, or ``code_cpu_name``'s
    ``"name/isa"``) take the same schedules (AVX2's or AVX-512's vector width; VNNI counts as
    AVX-512)? True where either is unknown."""
    a, b = (_WIDTH.get(_record_class(c) or "") for c in (cpu_a, cpu_b))
    return a is None or b is None or a == b


def _record_class(name: str) -> str | None:
    cpu, _, code = name.partition("/")
    return code if code in _WIDTH else isa_class(cpu)


def _feature_class(features: str) -> str:
    on = {f[1:] for f in features.split(",") if f.startswith("+")}
    return ("vnni" if "avx512vnni" in on else "avx512") if "avx512f" in on else "avx2"


_WIDTH = {"avx2": 256, "avx512": 512, "vnni": 512}


def _mcpu_mattr(target) -> tuple[str, list[str]]:
    """(``-mcpu``, ``-mattr`` entries) of ``target`` (a str, a ``Target``, or None: the current
    target's)."""
    from ..target import Target

    if target is None:
        target = Target.current()
    if target is None:
        return "", []
    if isinstance(target, str):
        target = Target(target)
    return str(getattr(target, "mcpu", "") or ""), \
        [str(a) for a in (getattr(target, "mattr", None) or [])]


@contextlib.contextmanager
def for_target(target):
    """Kernels made inside are for ``target``'s ``-mcpu`` (a str, a ``Target``, or None: the
    current target's) where ``codegen_cpu`` honours it; else the host's, as before."""
    cpu = codegen_cpu(*_mcpu_mattr(target)) if not isinstance(target, dict) else None
    if cpu is None:
        yield
        return
    with jit.generating_for(*cpu):
        yield

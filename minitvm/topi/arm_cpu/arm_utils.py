"""Arm target facts read from a target's options (``-device=arm_cpu``, ``-mtriple``,
``-mattr``), the ones TVM's Arm rules consult."""

from __future__ import annotations

import re

from ...target import Target

_ARCH = re.compile(r"\+v(\d+)\.(\d+)a$")


def _target(target: Target | None) -> Target | None:
    return target if target is not None else Target.current()


def is_arm_cpu_target(target: Target | None = None) -> bool:
    """True for an LLVM target with ``-device=arm_cpu`` (or the ``arm_cpu`` key)."""
    target = _target(target)
    return target is not None and target.kind.name == "llvm" and (
        target.attrs.get("device") == "arm_cpu" or "arm_cpu" in target.keys)


def is_aarch64_arm(target: Target | None = None) -> bool:
    """True when the target's triple is 64-bit Arm (``aarch64-*``)."""
    target = _target(target)
    return target is not None and str(target.attrs.get("mtriple", "")).startswith("aarch64")


def get_arch_version(mattr) -> float:
    """The Arm architecture level an ``-mattr`` list names (``+v8.4a`` -> 8.4; 8.0 if none)."""
    version = 8.0
    for attr in mattr:
        m = _ARCH.match(attr)
        if m:
            minor = int(m.group(2))
            version = int(m.group(1)) + minor / (100 if minor >= 10 else 10)
    return version


def is_dotprod_available(target: Target | None = None) -> bool:
    """True when the target has the int8 dot product (sdot/udot): v8.4-A or later, or v8.2/8.3
    with ``+dotprod``, as TVM's ``arm_utils`` reads ``-mattr``."""
    target = _target(target)
    if target is None:
        return False
    arch = get_arch_version(target.mattr)
    return arch >= 8.4 or (arch in (8.2, 8.3) and "+dotprod" in target.mattr)


def is_mmla_available(target: Target | None = None) -> bool:
    """True when the target has the int8 matrix multiply (smmla/ummla): v8.6-A or later, or
    v8.2-8.5 with ``+i8mm``."""
    target = _target(target)
    if target is None:
        return False
    arch = get_arch_version(target.mattr)
    return arch >= 8.6 or (arch in (8.2, 8.3, 8.4, 8.5) and "+i8mm" in target.mattr)


def get_tiling_B_interleaved_t(interleave_A: bool) -> tuple[int, int]:  # noqa: N802,N803
    """(tile rows, tile columns) of the transposed, interleaved GEMM weight TVM's Arm int8
    kernels read: 12x8 with i8mm, 12x4 / 16x4 with the dot product (interleaved A or not),
    else 4x16."""
    if is_mmla_available():
        return 12, 8
    if is_dotprod_available():
        return (12 if interleave_A else 16), 4
    return 4, 16

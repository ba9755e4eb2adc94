"""The one check every builder makes on its target: minitvm compiles for the host CPU only.

A GPU or other device target (``"cuda"``, ``"cuda -libs=cudnn"``, ``tvm.target.cuda()``) is a
deliberate difference from TVM, so it raises ``UnsupportedTargetError`` (a
``TVMDifferenceError`` and a ``ValueError``) naming the CPU targets to use instead.
"""

from __future__ import annotations

from ..runtime.error import TVMDifferenceError

__all__ = ["UnsupportedTargetError", "check_host_target", "HOST_KINDS"]

HOST_KINDS = ("llvm", "c", "cpu")


class UnsupportedTargetError(TVMDifferenceError, ValueError):
    """A build was asked for a target other than the host CPU."""


def target_kind_name(target) -> str:
    """``"cuda"`` for ``"cuda -libs=cudnn"``, ``Target("cuda")`` or a TargetKind; ``"llvm"``
    for None."""
    kind = getattr(target, "kind", None)
    text = str(getattr(kind, "name", kind) if kind is not None else (target or "llvm"))
    return text.split()[0] if text.split() else "llvm"


def check_host_target(where: str, target) -> None:
    """Raise ``UnsupportedTargetError`` unless ``target`` (str, Target or None) is the host
    CPU; ``where`` names the caller in the message (``"relay.build"``)."""
    kind = target_kind_name(target)
    if kind in HOST_KINDS:
        return
    raise UnsupportedTargetError(
        f"{where}: target {str(target)!r}: minitvm differs from TVM here: only the 'llvm' "
        f"(host CPU) target is supported, there is no {kind} code generator. Use target "
        f"'llvm' (with '-libs=cblas' or '-libs=dnnl' to call BLAS / oneDNN kernels, "
        f"'-mcpu=...' to pick the CPU) and tvm.cpu()."
    )

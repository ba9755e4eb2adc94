"""Lowering options: the back-end choices one build makes, as one immutable value.

Built once per build from the PassContext (``minitvm.backend.options.lowering_options``) and
passed down to every schedule; nothing reads or writes a module global for them, so two builds
with different options can run at the same time in two threads. The value is part of the kernel
cache key.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoweringOptions:
    """Which implementation each heavy operator gets.

    native: lower fused functions to machine code (False: every kernel runs in numpy).
    blas: GEMM stages may call the process's BLAS (only true when one was found).
    generated_conv / generated_dense / generated_batch_matmul: use the generated kernels for
    conv2d (implicit GEMM), dense (packed GEMM) and batch_matmul (else BLAS when allowed).
    strict_native: a kernel whose native lowering fails raises instead of falling back to numpy
    (with a warning); it changes no code, so it is left out of equality and the cache keys.
    """

    native: bool = True
    blas: bool = False
    generated_conv: bool = True
    generated_dense: bool = True
    generated_batch_matmul: bool = True
    # knobs: a ``knobs.KnobTable`` of tuned schedule constants per workload (None: defaults)
    knobs: object = None
    # cpu: the (LLVM CPU name, feature string) a build's -mcpu makes code for
    # (``runtime.jit.generating_for``), or None: the host's
    cpu: tuple[str, str] | None = None
    strict_native: bool = field(default=False, compare=False)

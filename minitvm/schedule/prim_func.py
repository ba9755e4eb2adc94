"""Fast schedules for PrimFuncs that arrive already written as blocks (Relax's LegalizeOps /
FuseTIR output, ``te.create_prim_func``, hand-written TVMScript), on the same schedules
``lower_te`` uses.

``optimize_prim_func(func, options)`` raises the function's block nests back to tensor
expressions (``raise_blocks``), lowers each run of raised stages into the function's own
buffers with the rule table's schedules (packed GEMM, vectorized reduction and injective loop
nests; symbolic extents allowed), and keeps every statement it cannot raise as written. The
result has the same parameters; the code generator compiles it like any PrimFunc.
"""

from __future__ import annotations

from ..tir import stmt as S
from ..tir.function import PrimFunc
from .lower import lower_to_buffers
from .options import LoweringOptions
from .raise_blocks import analyze_nest, referenced_buffers, segments, unwrap_root


def optimize_prim_func(func: PrimFunc, options: LoweringOptions | None = None) -> PrimFunc:
    """An equivalent, faster PrimFunc for ``func`` (``func`` when nothing applies).

    Parameters
    ----------
    func : PrimFunc
        A block-form function: a root block over loop nests of ``T.block``s (as
        ``te.create_prim_func`` and Relax's LegalizeOps / FuseTIR write them).
    options : LoweringOptions, optional
        Which implementations the schedules may use (defaults: generated kernels, no BLAS).
    """
    if not isinstance(func, PrimFunc):
        raise TypeError(f"optimize_prim_func expects a tir.PrimFunc, got {type(func).__name__}")
    options = options if options is not None else LoweringOptions()
    if not options.native:
        return func
    root, stmts = unwrap_root(func)
    nests = [analyze_nest(s) for s in stmts]
    if not any(n.block is not None for n in nests):
        return func
    param_bufs = {id(b) for b in func.buffer_map.values()}
    groups = segments(nests, param_bufs)
    parts = []
    for seg in groups:
        if seg.raised:
            buffers = {id(t): b for t, b in (*seg.inputs, *seg.outputs)}
            try:
                parts.append(lower_to_buffers([t for t, _ in seg.inputs],
                                              [t for t, _ in seg.outputs], buffers, options))
                continue
            except (ValueError, NotImplementedError):  # LoweringError is a ValueError
                seg.raised = False  # a stage the schedules cannot take: keep the segment
        parts.extend(n.stmt for n in seg.nests)
    if not any(seg.raised for seg in groups):
        return func
    body = S.SeqStmt(parts) if len(parts) != 1 else parts[0]
    used = referenced_buffers(body)
    allocs = [b for b in (root.alloc_buffers if root is not None else ()) if id(b) in used]
    for b in reversed(allocs):
        body = S.Allocate(b.data, b.dtype, list(b.shape), True, S.DeclBuffer(b, body))
    if any(isinstance(p, S.BlockRealize) for p in parts) or any(
            not seg.raised for seg in groups):
        # kept blocks stay under a root block, as the code generator expects them
        body = S.BlockRealize([], True, S.Block([], [], [], "root", body))
    return PrimFunc(func.params, body, func.ret_type, func.buffer_map, func.attrs)

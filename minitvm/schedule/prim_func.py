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
from . import batch_loop, softmax_rows
from .common import LowerCtx
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
    return optimize_prim_func_prepacked(func, options)[0]


def optimize_prim_func_prepacked(func: PrimFunc, options: LoweringOptions | None = None,
                                 const_params=()) -> tuple[PrimFunc, dict]:
    """``optimize_prim_func`` where the buffer parameters at positions ``const_params`` (of
    ``func.params``) are build-time constants: one that is the B of a generated matmul (and
    read nowhere else) becomes a parameter in the GEMM's packed layout, so no call packs it.

    Returns (the function, {parameter position: numpy transform of its constant}).
    """
    if not isinstance(func, PrimFunc):
        raise TypeError(f"optimize_prim_func expects a tir.PrimFunc, got {type(func).__name__}")
    options = options if options is not None else LoweringOptions()
    if not options.native:
        return func, {}
    n = batch_loop.batch_var(func)
    image = batch_loop.per_image(func, n) if n is not None else None
    if image is not None:  # a symbolic batch: the static schedules, once per image
        one, strides = image
        fast, transforms = optimize_prim_func_prepacked(one, options, const_params)
        looped = None if fast is one or isinstance(fast.body, S.BlockRealize) else \
            batch_loop.around_images(func, n, fast, strides)
        if looped is not None:
            return looped, transforms
    root, stmts = unwrap_root(func)
    nests = [analyze_nest(s) for s in stmts]
    if not any(n.block is not None for n in nests):
        return func, {}
    param_bufs = {id(b) for b in func.buffer_map.values()}
    groups = segments(nests, param_bufs)
    const_bufs = {id(func.buffer_map[func.params[k]]): k for k in const_params
                  if func.params[k] in func.buffer_map}
    uses: dict[int, int] = {}  # buffer id -> number of nests referencing it
    for n in nests:
        for b in referenced_buffers(n.stmt):
            uses[b] = uses.get(b, 0) + 1
    parts, buffer_map, transforms = [], dict(func.buffer_map), {}
    for seg in groups:
        if seg.raised and softmax_rows.applies():
            found = softmax_rows.match([t for t, _ in seg.inputs], [t for t, _ in seg.outputs])
            if found is not None:  # a last-axis softmax: one pass per row
                ctx = LowerCtx(options, own_temps=True)
                stmt = softmax_rows.emit(ctx, found, seg.inputs[0][1], seg.outputs[0][1])
                for view in reversed(ctx.ws_views):
                    stmt = S.DeclBuffer(view, stmt)
                parts.append(stmt)
                continue
        if seg.raised:
            buffers = {id(t): b for t, b in (*seg.inputs, *seg.outputs)}
            prepack = frozenset(j for j, (_, b) in enumerate(seg.inputs)
                                if id(b) in const_bufs and uses.get(id(b)) == 1)
            packs: dict = {}
            try:
                parts.append(lower_to_buffers([t for t, _ in seg.inputs],
                                              [t for t, _ in seg.outputs], buffers, options,
                                              prepack=prepack, packs=packs))
            except (ValueError, NotImplementedError):  # LoweringError is a ValueError
                seg.raised = False  # a stage the schedules cannot take: keep the segment
            else:
                for j, (packed, fn) in packs.items():
                    k = const_bufs[id(seg.inputs[j][1])]
                    buffer_map[func.params[k]] = packed
                    transforms[k] = fn
                continue
        parts.extend(n.stmt for n in seg.nests)
    if not any(seg.raised for seg in groups):
        return func, {}
    body = S.SeqStmt(parts) if len(parts) != 1 else parts[0]
    used = referenced_buffers(body)
    allocs = [b for b in (root.alloc_buffers if root is not None else ()) if id(b) in used]
    for b in reversed(allocs):
        body = S.Allocate(b.data, b.dtype, list(b.shape), True, S.DeclBuffer(b, body))
    if any(isinstance(p, S.BlockRealize) for p in parts) or any(
            not seg.raised for seg in groups):
        # kept blocks stay under a root block, as the code generator expects them
        body = S.BlockRealize([], True, S.Block([], [], [], "root", body))
    return PrimFunc(func.params, body, func.ret_type, buffer_map, func.attrs), transforms

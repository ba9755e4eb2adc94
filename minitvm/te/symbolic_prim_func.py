"""A TE graph as a PrimFunc with symbolic shapes: the piece shared by Relax's ``call_te`` /
``emit_te`` and Relay's symbolic-shape kernels (``relay.backend.vm.symbolic``).

``make_te_prim_func`` writes ``(inputs..., outputs..., scalar vars...)`` with fresh copies of
the shape variables, so a kernel shares none with the program that calls it; a dimension that
*is* a variable of an input buffer is read from that buffer at run time.
"""

from __future__ import annotations

from ..tir import expr as tir_expr
from ..tir.function import PrimFunc
from ..tir.stmt_functor import post_order

__all__ = ["make_te_prim_func", "shape_vars", "unbound_tir_vars"]


def shape_vars(tensors) -> list:
    """The distinct tir Vars in the shapes of ``tensors``, in first-seen order."""
    out, seen = [], set()
    for t in tensors:
        for dim in t.shape:
            for n in post_order(dim):
                if isinstance(n, tir_expr.Var) and id(n) not in seen:
                    seen.add(id(n))
                    out.append(n)
    return out


def unbound_tir_vars(te_inputs, outputs, body=None) -> list:
    """Symbolic vars the PrimFunc must take as scalar parameters (TVM's ``tir_vars``): those
    the buffer shapes use that no input buffer has as a whole dimension, then those the compute
    body (``body``, the statement ``te.create_prim_func`` made) uses without any shape defining
    them — a step or offset given as a ``tir.Var`` or a ``R.prim_value``, in first-use order."""
    # as TVM, only a dimension that *is* a variable defines it (a buffer of extent ``n * 2``
    # cannot give ``n`` back); the others are passed as scalars. Unlike TVM an output's
    # dimension does not count (kept: an output-only ``n`` of ``zeros((n, 3))`` is passed)
    bound = {id(d) for t in te_inputs for d in t.shape if isinstance(d, tir_expr.Var)}
    extra = [v for v in shape_vars([*te_inputs, *outputs]) if id(v) not in bound]
    if body is not None:
        from ..tir.analysis.verify_well_formed import undefined_vars

        defs = [*shape_vars([*te_inputs, *outputs]), *extra]
        known = {id(v) for v in defs}
        for v in undefined_vars(body, defs):
            if id(v) in known or v.dtype == "handle":
                continue
            if not v.dtype.startswith(("int", "uint")):
                raise TypeError(f"emit_te/call_te: the compute uses variable {v.name!r} of "
                                f"dtype {v.dtype}, which no shape defines; only integer "
                                "variables can be passed as tir_vars")
            known.add(id(v))
            extra.append(v)
    return extra


def make_te_prim_func(te_inputs, outputs, extra_vars=None) -> tuple[PrimFunc, list]:
    """The PrimFunc ``(inputs..., outputs..., scalar vars...)`` (private, noalias) and its scalar
    vars: ``extra_vars`` when given, else :func:`unbound_tir_vars` of the compute."""
    from .create_prim_func import create_prim_func

    f = create_prim_func([*te_inputs, *outputs])
    if extra_vars is None:
        extra_vars = unbound_tir_vars(te_inputs, outputs, f.body)
    params = list(f.params) + list(extra_vars)
    attrs = {"tir.noalias": True}
    f = PrimFunc(params, f.body, f.ret_type, f.buffer_map, attrs)
    return (_renew_shape_vars(f, [*shape_vars([*te_inputs, *outputs]), *extra_vars]),
            list(extra_vars))


def _renew_shape_vars(f: PrimFunc, old_vars) -> PrimFunc:
    """``f`` with fresh copies of the symbolic shape vars (as TVM's ``RenewDefs``), so that
    the PrimFunc shares no variable with the Relax function calling it."""
    from ..tir import stmt as S
    from ..tir.buffer import Buffer
    from ..tir.stmt_functor import _copy, substitute, transform_expr, transform_stmt

    vmap = {v: tir_expr.Var(v.name, v.dtype) for v in old_vars}
    if not vmap:
        return f
    bmap: dict[int, Buffer] = {}

    def buf(b):
        if id(b) not in bmap:
            bmap[id(b)] = _copy(b, shape=tuple(substitute(d, vmap) for d in b.shape))
        return bmap[id(b)]

    def fpost(e):
        if isinstance(e, tir_expr.Var):
            return vmap.get(e)
        if isinstance(e, tir_expr.BufferLoad):
            return _copy(e, buffer=buf(e.buffer))
        return None

    memo: dict = {}

    def fexpr(e):
        return transform_expr(e, fpost, memo)

    def region(rs):
        return tuple(_copy(r, buffer=buf(r.buffer)) for r in rs)

    def fstmt(st):
        if isinstance(st, S.BufferStore):
            return _copy(st, buffer=buf(st.buffer))
        if isinstance(st, S.Block):
            return _copy(st, reads=region(st.reads), writes=region(st.writes),
                         alloc_buffers=tuple(buf(b) for b in st.alloc_buffers))
        return None

    body = transform_stmt(f.body, fexpr, fstmt)
    params = [vmap.get(p, p) for p in f.params]
    buffer_map = {p: buf(b) for p, b in f.buffer_map.items()}
    return PrimFunc(params, body, f.ret_type, buffer_map, f.attrs)

"""Bridge Relax values to TE: the machinery behind ``BlockBuilder.call_te`` / ``emit_te``.

Each Relax argument with ``TensorStructInfo`` becomes a ``te.placeholder`` of its shape (the
same ``tir.Var`` objects for symbolic dims) and dtype; the TE function's outputs are turned into
a PrimFunc with ``te.create_prim_func`` and called with ``relax.call_tir``.
"""

from __future__ import annotations

from ..tir import expr as tir_expr
from ..tir.function import PrimFunc
from ..tir.stmt_functor import post_order
from .expr import Expr, ShapeExpr, Tuple
from .struct_info import PrimStructInfo, TensorStructInfo

__all__ = ["convert_te_args", "make_te_prim_func", "out_struct_info"]


def _tensor_name(a, k: int) -> str:
    """A placeholder's name: the Relax variable's own name (as TVM names it), else A, B, ..."""
    from .expr import Var

    if isinstance(a, Var):
        return a.name_hint
    return chr(ord("A") + k) if k < 26 else f"tensor_input_{k}"


def convert_te_args(args, kwargs):
    """Replace Relax tensor Exprs (also inside nested lists/tuples) by te placeholders.

    Returns ``(te_args, te_kwargs, relax_inputs, te_inputs)``: the converted arguments and, in
    order, the Relax expressions and the placeholders standing for them (one placeholder per
    occurrence, as in TVM).
    """
    from .. import te

    relax_inputs: list = []
    te_inputs: list = []

    def convert(a):
        if isinstance(a, Expr):
            sinfo = a._struct_info
            if isinstance(a, Tuple) and not isinstance(sinfo, TensorStructInfo):
                return [convert(f) for f in a.fields]
            if isinstance(a, ShapeExpr):
                return list(a.values)
            if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
                return sinfo.value  # R.prim_value(...) / a known scalar: its PrimExpr
            if not isinstance(sinfo, TensorStructInfo):
                raise TypeError(
                    f"emit_te/call_te: argument {a!r} has struct info {sinfo}; only "
                    "Relax expressions with TensorStructInfo can become te tensors")
            if not isinstance(sinfo.shape, ShapeExpr):
                raise ValueError(
                    f"emit_te/call_te: argument {a!r} needs a known shape (a ShapeExpr) to "
                    f"become a te tensor, got struct info {sinfo}")
            if sinfo.dtype == "void":
                raise ValueError(f"emit_te/call_te: argument {a!r} has an unknown dtype")
            t = te.placeholder(list(sinfo.shape.values), sinfo.dtype,
                               _tensor_name(a, len(te_inputs)))
            relax_inputs.append(a)
            te_inputs.append(t)
            return t
        if isinstance(a, list):
            return [convert(x) for x in a]
        if isinstance(a, tuple):
            return tuple(convert(x) for x in a)
        if isinstance(a, dict):
            return {k: convert(v) for k, v in a.items()}
        return a

    te_args = [convert(a) for a in args]
    te_kwargs = {k: convert(v) for k, v in kwargs.items()}
    return te_args, te_kwargs, relax_inputs, te_inputs


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
    from ..te import create_prim_func

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


def _simplified_shape(shape) -> list:
    """``shape`` with arithmetic on constants folded (``2 * 3`` -> ``6``): the VM's shape
    lowering reads a non-constant dimension as one a symbolic variable must define."""
    from ..arith import Analyzer

    if all(isinstance(d, tir_expr.IntImm | tir_expr.Var) for d in shape):
        return list(shape)
    ana = Analyzer()
    return [d if isinstance(d, tir_expr.IntImm | tir_expr.Var) else ana.simplify(d)
            for d in shape]


def out_struct_info(outputs):
    sinfos = [TensorStructInfo(ShapeExpr(_simplified_shape(t.shape)), t.dtype)
              for t in outputs]
    return sinfos[0] if len(sinfos) == 1 else sinfos

"""Schedule of the one-pass scatters (tag ``scatter_linear``, ``topi.scatter_linear``): copy
the data to the output, then visit the update positions in row-major order, each computing its
target from its index (negative counted from the end, out of range skipped) and combining its
value there: ``update`` overwrites (the last of repeated targets wins, as numpy's assignment),
the others accumulate in that order (as ``np.add.at`` and friends). Work linear in the data
and the updates, where the te form compares every pair. Extents may be symbolic (a dynamic
batch): they become int32 loop bounds and strides."""

from __future__ import annotations

from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..topi.scatter_linear import SCATTER_LINEAR_TAG
from ..topi.transform_extra import _combine
from .common import const_int, imm
from .lower import Rule, register_rule


def supported(t, options=None) -> bool:
    """Is ``t`` a one-pass scatter stage? (Its extents may be symbolic.)"""
    return isinstance(t.op, ComputeOp) and t.op.tag == SCATTER_LINEAR_TAG


def _ext(d) -> E.PrimExpr:
    """A dim as an int32 expression (an IntImm when constant)."""
    c = const_int(d)
    if c is not None:
        return imm(c)
    return d if d.dtype == "int32" else E.Cast("int32", d)


def _dims(t) -> list:
    return [_ext(d) for d in t.shape]


def _mul(a, b) -> E.PrimExpr:
    """``a * b``, folded when both are constants (static shapes keep plain strides)."""
    ca, cb = const_int(a), const_int(b)
    if ca is not None and cb is not None:
        return imm(ca * cb)
    if ca == 1:
        return b
    return a if cb == 1 else a * b


def _prod(dims) -> E.PrimExpr:
    total = imm(1)
    for d in dims:
        total = _mul(total, d)
    return total


def _strides(dims: list) -> list:
    out, step = [], imm(1)
    for d in reversed(dims):
        out.append(step)
        step = _mul(step, d)
    return out[::-1]


def _nest(ctx, dims: list, body_of):
    """Row-major loops over ``dims``; ``body_of(vars)`` the innermost statement."""
    vs = [ctx.fresh("s") for _ in dims]
    body = body_of(vs)
    for v, d in zip(reversed(vs), reversed(dims), strict=True):
        body = S.For(v, imm(0), d, S.ForKind.SERIAL, body)
    return body


def _flat(vs, strides) -> E.PrimExpr:
    f = imm(0)
    for v, st in zip(vs, strides, strict=True):
        f = f + _mul(v, st)
    return f


def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements writing stage ``t``'s scatter into ``out`` (see the module)."""
    a = t.op.attrs
    x, ind, upd = a["operands"]
    xb, ib, ub = (ctx.flat_view(ctx.buf[id(s)]) for s in (x, ind, upd))
    y = ctx.flat_view(out)
    xd, idims, udims = _dims(x), _dims(ind), _dims(upd)
    xs = _strides(xd)
    c = ctx.fresh("c")
    copy = S.For(c, imm(0), _prod(xd), S.ForKind.SERIAL,
                 S.BufferStore(y, E.BufferLoad(xb, [c]), [c]))

    def index(pos, extent):
        """The index at flat ``pos`` of ``indices`` as int32, a negative one wrapped."""
        j = E.Cast("int32", E.BufferLoad(ib, [pos]))
        return E.Select(E.LT(j, imm(0)), j + extent, j)

    def in_range(js, extents):
        ok = None
        for j, n in zip(js, extents, strict=True):
            cond = E.And(E.GE(j, imm(0)), E.LT(j, n))
            ok = cond if ok is None else E.And(ok, cond)
        return ok

    def store(target, value):
        return S.BufferStore(y, _combine(a["reduction"], E.BufferLoad(y, [target]), value),
                             [target])

    if a["kind"] == "nd":  # updates [*ext, *x.shape[m:]], indices [*ext, m]
        m = const_int(idims[-1])
        ext, rest = idims[:-1], xd[m:]
        slice_size = _prod(rest)

        def visit(vs):
            u = _flat(vs, _strides(ext)) if ext else imm(0)
            js = [ctx.fresh("j") for _ in range(m)]
            base = _flat(js, xs[:m])
            r = ctx.fresh("r")
            body = S.For(r, imm(0), slice_size, S.ForKind.SERIAL,
                         store(base + r, E.BufferLoad(ub, [_mul(u, slice_size) + r])))
            body = S.IfThenElse(in_range(js, xd[:m]), body)
            for k in reversed(range(m)):
                body = S.LetStmt(js[k], index(_mul(u, imm(m)) + imm(k), xd[k]), body)
            return body

        scatter = _nest(ctx, ext, visit)
    else:  # elements: indices and updates of one shape, the target's axis from the index
        axis = a["axis"]
        ist = _strides(idims)

        def visit(vs):
            p = _flat(vs, ist)
            j = ctx.fresh("j")
            coords = [j if d == axis else v for d, v in enumerate(vs)]
            body = store(_flat(coords, xs), E.BufferLoad(ub, [_flat(vs, _strides(udims))]))
            body = S.IfThenElse(in_range([j], [xd[axis]]), body)
            return S.LetStmt(j, index(p, xd[axis]), body)

        scatter = _nest(ctx, idims, visit)
    return S.SeqStmt([copy, scatter])


RULE = Rule("one-pass scatter", "scatter_linear", supported, emit, symbolic=True,
            materialize=True)
register_rule(SCATTER_LINEAR_TAG, RULE)

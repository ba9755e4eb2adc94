"""Memory-scope constraints between a PrimFunc's buffers and the Relay type it is called at.

PlanDevices reads, for each Relay parameter and the result of a lowered function, the memory
scope its PrimFunc's buffers declare (``""`` when none), and afterwards writes the scopes it
chose back into the buffers that declared none (TVM's ``GetPrimFuncArgAndResultConstraints`` /
``ApplyPrimFuncArgAndResultConstraints``). Relay tuples flatten to one buffer per field, in
order, the result's buffers following the parameters' (destination passing style).
"""

from __future__ import annotations

from ...ir.type import FuncType, PointerType, PrimType, TupleType
from ..buffer import Buffer
from ..expr import BufferLoad, Var
from ..stmt import AttrStmt, Block, BufferRegion, BufferStore, DeclBuffer, MatchBufferRegion
from ..stmt_functor import _copy, transform_expr, transform_stmt, walk_stmts

__all__ = [
    "apply_prim_func_arg_and_result_memory_constraints",
    "buffer_memory_scope",
    "prim_func_arg_and_result_memory_scopes",
]


def buffer_memory_scope(buf: Buffer) -> str:
    """The memory scope ``buf`` declares: its pointer type's scope (``""`` is none); a buffer
    built without one counts ``"global"``, the default every buffer gets, as none."""
    ann = getattr(buf.data, "type_annotation", None)
    if isinstance(ann, PointerType):
        return ann.storage_scope or ""
    return "" if buf.scope == "global" else buf.scope


def _flat_count(ty) -> int:
    """How many tensors (buffers) a Relay type flattens to."""
    count, stack = 0, [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        else:
            count += 1
    return count


def _buffer_params(prim_func) -> list:
    """The (param, buffer) pairs of the PrimFunc's tensor parameters, in parameter order."""
    return [(p, prim_func.buffer_map[p]) for p in prim_func.params if p in prim_func.buffer_map]


def _groups(prim_func, relay_func_type: FuncType) -> list:
    """The buffer parameters of each Relay parameter and of the result, in order."""
    if not isinstance(relay_func_type, FuncType):
        raise TypeError(f"the Relay type of a PrimFunc must be a FuncType, got {relay_func_type}")
    pairs = _buffer_params(prim_func)
    types = [*relay_func_type.arg_types, relay_func_type.ret_type]
    counts = [_flat_count(t) for t in types]
    if sum(counts) != len(pairs):
        raise ValueError(
            f"a PrimFunc with {len(pairs)} buffer parameters cannot implement the "
            f"Relay type {relay_func_type} ({sum(counts)} tensors in and out)"
        )
    out, at = [], 0
    for n in counts:
        out.append(pairs[at : at + n])
        at += n
    return out


def prim_func_arg_and_result_memory_scopes(prim_func, relay_func_type: FuncType) -> list:
    """The memory scope each Relay parameter (then the result) of ``prim_func`` requires;
    ``""`` where its buffers declare none. The fields of a tuple must agree."""
    scopes = []
    for group in _groups(prim_func, relay_func_type):
        scope = ""
        for _, buf in group:
            s = buffer_memory_scope(buf)
            if s and scope and s != scope:
                raise ValueError(
                    f"the buffers of one tuple of a PrimFunc declare different "
                    f"memory scopes ({scope!r} and {s!r})"
                )
            scope = scope or s
        scopes.append(scope)
    return scopes


def _rescoped(buf: Buffer, scope: str) -> Buffer:
    """A copy of ``buf`` over a fresh pointer declaring ``scope``."""
    data = Var(buf.data.name, buf.data.dtype)
    data.type_annotation = PointerType(PrimType(buf.dtype), scope)
    return Buffer(
        data,
        buf.dtype,
        buf.shape,
        buf.strides,
        buf.elem_offset,
        buf.name,
        scope,
        buf.data_alignment,
        buf.offset_factor,
        buf.axis_separators,
        buf.span,
    )


def apply_prim_func_arg_and_result_memory_constraints(
    prim_func, relay_func_type: FuncType, scopes
) -> object:
    """``prim_func`` with each parameter buffer in the memory scope given for its Relay
    parameter (then result); unchanged where the scopes already agree or none is given.
    Buffers matched onto a rescoped buffer inside blocks take its scope too."""
    groups = _groups(prim_func, relay_func_type)
    if len(scopes) != len(groups):
        raise ValueError(
            f"expected {len(groups)} memory scopes (parameters, then the result), got {len(scopes)}"
        )
    bufs: dict = {}  # old Buffer -> new Buffer
    for group, scope in zip(groups, scopes, strict=True):
        scope = scope or ""
        for _, buf in group:
            if scope and buffer_memory_scope(buf) != scope:
                bufs[buf] = _rescoped(buf, scope)
    if not bufs:
        return prim_func
    for s in walk_stmts(prim_func.body):  # pre-order: outer matches before inner ones
        if isinstance(s, Block):
            for m in s.match_buffers:
                src = bufs.get(m.source.buffer)
                if src is not None and m.buffer not in bufs:
                    bufs[m.buffer] = _rescoped(m.buffer, src.scope)
    datas = {old.data: new.data for old, new in bufs.items()}
    body = _substitute_buffers(prim_func.body, bufs, datas)
    bmap = {p: bufs.get(b, b) for p, b in prim_func.buffer_map.items()}
    out = type(prim_func)(
        prim_func.params, body, prim_func.ret_type, bmap, prim_func.attrs, prim_func.span
    )
    out._checked_type = prim_func._checked_type
    return out


def _substitute_buffers(body, bufs: dict, datas: dict):
    """``body`` with every use of the buffers (and their data pointers) replaced (iterative)."""
    memo: dict = {}

    def fpost(e):
        if isinstance(e, BufferLoad) and e.buffer in bufs:
            return _copy(e, buffer=bufs[e.buffer])
        if isinstance(e, Var) and e in datas:
            return datas[e]
        return None

    def regions(rs):
        return tuple(BufferRegion(bufs[r.buffer], r.region) if r.buffer in bufs else r for r in rs)

    def fstmt(s):
        if isinstance(s, BufferStore) and s.buffer in bufs:
            return _copy(s, buffer=bufs[s.buffer])
        if isinstance(s, DeclBuffer) and s.buffer in bufs:
            return _copy(s, buffer=bufs[s.buffer])
        if isinstance(s, AttrStmt) and isinstance(s.node, Var) and s.node in datas:
            return _copy(s, node=datas[s.node])
        if isinstance(s, Block):
            matches = tuple(
                MatchBufferRegion(bufs.get(m.buffer, m.buffer), regions([m.source])[0])
                if m.buffer in bufs or m.source.buffer in bufs
                else m
                for m in s.match_buffers
            )
            allocs = tuple(bufs.get(b, b) for b in s.alloc_buffers)
            return _copy(
                s,
                reads=regions(s.reads),
                writes=regions(s.writes),
                match_buffers=matches,
                alloc_buffers=allocs,
            )
        return None

    return transform_stmt(body, lambda e: transform_expr(e, fpost, memo), fstmt)


def _register() -> None:
    """TVM's global functions over memory scopes (``tir.analysis.*MemoryConstraints``)."""
    from ...runtime.registry import register_func

    register_func(
        "tir.analysis.GetPrimFuncArgAndResultMemoryConstraints",
        prim_func_arg_and_result_memory_scopes,
        override=True,
    )
    register_func(
        "tir.analysis.ApplyPrimFuncArgAndResultMemoryConstraints",
        apply_prim_func_arg_and_result_memory_constraints,
        override=True,
    )


_register()

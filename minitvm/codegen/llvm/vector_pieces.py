"""A vectorized loop of a width LLVM handles badly, emitted as power-of-two pieces of its lanes.

LLVM keeps a vector of a power-of-two lane count up to 64 in whole registers (a ``<64 x float>``
is four AVX-512 registers), but may split a vector of another lane count that lives across
basic blocks (a loop's phi: an accumulator ``LICM`` promoted to a register, a reduction's running
sum) into one scalar per lane (24 and 48 lanes were, 12 not), rebuilt with an insert a
lane at every iteration: a conv-like
multiply-accumulate 48 lanes wide ran 20-60x slower than 64 lanes wide. A vectorized loop wider
than ``MAX_VECTOR_LANES`` was a serial scalar loop. Such a loop of ``n`` lanes is emitted here
as pieces of ``n``'s binary digits (48 = 32 + 16, 80 = 64 + 16, 256 = 4 x 64), each a vector
of a shape the code generator handles well.

The result is that of the whole-width vector, lane for lane: every statement of the body is
emitted for each piece (a let's value, a store's value, indices and mask) before any piece of
it is stored, so a store still reads the memory as it was before the statement, and the next
statement sees all of its lanes written. Only bodies whose every operation works lane by lane
are split: no explicit vector expression (a ``Ramp`` or ``Broadcast`` of its own width) and
none of the intrinsics whose lanes interact (``vector_shuffle``, the dot products, the byte
table lookup, external calls).
"""

from __future__ import annotations

from llvmlite import ir

from ...tir import expr as E
from ...tir import stmt as S
from ...tir.stmt_functor import post_order, stmt_exprs, walk_stmts
from . import byte_lut, dot
from . import types as T
from .expr import RampVal, fold_int

# The widest piece (the widest vector the loop emitter made before pieces existed)
MAX_PIECE_LANES = 64
# The widest loop emitted in pieces (all unrolled); a wider one stays a serial loop
MAX_PIECEWISE_LANES = 1024
# Calls whose result lanes depend on other lanes of their operands
_LANE_MIXING_CALLS = frozenset(
    f"tir.{n}" for n in ("vector_shuffle", byte_lut.NAME, dot.NAME, dot.PAIRS_NAME,
                         dot.BYTE_PAIRS_NAME, "call_extern", "call_pure_extern"))


def vector_pieces(lanes: int) -> list[int]:
    """The lane counts of ``lanes``'s pieces, widest first: powers of two of at most
    ``MAX_PIECE_LANES`` (64 + 64 + 32 + 4 for 164)."""
    out = [MAX_PIECE_LANES] * (lanes // MAX_PIECE_LANES)
    rest = lanes % MAX_PIECE_LANES
    bit = MAX_PIECE_LANES // 2
    while rest:
        if rest >= bit:
            out.append(bit)
            rest -= bit
        bit //= 2
    return out


def needs_pieces(lanes: int) -> bool:
    """Is a vector of ``lanes`` lanes one LLVM handles badly (see the module's docstring)?"""
    return lanes > MAX_PIECE_LANES or lanes & (lanes - 1) != 0


def lane_wise(body) -> bool:
    """Does every operation of the vectorized loop body ``body`` work lane by lane?"""
    seen: set[int] = set()
    lanes: dict = {}  # dtype -> its lanes (1 for what has none)
    for st in walk_stmts(body):
        for root in stmt_exprs(st):
            for e in post_order(root, seen):
                if isinstance(e, E.Call) and e.op_name in _LANE_MIXING_CALLS:
                    return False
                dtype = getattr(e, "dtype", None)  # (a Ramp, Broadcast... of its own lanes)
                n = lanes.get(dtype)
                if n is None:
                    n = lanes[dtype] = _lanes(dtype) if isinstance(dtype, str) else 1
                if n != 1:
                    return False
    return True


def _lanes(dtype: str) -> int:
    try:
        return T.parse_dtype(dtype)[2]
    except (ValueError, KeyError):  # (a dtype the code generator would reject anyway)
        return 0


def emit_in_pieces(cg, s: S.For, lanes: int) -> None:
    """Emit the vectorized loop ``s`` of ``lanes`` lanes (a ``lane_wise`` body of stores, lets
    and masked stores) as ``vector_pieces(lanes)``, statement by statement."""
    pieces = vector_pieces(lanes)
    base = cg.emit_scalar(s.min)
    envs: list[dict] = []  # per piece: id(var) -> its value (the loop var, the lets in scope)
    start = 0
    for n in pieces:
        b = base if not start else fold_int(cg.builder, "add", base,
                                            ir.Constant(base.type, start), ("nsw",))
        envs.append({id(s.loop_var): RampVal(b, 1, n) if n > 1 else b})  # (1 lane: a scalar)
        start += n
    bound = [s.loop_var]

    def each(fn) -> list:
        """``fn()`` for every piece, with its lanes and bindings in place."""
        out = []
        for n, env in zip(pieces, envs, strict=True):
            cg.lanes = n
            cg.env.update(env)
            out.append(fn())
        return out

    def unbind(var) -> None:
        for env in envs:
            env.pop(id(var), None)
        cg.env.pop(id(var), None)

    work: list = [s.body]
    try:
        while work:
            st = work.pop()
            if callable(st):
                st()
                continue
            t = type(st)
            if t is S.SeqStmt:
                work.extend(reversed(st.seq))
            elif t is S.LetStmt:
                values = each(lambda st=st: cg.emit(st.value))
                for env, v in zip(envs, values, strict=True):
                    env[id(st.var)] = v
                if id(st.value) in cg._data_ids():  # (as emit_stmt: its arithmetic wraps)
                    cg._data_ids().add(id(st.var))
                bound.append(st.var)
                work.append(lambda v=st.var: unbind(v))
                work.append(st.body)
            elif t is S.BufferStore:
                parts = each(lambda st=st: cg.store_operands(st))
                for n, (value, idx) in zip(pieces, parts, strict=True):
                    cg.lanes = n
                    cg.store(st.buffer, idx, value)
            elif t is S.IfThenElse:
                parts = each(lambda st=st: cg.masked_store_operands(st) if cg.lanes > 1
                             else _guarded_store_operands(cg, st))
                for n, part in zip(pieces, parts, strict=True):
                    cg.lanes = n
                    if n > 1:
                        cg.masked_store(st.then_case, *part)
                    else:  # (a one-lane piece: a store under a branch)
                        value, idx, cond = part
                        cg.emit_guarded(cond, lambda st=st, value=value, idx=idx:
                                        cg.store(st.then_case.buffer, idx, value))
            else:  # (_vectorizable let nothing else through)
                raise ValueError(f"vectorized loop over {s.loop_var.name!r}: cannot emit "
                                 f"{t.__name__} in pieces")
    finally:
        cg.lanes = 1
        for var in bound:
            cg.env.pop(id(var), None)


def _guarded_store_operands(cg, s: S.IfThenElse) -> tuple:
    """``(value, indices, condition)`` of ``if cond: buf[idx] = value`` at one lane."""
    st = s.then_case
    if s.else_case is not None or not isinstance(st, S.BufferStore):
        raise ValueError("vectorized branch: only a store without else is supported")
    value, idx = cg.store_operands(st)
    return value, idx, cg.emit_scalar(s.condition)

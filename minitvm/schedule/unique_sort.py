"""Native kernel of ``unique`` (``topi.unique``): a stable LSD radix sort of the input's keys
(8-bit digits; a pass whose digit all keys share is skipped, and all of them when the keys
already ascend), then one scan of the sorted run.

Keys order as the values: float32 as its bits with the sign folded (-0.0 read as +0.0, every
NaN one key after +inf, as numpy's ``unique`` groups them, or with ``equal_nan`` False each NaN
its own group, as torch's ``unique`` keeps them), int32 offset by 2**31, int64 with its sign
bit flipped. The sort is stable, so a group's first element is its first occurrence.
The table it writes [3 * N + 1] int32: each group's first index (sorted order, or the order of
first occurrence), each element's group (inverse), each group's count, then the number of
groups; zero past the groups. Relax calls the same statements as a PrimFunc
(``unique_prim_func``).
"""

from __future__ import annotations

from ..ir.op import OpPattern
from ..te.tensor import ComputeOp
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.function import PrimFunc
from ..tir.op import bitwise_and, bitwise_xor, reinterpret, shift_right
from ..topi.unique import UNIQUE_TABLE_TAG
from .common import LowerCtx, allocated, const_int, imm
from .lower import Rule, register_rule
from .unique_runs import emit_unique_runs, unique_runs_prim_func

__all__ = ["emit_unique", "unique_prim_func"]

SRC, G, R, ORDERED = range(4)  # the state's slots: which key buffer holds the run, group, rank,
# whether the keys already ascend (then no pass moves anything: consecutive runs, sorted data)


def _i64(v: int) -> E.PrimExpr:
    return E.const(v, "int64")


def _key(x: E.PrimExpr) -> E.PrimExpr:
    """The int64 sort key of one element (see the module)."""
    if x.dtype == "int64":
        return bitwise_xor(x, _i64(-(1 << 63)))
    if x.dtype == "int32":
        return E.Cast("int64", x) + _i64(1 << 31)
    bits = reinterpret("int32", x + E.const(0.0, "float32"))
    u = bitwise_and(E.Cast("int64", bits), _i64(0xFFFFFFFF))
    folded = E.Select(E.LT(bits, imm(0)), _i64(0xFFFFFFFF) - u, u + _i64(1 << 31))
    return E.Select(E.NE(x, x), _i64(NAN_KEY), folded)


NAN_KEY = 0xFFFFFFFF  # every float32 NaN's key; above +inf's (0xFF800000)


def emit_unique(ctx, data, table, is_sorted: bool, equal_nan: bool = True) -> S.Stmt:
    """Statements writing the table (see the module) of the 1-D ``data`` into ``table``."""
    (dim,) = data.shape
    n = imm(const_int(dim)) if const_int(dim) is not None else E.Cast("int32", dim)
    x, out = ctx.flat_view(data), ctx.flat_view(table)
    size = const_int(dim) if const_int(dim) is not None else n
    ka, kb = (decl_buffer((size,), "int64", f"uq_keys{s}") for s in "ab")
    ia, ib = (decl_buffer((size,), "int32", f"uq_index{s}") for s in "ab")
    hist = decl_buffer((256,), "int32", "uq_hist")
    st = decl_buffer((4,), "int32", "uq_state", scope="local")

    def get(slot):
        return E.BufferLoad(st, [imm(slot)])

    def put(slot, v):
        return S.BufferStore(st, v, [imm(slot)])

    i, h = ctx.fresh("i"), ctx.fresh("h")
    init = S.For(i, imm(0), n, S.ForKind.SERIAL, S.SeqStmt([
        S.BufferStore(ka, _key(E.BufferLoad(x, [i])), [i]), S.BufferStore(ia, i, [i])]))

    def digit(k, shift):
        return E.Cast("int32", bitwise_and(shift_right(k, _i64(shift)), _i64(255)))

    def scatter(shift, keys, idx, keys2, idx2):
        j = ctx.fresh("j")
        d = digit(E.BufferLoad(keys, [j]), shift)
        return S.For(j, imm(0), n, S.ForKind.SERIAL, S.LetStmt(
            d_var := ctx.fresh("d"), d, S.SeqStmt([
                S.BufferStore(keys2, E.BufferLoad(keys, [j]), [E.BufferLoad(hist, [d_var])]),
                S.BufferStore(idx2, E.BufferLoad(idx, [j]), [E.BufferLoad(hist, [d_var])]),
                S.BufferStore(hist, E.BufferLoad(hist, [d_var]) + imm(1), [d_var])])))

    def one_pass(shift) -> S.Stmt:
        t = ctx.fresh("t")

        def count(keys):
            j = ctx.fresh("j")
            return S.For(j, imm(0), n, S.ForKind.SERIAL, S.LetStmt(
                d := ctx.fresh("d"), digit(E.BufferLoad(keys, [j]), shift),
                S.BufferStore(hist, E.BufferLoad(hist, [d]) + imm(1), [d])))

        first = E.Select(E.EQ(get(SRC), imm(0)), E.BufferLoad(ka, [imm(0)]),
                         E.BufferLoad(kb, [imm(0)]))
        # exclusive prefix sums, the running total in the state's R slot
        prefix = S.SeqStmt([put(R, imm(0)), S.For(t, imm(0), imm(256), S.ForKind.SERIAL,
                                                  S.LetStmt(c := ctx.fresh("c"),
                                                            E.BufferLoad(hist, [t]), S.SeqStmt([
                                                                S.BufferStore(hist, get(R), [t]),
                                                                put(R, get(R) + c)])))])
        move = S.IfThenElse(E.EQ(get(SRC), imm(0)),
                            S.SeqStmt([scatter(shift, ka, ia, kb, ib), put(SRC, imm(1))]),
                            S.SeqStmt([scatter(shift, kb, ib, ka, ia), put(SRC, imm(0))]))
        return S.SeqStmt([
            S.For(h, imm(0), imm(256), S.ForKind.SERIAL, S.BufferStore(hist, imm(0), [h])),
            S.IfThenElse(E.EQ(get(SRC), imm(0)), count(ka), count(kb)),
            # every key has this digit: the pass would move nothing
            S.IfThenElse(E.LT(E.BufferLoad(hist, [digit(first, shift)]), n),
                         S.SeqStmt([prefix, move]))])

    bits = 64 if data.dtype == "int64" else 32
    c = ctx.fresh("c")
    # the radix passes order the keys as unsigned 64-bit numbers; a signed comparison of them
    # with the sign bit flipped is that order (an int64 key of 0 is 2**63, of -2 is 2**63 - 2:
    # compared signed they read ascending, and [0, -2] was left unsorted)
    def unsigned_lt(a, b):
        return E.LT(bitwise_xor(a, _i64(-(1 << 63))), bitwise_xor(b, _i64(-(1 << 63))))

    check = S.SeqStmt([put(ORDERED, imm(1)), S.For(
        c, imm(1), E.Max(n - imm(1), imm(0)), S.ForKind.SERIAL,
        S.IfThenElse(unsigned_lt(E.BufferLoad(ka, [c]), E.BufferLoad(ka, [c - imm(1)])),
                     put(ORDERED, imm(0))))])
    passes = [check, S.IfThenElse(E.EQ(get(ORDERED), imm(0)),
                                  S.SeqStmt([one_pass(s) for s in range(0, bits, 8)]))]
    back = S.IfThenElse(E.EQ(get(SRC), imm(1)), S.For(
        i2 := ctx.fresh("i"), imm(0), n, S.ForKind.SERIAL, S.SeqStmt([
            S.BufferStore(ka, E.BufferLoad(kb, [i2]), [i2]),
            S.BufferStore(ia, E.BufferLoad(ib, [i2]), [i2])])))

    # ---- one scan of the sorted run: groups, first indices, counts, inverse
    s = ctx.fresh("s")
    src = E.BufferLoad(ia, [s])
    new = E.Or(E.EQ(s, imm(0)), E.NE(E.BufferLoad(ka, [s]),
                                     E.BufferLoad(ka, [E.Max(s - imm(1), imm(0))])))
    if not equal_nan and data.dtype == "float32":  # a NaN never equals the one before it
        new = E.Or(new, E.EQ(E.BufferLoad(ka, [s]), _i64(NAN_KEY)))
    scan = S.For(s, imm(0), n, S.ForKind.SERIAL, S.SeqStmt([
        S.IfThenElse(new, S.SeqStmt([put(G, get(G) + imm(1)),
                                     S.BufferStore(out, src, [get(G)])])),
        S.BufferStore(out, E.BufferLoad(out, [n * imm(2) + get(G)]) + imm(1),
                      [n * imm(2) + get(G)]),
        S.BufferStore(out, get(G), [n + src])]))
    z = ctx.fresh("z")
    body = [S.For(z, imm(0), n * imm(3) + imm(1), S.ForKind.SERIAL,
                  S.BufferStore(out, imm(0), [z])),
            put(SRC, imm(0)), init, *passes, back, put(G, imm(-1)), scan,
            S.BufferStore(out, get(G) + imm(1), [n * imm(3)])]
    if not is_sorted:
        body.append(_first_occurrence_order(ctx, out, n, ib, ia, kb, get, put))
    stmt = S.SeqStmt(body)
    for buf in (ka, kb, ia, ib, hist, st):
        stmt = allocated(buf, stmt)
    return stmt


def _first_occurrence_order(ctx, out, n, mark, rank, tmp, get, put) -> S.Stmt:
    """Renumber the groups by first occurrence: ``mark`` each first index with its group, walk
    the input in order giving each marked group the next rank (its first index and count go
    there), then map the inverse indices through the ranks."""
    j, g, r, q = ctx.fresh("j"), ctx.fresh("g"), ctx.fresh("r"), ctx.fresh("q")
    groups = E.BufferLoad(out, [n * imm(3)])
    m = E.BufferLoad(mark, [j])
    return S.SeqStmt([
        S.For(j, imm(0), n, S.ForKind.SERIAL, S.BufferStore(mark, imm(-1), [j])),
        S.For(g, imm(0), groups, S.ForKind.SERIAL,
              S.BufferStore(mark, g, [E.BufferLoad(out, [g])])),
        put(R, imm(0)),
        S.For(j, imm(0), n, S.ForKind.SERIAL, S.IfThenElse(E.GE(m, imm(0)), S.SeqStmt([
            S.BufferStore(rank, get(R), [m]),
            S.BufferStore(tmp, E.Cast("int64", E.BufferLoad(out, [n * imm(2) + m])), [get(R)]),
            S.BufferStore(out, j, [get(R)]),
            put(R, get(R) + imm(1))]))),
        S.For(r, imm(0), groups, S.ForKind.SERIAL, S.BufferStore(
            out, E.Cast("int32", E.BufferLoad(tmp, [r])), [n * imm(2) + r])),
        S.For(q, imm(0), n, S.ForKind.SERIAL, S.BufferStore(
            out, E.BufferLoad(rank, [E.BufferLoad(out, [n + q])]), [n + q]))])


# ---------------------------------------------------------------------------------- Relay
def _supported(t, options=None) -> bool:
    return isinstance(t.op, ComputeOp) and t.op.tag == UNIQUE_TABLE_TAG


def _emit(ctx, t, out, bodies) -> S.Stmt:
    (data,) = t.op.attrs["operands"]
    if t.op.attrs.get("consecutive", False):
        return emit_unique_runs(ctx, ctx.buf[id(data)], out)
    return emit_unique(ctx, ctx.buf[id(data)], out, t.op.attrs["sorted"],
                       t.op.attrs.get("equal_nan", True))


register_rule(UNIQUE_TABLE_TAG, Rule("unique: radix sort, one scan", "unique_sort", _supported,
                                     _emit, symbolic=True, materialize=True))


# ---------------------------------------------------------------------------------- Relax
def unique_prim_func(n, dtype: str, is_sorted: bool, equal_nan: bool = True,
                     consecutive: bool = False) -> PrimFunc:
    """``(data [n], table [3 n + 1] int32)``: the kernel as a PrimFunc (``n`` may be a Var);
    ``consecutive``: the runs of equal elements (``schedule.unique_runs``), no sort."""
    if consecutive:
        return unique_runs_prim_func(n, dtype)
    data = decl_buffer((n,), dtype, "data")
    table = decl_buffer((n * 3 + 1,), "int32", "table")
    ctx = LowerCtx(own_temps=True)
    body = emit_unique(ctx, data, table, is_sorted, equal_nan)
    for view in reversed(ctx.ws_views):
        body = S.DeclBuffer(view, body)
    return PrimFunc([data, table], body,
                    attrs={"tir.noalias": True, "op_pattern": int(OpPattern.OPAQUE)})

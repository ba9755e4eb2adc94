"""The loops, indices and tile stores that every schedule of ``gemm_kernel.GemmBuilder`` is
written with, and the small integer helpers they share.

``GemmLoops`` holds no state of its own: ``GemmBuilder.__init__`` (in ``gemm_kernel``, beside
the per-host switches it reads) sets the fields these methods use (``A``, ``B``, ``Bp``, ``C``,
``mr``, ``nr``, ``np``, ``idx``, ``rests``, ``epilogue``, ``c_transposed``, ...). The packing
(``gemm_pack``) and the schedules (``gemm_unblocked``, ``gemm_blocked``, ``gemm_inline_pack``)
build on it.
"""

from __future__ import annotations

import math

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.expr import IntImm, Var


def _ceil_div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return E.FloorDiv(a + (b - 1), b)


def _static_work(x) -> int:
    """An integer estimate of a work count with symbolic factors (each counted as 64)."""
    if isinstance(x, int):
        return x
    if isinstance(x, IntImm):
        return x.value
    if isinstance(x, E.Mul):
        return _static_work(x.a) * _static_work(x.b)
    return 64


def _balanced(tiles: int, most: int) -> int:
    """Row tiles per block for ``tiles`` tiles in blocks of at most ``most``: as few blocks as
    that allows, of (nearly) equal size, so the thread pool's tasks are even (768 rows of 6:
    blocks of 22 tiles, 22 x 5 + 18, not 24 x 5 + 8 whose short block left one of two threads
    idle for an eighth of the GEMM)."""
    if tiles <= most:
        return most
    return -(-tiles // -(-tiles // most))


def _when(extent, stmt: S.Stmt) -> S.Stmt:
    """``stmt`` guarded by ``extent > 0`` when the extent is symbolic."""
    if isinstance(extent, int):
        return stmt
    return S.IfThenElse(extent > 0, stmt)


def row_step(M) -> int:
    """The constant factor of a symbolic row count (``n * 16`` -> 16; 1 when there is none)."""
    if isinstance(M, int):
        return M
    if isinstance(M, IntImm):
        return M.value
    if isinstance(M, E.Mul):
        return row_step(M.a) * row_step(M.b)
    return 1


def row_rests(M, mr: int) -> list[int]:
    """The nonzero values ``M % mr`` can take, ascending: with a symbolic ``M = n * c`` the
    multiples of ``gcd(c, mr)`` (none when ``mr`` divides ``c``: no row-tail tiles to compile;
    segformer_mini's 9 GEMMs over ``n * 16`` tokens took 2x Relay's compile time for their
    chains of ``mr - 1`` tail tiles that never ran)."""
    step = math.gcd(row_step(M), mr) if not isinstance(M, int) else 1
    return [r for r in range(1, mr) if r % step == 0]


def partial_lanes(part: int, nr: int) -> int:
    """Lanes of a narrowed partial panel of ``part`` columns (``GemmLoops.tile_lanes``): the
    power of two holding them, 4 at least, ``nr`` at most."""
    lanes = 4
    while lanes < part:
        lanes *= 2
    return min(lanes, nr)


class GemmLoops:
    """Loop, index and store helpers of ``GemmBuilder`` (the fields they read are set by its
    ``__init__``)."""

    def var(self, name: str) -> Var:
        return Var(name, self.idx)

    def c(self, v):
        return E._to_expr(v, self.idx)

    def eq(self, a, b) -> E.PrimExpr:
        return E.EQ(self.c(a), self.c(b))

    def loop(self, name: str, extent, kind, fbody, lo=0) -> S.For:
        v = self.var(name)
        return S.For(v, self.c(lo), self.c(extent), kind, fbody(v))

    def par_loop(self, name: str, extent, iter_work, fbody, min_work=None) -> S.Stmt:
        """A loop that runs on the thread pool when its total work (over ``min_work``, by
        default the GEMM's threshold) is worth it."""
        if not isinstance(iter_work, int):  # a symbolic extent in it: count it as 64
            iter_work = _static_work(iter_work)
        min_work = self.min_work if min_work is None else min_work
        need = _ceil_div(min_work, max(1, iter_work))
        if isinstance(extent, int):
            if extent == 0:
                return S.SeqStmt([])
            if extent < need or extent == 1:
                return self.loop(name, extent, S.ForKind.SERIAL, fbody)
        v = self.var(name)
        return S.For(v, self.c(0), self.c(extent), S.ForKind.PARALLEL, fbody(v),
                     annotations={"parallel_min_extent": max(2, need)})

    def a_at(self, b, row, k):
        return self.A[(b, row, k) if self.a_batched else (row, k)]

    def bp_at(self, b, jo, k, jj):
        if self.direct_b:
            col = jo * self.nr + jj
            return self.B[(b, k, col) if self.b_batched else (k, col)]
        if self.bp_block_local:  # (compute_inline_pack: this task's slots)
            jo = jo + self.bp_slot_shift
        return self.Bp[(b, jo, k, jj) if self.b_batched else (jo, k, jj)]

    def c_index(self, idx) -> list:
        """Where C's element ``idx`` (batch, row, column) is stored (``c_transposed``)."""
        return [*idx[:-2], idx[-1], idx[-2]] if self.c_transposed else list(idx)

    def tail_tiles(self, rest, tile) -> S.Stmt | None:
        """The leftover rows of a symbolic M (``rest = M % mr`` of them, after the full tiles)
        as tiles of the binary digits of ``rest`` (in units of ``row_rests``' step): with
        ``mr = 12``, tiles of 8, 4, 2 and 1 rows, each run when its digit is set, at the rows
        the larger ones leave; ``tile(row, rows)`` is the tile ``rows`` rows from the first
        leftover one. Four tiles of 15 rows in all instead of eleven of 66 (one per
        remainder): a dynamic-batch ResNet-18's classifier GEMM took 27% of the cold
        ``relax.build``'s kernel compile time. A remainder of one tile's size (1, 2, 4 or 8
        rows: batches of 1, 2, 4, 8) still runs as one tile; others run as two or three, each
        streaming the packed B once more (a batch of 3: a 2-row and a 1-row tile)."""
        if not self.rests:
            return None
        unit = self.rests[0]
        sizes = []
        size = unit
        while size <= self.rests[-1]:
            sizes.append(size)
            size *= 2
        parts = []
        for size in reversed(sizes):
            below = E.FloorMod(rest, self.c(2 * size))  # the rows this and smaller tiles take
            parts.append(S.IfThenElse(below >= self.c(size), tile(rest - below, size)))
        return S.SeqStmt(parts) if len(parts) > 1 else parts[0]

    def store_columns(self, full_panel: bool) -> tuple[int, S.ForKind, bool]:
        """(columns, loop kind, guarded) of a tile row's store. A full panel: a vector store
        along its contiguous row. A partial panel of a static N (the last panel, ``jo == N //
        nr``, wherever the schedule calls it): a vector store of its ``N % nr`` columns, unguarded
        (static M 300 x 70 x 530 on AVX-512: the unrolled guarded scalar stores were 1152 of 12
        x 32 per tile, 66k lines of LLVM IR and 4.4 s of LLVM for one kernel; now ~2k lines).
        A symbolic N: each of the ``nr`` columns guarded by ``col < N``, element by element,
        unrolled (a rolled loop indexing the accumulator by its variable kept the whole tile in
        memory instead of registers, its K loop included: dense 196x192 -> 48 with 32-wide
        tiles, one thread, 96 -> 49 us); with a symbolic M as well the store stays a loop: its
        row tail is a chain of ``mr - 1`` tiles, and unrolled stores grew a dynamic-batch
        classifier's IR tenfold (1.2 -> 6-7 s of LLVM, most of a cold EfficientNet-B0
        ``relax.build``)."""
        if full_panel:
            return self.nr, S.ForKind.VECTORIZED, False
        if isinstance(self.N, int):
            part = self.N % self.nr
            # (one column: unrolled, as a one-lane vector loop would be a rolled loop)
            return part, S.ForKind.VECTORIZED if part > 1 else S.ForKind.UNROLLED, False
        kind = S.ForKind.UNROLLED if isinstance(self.M, int) else S.ForKind.SERIAL
        return self.nr, kind, True

    def tile_lanes(self, full_panel: bool) -> int:
        """Columns of a tile's accumulators: ``nr``, but in the partial last panel of a static
        N (``NARROW_PARTIAL_PANEL``) the power of two (4 at least) holding its ``N % nr``
        columns, so a panel of 5 columns multiplies 8-lane vectors, not two 16-lane ones."""
        part = self.N % self.nr if isinstance(self.N, int) else 0
        if full_panel or not self.narrow_partial or not part:
            return self.nr
        return partial_lanes(part, self.nr)

    def finish(self, row, col, v):
        """``v``, C's value at (``row``, ``col``), with the fused epilogue applied: the bias,
        the ReLU, then the user's epilogue (each when the GEMM has it)."""
        if self.bias is not None:
            v = v + self.bias[col]
        if self.relu:
            v = E.Max(v, E.FloatImm(self.dtype, 0.0))
        if self.epilogue is not None:
            v = self.epilogue(row, col, v)
        return v

    def store_tile(self, rows: int, jo, full_panel: bool, out, acc=None) -> S.Stmt:
        """The stores ``out(ii, jj)`` of a ``rows x nr`` register tile of panel ``jo``, as
        ``store_columns`` says. Guarded (a symbolic N's partial panel): columns ``jo*nr + jj <
        N`` only, and a transposed C (``c_transposed``) tests each column once, around its
        ``rows`` stores (a row of C): not each element, whose unrolled branches were most of a
        swapped GEMM's IR. Given the tile's accumulator ``acc``, a transposed C's guarded
        store is ``rolled_transposed_store``'s loop instead (``out(ii, jj, src)`` then reads
        ``src[ii, jj]``)."""
        unroll = S.ForKind.UNROLLED
        cols, kind, guarded = self.store_columns(full_panel)
        if not guarded:
            return self.loop("ii", rows, unroll, lambda ii: self.loop(
                "jj", cols, kind, lambda jj: out(ii, jj)))
        if self.c_transposed and acc is not None:
            return self.rolled_transposed_store(rows, jo, acc, out)
        if self.c_transposed:
            return self.loop("jj", cols, kind, lambda jj: S.IfThenElse(
                jo * self.nr + jj < self.N, self.loop("ii", rows, unroll, lambda ii: out(ii, jj))))
        return self.loop("ii", rows, unroll, lambda ii: self.loop(
            "jj", cols, kind, lambda jj: S.IfThenElse(jo * self.nr + jj < self.N,
                                                      out(ii, jj))))

    def rolled_transposed_store(self, rows: int, jo, acc, out) -> S.Stmt:
        """A transposed C's guarded tile store (``c_transposed``, symbolic N: the swapped GEMM
        over a symbolic row count) as one rolled loop over the panel's ``min(nr, N - jo*nr)``
        columns (rows of C), each storing its ``rows`` elements, read from a copy of the
        accumulator (``acc_rows``: the register tile stored whole, in vectors). Indexed by the
        loop's variable, ``acc`` itself would be kept in memory, its K loop included
        (``store_columns``); the copy leaves it in registers. The ``nr`` unrolled guarded
        column stores this replaces were 18k of the 22k lines of LLVM IR of a symbolic-row
        512 x 1024 matmul + bias + relu (three tile variants of 32 x 12 scalar stores).
        Measured and not taken: the epilogue in vectors between a rolled gather of C's old
        rows and a rolled scatter (as fast, but an epilogue's other inputs, a residual, were
        gathered lane by lane: 7.7k lines for a 768 x 768 + bias + residual, not 4.4k); this
        store for a static N too (768 x 768 and 768 x 3072 at 16-128 static rows 1.02-1.10x
        slower than LLVM's scattered vector stores, though half the CPU s to compile)."""
        unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED
        lanes = acc.shape[-1].value if isinstance(acc.shape[-1], IntImm) else acc.shape[-1]
        copy = decl_buffer((rows, lanes), acc.dtype, "acc_rows", scope="local")
        spill = self.loop("ii", rows, unroll, lambda ii: self.loop(
            "jj", lanes, vec, lambda jj: S.BufferStore(copy, acc[ii, jj], [ii, jj])))
        count = E.Min(self.c(self.nr), self.N - jo * self.nr)
        stores = self.loop("jj", count, S.ForKind.SERIAL, lambda jj: self.loop(
            "ii", rows, unroll, lambda ii: out(ii, jj, copy)))
        body = S.DeclBuffer(copy, S.SeqStmt([spill, stores]))
        return S.Allocate(copy.data, acc.dtype, [rows * lanes], True, body)

    def split(self, q, sizes):
        """Mixed-radix digits of the fused loop index ``q`` for ``sizes`` (outer first)."""
        out = []
        for k in range(len(sizes) - 1, -1, -1):
            if k == 0:
                out.append(q)
            else:
                out.append(E.FloorMod(q, sizes[k]))
                q = E.FloorDiv(q, sizes[k])
        return out[::-1]

    def fused(self, name, sizes, iter_work, fbody, min_work=None) -> S.Stmt:
        """Loop over the product of ``sizes`` (1s dropped), ``fbody(*digits)``."""
        keep = [k for k, s in enumerate(sizes) if not (isinstance(s, int) and s == 1)]
        total = 1
        for k in keep:
            total = total * sizes[k]

        def body(q):
            digits = self.split(q, [sizes[k] for k in keep]) if keep else []
            # digits by a symbolic size are bound once per iteration: written into every
            # index they were recomputed (a division by a run-time value, with its guards) at
            # each element of the tiles' stores
            lets = []
            if any(not isinstance(sizes[k], int) for k in keep[1:]):
                for i, d in enumerate(digits):
                    if d is not q:
                        v = self.var(f"{name}_{i}")
                        lets.append((v, d))
                        digits[i] = v
            vals = [self.c(0)] * len(sizes)
            for k, d in zip(keep, digits):
                vals[k] = d
            out = fbody(*vals)
            for v, d in reversed(lets):
                out = S.LetStmt(v, d, out)
            return out

        return self.par_loop(name, total, iter_work, body, min_work)

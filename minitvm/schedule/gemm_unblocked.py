"""``GemmBuilder``'s schedule without cache blocking (a host whose ``BLOCKING`` is None): each
``mr x nr`` micro-kernel runs the whole reduction; the leftover rows (and the whole of a one-row
GEMV) run one row at a time with the reduction split into ``gemv_split`` interleaved partial
sums, so their FMA chains do not wait on each other.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .gemm_loops import GemmLoops, _ceil_div, _when


class UnblockedSchedule(GemmLoops):
    """The micro-kernel over the whole K (``micro``) and the unblocked schedule of it."""

    def micro(self, b, row0, jo, rows: int, full_panel: bool) -> S.Stmt:
        """The ``rows x nr`` tile of C at (row0, jo*nr), accumulated in registers."""
        nr, K = self.nr, self.K
        split = self.gemv_split
        ku = split if rows == 1 and (not isinstance(K, int) or K >= 2 * split) else 1
        acc = decl_buffer((ku * rows, nr), self.dtype, "acc", scope="local")
        zero = E.FloatImm(self.dtype, 0.0)
        unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED
        init = self.loop("ii", ku * rows, unroll, lambda ii: self.loop(
            "jj", nr, vec, lambda jj: S.BufferStore(acc, zero, [ii, jj])))

        def fma(slot, k):
            return self.loop("ii", rows, unroll, lambda ii: self.loop(
                "jj", nr, vec, lambda jj: S.BufferStore(
                    acc, acc[slot + ii, jj] + self.a_at(b, row0 + ii, k)
                    * self.bp_at(b, jo, k, jj), [slot + ii, jj])))

        parts = [init]
        if ku > 1:
            kq = K // ku if isinstance(K, int) else E.FloorDiv(K, self.c(ku))
            parts.append(self.loop("k0", kq, S.ForKind.SERIAL, lambda k0: self.loop(
                "u", ku, unroll, lambda u: fma(u * rows, k0 * ku + u))))
            if not isinstance(K, int):
                parts.append(self.loop("k", E.FloorMod(K, self.c(ku)), S.ForKind.SERIAL,
                                       lambda k: fma(0, k), lo=kq * self.c(ku)))
            elif K % ku:
                parts.append(self.loop("k", K % ku, S.ForKind.SERIAL,
                                       lambda k: fma(0, k), lo=K - K % ku))
            parts.append(self.loop("u", ku - 1, unroll, lambda u: self.loop(
                "ii", rows, unroll, lambda ii: self.loop("jj", nr, vec, lambda jj: S.BufferStore(
                    acc, acc[ii, jj] + acc[(u + 1) * rows + ii, jj], [ii, jj])))))
        else:
            parts.append(self.loop("k", K, S.ForKind.SERIAL, lambda k: fma(0, k)))

        def out(ii, jj):
            col = jo * nr + jj
            v = self.finish(row0 + ii, col, acc[ii, jj])
            idx = (b, row0 + ii, col) if self.batched else (row0 + ii, col)
            return S.BufferStore(self.C, v, self.c_index(idx))

        parts.append(self.store_tile(rows, jo, full_panel, out))
        body = S.DeclBuffer(acc, S.SeqStmt(parts))
        return S.Allocate(acc.data, self.dtype, [ku * rows * nr], True, body)

    def compute_unblocked(self) -> S.Stmt:
        """The schedule without cache blocking (``BLOCKING`` None): parallel over (batch, block
        of ``mc`` rows, full panel), then the partial panel and the leftover rows, one row at a
        time; each micro-kernel runs the whole K."""
        mr, M, K, nr = self.mr, self.M, self.K, self.nr
        const = isinstance(M, int)
        tiles = M // mr if const else E.FloorDiv(M, mr)
        tpb = max(1, self.mc // mr)
        blocks = _ceil_div(tiles, tpb)
        nb = self.batch if self.batched else 1
        if isinstance(self.N, int):
            full, part = self.N // nr, self.N % nr
        else:  # symbolic N: the partial panel runs when there is one
            full, part = E.FloorDiv(self.N, self.c(nr)), E.FloorMod(self.N, self.c(nr))
        last = self.c(full)

        def tiles_of(b, ib, jo, full_panel):
            def tile(t):
                tile_id = ib * tpb + t
                body = self.micro(b, tile_id * mr, jo, mr, full_panel)
                if const and tiles % tpb == 0:
                    return body
                return S.IfThenElse(tile_id < tiles, body)

            return self.loop("t", tpb, S.ForKind.SERIAL, tile)

        parts = []
        if not const or tiles:
            work = tpb * mr * nr * K
            if not isinstance(full, int) or full:
                parts.append(self.fused("q", [nb, blocks, full], work,
                                        lambda b, ib, jo: tiles_of(b, ib, jo, True)))
            if not isinstance(part, int) or part:
                parts.append(_when(part, self.fused("qp", [nb, blocks], work,
                                                    lambda b, ib: tiles_of(b, ib, last, False))))
        if M % mr if const else self.rests:
            rest = M % mr if const else E.FloorMod(M, mr)
            base = tiles * mr

            def rows_of(b, jo, full_panel):
                return self.loop("r", rest, S.ForKind.SERIAL,
                                 lambda r: self.micro(b, base + r, jo, 1, full_panel))

            work = (rest if const else mr) * nr * K
            if not isinstance(full, int) or full:
                parts.append(self.fused("qr", [nb, full], work,
                                        lambda b, jo: rows_of(b, jo, True)))
            if not isinstance(part, int) or part:
                parts.append(_when(part, self.fused("qrp", [nb], work,
                                                    lambda b: rows_of(b, last, False))))
        return S.SeqStmt(parts)

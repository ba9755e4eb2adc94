"""``GemmBuilder``'s cache-blocked schedule (``BLOCKING``): K runs in blocks whose ``kc x nr``
piece of a B panel stays in L1 while the row tiles of a block of ``mc`` rows use it (C
accumulates across the blocks; the last applies the epilogue), in parallel over (batch, row
block, group of panels). For a short K each row tile runs over the group's panels instead
(``PANELS_INNER_MAX_K``); the leftover rows are one multi-row tile (a symbolic row count picks
tiles by its remainder). The first row tile of each panel's K block may prefetch the next piece
of B (``PREFETCH_NEXT_PIECE``), and the tiles of a GEMM of few rows their own panel ahead
(``PREFETCH_AHEAD``). The switches stay in ``gemm_kernel``, where hosts and tests set them; it
imports this module, so they are read from it at call time.
"""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import prefetch
from .gemm_loops import GemmLoops, _balanced, _ceil_div


class BlockedSchedule(GemmLoops):
    """The micro-kernel over one K block (``micro_kb``) and the cache-blocked schedule of it."""

    def micro_kb(self, b, row0, jo, rows: int, full_panel: bool, kb, nkb: int, kc: int
                 ) -> S.Stmt:
        """The ``rows x nr`` tile of C at (row0, jo*nr) over K block ``kb`` (of ``nkb``, ``kc``
        long, the last one possibly shorter): block 0 stores its sum, later blocks add theirs
        to C, the last one applies the epilogue."""
        nr, K = self.nr, self.K
        lanes = self.tile_lanes(full_panel)  # (nr, or fewer in a partial panel)
        k0 = kb * kc if not isinstance(kb, int) else self.c(kb * kc)
        if not isinstance(K, int):  # a symbolic K is one block
            kext = K
        else:
            kext = kc if K % kc == 0 else E.Min(self.c(kc), self.c(K) - k0)
        short = isinstance(kext, int) and kext < 2 * self.gemv_split
        ku = self.gemv_split if rows == 1 and not short else 1
        acc = decl_buffer((ku * rows, lanes), self.dtype, "acc", scope="local")
        zero = E.FloatImm(self.dtype, 0.0)
        unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

        def fma(slot, k):
            body = self.loop("ii", rows, unroll, lambda ii: self.loop(
                "jj", lanes, vec, lambda jj: S.BufferStore(
                    acc, acc[slot + ii, jj] + self.a_at(b, row0 + ii, k0 + k)
                    * self.bp_at(b, jo, k if self.bp_block_local else k0 + k, jj),
                    [slot + ii, jj])))
            if self.prefetch_ahead and not self.bp_block_local and not self.direct_b:
                # (clamped into the panel: the prefetch names an element of Bp)
                line = 64 // np.dtype(self.dtype).itemsize
                pre = (b,) if self.b_batched else ()
                last = self.c(K - 1) if isinstance(K, int) else K - self.c(1)
                at = E.Min(k0 + k + self.c(self.prefetch_ahead), last)
                pfs = [prefetch(self.Bp[(*pre, jo, at, self.c(j))]) for j in range(0, nr, line)]
                body = S.SeqStmt([*pfs, body])
            if self.next_piece is None:
                return body
            njo, nk0 = self.next_piece
            line = 64 // np.dtype(self.dtype).itemsize
            pre = (b,) if self.b_batched else ()
            pfs = [prefetch(self.Bp[(*pre, njo, nk0 + k, self.c(j))]) for j in range(0, nr, line)]
            return S.SeqStmt([*pfs, body])

        parts = [self.loop("ii", ku * rows, unroll, lambda ii: self.loop(
            "jj", lanes, vec, lambda jj: S.BufferStore(acc, zero, [ii, jj])))]
        if ku > 1:
            kq = kext // ku if isinstance(kext, int) else E.FloorDiv(kext, self.c(ku))
            parts.append(self.loop("k0", kq, S.ForKind.SERIAL, lambda q: self.loop(
                "u", ku, unroll, lambda u: fma(u * rows, q * ku + u))))
            if not isinstance(kext, int):
                parts.append(self.loop("k", E.FloorMod(kext, self.c(ku)), S.ForKind.SERIAL,
                                       lambda k: fma(0, k), lo=kq * self.c(ku)))
            elif kext % ku:
                parts.append(self.loop("k", kext % ku, S.ForKind.SERIAL,
                                       lambda k: fma(0, k), lo=kext - kext % ku))
            parts.append(self.loop("u", ku - 1, unroll, lambda u: self.loop(
                "ii", rows, unroll, lambda ii: self.loop(
                    "jj", lanes, vec, lambda jj: S.BufferStore(
                        acc, acc[ii, jj] + acc[(u + 1) * rows + ii, jj], [ii, jj])))))
        else:
            parts.append(self.loop("k", kext, S.ForKind.SERIAL, lambda k: fma(0, k)))

        def store(add_c, epi) -> S.Stmt:
            """The tile's stores: C's old value added when ``add_c`` (True, False or a
            condition on ``kb``), the epilogue applied when ``epi`` (likewise)."""
            def out(ii, jj, src=acc):
                col = jo * nr + jj
                idx = self.c_index([b, row0 + ii, col] if self.batched else [row0 + ii, col])
                v = src[ii, jj]
                if add_c is True:
                    v = v + self.C[tuple(idx)]
                elif add_c is not False:
                    v = v + E.Select(add_c, self.C[tuple(idx)], zero)
                if epi is False:
                    return S.BufferStore(self.C, v, idx)
                w = self.finish(row0 + ii, col, v)
                return S.BufferStore(self.C, w if epi is True else E.Select(epi, w, v), idx)

            return self.store_tile(rows, jo, full_panel, out, acc)

        epilogue = self.bias is not None or self.relu or self.epilogue is not None
        if nkb == 1:
            parts.append(store(False, True))
        elif self.c_transposed:
            # one store for every K block: C's old value selected after the first, the epilogue
            # after the last. A transposed tile's stores are scalar (a column of C per row of
            # the tile), and a copy per case tripled most of the swapped GEMM's code: a
            # symbolic-row 512 x 1024 matmul + bias, 52k -> 27k lines of LLVM IR, 3.9 -> 2.3
            # CPU s to compile, the same results bit for bit and the same run time (the extra
            # reads of C in the first block are 384 per 98k multiply-adds)
            if isinstance(kb, int):
                parts.append(store(kb > 0, epilogue and kb == nkb - 1))
            else:
                parts.append(store(E.NE(kb, self.c(0)),
                                   self.eq(kb, nkb - 1) if epilogue else False))
        elif not epilogue:
            parts.append(S.IfThenElse(self.eq(kb, 0), store(False, False), store(True, False)))
        else:
            parts.append(S.IfThenElse(self.eq(kb, 0), store(False, False), S.IfThenElse(
                self.eq(kb, nkb - 1), store(True, True), store(True, False))))
        body = S.DeclBuffer(acc, S.SeqStmt(parts))
        return S.Allocate(acc.data, self.dtype, [ku * rows * lanes], True, body)

    def compute_blocked(self) -> S.Stmt:
        """The cache-blocked schedule (``BLOCKING``): parallel over (batch, row block, panel
        group); in each, K blocks outermost, then the group's panels, then the row tiles."""
        from . import gemm_kernel

        mr, M, K, nr, N = self.mr, self.M, self.K, self.nr, self.N
        kc_max, width = self.blocking
        nkb = -(-K // kc_max) if isinstance(K, int) else 1  # (a symbolic K: one block)
        kc = -(-K // nkb) if isinstance(K, int) else 0  # K blocks of (nearly) equal length
        const = isinstance(M, int)
        tiles = M // mr if const else E.FloorDiv(M, self.c(mr))
        rest = M % mr if const else E.FloorMod(M, self.c(mr))
        tpb = _balanced(tiles, max(1, self.mc // mr)) if const else max(1, self.mc // mr)
        blocks = _ceil_div(M, tpb * mr)
        static_n = isinstance(N, int)
        npan = self.np
        full = N // nr if static_n else E.FloorDiv(N, self.c(nr))
        # panels per group: at most ``width``, and at least MIN_GROUPS groups for the pool
        per = max(1, min(width, npan // gemm_kernel.MIN_GROUPS)) if static_n else width
        groups = -(-npan // per) if static_n else _ceil_div(npan, per)
        nb = self.batch if self.batched else 1
        # the block holding the leftover rows (its last), when there are any
        rest_block = tiles // tpb if const else E.FloorDiv(tiles, self.c(tpb))

        # a transposed C of symbolic rows (the swapped GEMM's N) stores each tile column by
        # column, scalar either way: every panel takes the guarded store (a test per column of
        # the tile, 32 per 12 x 32 x K multiply-adds) rather than a copy of the whole tile for
        # the full panels (symbolic-row 512 x 1024 matmul + bias: 27k -> 20k lines of LLVM IR,
        # 2.3 -> 1.8 CPU s to compile; the same results bit for bit, run time equal within noise)
        guarded_only = self.c_transposed and not static_n

        def rest_tiles(b, jo, full_panel, kb):
            if const:
                return self.micro_kb(b, tiles * mr, jo, rest, full_panel, kb, nkb, kc) \
                    if rest else None
            return self.tail_tiles(rest, lambda row, r: self.micro_kb(
                b, tiles * self.c(mr) + row, jo, r, full_panel, kb, nkb, kc))

        def row_tiles(b, ib, jo, full_panel, kb, prefetch_at=None):
            def tile(t):
                tile_id = ib * tpb + t
                body = self.micro_kb(b, tile_id * mr, jo, mr, full_panel, kb, nkb, kc)
                if const and blocks * tpb == tiles:
                    return body
                return S.IfThenElse(tile_id < tiles, body)

            parts = []
            if const and blocks == 1 and tiles > 1 and prefetch_at is not None:
                # the first tile also fetches the piece of B read after this one
                parts.append(prefetching(prefetch_at, lambda: self.micro_kb(
                    b, self.c(0), jo, mr, full_panel, kb, nkb, kc)))
                parts.append(self.loop("t", tiles - 1, S.ForKind.SERIAL, lambda t: self.micro_kb(
                    b, t * mr, jo, mr, full_panel, kb, nkb, kc), lo=1))
            elif const and blocks == 1 and tiles:  # one row block: its tiles, unguarded
                parts.append(self.loop("t", tiles, S.ForKind.SERIAL, lambda t: self.micro_kb(
                    b, t * mr, jo, mr, full_panel, kb, nkb, kc)))
            elif const and tiles and tpb > 1 and prefetch_at is not None:
                # several row blocks: each block's first tile prefetches as above
                parts.append(prefetching(prefetch_at, lambda: tile(0)))
                parts.append(self.loop("t", tpb - 1, S.ForKind.SERIAL, tile, lo=1))
            elif not const or tiles:
                parts.append(self.loop("t", tpb, S.ForKind.SERIAL, tile))
            tail = rest_tiles(b, jo, full_panel, kb)
            if tail is not None:
                parts.append(tail if const and blocks == 1 else
                             S.IfThenElse(self.eq(ib, rest_block), tail))
            return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

        def panel(b, ib, jo, kb, nxt=None):
            if static_n and full == npan:
                return row_tiles(b, ib, jo, True, kb, nxt)
            if static_n and full == 0 or guarded_only:
                return row_tiles(b, ib, jo, False, kb, nxt)
            return S.IfThenElse(jo < full, row_tiles(b, ib, jo, True, kb, nxt),
                                row_tiles(b, ib, jo, False, kb, nxt))

        def next_piece(g, j, kb):
            """(panel, first K) of the piece of B a task reads after panel ``g * per + j``'s
            piece of K block ``kb`` (panels inner): the group's next panel, else its first at
            the next K block, else (the last block) the next group's first panel."""
            jo = g * per + j
            if nkb == 1:
                return jo + 1, self.c(0)
            last_j = self.eq(j, per - 1)
            wrap = E.And(last_j, self.c(kb) < nkb - 1)
            return (E.Select(wrap, g * per, jo + 1),
                    E.Select(wrap, (kb + 1) * kc, E.Select(last_j, self.c(0), kb * kc)))

        def prefetching(at, build) -> S.Stmt:
            """The tile ``build()`` makes, each turn of its reduction also fetching a row of
            the piece of B at ``at`` (panel, first K) into cache (``PREFETCH_NEXT_PIECE``)."""
            njo, nk0 = self.var("pf_panel"), self.var("pf_k")
            self.next_piece = (njo, nk0)
            try:
                tile = build()
            finally:
                self.next_piece = None
            return S.LetStmt(njo, at[0], S.LetStmt(nk0, at[1], tile))

        # prefetch the next piece of B (not one read in place or just packed)
        fetch_next = self.prefetch_b and not self.direct_b and not self.bp_block_local

        def each_panel(g, fbody):
            """``fbody(jo, full_panel)`` for each panel ``jo`` of group ``g``."""
            def one(j):
                jo = g * per + j
                if static_n and full == npan:
                    body = fbody(jo, True)
                elif static_n and full == 0 or guarded_only:
                    body = fbody(jo, False)
                else:
                    body = S.IfThenElse(jo < full, fbody(jo, True), fbody(jo, False))
                return body if static_n and npan % per == 0 else S.IfThenElse(jo < npan, body)

            return self.loop("j", per, S.ForKind.SERIAL, one)

        def tiles_outer(b, ib, g, kb):
            """Row tiles outer, the group's panels inner (C written along its rows)."""
            def tile(t):
                tile_id = ib * tpb + t
                body = each_panel(g, lambda jo, fp: self.micro_kb(
                    b, tile_id * mr, jo, mr, fp, kb, nkb, kc))
                if const and (blocks == 1 or blocks * tpb == tiles):
                    return body
                return S.IfThenElse(tile_id < tiles, body)

            parts = []
            if const and blocks == 1 and tiles:
                parts.append(self.loop("t", tiles, S.ForKind.SERIAL, tile))
            elif not const or tiles:
                parts.append(self.loop("t", tpb, S.ForKind.SERIAL, tile))
            if rest if const else self.rests:
                tail = each_panel(g, lambda jo, fp: rest_tiles(b, jo, fp, kb))
                parts.append(tail if const and blocks == 1 else
                             S.IfThenElse(self.eq(ib, rest_block), tail))
            return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

        def group(b, ib, g):
            def over_panels(kb):
                if not isinstance(K, int) or K <= gemm_kernel.PANELS_INNER_MAX_K:
                    return tiles_outer(b, ib, g, kb)
                def one(j):
                    jo = g * per + j
                    body = panel(b, ib, jo, kb, next_piece(g, j, kb) if fetch_next else None)
                    return body if static_n and npan % per == 0 else \
                        S.IfThenElse(jo < npan, body)

                return self.loop("j", per, S.ForKind.SERIAL, one)

            if nkb == 1:
                return over_panels(0)
            return self.loop("kb", nkb, S.ForKind.SERIAL, over_panels)

        rows = min(M, tpb * mr) if const else tpb * mr  # rows of one row block
        return self.fused("q", [nb, blocks, groups], rows * per * nr * K, group)

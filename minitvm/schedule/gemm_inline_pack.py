"""``GemmBuilder``'s cache-blocked GEMM of an unbatched ``[N, K]`` B packed as it is used
(``compute_inline_pack``, chosen by ``gemm.INLINE_PACK``): per K block, each task packs its
group's ``kc x nr`` panel pieces into a slot of its own, then runs every row tile of its chunk
of rows over them, so B is read once and packed while it is hot instead of in a pass of its
own. Its tunables (``INLINE_PACK_ROWS``, ``MIN_GROUPS``) stay in ``gemm_kernel``; it imports
this module, so they are read from it at call time.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from .gemm_blocked import BlockedSchedule
from .gemm_loops import _balanced, _ceil_div


class InlinePackSchedule(BlockedSchedule):
    """The packed-as-used schedule, built of ``BlockedSchedule``'s micro-kernel."""

    def compute_inline_pack(self) -> S.Stmt:
        """The cache-blocked GEMM of an unbatched ``[N, K]`` B (``transpose_b``, static N and
        K) packed as it is used: parallel over groups of panels; per K block the group's
        ``kc x nr`` panel pieces are packed into ``Bp`` (``[groups * per, kc, nr]``, the slot
        of each group its own), then every row tile of A runs over them. B is read once and
        packed once, each piece while it is hot; no pass writes and rereads the whole packed
        B. The caller allocates ``Bp`` with ``inline_pack_shape()``."""
        mr, M, K, nr, N = self.mr, self.M, self.K, self.nr, self.N
        kc_max, width = self.blocking
        nkb = -(-K // kc_max)
        kc = -(-K // nkb)
        last = K - (nkb - 1) * kc
        const = isinstance(M, int)
        tiles = M // mr if const else E.FloorDiv(M, self.c(mr))
        rest = M % mr if const else E.FloorMod(M, self.c(mr))
        npan, full = self.np, N // nr
        per, groups = self.inline_pack_groups()
        self.bp_block_local = True
        pkb = 16  # K positions per packing step (a vector of W's row)

        def pack(jo, k0, kext):
            def piece(q, cnt, vec):
                def row(jj, zero):  # one column of the panel: W's row, or zeros past N
                    col = jo * nr + jj
                    return self.loop("kk", cnt, S.ForKind.VECTORIZED if vec else
                                     S.ForKind.SERIAL, lambda kk: S.BufferStore(
                                         self.Bp, E.FloatImm(self.dtype, 0.0) if zero else
                                         self.B[col, k0 + q * pkb + kk],
                                         [jo + self.bp_slot_shift, q * pkb + kk, jj]))

                if full == npan:
                    return self.loop("jj", nr, S.ForKind.SERIAL, lambda jj: row(jj, False))
                # (a partial panel: W is not read past its last row)
                return self.loop("jj", nr, S.ForKind.SERIAL, lambda jj: S.IfThenElse(
                    jo * nr + jj < N, row(jj, False), row(jj, True)))

            parts = []
            if kext // pkb:
                parts.append(self.loop("q", kext // pkb, S.ForKind.SERIAL,
                                       lambda q: piece(q, pkb, True)))
            if kext % pkb:
                parts.append(piece(self.c(kext // pkb), kext % pkb, False))
            return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

        def each_panel(g, fbody):
            def one(j):
                jo = g * per + j
                if full == npan:
                    body = fbody(jo, True)
                elif full == 0:
                    body = fbody(jo, False)
                else:
                    body = S.IfThenElse(jo < full, fbody(jo, True), fbody(jo, False))
                return body if npan % per == 0 else S.IfThenElse(jo < npan, body)

            return self.loop("j", per, S.ForKind.SERIAL, one)

        def rest_tile(jo, fp, kb):
            if const:
                return self.micro_kb(0, tiles * mr, jo, rest, fp, kb, nkb, kc) if rest else None
            return self.tail_tiles(rest, lambda row, r: self.micro_kb(
                0, tiles * self.c(mr) + row, jo, r, fp, kb, nkb, kc))

        tpc, chunks = self.inline_pack_chunks()
        rest_chunk = tiles // tpc if const else E.FloorDiv(tiles, self.c(tpc))

        def group(c, g):
            # this task's slots in Bp: (chunk, group) pairs run at once on the pool
            self.bp_slot_shift = c * self.c(groups * per) if not isinstance(c, int) else \
                self.c(c * groups * per)

            def block(kb):
                k0 = kb * kc if not isinstance(kb, int) else self.c(kb * kc)
                if last == kc:
                    packed = each_panel(g, lambda jo, fp: pack(jo, k0, kc))
                else:
                    packed = S.IfThenElse(self.eq(kb, nkb - 1),
                                          each_panel(g, lambda jo, fp: pack(jo, k0, last)),
                                          each_panel(g, lambda jo, fp: pack(jo, k0, kc)))
                parts = [packed]

                def tile(t):
                    tid = c * tpc + t
                    body = each_panel(g, lambda jo, fp: self.micro_kb(0, tid * mr, jo, mr, fp,
                                                                      kb, nkb, kc))
                    if const and (chunks == 1 or chunks * tpc == tiles):
                        return body
                    return S.IfThenElse(tid < tiles, body)

                if const and chunks == 1 and tiles:
                    parts.append(self.loop("t", tiles, S.ForKind.SERIAL, tile))
                elif const and tiles:
                    parts.append(self.loop("t", tpc, S.ForKind.SERIAL, tile))
                elif not const:  # this chunk's tiles only (none past the last full tile)
                    parts.append(self.loop("t", E.Min(self.c(tpc), tiles - c * self.c(tpc)),
                                           S.ForKind.SERIAL, lambda t: each_panel(
                                               g, lambda jo, fp: self.micro_kb(
                                                   0, (c * tpc + t) * mr, jo, mr, fp, kb, nkb,
                                                   kc))))
                if rest if const else self.rests:
                    tail = each_panel(g, lambda jo, fp: rest_tile(jo, fp, kb))
                    parts.append(tail if const and chunks == 1 else
                                 S.IfThenElse(self.eq(c, rest_chunk), tail))
                return S.SeqStmt(parts)

            body = block(0) if nkb == 1 else self.loop("kb", nkb, S.ForKind.SERIAL, block)
            self.bp_slot_shift = None
            return body

        rows = min(M, tpc * mr) if const else tpc * mr
        return self.fused("q", [chunks, groups], rows * per * nr * K, group)

    def inline_pack_chunks(self):
        """(row tiles per chunk, chunks) of ``compute_inline_pack``: the rows split into
        chunks of about ``INLINE_PACK_ROWS`` (tasks for the pool beside the panel groups;
        each chunk packs its own copy of the panels it uses)."""
        from . import gemm_kernel

        tpc = -(-gemm_kernel.INLINE_PACK_ROWS // self.mr)
        if isinstance(self.M, int):
            tpc = _balanced(self.M // self.mr, tpc)
        return tpc, _ceil_div(self.M, tpc * self.mr)

    def inline_pack_groups(self) -> tuple[int, int]:
        """(panels per group, groups) of ``compute_inline_pack``: as ``compute_blocked``."""
        from . import gemm_kernel

        width = self.blocking[1]
        per = max(1, min(width, self.np // gemm_kernel.MIN_GROUPS))
        return per, -(-self.np // per)

    def inline_pack_shape(self) -> tuple:
        """Shape of the ``Bp`` that ``compute_inline_pack`` packs into: one K block of every
        panel, per row chunk."""
        per, groups = self.inline_pack_groups()
        chunks = self.inline_pack_chunks()[1]
        nkb = -(-self.K // self.blocking[0])
        slots = chunks * (groups * per) if isinstance(chunks, int) else \
            chunks * self.c(groups * per)
        return slots, -(-self.K // nkb), self.nr

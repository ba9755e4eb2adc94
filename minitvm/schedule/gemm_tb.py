"""A matmul ``C = A @ W.T`` that reads W as ``[N, K]`` row-major in place: no packing.

For few rows (a GEMV, or a short sequence through a linear layer whose weight arrives at run
time) packing W into panels costs a full copy of W per call, more than the product itself;
up to ``MAX_ROWS`` rows (by vector ISA, measured) the matmul reads W in place.
Here each ``rows x cols`` tile of C (4 x 4 of 16 lanes with AVX-512, 4 x 3 of 8 with AVX2) is
a set of dot products along K: the K loop runs in vectors of ``lanes`` with one vector
accumulator per output, so every A vector loaded feeds ``cols`` FMAs and every W vector
``rows``, and W's rows stream contiguously. The lanes are summed once per output after the
loop (plus a scalar K tail). Column blocks run on the thread pool when the work pays; the
columns past the last block run in one rolled loop (each was a copy of the row loops: a third
of the seed MLP's 784 -> 128 kernel's LLVM IR with AVX2's blocks of 3).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import vector_isa as _common_isa

# (rows, cols, lanes) of a tile by vector ISA: its rows*cols vector accumulators plus the rows
# and cols vectors loaded per K step must fit the register file. 4x4 of 16 lanes fills 32 zmm
# registers; with 16 ymm registers (AVX2) the same tile spilled. Measured on a Zen 2 (AVX2, one
# thread, weights passed at run time, best of 31 runs in thread CPU time, ms, 4x4x16 vs 4x3x8):
# 784->128 at 64 rows 0.30-0.40 vs 0.17-0.20, 768->768 at 128 rows 4.0 vs 1.9-2.5, 768->3072 at
# 128 rows 16.1 vs 8.7-10.6 (4x2, 2x4, 3x4, 6x2 and 3x3 of 8 lanes measured in between).
TILES = {"avx512": (4, 4, 16), "avx2": (4, 3, 8)}
PARALLEL_MIN_WORK = 1 << 21  # multiply-adds of a column block worth a thread-pool task
# rows up to which reading W in place beats packing it per call (above: gemm.py packs W into
# panels and runs the packed micro-kernel). Measured with AVX-512 (one thread, weights passed
# at run time): seed MLP n=1 0.006 vs 0.038 ms, n=16 0.023 vs 0.045, n=64 0.071 vs 0.083,
# n=128 0.13-0.14 vs 0.135, n=192 0.21 vs 0.19; BERT layer seq 32 10.8 vs 22.7 ms, seq 128
# 37.7-39.5 vs 38.6-40.7; one (3072x768)^T matmul, 128 rows: 9.0 vs 10.0 ms (bound and packed
# at build time: 7.6). Wider tiles (2x8, 3x8) measured slower than 4x4. With AVX2 (Zen 2, as
# above, in place vs packed per call) in place wins at every size measured: 768->768 at 128
# rows 2.7 vs 5.4-8.9 ms, at 256 rows 5.6-5.8 vs 9.1-16.6, at 512 rows 11.6-12.1 vs 25-26;
# 3072->768 at 512 rows 55-57 vs 96-101; 784->128 at 1024 rows 4.2-4.3 vs 4.5-4.7. Re-measured
# once the packed GEMM was cache-blocked (gemm_kernel.BLOCKING; Zen 2, one thread, thread CPU
# time, BERT layer kernels with weights passed at run time, in place vs packed per call, ms):
# 768->768 at 64/192/256/384 rows 0.89/3.24/4.28/6.0 vs 1.13/3.27/4.04/6.17, 3072->768
# 4.8/14.1/19.1/30.6 vs 6.0/14.1/15.8/23.6, 768->3072 (+gelu) 4.9/13.8/18.9/29.2 vs
# 6.2/16.1/18.9/28.3; at 512 rows 38.6 vs 31.0 (3072->768), 41.5 vs 40.3 (768->3072).
# Re-measured once W was packed block by block as the GEMM uses it (gemm_kernel's
# compute_inline_pack; Zen 2, one thread, thread CPU time, ms, in place vs packed): at 128 rows
# 768->768 1.89 vs 1.87, 768->3072 (+gelu) 9.7 vs 10.2, 3072->768 8.4 vs 8.5; at 192 rows
# 3.05 vs 3.08, 13.9 vs 12.5, 12.3 vs 11.9, the seed MLP's 784->128 0.62 vs 0.51: AVX2 128.
MAX_ROWS_BY_ISA = {"avx512": 128, "avx2": 128}


def vector_isa() -> str:
    """``"avx512"`` when the host (the CPU code is made for, ``common.vector_isa``) has
    AVX-512F, else ``"avx2"`` (the widest float vectors the kernels are shaped for)."""
    return _common_isa()


def tile_shape() -> tuple[int, int, int]:
    """(rows, cols, lanes) of the output tile for this machine's widest float vectors."""
    return TILES[vector_isa()]


MAX_ROWS = MAX_ROWS_BY_ISA[vector_isa()]  # the machine's (at import); a build asks max_rows()


def max_rows() -> int:
    """``MAX_ROWS`` of the CPU code is made for (a build's ``-mcpu`` may name a narrower one)."""
    return MAX_ROWS_BY_ISA[vector_isa()]


def supported(m, n, k) -> bool:
    """Static N and K (W is a weight); M (the rows) may be symbolic."""
    return isinstance(n, int) and isinstance(k, int) and n >= 1 and k >= 1


def emit(m, n: int, k: int, a, w, c, epilogue=None) -> S.Stmt:
    """``c[i, j] = sum_k a[i, k] * w[j, k]`` for the ``m x n`` C (buffers 2-D row-major);
    ``epilogue(i, j, value)``, when given, is what is stored instead of the dot product."""
    idx = m.dtype if isinstance(m, E.PrimExpr) else "int32"
    builder = _NT(m, n, k, a, w, c, idx, epilogue)
    return builder.compute()


class _NT:
    def __init__(self, m, n, k, a, w, c, idx, epilogue=None):
        self.m, self.n, self.k, self.a, self.w, self.c, self.idx = m, n, k, a, w, c, idx
        self.epilogue = epilogue
        self.dtype = c.dtype
        self.count = 0
        self.tile_rows, self.tile_cols, self.lanes = tile_shape()

    def ex(self, v):
        return E._to_expr(v, self.idx)

    def var(self, name):
        self.count += 1
        return E.Var(f"{name}{self.count}", self.idx)

    def loop(self, name, lo, extent, kind, fbody, annotations=None):
        v = self.var(name)
        return S.For(v, self.ex(lo), self.ex(extent), kind, fbody(v), annotations=annotations)

    def tile(self, row0, col0, rows: int, cols: int) -> S.Stmt:
        """The ``rows x cols`` outputs at (row0, col0), each a K-long dot product."""
        k, lanes = self.k, self.lanes
        kv = k // lanes
        nacc = rows * cols
        acc = decl_buffer((nacc, lanes), self.dtype, "nt_acc", scope="local")
        red = decl_buffer((nacc,), self.dtype, "nt_sum", scope="local")
        zero = E.FloatImm(self.dtype, 0.0)
        unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED
        parts = []
        if kv:
            parts.append(self.loop("q", 0, nacc, unroll, lambda q: self.loop(
                "l", 0, lanes, vec, lambda lv: S.BufferStore(acc, zero, [q, lv]))))

            def fma(k0, r, cc, lv):
                kk = k0 * lanes + lv
                slot = r * cols + cc
                return S.BufferStore(acc, acc[slot, lv] + self.a[row0 + r, kk] *
                                     self.w[col0 + cc, kk], [slot, lv])

            parts.append(self.loop("k", 0, kv, S.ForKind.SERIAL, lambda k0: self.loop(
                "r", 0, rows, unroll, lambda r: self.loop(
                    "cc", 0, cols, unroll, lambda cc: self.loop(
                        "l", 0, lanes, vec, lambda lv: fma(k0, r, cc, lv))))))

        spill = decl_buffer((nacc, lanes), self.dtype, "nt_lanes", scope="local")
        if kv:
            # the lanes summed in a rolled loop over a copy of the accumulators (the tile's
            # vectors stored whole), every output's sum in the same order as before; unrolled,
            # the nacc x lanes scalar adds were most of the kernel's LLVM IR (1.5k of a
            # symbolic-row 512 x 1024 matmul's 5.9k lines), and indexed by the loop's variable
            # the accumulators themselves would stay in memory through the K loop
            parts.append(self.loop("q", 0, nacc, unroll, lambda q: self.loop(
                "l", 0, lanes, vec, lambda lv: S.BufferStore(spill, acc[q, lv], [q, lv]))))
        parts.append(self.loop("q", 0, nacc, unroll, lambda q: S.BufferStore(red, zero, [q])))
        if kv:
            parts.append(self.loop("l", 0, lanes, S.ForKind.SERIAL, lambda lv: self.loop(
                "q", 0, nacc, unroll, lambda q: S.BufferStore(red, red[q] + spill[q, lv],
                                                              [q]))))

        def finish(r, cc):
            slot = r * cols + cc
            steps = []
            if k % lanes:
                steps.append(self.loop("kt", kv * lanes, k % lanes, S.ForKind.SERIAL,
                                       lambda kt: S.BufferStore(
                                           red, red[slot] + self.a[row0 + r, kt] *
                                           self.w[col0 + cc, kt], [slot])))
            value = red[slot]
            if self.epilogue is not None:
                value = self.epilogue(row0 + r, col0 + cc, value)
            steps.append(S.BufferStore(self.c, value, [row0 + r, col0 + cc]))
            return S.SeqStmt(steps) if len(steps) != 1 else steps[0]

        parts.append(self.loop("r", 0, rows, unroll, lambda r: self.loop(
            "cc", 0, cols, unroll, lambda cc: finish(r, cc))))
        body = S.DeclBuffer(red, S.SeqStmt(parts))
        body = S.Allocate(red.data, self.dtype, [nacc], True, body)
        if kv:
            body = S.Allocate(spill.data, self.dtype, [nacc * lanes], True,
                              S.DeclBuffer(spill, body))
        body = S.DeclBuffer(acc, body)
        return S.Allocate(acc.data, self.dtype, [nacc * lanes], True, body)

    def rows_of(self, col0, cols: int) -> S.Stmt:
        """All rows of the C columns [col0, col0 + cols): full row tiles, then single rows."""
        m, tr = self.m, self.tile_rows
        tiles = m // tr if isinstance(m, int) else E.FloorDiv(m, self.ex(tr))
        rest_lo = tiles * tr if isinstance(m, int) else tiles * self.ex(tr)
        rest = m - rest_lo
        parts = []
        if not isinstance(tiles, int) or tiles:
            parts.append(self.loop("ib", 0, tiles, S.ForKind.SERIAL, lambda ib: self.tile(
                ib * tr, col0, tr, cols)))
        if not isinstance(rest, int) or rest:
            parts.append(self.loop("i", rest_lo, rest, S.ForKind.SERIAL,
                                   lambda i: self.tile(i, col0, 1, cols)))
        return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

    def compute(self) -> S.Stmt:
        n, k, tc = self.n, self.k, self.tile_cols
        blocks = n // tc
        parts = []
        if blocks:
            # work per column block, counting a symbolic row count as 64 rows
            rows = self.m if isinstance(self.m, int) else 64
            work = rows * tc * k
            need = max(2, -(-PARALLEL_MIN_WORK // max(1, work)))
            kind = S.ForKind.PARALLEL if blocks >= 2 else S.ForKind.SERIAL
            ann = {"parallel_min_extent": need} if kind == S.ForKind.PARALLEL else None
            if isinstance(self.m, int) and blocks < need:
                kind, ann = S.ForKind.SERIAL, None
            parts.append(self.loop("jb", 0, blocks, kind, lambda jb: self.rows_of(
                jb * tc, tc), annotations=ann))
        left = n - blocks * tc
        if left > 1:  # the last columns in a rolled loop: one copy of their rows, not ``left``
            parts.append(self.loop("j", blocks * tc, left, S.ForKind.SERIAL,
                                   lambda j: self.rows_of(j, 1)))
        elif left:
            parts.append(self.rows_of(self.ex(blocks * tc), 1))
        return S.SeqStmt(parts) if len(parts) != 1 else parts[0]


PACK_KB = 16  # K positions per block of the blocked panel packing


def pack_panels(bld) -> S.Stmt:
    """``bld.Bp[jo, k, jj] = W[jo*nr + jj, k]`` for an unbatched ``GemmBuilder`` with
    ``transpose_b`` (W ``[N, K]``, static N and K), in blocks of ``PACK_KB`` K positions: each
    block's ``PACK_KB x nr`` piece of the panel stays in L1 while W's rows are read in
    contiguous runs (the whole-K order wrote a panel larger than L1 once per column)."""
    nr, n, k = bld.nr, bld.N, bld.K
    w, bp = bld.B, bld.Bp
    kb_full = k // PACK_KB

    def block(jo, k0, width, jj_full):
        def row(jj, zero):  # one column of the panel: W's row, or zeros past N
            return bld.loop("kk", width, S.ForKind.VECTORIZED if width == PACK_KB else
                            S.ForKind.SERIAL, lambda kk: S.BufferStore(
                                bp, E.FloatImm(bp.dtype, 0.0) if zero else
                                w[jo * nr + jj, k0 + kk], [jo, k0 + kk, jj]))

        if jj_full:
            return bld.loop("jj", nr, S.ForKind.SERIAL, lambda jj: row(jj, False))
        # (the partial last panel: W is not read past its last row)
        return bld.loop("jj", nr, S.ForKind.SERIAL, lambda jj: S.IfThenElse(
            jo * nr + jj < n, row(jj, False), row(jj, True)))

    def panel(jo, jj_full):
        parts = []
        if kb_full:
            parts.append(bld.loop("kb", kb_full, S.ForKind.SERIAL,
                                  lambda kb: block(jo, kb * PACK_KB, PACK_KB, jj_full)))
        if k % PACK_KB:
            parts.append(block(jo, bld.c(kb_full * PACK_KB), k % PACK_KB, jj_full))
        return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

    full = n // nr
    parts = []
    if full:
        parts.append(bld.par_loop("pb", full, k * nr, lambda jo: panel(jo, True),
                                  bld.pack_min_work()))
    if n % nr:
        parts.append(panel(bld.c(full), False))
    return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

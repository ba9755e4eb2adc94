"""A register-blocked GEMM written as TIR: ``C = A @ B`` (or ``A @ W.T``) + bias, relu; batched.

The schedule is the classic one: B is packed into panels of ``nr`` columns (zero padded),
rows of A are processed ``mr`` at a time by a micro-kernel that keeps an ``mr x nr`` tile of C in
vector registers (an unrolled ``mr`` loop over a vectorized ``nr`` loop). The parallel loop runs
over (batch, block of ``mc`` rows, column panel) fused, so a small M still splits across threads
by columns; a GEMM under ``parallel_min_work`` multiply-adds runs on the calling thread.
Leftover rows (and the whole of a one-row GEMV) use a one-row kernel whose reduction is split
into ``ku`` interleaved partial sums, so the FMA chains do not wait on each other. A partial
last panel stores its ``N % nr`` columns as one vector (each of its ``nr`` columns guarded when
N is symbolic). The epilogue is applied in the micro-kernel's
store.

With ``BLOCKING`` (both ISAs) the schedule is cache blocked: K runs in blocks (C accumulates across
them), a row block's tiles run over a group of panels per K block (for a short K each tile runs
over the group's panels instead), and the leftover rows are one multi-row tile in the last row
block (a symbolic row count picks the tile by its remainder). N and K may be symbolic there.
On AVX-512 the first row tile of each panel's K block (in each row block) also prefetches the
next piece of B (``PREFETCH_NEXT_PIECE``).
"""

from __future__ import annotations

import math

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.expr import IntImm, Var
from ..tir.function import PrimFunc
from ..tir.op import if_then_else
from .common import prefetch, vector_isa
from .lane_transpose import LANES as TRANSPOSE_LANES
from .lane_transpose import transpose16_of

PARALLEL_MIN_WORK = 1 << 18  # multiply-adds below which a GEMM stays on the calling thread
# elements copied below which the packing of B stays on the calling thread: a copy, not
# multiply-adds, so it has a threshold of its own (~10 us of copying; a parallel loop costs a
# few microseconds to dispatch while an executor keeps the pool warm). Under the GEMM's
# threshold the packing of an activation (a batch_matmul's B, the swapped GEMM's A) ran on
# one thread while the GEMM after it ran on all (BERT's attention at seq 128: 12 x 128 x 64).
PACK_PARALLEL_MIN_WORK = 1 << 15
# whether a ``[N, K]`` B (transpose_b) packed per call is copied as vectors along each panel
# row (``nr`` elements of one K position gathered from B's rows: one vector store) instead of
# element by element down B's rows (a strided scalar store each), by vector ISA. Zen 4, one
# thread, thread CPU time, best of 2, us, element -> vector: batch_matmul q @ k^T 16x48x16 ->
# 48 (head dim 16) 18.9 -> 13.6, 3x50x64 -> 50 24.9 -> 14.3, 3x197x64 -> 197 266 -> 220,
# 12x128x64 -> 128 290 -> 260, 12x197x64 -> 197 1067 -> 1082; dense with W at run time
# 64x128 -> 384 88 -> 71, 128x768 -> 768 2513 -> 2056, 197x192 -> 576 483 -> 502. AVX2 not
# measured: it keeps the element order.
PACK_TB_GATHER = {"avx512": True, "avx2": False}
# whether that gathered packing instead moves 16 x 16 blocks of B (16 of its rows, 16 K
# positions each: 16 vector loads) through an in-register transpose (``lane_transpose``) into
# 16 vector stores, for K's whole blocks of 16 (the rest gathered as above), by vector ISA
# (16-lane vectors: AVX-512 only). AVX-512, one thread, thread CPU time, us, gathered ->
# transposed: batch_matmul 8x77x64 @ (8x77x64)^T (CLIP text attention scores) 76.9 -> 57.6
# (kernel alone; the packing 35 -> 12), the ONNX graph 89.7 -> 60.6 (ORT 46.3); BERT's
# 12x128x64 @ (12x128x64)^T 210.7 -> 209.0 (its 64-wide panels), constant-weight GEMMs
# untouched.
PACK_TB_TRANSPOSE = {"avx512": True, "avx2": False}
# whether a ``[K, N]`` B of a static N that leaves a partial last panel is packed with its
# panels inside N copied by vectors, only the last one tested per element (before: every
# element of every panel under a ``col < N`` test, which kept the copy scalar), by vector ISA.
# AVX-512, one thread, thread CPU time, us, ONNX graph (bench_gemm_shapes): ViT attention
# 12x197x64 @ 12x64x197 662 -> 573 (ORT 475; the packing alone ~108 -> ~51). AVX2 not
# measured: off.
PACK_FULL_PANELS_BY_VECTORS = {"avx512": True, "avx2": False}
GEMV_SPLIT = 4  # interleaved partial sums of the one-row kernel
# the compiler's default register tile (mr rows x nr columns) by vector ISA: its mr * nr / lanes
# accumulators plus the nr / lanes B vectors loaded per step must fit the register file. 8x32
# fills 16 of AVX-512's 32 zmm registers; with AVX2's 16 ymm registers it needs 32 and spills.
# Measured on a Zen 2 (AVX2), one thread, geomean over the MLP (784-128-10, batch 64/1024) and
# BERT-base layer GEMMs: relative to 8x32, 6x16 0.53, 5x16 0.47-0.6, 4x16 0.50-0.62,
# 8x8 0.58, 3x32 1.11, 4x24 11 (a 24-lane vector is not a whole number of registers). The
# row block mc (64/128/256) made no difference beyond the noise. (``gemm``/``batch_gemm``'s
# own defaults stay 8x32: callers pack B for those.) AVX-512 had 8x32 (16 accumulators) until
# measured on a Sapphire Rapids (two 512-bit FMA ports, 4-cycle latency: 8 chains in flight at
# the least): 12x32 keeps 24 zmm accumulators + 2 B vectors + a broadcast (27 of 32 registers,
# no spill: see tests/schedule/test_gemm_avx512_tile.py) and loads 14 values per 24 FMAs instead
# of 10 per 16. One thread, thread CPU time, B prepacked, GFLOP/s, best of 15 interleaved rounds,
# load ~2, 8x32 -> 12x32 (ORT's MatMul): 128x768x768 175 -> 192-205 (209), 128x3072x768 175 ->
# 188-203 (201-208), 128x768x3072 177 -> 189-203 (202-204), 64x128x784 205 -> 206-216 (207-210),
# 256x1024x1024 185 -> 191-209 (209); 14x32 and 6x64 no better. On a Zen 4 (one 512-bit FMA a
# cycle) the 24 chains are as many as it can use and the loads per FMA fewer: not measured there.
TILES = {"avx512": (12, 32), "avx2": (6, 16)}
# cache blocking of the packed GEMM by vector ISA: (kc, panels per group) or None for the
# unblocked schedule (a micro-kernel runs the whole K; AVX-512 kept it). With it, the reduction
# runs in blocks of at most ``kc`` (the ``kc x nr`` piece of a B panel, 24 KB at 384 x 16, stays
# in L1 while every row tile of the block uses it; C accumulates across blocks), the row tiles
# of a block of ``mc`` rows (its ``mc x kc`` piece of A in L2) run over every panel of a group
# before the next K block, and the leftover rows are one ``rows x nr`` tile in the last row
# block, so B streams from memory once per row block (it also streamed once per leftover row).
# The parallel loop runs over (batch, row block, group of panels). Measured on a Zen 2 (32 KB
# L1d, 512 KB L2; one thread, thread CPU time, ms, interleaved; unblocked with mc 64 -> blocked
# with mc 144): 128x768x3072 8.4 -> 7.1 (numpy 6.9), 128x3072x768 8.5 -> 8.1 (7.6), 512x3072x768
# 31.2 -> 28.2 (26.0), 128x768x768 1.61 -> 1.57 (1.68), 64x128x784 0.161 -> 0.158 (0.147).
# Relax BERT layer, bound weights, seq 32/128/512, both builds and ORT interleaved in one
# process, x ONNX Runtime: 1.14/1.11/1.08 -> 1.00/1.01/1.05 and 1.02/1.01/1.05 -> 0.87/0.95/1.02
# (two runs); seed MLP n=64 0.92-0.95 -> 0.85-0.88. kc 192/256/384 and groups of 1 to 8 panels
# were within the noise (+-5%) of each other. The same (384, 8) on AVX-512 (48 KB B pieces
# at its 384 x 32; the Zen 4 measurement at ``common.vector_isa``). AVX-512's K blocks are 256
# since the 12x32 tile (a 32 KB B piece beside 12 rows of A in a 48 KB L1, where 384's 48 KB
# filled it; on a Zen 4's 32 KB L1 neither fits whole): on a Sapphire Rapids 384 vs 256 was
# within the noise (GFLOP/s, as at ``TILES``: 192 vs 205, 185-188 vs 198-203, 185-203 vs
# 188-189, 206 vs 215, 207-209 vs 191-198).
BLOCKING = {"avx512": (256, 8), "avx2": (384, 8)}
# whether the first row tile of a panel's K block (panels inner; static rows) also prefetches
# the piece of B the task reads next, a cache line per panel row per turn of its reduction, by
# vector ISA: a weight read from DRAM (or L3) then arrives before its first tile needs it,
# where the hardware prefetchers stop at each 4 KB page (one panel row is 128 bytes). The other
# tiles do not (a prefetch from every tile kept the next piece in L1 beside the current one:
# hot 128x768x768 204 -> 168 GFLOP/s). Sapphire Rapids, one thread, GFLOP/s, 12 copies of the
# weight in turn (113 MB; as BERT's layers), off -> on (ORT): 128x768x768 151 -> 169 (170),
# 128x3072x768 152 -> 167 (167), 128x768x3072 151 -> 166 (169); one weight, hot: 184 -> 179,
# 195 -> 194, 64x128x784 215 -> 209 (the noise, load ~3). With several row blocks the first
# tile of each (8 copies of the weight, load ~5): 384x768x768 174 -> 188 (ORT 198), 384x768x3072
# 152 -> 173 (182), 384x3072x768 151 -> 164 (175). AVX2 unchanged (not measured).
PREFETCH_NEXT_PIECE = {"avx512": True, "avx2": False}
# by vector ISA: how many K positions ahead the cache-blocked schedule's tiles prefetch their
# own panel of the packed B (2 lines of a 32-wide panel a K step: 32 positions = 4 KiB ahead)
# when a static M has 2 to PREFETCH_AHEAD_MAX_ROWS rows, or 0. Few rows make the GEMM a
# stream through B (a small batch of decode steps) and the out-of-order window then reaches
# fewer lines ahead as rows add FMAs per line. AVX-512, one thread, thread CPU time, prepacked
# constant B, us, none -> 32 ahead (B's read GB/s): 4096x4096 at 4/8/12 rows 6595 -> 5455
# (10.2 -> 12.3), 8046 -> 6162, 9239 -> 6579; 768 -> 3072 at 4 rows 385 -> 353; 768 -> 768 at
# 16 rows 126 -> 111; at 32 rows no gain (4096x4096 10704 -> 10730, 768 -> 3072 914 -> 1002:
# off there). (8 and 16 positions ahead gained less at 4 rows: 5912, 5830; 64: 5679.) One row
# (its K loop already four partial sums deep) gained alone (4096x4096 4934 -> 4684) but lost
# in the built graph (bench_gemm_shapes' gemv_4096 4613 -> 5041, twice): off. AVX2 not
# measured: off.
PREFETCH_AHEAD = {"avx512": 32, "avx2": 0}
PREFETCH_AHEAD_MAX_ROWS = 16
MIN_GROUPS = 4  # a blocked GEMM with this many panels splits them into at least this many
# groups (tasks for the thread pool even when there is one row block)
# up to this K (or a symbolic K, run as one block) a row tile runs over the group's panels in
# turn (C written along its rows, the group's short panels in L1/L2) instead of a panel over
# the row tiles: with a short K the tiles are short and C's strided stores dominate. Measured
# (Zen 2, one thread, 12 x 512 x 512 x 64, the attention scores of a BERT layer at seq 512,
# symbolic N): unblocked 10.6 ms, panels inner 9.6, tiles outer 7.9 (numpy 8.1); from K 768 up
# the two orders were within the noise (0.96-1.04).
PANELS_INNER_MAX_K = 256
# rows of a task of ``compute_inline_pack`` (each packs its own copy of its panels' K block):
# tasks for the thread pool beside the panel groups. Measured: see ``gemm.INLINE_PACK``.
INLINE_PACK_ROWS = 256
# default row block (``mc``) by vector ISA: the blocked schedule keeps ``mc x kc`` of A in L2
# (AVX-512's unblocked schedule had 64; 144 with the blocking, see ``BLOCKING``)
BLOCK_ROWS = {"avx512": 144, "avx2": 144}
# widths of a tile that reads a [K, N] B in place (widest first): ones dividing N qualify
DIRECT_WIDTHS = {"avx512": (32, 16), "avx2": (16, 8)}


def default_tile() -> tuple[int, int]:
    """(mr, nr): the packed GEMM's register tile for this machine's vector ISA (``TILES``)."""
    return TILES[vector_isa()]


def default_mc() -> int:
    """The packed GEMM's default row block for this machine's vector ISA (``BLOCK_ROWS``)."""
    return BLOCK_ROWS[vector_isa()]


def direct_widths() -> tuple[int, ...]:
    """Register tile widths for a B read in place, widest first (``DIRECT_WIDTHS``)."""
    return DIRECT_WIDTHS[vector_isa()]


def _ceil_div(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return E.FloorDiv(a + (b - 1), b)


def pack_b(b: np.ndarray, nr: int = 32, transpose_b: bool = False) -> np.ndarray:
    """Numpy reference of the packed layout ``[ceil(N/nr), K, nr]`` (zero padded).

    A 3-d ``b`` (a batch of matrices) packs to ``[batch, ceil(N/nr), K, nr]``.
    """
    b = np.asarray(b)
    if b.ndim == 3:
        return np.stack([pack_b(m, nr, transpose_b) for m in b])
    if b.ndim != 2:
        raise ValueError(f"pack_b expects a matrix (or a batch of them), got shape {b.shape}")
    if nr < 1:
        raise ValueError(f"pack_b: nr must be positive, got {nr}")
    mat = b.T if transpose_b else b  # [K, N]
    k, n = mat.shape
    full, rest = divmod(n, nr)
    out = np.empty((full + (rest > 0), k, nr), dtype=b.dtype)
    # out[j, kk, r] = mat[kk, j*nr + r]: the whole panels in one copy from a view of ``b``
    # (padding first and transposing after copied BERT-base's weights twice, 0.8 s a build)
    if transpose_b:
        out[:full] = b[:full * nr].reshape(full, nr, k).transpose(0, 2, 1)
    else:
        out[:full] = b[:, :full * nr].reshape(k, full, nr).transpose(1, 0, 2)
    if rest:
        out[full] = 0
        out[full, :, :rest] = mat[:, full * nr:]
    return out


def _check(batch, M, N, K, dtype, mr, nr, mc) -> None:
    for name, v in (("N", N), ("K", K), ("mr", mr), ("nr", nr), ("mc", mc)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"gemm: {name} must be a positive int, got {v!r}")
    for name, v in (("M", M), ("batch", batch)):
        if v is None and name == "batch":
            continue
        if isinstance(v, E.PrimExpr):
            if not v.dtype.startswith("int"):
                raise ValueError(f"gemm: symbolic {name} must be an integer Var, got {v.dtype}")
        elif not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"gemm: {name} must be a positive int or an integer Var, got {v!r}")
    if nr > 64:
        raise ValueError(f"gemm: nr={nr} exceeds the widest vector (64 lanes)")
    if not dtype.startswith("float"):
        raise ValueError(f"gemm: only float dtypes are supported, got {dtype!r}")


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


class GemmBuilder:
    """Builds the statements of one packed, register-blocked (batched) GEMM: ``pack()`` copies
    B into panels of ``nr`` columns, ``compute()`` runs the ``mr x nr`` micro-kernels; ``A``,
    ``B``, ``Bp`` and ``C`` may be replaced by the caller's buffers before either is called."""

    def __init__(self, batch, M, N: int, K: int, transpose_b: bool, bias: bool, relu: bool,
                 dtype: str, mr: int, nr: int, mc: int, prepacked: bool, bcast_a: bool,
                 bcast_b: bool, min_work: int):
        self.batch, self.M, self.N, self.K = batch, M, N, K
        self.mr, self.nr, self.mc = mr, nr, mc
        # the row remainders M % mr can take: with a symbolic M of a constant factor (a
        # Relax activation of n images x 16 tokens flattened) only multiples of gcd(step, mr)
        self.rests = row_rests(M, mr)
        self.dtype = dtype
        sym = [v for v in (M, batch, N, K) if isinstance(v, E.PrimExpr)]
        self.idx = sym[0].dtype if sym else "int32"
        # N and K may be symbolic too (a batch_matmul over a symbolic sequence length)
        self.np = -(-N // nr) if isinstance(N, int) else _ceil_div(N, nr)
        self.min_work = min_work
        self.batched = batch is not None
        pa = (batch,) if self.batched and not bcast_a else ()
        pb = (batch,) if self.batched and not bcast_b else ()
        pc = (batch,) if self.batched else ()
        self.a_batched, self.b_batched = bool(pa), bool(pb)
        self.A = decl_buffer((*pa, M, K), dtype, "A")
        if prepacked:
            self.B = decl_buffer((*pb, self.np, K, nr), dtype, "B_packed")
        else:
            self.B = decl_buffer((*pb, N, K) if transpose_b else (*pb, K, N), dtype, "B")
        self.bias = decl_buffer((N,), dtype, "bias") if bias else None
        self.C = decl_buffer((*pc, M, N), dtype, "C")
        self.Bp = self.B if prepacked else decl_buffer((*pb, self.np, K, nr), dtype, "B_packed")
        self.transpose_b, self.relu, self.prepacked = transpose_b, relu, prepacked
        # direct_b: the micro-kernels read a ``[K, N]`` B in place (N a multiple of nr), no
        # packing; the caller sets it and skips ``pack()``
        self.direct_b = False
        self.gemv_split = GEMV_SPLIT  # interleaved partial sums of the one-row kernel
        # epilogue(row, col, value): an elementwise stage applied to the register tile as it
        # is stored (unbatched only; the caller sets it, ``gemm.emit_fused``), or None
        self.epilogue = None
        # c_transposed: C is given as ``[N, M]`` (unbatched) and stored transposed, for
        # ``C.T = W @ A.T`` computed with W as this GEMM's A (see ``gemm._gen_matmul``)
        self.c_transposed = False
        # bp_block_local: ``Bp`` holds one K block of each panel (``compute_inline_pack``)
        self.bp_block_local = False
        self.bp_slot_shift = None  # the current task's first slot in that ``Bp``
        # (kc, panels per group) of the cache-blocked schedule (``BLOCKING``), or None
        self.blocking = BLOCKING[vector_isa()]
        # whether the blocked schedule's first row tiles prefetch B (``PREFETCH_NEXT_PIECE``)
        self.prefetch_b = PREFETCH_NEXT_PIECE[vector_isa()]
        self.next_piece = None  # (panel, first K) of the piece such a tile prefetches, while built
        # K positions ahead at which the blocked schedule's tiles prefetch their own panel of
        # B (``PREFETCH_AHEAD``: a static M of few rows), or 0
        ahead = PREFETCH_AHEAD[vector_isa()]
        self.prefetch_ahead = ahead if isinstance(M, int) and \
            1 < M <= PREFETCH_AHEAD_MAX_ROWS else 0

    # ---------------------------------------------------------------- helpers
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

    def store_tile(self, rows: int, jo, full_panel: bool, out) -> S.Stmt:
        """The stores ``out(ii, jj)`` of a ``rows x nr`` register tile of panel ``jo``, as
        ``store_columns`` says. Guarded (a symbolic N's partial panel): columns ``jo*nr + jj <
        N`` only, and a transposed C (``c_transposed``) tests each column once, around its
        ``rows`` stores (a row of C): not each element, whose unrolled branches were most of a
        swapped GEMM's IR."""
        unroll = S.ForKind.UNROLLED
        cols, kind, guarded = self.store_columns(full_panel)
        if not guarded:
            return self.loop("ii", rows, unroll, lambda ii: self.loop(
                "jj", cols, kind, lambda jj: out(ii, jj)))
        if self.c_transposed:
            return self.loop("jj", cols, kind, lambda jj: S.IfThenElse(
                jo * self.nr + jj < self.N, self.loop("ii", rows, unroll, lambda ii: out(ii, jj))))
        return self.loop("ii", rows, unroll, lambda ii: self.loop(
            "jj", cols, kind, lambda jj: S.IfThenElse(jo * self.nr + jj < self.N,
                                                      out(ii, jj))))

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

    # ---------------------------------------------------------------- packing
    def pack(self) -> S.Stmt:
        """``B_packed[.., jo, k, jj] = B[.., k, jo*nr + jj]`` (or ``W[.., jo*nr + jj, k]``)."""
        nr, N, K = self.nr, self.N, self.K
        nb = self.batch if self.b_batched else 1

        gather = self.transpose_b and PACK_TB_GATHER[vector_isa()]
        partial = not isinstance(N, int) or N % nr

        def inner(b, jo, k, jj, guard=partial):
            col = jo * nr + jj
            pre = (b,) if self.b_batched else ()
            # (a vector select loads every lane: past N the gathered row is clamped into B)
            row = E.Min(col, self.c(N) - self.c(1)) if gather and partial else col
            src = self.B[(*pre, row, k)] if self.transpose_b else self.B[(*pre, k, col)]
            if guard:
                src = if_then_else(col < N, src, E.FloatImm(self.dtype, 0.0))
            return S.BufferStore(self.Bp, src, [*pre, jo, k, jj])

        def rows_copy(b, jo, guard, kind, lo=0):  # (K positions lo .. K - 1)
            return self.loop("k", K - lo if lo else K, S.ForKind.SERIAL, lambda k: self.loop(
                "jj", nr, kind, lambda jj: inner(b, jo, k, jj, guard)), lo=lo)

        blocks = K // TRANSPOSE_LANES if gather and self.transposing_pack() else 0

        def panel(b, jo):
            if blocks:
                tail = rows_copy(b, jo, partial, S.ForKind.VECTORIZED, blocks * TRANSPOSE_LANES)
                body = self.loop("q", blocks, S.ForKind.SERIAL, lambda q: S.SeqStmt([
                    self.transposed_block(b, jo, h, q) for h in range(nr // TRANSPOSE_LANES)]))
                return body if K % TRANSPOSE_LANES == 0 else S.SeqStmt([body, tail])
            if gather:
                return rows_copy(b, jo, partial, S.ForKind.VECTORIZED)
            if self.transpose_b:
                return self.loop("jj", nr, S.ForKind.SERIAL, lambda jj: self.loop(
                    "k", K, S.ForKind.SERIAL, lambda k: inner(b, jo, k, jj)))
            if PACK_FULL_PANELS_BY_VECTORS[vector_isa()] and isinstance(N, int) and partial \
                    and N >= nr:
                # the panels inside N copied by vectors (no test per element), the last one
                # (partly past N) element by element, zero past N
                return S.IfThenElse(jo < self.c(N // nr),
                                    rows_copy(b, jo, False, S.ForKind.VECTORIZED),
                                    rows_copy(b, jo, True, S.ForKind.SERIAL))
            return rows_copy(b, jo, partial, S.ForKind.SERIAL)

        return self.fused("pb", [nb, self.np], K * nr, panel, self.pack_min_work())

    def transposing_pack(self) -> bool:
        """Does ``pack`` move an ``[N, K]`` B in transposed 16 x 16 blocks
        (``PACK_TB_TRANSPOSE``)? Static N and K of at least one block, whole 16-lane halves of
        the panel."""
        return PACK_TB_TRANSPOSE[vector_isa()] and isinstance(self.N, int) and \
            isinstance(self.K, int) and self.K >= TRANSPOSE_LANES and \
            self.nr % TRANSPOSE_LANES == 0 and self.dtype == "float32"

    def transposed_block(self, b, jo, h, q) -> S.Stmt:
        """Packed panel ``jo``'s columns ``16h .. 16h + 15`` at K positions ``16q .. 16q + 15``:
        16 rows of B loaded as vectors, transposed in registers, stored as 16 vectors (columns
        past N read B's last row and store zeros, as the gathered packing does)."""
        lanes, N = TRANSPOSE_LANES, self.N
        pre = (b,) if self.b_batched else ()
        col0 = jo * self.nr + h * lanes
        k0 = q * lanes
        partial = N % self.nr != 0
        ramp = E.Ramp(self.c(k0) if isinstance(k0, int) else k0, self.c(1), lanes)
        rows = [E.Min(col0 + i, self.c(N - 1)) if partial else col0 + i for i in range(lanes)]
        vectors = [self.B[(*pre, r, ramp)] for r in rows]

        def consumer(buf):
            def lane(j, jj):
                v = buf[j, jj]
                if partial:
                    v = if_then_else(col0 + jj < N, v, E.FloatImm(self.dtype, 0.0))
                return S.BufferStore(self.Bp, v, [*pre, jo, k0 + j, h * lanes + jj])

            return self.loop("j", lanes, S.ForKind.UNROLLED, lambda j: self.loop(
                "jj", lanes, S.ForKind.VECTORIZED, lambda jj: lane(j, jj)))

        return transpose16_of(vectors, self.dtype, consumer)

    def pack_min_work(self) -> int:
        """The parallel threshold (elements copied) of the packing loop: as the GEMM, the
        packing stays on the calling thread when the whole GEMM is under ``min_work``
        multiply-adds (symbolic extents counted as ``_static_work`` does), else it runs on the
        pool from ``PACK_PARALLEL_MIN_WORK`` elements."""
        macs = 1
        for d in (self.batch if self.batched else 1, self.M, self.N, self.K):
            macs *= _static_work(d)
        return PACK_PARALLEL_MIN_WORK if macs >= self.min_work else self.min_work

    # ---------------------------------------------------------------- micro-kernels
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

    # ---------------------------------------------------------------- cache-blocked schedule
    def micro_kb(self, b, row0, jo, rows: int, full_panel: bool, kb, nkb: int, kc: int
                 ) -> S.Stmt:
        """The ``rows x nr`` tile of C at (row0, jo*nr) over K block ``kb`` (of ``nkb``, ``kc``
        long, the last one possibly shorter): block 0 stores its sum, later blocks add theirs
        to C, the last one applies the epilogue."""
        nr, K = self.nr, self.K
        k0 = kb * kc if not isinstance(kb, int) else self.c(kb * kc)
        if not isinstance(K, int):  # a symbolic K is one block
            kext = K
        else:
            kext = kc if K % kc == 0 else E.Min(self.c(kc), self.c(K) - k0)
        short = isinstance(kext, int) and kext < 2 * self.gemv_split
        ku = self.gemv_split if rows == 1 and not short else 1
        acc = decl_buffer((ku * rows, nr), self.dtype, "acc", scope="local")
        zero = E.FloatImm(self.dtype, 0.0)
        unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

        def fma(slot, k):
            body = self.loop("ii", rows, unroll, lambda ii: self.loop(
                "jj", nr, vec, lambda jj: S.BufferStore(
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
            "jj", nr, vec, lambda jj: S.BufferStore(acc, zero, [ii, jj])))]
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
                "ii", rows, unroll, lambda ii: self.loop("jj", nr, vec, lambda jj: S.BufferStore(
                    acc, acc[ii, jj] + acc[(u + 1) * rows + ii, jj], [ii, jj])))))
        else:
            parts.append(self.loop("k", kext, S.ForKind.SERIAL, lambda k: fma(0, k)))

        def store(add_c, epi) -> S.Stmt:
            """The tile's stores: C's old value added when ``add_c`` (True, False or a
            condition on ``kb``), the epilogue applied when ``epi`` (likewise)."""
            def out(ii, jj):
                col = jo * nr + jj
                idx = self.c_index([b, row0 + ii, col] if self.batched else [row0 + ii, col])
                v = acc[ii, jj]
                if add_c is True:
                    v = v + self.C[tuple(idx)]
                elif add_c is not False:
                    v = v + E.Select(add_c, self.C[tuple(idx)], zero)
                if epi is False:
                    return S.BufferStore(self.C, v, idx)
                w = self.finish(row0 + ii, col, v)
                return S.BufferStore(self.C, w if epi is True else E.Select(epi, w, v), idx)

            return self.store_tile(rows, jo, full_panel, out)

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
        return S.Allocate(acc.data, self.dtype, [ku * rows * nr], True, body)

    def compute_blocked(self) -> S.Stmt:
        """The cache-blocked schedule (``BLOCKING``): parallel over (batch, row block, panel
        group); in each, K blocks outermost, then the group's panels, then the row tiles."""
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
        per = max(1, min(width, npan // MIN_GROUPS)) if static_n else width
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
                if not isinstance(K, int) or K <= PANELS_INNER_MAX_K:
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
        tpc = -(-INLINE_PACK_ROWS // self.mr)
        if isinstance(self.M, int):
            tpc = _balanced(self.M // self.mr, tpc)
        return tpc, _ceil_div(self.M, tpc * self.mr)

    def inline_pack_groups(self) -> tuple[int, int]:
        """(panels per group, groups) of ``compute_inline_pack``: as ``compute_blocked``."""
        width = self.blocking[1]
        per = max(1, min(width, self.np // MIN_GROUPS))
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

    # ---------------------------------------------------------------- driver
    def compute(self) -> S.Stmt:
        if self.blocking is not None:
            return self.compute_blocked()
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

    def build(self, name: str) -> PrimFunc:
        params = [self.A, self.B] + ([self.bias] if self.bias is not None else []) + [self.C]
        body = self.compute()
        if not self.prepacked:
            body = S.Allocate(self.Bp.data, self.dtype, list(self.Bp.shape), True,
                              S.DeclBuffer(self.Bp, S.SeqStmt([self.pack(), body])))
        attrs = {"global_symbol": name, "tir.noalias": True}
        return PrimFunc(params, body, attrs=attrs)


def gemm(M, N: int, K: int, transpose_b: bool = False, bias: bool = False, relu: bool = False,
         dtype: str = "float32", mr: int = 8, nr: int = 32, mc: int = 64,
         prepacked_b: bool = False, parallel_min_work: int = PARALLEL_MIN_WORK) -> PrimFunc:
    """A fast GEMM PrimFunc ``gemm(A, B[, bias], C)``.

    Parameters
    ----------
    M : int or Var
        Rows of A and C (may be symbolic, e.g. the batch size). ``M == 1`` is a GEMV.
    N, K : int
        Columns of C and the reduction length.
    transpose_b : bool
        B is given as ``[N, K]`` (dense's weight layout) instead of ``[K, N]``.
    bias, relu : bool
        Fuse ``C = max(A @ B + bias, 0)`` into the micro-kernel's store.
    prepacked_b : bool
        B is already in the packed layout ``[ceil(N/nr), K, nr]`` (see ``pack_b``), e.g. a
        constant weight packed at build time.
    parallel_min_work : int
        Multiply-adds below which the GEMM runs on the calling thread.
    """
    if isinstance(M, IntImm):
        M = M.value
    _check(None, M, N, K, dtype, mr, nr, mc)
    return GemmBuilder(None, M, int(N), int(K), transpose_b, bias, relu, dtype, mr, nr, mc,
                    prepacked_b, False, False, parallel_min_work).build("gemm")


def batch_gemm(batch, M, N: int, K: int, transpose_b: bool = False, bias: bool = False,
               relu: bool = False, dtype: str = "float32", mr: int = 8, nr: int = 32,
               mc: int = 64, prepacked_b: bool = False, broadcast_a: bool = False,
               broadcast_b: bool = False, parallel_min_work: int = PARALLEL_MIN_WORK
               ) -> PrimFunc:
    """Batched GEMM ``batch_gemm(A, B[, bias], C)``: ``C[b] = A[b] @ B[b]`` (relay batch_matmul).

    A is ``[batch, M, K]`` (``[M, K]`` with ``broadcast_a``), B is ``[batch, N, K]`` with
    ``transpose_b`` else ``[batch, K, N]`` (no batch axis with ``broadcast_b``; packed
    ``[batch, ceil(N/nr), K, nr]`` with ``prepacked_b``), C is ``[batch, M, N]``. The parallel
    loop runs over batch, row blocks and column panels fused. Other arguments as ``gemm``.
    """
    if isinstance(M, IntImm):
        M = M.value
    if isinstance(batch, IntImm):
        batch = batch.value
    _check(batch, M, N, K, dtype, mr, nr, mc)
    return GemmBuilder(batch, M, int(N), int(K), transpose_b, bias, relu, dtype, mr, nr, mc,
                    prepacked_b, broadcast_a, broadcast_b, parallel_min_work).build("batch_gemm")


schedule_dense = gemm

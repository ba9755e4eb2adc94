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

The builder is put together here from its parts: ``gemm_loops`` (loops, indices, tile stores),
``gemm_pack`` (the packing of B, and ``pack_b``), ``gemm_unblocked``, ``gemm_blocked`` and
``gemm_inline_pack`` (the schedules). The per-host switches and tunables below stay in this
module, where hosts and tests set them; the parts read them from it at call time.
"""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.expr import IntImm
from ..tir.function import PrimFunc
from .common import host_switch, vector_isa
from .gemm_inline_pack import InlinePackSchedule
from .gemm_loops import _balanced as _balanced
from .gemm_loops import _ceil_div, partial_lanes, row_rests
from .gemm_loops import row_step as row_step
from .gemm_pack import PanelPacking
from .gemm_pack import pack_b as pack_b
from .gemm_unblocked import UnblockedSchedule

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
# measured: it keeps the element order. By host (``common.host_switch``): on a Zen 3 (AVX2,
# 2 shared cores, one thread, thread CPU time, bench_gemm_shapes, ONNX graph, element ->
# vector, median of 7 interleaved rounds, us) CLIP's scores 8x77x77x64 (B transposed) 102 ->
# 95 (ORT 90), BERT's 12x128x128x64 320 -> 297 (ORT 306), where a no-op A/B read within 3%;
# dense with W at run time (M x N x K, kernel alone, 7 rounds) 128x768x768 2077 -> 1878,
# 16x768x768 262 -> 234, 197x192x576 510 -> 499, 64x768x768 879 -> 900.
# Haswell's slow vpgatherdd is not measured: its AVX2 keeps the element order.
PACK_TB_GATHER = {"avx512": True, "avx2": False, "znver3": True}
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
# 12x197x64 @ 12x64x197 662 -> 573 (ORT 475; the packing alone ~108 -> ~51). AVX2 (plain
# vector copies, no gather): Zen 3, 2 shared cores, one thread, same graph, median of 7
# interleaved rounds, us: 841 -> 734 (ORT 739); BERT's 128-wide products have no partial panel.
PACK_FULL_PANELS_BY_VECTORS = {"avx512": True, "avx2": True}
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
# 188-189, 206 vs 215, 207-209 vs 191-198). On a Zen 3 (AVX2, one thread, us, BERT's dense
# shapes + bias, ORT 1700 / 7045): kc 384 -> 256 128x768x768 1638 -> 1669, 128x768x3072 6866
# -> 6903, within the noise, as the 5x16 tile (1661 -> 1690, 6871 -> 6900); 3x32 twice as slow.
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
# 152 -> 173 (182), 384x3072x768 151 -> 164 (175). AVX2 unchanged: on a Zen 3 whole BERT-base
# (seq 128, one thread, 5 interleaved rounds) 267.9 -> 266.8 ms, the noise. By host
# (``common.host_switch``): on a Zen 3 (2 shared cores, load 10-14, one thread, thread CPU
# time, bench_gemm_shapes --ab, 7 rounds, us, off -> on, two runs) BERT's 128x768x768 + bias
# 1789 -> 1672 and 1806 -> 1758, 128x768 -> 3072 + GELU 7669 -> 7332 and 7368 -> 7108,
# 128x3072 -> 768 7033 -> 7071 and 6814 -> 6727, CLIP's 77x768x768 989 -> 953, ViT's
# 197x768 -> 3072 11218 -> 11154, the MLP's 64x784 -> 128 136 -> 136; whole models
# (bench_whole_models, x ORT, two runs in alternating processes): BERT-base 0.96/0.95 ->
# 0.94/0.94, ResNet-50 0.86/0.89 -> 0.84/0.87, MobileNetV2 0.95/0.94 -> 0.92/0.94.
PREFETCH_NEXT_PIECE = {"avx512": True, "avx2": False, "znver3": True}
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
# whether the cache-blocked schedule's tiles over the partial last panel of a static N keep
# only the power of two of lanes (4 at least) that holds its ``N % nr`` columns instead of
# ``nr`` (zeros past N), by vector ISA (``GemmLoops.tile_lanes``): ViT's attention 12x197x64
# @ 12x64x197 runs the 5 columns of its 7th panel as 8 lanes, not 32. AVX-512, one thread,
# thread CPU time, kernel alone, us, off -> on: that product 535 -> 506, 12x128x64 @ 12x64x100
# 199 -> 182, dense 300x530 -> 70 (+bias, relu) 180 -> 162, 100x500 -> 300 199 -> 186. The
# half-width rule of ``gemm._dense_nr`` counts the narrowed lanes. AVX2 off: on a Zen 3 (one
# thread, bench_gemm_shapes --ab, 5 rounds) ViT 12x197 and the odd shapes within 3% either way.
NARROW_PARTIAL_PANEL = {"avx512": True, "avx2": False}
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


def computed_width(n: int, nr: int) -> int:
    """Columns the cache-blocked GEMM's tiles compute for ``n`` columns in panels of ``nr``:
    whole panels, the partial last one at its narrowed lanes under ``NARROW_PARTIAL_PANEL``
    (else padded to ``nr``)."""
    part = n % nr
    if part and NARROW_PARTIAL_PANEL[vector_isa()]:
        return n - part + partial_lanes(part, nr)
    return -(-n // nr) * nr


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


class GemmBuilder(PanelPacking, InlinePackSchedule, UnblockedSchedule):
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
        self.prefetch_b = host_switch(PREFETCH_NEXT_PIECE)
        self.next_piece = None  # (panel, first K) of the piece such a tile prefetches, while built
        # K positions ahead at which the blocked schedule's tiles prefetch their own panel of
        # B (``PREFETCH_AHEAD``: a static M of few rows), or 0
        ahead = PREFETCH_AHEAD[vector_isa()]
        self.prefetch_ahead = ahead if isinstance(M, int) and \
            1 < M <= PREFETCH_AHEAD_MAX_ROWS else 0
        # the partial panel's tiles narrowed to its columns (``NARROW_PARTIAL_PANEL``)
        self.narrow_partial = NARROW_PARTIAL_PANEL[vector_isa()]

    def compute(self) -> S.Stmt:
        """The GEMM's statements: the cache-blocked schedule (``BLOCKING``), else the
        unblocked one."""
        if self.blocking is not None:
            return self.compute_blocked()
        return self.compute_unblocked()

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

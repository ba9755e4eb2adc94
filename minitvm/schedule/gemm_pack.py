"""The packing of B into panels of ``nr`` columns: ``pack_b`` (numpy, the layout's reference,
for weights packed at build time) and ``PanelPacking``, the ``GemmBuilder`` part that emits the
copy of a B packed per call.

A ``[K, N]`` B is copied along its rows (the panels inside N by vectors,
``PACK_FULL_PANELS_BY_VECTORS``); an ``[N, K]`` B (``transpose_b``) is gathered as vectors
(``PACK_TB_GATHER``) or moved in 16 x 16 blocks through an in-register transpose
(``PACK_TB_TRANSPOSE``). Those per-host switches stay in ``gemm_kernel``, where hosts and tests
set them; it imports this module, so they are read from it at call time.
"""

from __future__ import annotations

import numpy as np

from ..runtime.ndarray import aligned_empty
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.op import if_then_else
from .common import host_switch
from .gemm_loops import GemmLoops, _static_work
from .lane_transpose import LANES as TRANSPOSE_LANES
from .lane_transpose import transpose16_of


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
    out = aligned_empty((full + (rest > 0), k, nr), b.dtype)  # (kept as is by ``aligned``)
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


class PanelPacking(GemmLoops):
    """``GemmBuilder``'s copy of B into its packed panels ``Bp`` (``[.., ceil(N/nr), K, nr]``,
    zero padded past N)."""

    def pack(self) -> S.Stmt:
        """``B_packed[.., jo, k, jj] = B[.., k, jo*nr + jj]`` (or ``W[.., jo*nr + jj, k]``)."""
        from . import gemm_kernel

        nr, N, K = self.nr, self.N, self.K
        nb = self.batch if self.b_batched else 1

        gather = self.transpose_b and host_switch(gemm_kernel.PACK_TB_GATHER)
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
            if gemm_kernel.PACK_FULL_PANELS_BY_VECTORS[gemm_kernel.vector_isa()] and \
                    isinstance(N, int) and partial \
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
        from . import gemm_kernel

        return gemm_kernel.PACK_TB_TRANSPOSE[gemm_kernel.vector_isa()] and isinstance(self.N, int) and \
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
        from . import gemm_kernel

        macs = 1
        for d in (self.batch if self.batched else 1, self.M, self.N, self.K):
            macs *= _static_work(d)
        return gemm_kernel.PACK_PARALLEL_MIN_WORK if macs >= self.min_work else self.min_work

"""A register-blocked GEMM written as TIR: ``C = A @ B`` (or ``A @ W.T``) + bias, relu.

The schedule is the classic one: B is packed into panels of ``nr`` columns (zero padded),
rows of A are processed ``mr`` at a time by a micro-kernel that keeps an ``mr x nr`` tile of C in
vector registers (an unrolled ``mr`` loop over a vectorized ``nr`` loop), and blocks of
``mc`` rows run in parallel. Leftover rows use a one-row kernel; a partial last panel is stored
with a guarded scalar loop. The elementwise epilogue is applied in the micro-kernel's store.
"""

from __future__ import annotations

import numpy as np

from . import expr as E
from . import stmt as S
from .buffer import decl_buffer
from .expr import IntImm, Var
from .function import PrimFunc
from .op import if_then_else


def _ceil_div(a, b: int):
    if isinstance(a, int):
        return -(-a // b)
    return E.FloorDiv(a + (b - 1), b)


def pack_b(b: np.ndarray, nr: int = 32, transpose_b: bool = False) -> np.ndarray:
    """Numpy reference of the packed layout ``[ceil(N/nr), K, nr]`` (zero padded)."""
    mat = b.T if transpose_b else b
    k, n = mat.shape
    np_ = -(-n // nr)
    out = np.zeros((np_, k, nr), dtype=b.dtype)
    padded = np.zeros((k, np_ * nr), dtype=b.dtype)
    padded[:, :n] = mat
    out[:] = padded.reshape(k, np_, nr).transpose(1, 0, 2)
    return out


class _Builder:
    def __init__(self, M, N: int, K: int, transpose_b: bool, bias: bool, relu: bool,
                 dtype: str, mr: int, nr: int, mc: int, prepacked: bool):
        self.M, self.N, self.K = M, N, K
        self.mr, self.nr, self.mc = mr, nr, mc
        self.dtype = dtype
        self.idx = M.dtype if isinstance(M, E.PrimExpr) else "int32"
        self.np = -(-N // nr)
        self.A = decl_buffer((M, K), dtype, "A")
        if prepacked:
            self.B = decl_buffer((self.np, K, nr), dtype, "B_packed")
        else:
            self.B = decl_buffer((N, K) if transpose_b else (K, N), dtype, "B")
        self.bias = decl_buffer((N,), dtype, "bias") if bias else None
        self.C = decl_buffer((M, N), dtype, "C")
        self.Bp = self.B if prepacked else decl_buffer((self.np, K, nr), dtype, "B_packed")
        self.transpose_b, self.relu, self.prepacked = transpose_b, relu, prepacked

    def var(self, name: str) -> Var:
        return Var(name, self.idx)

    def loop(self, name: str, extent, kind, fbody) -> S.For:
        v = self.var(name)
        return S.For(v, E._to_expr(0, self.idx), E._to_expr(extent, self.idx), kind, fbody(v))

    def pack(self) -> S.Stmt:
        """``B_packed[jo, k, jj] = B[k, jo*nr + jj]`` (or ``W[jo*nr + jj, k]``), zero padded."""
        nr, N = self.nr, self.N

        def inner(jo, k, jj):
            col = jo * nr + jj
            src = self.B[col, k] if self.transpose_b else self.B[k, col]
            if N % nr:
                src = if_then_else(col < N, src, E.FloatImm(self.dtype, 0.0))
            return S.BufferStore(self.Bp, src, [jo, k, jj])

        if self.transpose_b:
            body = lambda jo: self.loop("jj", nr, S.ForKind.SERIAL, lambda jj: self.loop(  # noqa: E731
                "k", self.K, S.ForKind.SERIAL, lambda k: inner(jo, k, jj)))
        else:
            body = lambda jo: self.loop("k", self.K, S.ForKind.SERIAL, lambda k: self.loop(  # noqa: E731
                "jj", nr, S.ForKind.SERIAL, lambda jj: inner(jo, k, jj)))
        return self.loop("jo", self.np, S.ForKind.PARALLEL, body)

    def micro(self, row0, jo, rows: int, full_panel: bool) -> S.Stmt:
        """The ``rows x nr`` tile of C at (row0, jo*nr), accumulated in registers."""
        nr = self.nr
        acc = decl_buffer((rows, nr), self.dtype, "acc", scope="local")
        zero = E.FloatImm(self.dtype, 0.0)
        unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED
        init = self.loop("ii", rows, unroll, lambda ii: self.loop(
            "jj", nr, vec, lambda jj: S.BufferStore(acc, zero, [ii, jj])))

        def update(k):
            return self.loop("ii", rows, unroll, lambda ii: self.loop(
                "jj", nr, vec, lambda jj: S.BufferStore(
                    acc, acc[ii, jj] + self.A[row0 + ii, k] * self.Bp[jo, k, jj], [ii, jj])))

        kloop = self.loop("k", self.K, S.ForKind.SERIAL, update)

        def out(ii, jj):
            col = jo * nr + jj
            v = acc[ii, jj]
            if self.bias is not None:
                v = v + self.bias[col]
            if self.relu:
                v = E.Max(v, zero)
            st = S.BufferStore(self.C, v, [row0 + ii, col])
            return st if full_panel else S.IfThenElse(col < self.N, st)

        store = self.loop("ii", rows, unroll, lambda ii: self.loop(
            "jj", nr, vec if full_panel else S.ForKind.SERIAL, lambda jj: out(ii, jj)))
        body = S.DeclBuffer(acc, S.SeqStmt([init, kloop, store]))
        return S.Allocate(acc.data, self.dtype, [rows * nr], True, body)

    def panels(self, row0, rows: int) -> S.Stmt:
        """All column panels for one tile of rows."""
        full = self.N // self.nr
        parts = []
        if full:
            parts.append(self.loop("jo", full, S.ForKind.SERIAL,
                                   lambda jo: self.micro(row0, jo, rows, True)))
        if self.N % self.nr:
            parts.append(self.micro(row0, E._to_expr(full, self.idx), rows, False))
        return S.SeqStmt(parts)

    def compute(self) -> S.Stmt:
        mr, M = self.mr, self.M
        tiles = M // mr if isinstance(M, int) else E.FloorDiv(M, mr)
        tpb = max(1, self.mc // mr)
        blocks = _ceil_div(tiles, tpb)
        const = isinstance(M, int)

        def block_body(ib):
            def tile(t):
                tile_id = ib * tpb + t
                body = self.panels(tile_id * mr, mr)
                if const and tiles % tpb == 0:
                    return body
                return S.IfThenElse(tile_id < tiles, body)

            return self.loop("t", tpb, S.ForKind.SERIAL, tile)

        parts = []
        if not const or tiles:
            parts.append(self.loop("ib", blocks, S.ForKind.PARALLEL, block_body))
        if not const or M % mr:
            rest = M % mr if const else E.FloorMod(M, mr)
            base = tiles * mr

            def row_tail(jo_part):
                return self.loop("r", rest, S.ForKind.SERIAL, lambda r: jo_part(base + r))

            full = self.N // self.nr
            if full:
                parts.append(self.loop("jo", full, S.ForKind.PARALLEL, lambda jo: row_tail(
                    lambda row: self.micro(row, jo, 1, True))))
            if self.N % self.nr:
                jo = E._to_expr(full, self.idx)
                parts.append(row_tail(lambda row: self.micro(row, jo, 1, False)))
        return S.SeqStmt(parts)

    def build(self) -> PrimFunc:
        params = [self.A, self.B] + ([self.bias] if self.bias is not None else []) + [self.C]
        body = self.compute()
        if not self.prepacked:
            n = self.np * self.K * self.nr
            body = S.Allocate(self.Bp.data, self.dtype, [n], True,
                              S.DeclBuffer(self.Bp, S.SeqStmt([self.pack(), body])))
        attrs = {"global_symbol": "gemm", "tir.noalias": True}
        return PrimFunc(params, body, attrs=attrs)


def gemm(M, N: int, K: int, transpose_b: bool = False, bias: bool = False, relu: bool = False,
         dtype: str = "float32", mr: int = 8, nr: int = 32, mc: int = 64,
         prepacked_b: bool = False) -> PrimFunc:
    """A fast GEMM PrimFunc ``gemm(A, B[, bias], C)``.

    Parameters
    ----------
    M : int or Var
        Rows of A and C (may be symbolic, e.g. the batch size).
    N, K : int
        Columns of C and the reduction length.
    transpose_b : bool
        B is given as ``[N, K]`` (dense's weight layout) instead of ``[K, N]``.
    bias, relu : bool
        Fuse ``C = max(A @ B + bias, 0)`` into the micro-kernel's store.
    prepacked_b : bool
        B is already in the packed layout ``[ceil(N/nr), K, nr]`` (see ``pack_b``), e.g. a
        constant weight packed at build time.
    """
    if isinstance(M, IntImm):
        M = M.value
    return _Builder(M, int(N), int(K), transpose_b, bias, relu, dtype, mr, nr, mc,
                    prepacked_b).build()


schedule_dense = gemm

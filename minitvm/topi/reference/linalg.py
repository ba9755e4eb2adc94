"""Numpy references of the loop-kernel factorizations (``topi.linalg``): the same algorithms
and layouts, one matrix at a time (the interpreter's and FoldConstant's implementation)."""

from __future__ import annotations

import numpy as np

from ..utils import reference


@reference("linalg.cholesky_factor")
def _cholesky(attrs, args, t):
    a = np.asarray(args[0])
    out = np.zeros(a.shape, a.dtype)
    n = a.shape[-1]
    for b in range(a.shape[0]):
        low = out[b]
        for j in range(n):
            s = a[b, j, j] - np.dot(low[j, :j], low[j, :j])
            low[j, j] = np.sqrt(s) if s > 0 else np.nan
            low[j + 1:, j] = (a[b, j + 1:, j] - low[j + 1:, :j] @ low[j, :j]) / low[j, j]
    return out


@reference("linalg.lu_factor")
def _lu(attrs, args, t):
    a = np.asarray(args[0])
    bsz, n = a.shape[0], a.shape[-1]
    out = np.zeros((bsz, n, n + 1), a.dtype)
    for b in range(bsz):
        lu = a[b].copy()
        for k in range(n):
            p = k + int(np.argmax(np.abs(lu[k:, k])))
            out[b, k, n] = p
            lu[[k, p]] = lu[[p, k]]
            if lu[k, k] != 0:
                lu[k + 1:, k] /= lu[k, k]
                lu[k + 1:, k + 1:] -= np.outer(lu[k + 1:, k], lu[k, k + 1:])
        out[b, :, :n] = lu
    return out


@reference("linalg.factored_solve")
def _factored_solve(attrs, args, t):
    factor, rhs = np.asarray(args[0]), np.asarray(args[1])
    n = rhs.shape[1]
    kind = str(attrs.kind)
    x = rhs.astype(t.dtype, copy=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        for b in range(x.shape[0]):
            f, xb = factor[b], x[b]
            if kind == "lu":
                for k in range(n):
                    p = int(f[k, n])
                    xb[[k, p]] = xb[[p, k]]
            upper = f.T if kind == "cholesky" else f
            if kind in ("lu", "cholesky", "lower", "unit_lower"):
                unit = kind in ("lu", "unit_lower")
                for i in range(n):
                    xb[i] -= f[i, :i] @ xb[:i]
                    if not unit:
                        xb[i] /= f[i, i]
            if kind in ("lu", "cholesky", "upper", "unit_upper"):
                for i in range(n - 1, -1, -1):
                    xb[i] -= upper[i, i + 1:n] @ xb[i + 1:]
                    if kind != "unit_upper":
                        xb[i] /= upper[i, i]
    return x

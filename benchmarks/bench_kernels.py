"""Per-kernel latency: minitvm's native kernels (llvmlite) against numpy, side by side.

    python benchmarks/bench_kernels.py [--threads 2] [--rounds 7] [--only exp gemv ...]

Kernels are the building blocks of the issue-5 models: elementwise exp/tanh/erf (1M floats),
softmax over 12x128 rows of 128, layer_norm 128x768, GEMV 1x784 @ 784x128, dense 64x784x128,
batch_matmul 12x(128x64 @ 64x128), and the Python->native call overhead. The elementwise and
row kernels are written as TIR with explicit 16-lane vector loops (the shape the relay back end
emits); the GEMMs are ``schedule.gemm_kernel.gemm`` / ``batch_gemm`` with prepacked weights. Both sides run
in alternating rounds in one process; the best round of each is reported (ratio = ours/numpy).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def _blas_threads() -> None:
    """Give numpy's BLAS the same thread count as ours (set before numpy is imported)."""
    n = "2"
    if "--threads" in sys.argv[:-1]:
        n = sys.argv[sys.argv.index("--threads") + 1]
    for key in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(key, n)


_blas_threads()

import numpy as np  # noqa: E402

from minitvm import codegen, tir  # noqa: E402
from minitvm.runtime import threadpool  # noqa: E402
from minitvm.schedule import gemm_kernel  # noqa: E402

LANES = 16
PARALLEL_MIN_ELEMS = 1 << 16  # elementwise loops shorter than this stay on one thread
F32 = "float32"

try:
    from scipy.special import erf as np_erf
except ImportError:  # pragma: no cover
    from math import erf as _erf

    np_erf = np.vectorize(_erf, otypes=[np.float32])


def _v(name: str) -> tir.Var:
    return tir.Var(name, "int32")


def _vec_loop(n: int, body, parallel: bool = True) -> tir.Stmt:
    """``for i in [0, n)`` as parallel chunks of vector loops (n a multiple of LANES)."""
    assert n % LANES == 0
    io, ii = _v("io"), _v("ii")
    inner = tir.For(ii, 0, LANES, tir.ForKind.VECTORIZED, body(io * LANES + ii))
    if not parallel or n < PARALLEL_MIN_ELEMS:
        return tir.For(io, 0, n // LANES, tir.ForKind.SERIAL, inner)
    return tir.For(io, 0, n // LANES, tir.ForKind.PARALLEL, inner,
                   annotations={"parallel_min_extent": PARALLEL_MIN_ELEMS // LANES})


def _func(params, body) -> tir.PrimFunc:
    return tir.PrimFunc(params, body, attrs={"tir.noalias": True})


def elementwise(fname: str, n: int):
    A, B = tir.decl_buffer((n,), F32, "A"), tir.decl_buffer((n,), F32, "B")
    fop = getattr(tir, fname)
    return _func([A, B], _vec_loop(n, lambda i: tir.BufferStore(B, fop(A[i]), [i])))


def _row_reduce(acc, init, rows_fn, combine, length: int) -> list:
    """Vector partial results of ``combine`` over a row, then a scalar fold into acc[LANES]."""
    v, c0 = _v("v"), _v("c0")
    stmts = [tir.For(v, 0, LANES, tir.ForKind.VECTORIZED, tir.BufferStore(acc, init, [v]))]
    vi = _v("vi")
    stmts.append(tir.For(c0, 0, length // LANES, tir.ForKind.SERIAL, tir.For(
        vi, 0, LANES, tir.ForKind.VECTORIZED, tir.BufferStore(
            acc, combine(acc[vi], rows_fn(c0 * LANES + vi)), [vi]))))
    lane = _v("l")
    stmts.append(tir.BufferStore(acc, acc[0], [LANES]))
    stmts.append(tir.For(lane, 1, LANES - 1, tir.ForKind.SERIAL, tir.BufferStore(
        acc, combine(acc[LANES], acc[lane]), [LANES])))
    return stmts


def softmax(rows: int, length: int):
    """Row softmax: vector max, exp and sum, then scale by 1/sum (rows in parallel)."""
    A, B = tir.decl_buffer((rows, length), F32, "A"), tir.decl_buffer((rows, length), F32, "B")
    r = _v("r")
    mx = tir.decl_buffer((LANES + 1,), F32, "mx")
    sm = tir.decl_buffer((LANES + 1,), F32, "sm")
    ninf = tir.FloatImm(F32, float("-inf"))
    zero = tir.FloatImm(F32, 0.0)
    body = _row_reduce(mx, ninf, lambda c: A[r, c], tir.max, length)
    c0, vi = _v("c0"), _v("vi")
    body.append(tir.For(c0, 0, length // LANES, tir.ForKind.SERIAL, tir.For(
        vi, 0, LANES, tir.ForKind.VECTORIZED, tir.BufferStore(
            B, tir.exp(A[r, c0 * LANES + vi] - mx[LANES]), [r, c0 * LANES + vi]))))
    body += _row_reduce(sm, zero, lambda c: B[r, c], lambda a, b: a + b, length)
    c1, vj = _v("c1"), _v("vj")
    body.append(tir.BufferStore(sm, tir.FloatImm(F32, 1.0) / sm[LANES], [LANES]))
    body.append(tir.For(c1, 0, length // LANES, tir.ForKind.SERIAL, tir.For(
        vj, 0, LANES, tir.ForKind.VECTORIZED, tir.BufferStore(
            B, B[r, c1 * LANES + vj] * sm[LANES], [r, c1 * LANES + vj]))))
    row = _alloc([mx, sm], tir.SeqStmt(body))
    return _func([A, B], tir.For(r, 0, rows, tir.ForKind.PARALLEL, row))


def layer_norm(rows: int, length: int, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) * gamma + beta per row, two vector passes for the moments."""
    A, B = tir.decl_buffer((rows, length), F32, "A"), tir.decl_buffer((rows, length), F32, "B")
    G, Bt = tir.decl_buffer((length,), F32, "gamma"), tir.decl_buffer((length,), F32, "beta")
    r = _v("r")
    s1 = tir.decl_buffer((LANES + 1,), F32, "s1")
    s2 = tir.decl_buffer((LANES + 1,), F32, "s2")
    zero = tir.FloatImm(F32, 0.0)
    add = lambda a, b: a + b  # noqa: E731
    inv_n = tir.FloatImm(F32, 1.0 / length)
    body = _row_reduce(s1, zero, lambda c: A[r, c], add, length)
    body.append(tir.BufferStore(s1, s1[LANES] * inv_n, [LANES]))
    body += _row_reduce(s2, zero, lambda c: (A[r, c] - s1[LANES]) * (A[r, c] - s1[LANES]),
                        add, length)
    body.append(tir.BufferStore(s2, tir.rsqrt(s2[LANES] * inv_n + tir.FloatImm(F32, eps)),
                                [LANES]))
    c0, vi = _v("c0"), _v("vi")
    col = c0 * LANES + vi
    body.append(tir.For(c0, 0, length // LANES, tir.ForKind.SERIAL, tir.For(
        vi, 0, LANES, tir.ForKind.VECTORIZED, tir.BufferStore(
            B, (A[r, col] - s1[LANES]) * s2[LANES] * G[col] + Bt[col], [r, col]))))
    row = _alloc([s1, s2], tir.SeqStmt(body))
    return _func([A, G, Bt, B], tir.For(r, 0, rows, tir.ForKind.PARALLEL, row))


def _alloc(bufs, body):
    for b in bufs:
        body = tir.Allocate(b.data, F32, [LANES + 1], True, tir.DeclBuffer(b, body))
    return body


# ---------------------------------------------------------------------------------- cases
def _np_softmax(x, out):
    np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)


def _np_layer_norm(x, g, b, out):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    np.subtract(x, mean, out=out)
    out *= 1.0 / np.sqrt(var + 1e-5)
    out *= g
    out += b


def cases(rng):
    """name -> (our kernel, our args, numpy callable, reference check)."""
    out = {}
    n = 1 << 20
    x = rng.uniform(-4, 4, n).astype(F32)
    for fname, ref in (("exp", np.exp), ("tanh", np.tanh), ("erf", np_erf)):
        k = codegen.build(elementwise(fname, n))["main"]
        y, z = np.empty_like(x), np.empty_like(x)
        out[f"{fname} 1M"] = (k, (x, y), (lambda r=ref, z=z: r(x, out=z)), (y, z))
    s = rng.standard_normal((12 * 128, 128)).astype(F32)
    so, sz = np.empty_like(s), np.empty_like(s)
    out["softmax 12x128x128"] = (codegen.build(softmax(12 * 128, 128))["main"], (s, so),
                                 lambda: _np_softmax(s, sz), (so, sz))
    h = rng.standard_normal((128, 768)).astype(F32)
    g, bt = rng.standard_normal(768).astype(F32), rng.standard_normal(768).astype(F32)
    ho, hz = np.empty_like(h), np.empty_like(h)
    out["layer_norm 128x768"] = (codegen.build(layer_norm(128, 768))["main"], (h, g, bt, ho),
                                 lambda: _np_layer_norm(h, g, bt, hz), (ho, hz))
    for m in (1, 64):
        a = rng.standard_normal((m, 784)).astype(F32)
        w = rng.standard_normal((128, 784)).astype(F32)
        bias = rng.standard_normal(128).astype(F32)
        wt = np.ascontiguousarray(w.T)
        c, cz = np.empty((m, 128), F32), np.empty((m, 128), F32)
        k = codegen.build(gemm_kernel.gemm(m, 128, 784, transpose_b=True, bias=True,
                                   prepacked_b=True))["gemm"]

        def np_dense(a=a, wt=wt, bias=bias, cz=cz):
            np.matmul(a, wt, out=cz)
            cz += bias

        name = "gemv 1x784x128" if m == 1 else "dense 64x784x128"
        out[name] = (k, (a, gemm_kernel.pack_b(w, 32, True), bias, c), np_dense, (c, cz))
    q = rng.standard_normal((12, 128, 64)).astype(F32)
    kt = rng.standard_normal((12, 128, 64)).astype(F32)
    bo, bz = np.empty((12, 128, 128), F32), np.empty((12, 128, 128), F32)
    kT = kt.transpose(0, 2, 1)
    out["batch_matmul 12x128x64x128"] = (
        codegen.build(gemm_kernel.batch_gemm(12, 128, 128, 64, transpose_b=True))["batch_gemm"],
        (q, kt, bo), lambda: np.matmul(q, kT, out=bz), (bo, bz))
    one, one_out, one_np = np.ones(1, F32), np.empty(1, F32), np.empty(1, F32)
    out["call overhead (1 float)"] = (codegen.build(elementwise("exp", LANES))["main"],
                                      (np.ones(LANES, F32), np.empty(LANES, F32)),
                                      lambda: np.exp(one, out=one_np), (one_out, one_out))
    return out


def _time(f, budget: float = 0.05) -> float:
    f()
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        dt = time.perf_counter() - t0
        if dt >= budget:
            return dt / reps
        reps *= 2


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", nargs="*", default=None, help="kernel name prefixes to run")
    args = p.parse_args(argv)
    threadpool.set_num_threads(args.threads)
    table = cases(np.random.default_rng(0))
    print(f"threads={args.threads} float32 (best of {args.rounds} alternating rounds)")
    print(f"{'kernel':<28} {'numpy us':>10} {'ours us':>10} {'ours/numpy':>10} {'max err':>9}")
    for name, (kernel, kargs, np_fn, (got, want)) in table.items():
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        kernel(*kargs)
        np_fn()
        err = float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))
        t_np = t_us = float("inf")
        for _ in range(args.rounds):
            t_np = min(t_np, _time(np_fn))
            t_us = min(t_us, _time(lambda k=kernel, a=kargs: k(*a)))
        print(f"{name:<28} {t_np * 1e6:>10.2f} {t_us * 1e6:>10.2f} {t_us / t_np:>10.2f} "
              f"{err:>9.1e}", flush=True)


if __name__ == "__main__":
    main()

"""Vectorized TIR loops at widths 8 to 256: each kernel emitted as one vector of its width (the
code before ``codegen/llvm/vector_pieces``: one vector up to 64 lanes, a serial loop past 64)
and in power-of-two pieces, interleaved in one process.

    python benchmarks/bench_vector_widths.py [--widths 8,16,24,...] [--rounds 15]

Kernels over 2**16 elements a call: float32 add, multiply, a*b+c; a column sum (a vectorized
accumulate inside a serial loop); a conv-like multiply-accumulate ``O[p, j] += X[p, c] *
W[c, j]``; int8 and int32 adds. Prints microseconds a call (the best of ``--rounds`` rounds of
20 calls) for "whole" and "pieces", their ratio, and whether the outputs are the same bit for
bit. A 24- or 48-lane accumulator LLVM keeps in a loop phi is split into one scalar a lane;
past 64 lanes the loop was scalar.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from minitvm import codegen, tir  # noqa: E402
from minitvm.codegen.llvm import stmt  # noqa: E402

TOTAL = 1 << 16  # elements a call
WIDTHS = "8,16,24,32,48,64,80,128,256"


def _vec(j, w, body):
    return tir.For(j, 0, w, tir.ForKind.VECTORIZED, body)


def elementwise(w: int, op: str, dtype: str = "float32"):
    n = TOTAL // w
    A, B, C, D = (tir.decl_buffer((n, w), dtype, x) for x in "ABCD")
    r, j = tir.Var("r", "int32"), tir.Var("j", "int32")
    v = {"add": A[r, j] + B[r, j], "mul": A[r, j] * B[r, j],
         "fma": A[r, j] * B[r, j] + C[r, j]}[op]
    return tir.PrimFunc([A, B, C, D], tir.For(r, 0, n, 0, _vec(j, w, tir.BufferStore(
        D, v, [r, j]))))


def column_sum(w: int):
    n = TOTAL // w
    A, S = tir.decl_buffer((n, w), "float32", "A"), tir.decl_buffer((w,), "float32", "S")
    k, j, j0 = tir.Var("k", "int32"), tir.Var("j", "int32"), tir.Var("j0", "int32")
    init = _vec(j0, w, tir.BufferStore(S, tir.const(0.0, "float32"), [j0]))
    acc = tir.For(k, 0, n, 0, _vec(j, w, tir.BufferStore(S, S[j] + A[k, j], [j])))
    return tir.PrimFunc([A, S], tir.SeqStmt([init, acc]))


def multiply_accumulate(w: int, kk: int = 64):
    p_n = max(1, TOTAL * 8 // (w * kk))
    X = tir.decl_buffer((p_n, kk), "float32", "X")
    W = tir.decl_buffer((kk, w), "float32", "W")
    O = tir.decl_buffer((p_n, w), "float32", "O")
    p, c, j, j0 = (tir.Var(x, "int32") for x in ("p", "c", "j", "j0"))
    init = _vec(j0, w, tir.BufferStore(O, tir.const(0.0, "float32"), [p, j0]))
    acc = tir.For(c, 0, kk, 0, _vec(j, w, tir.BufferStore(O, O[p, j] + X[p, c] * W[c, j],
                                                          [p, j])))
    return tir.PrimFunc([X, W, O], tir.For(p, 0, p_n, 0, tir.SeqStmt([init, acc])))


KERNELS = {
    "add f32": lambda w: elementwise(w, "add"),
    "mul f32": lambda w: elementwise(w, "mul"),
    "fma f32": lambda w: elementwise(w, "fma"),
    "colsum f32": column_sum,
    "mac f32": multiply_accumulate,
    "add i8": lambda w: elementwise(w, "add", "int8"),
    "add i32": lambda w: elementwise(w, "add", "int32"),
}


def build(func, whole: bool):
    """``func`` compiled with the piece emitter off (``whole``) or on."""
    saved = stmt.needs_pieces
    if whole:
        stmt.needs_pieces = lambda lanes: False
    try:
        # (the two builds differ in code, not in TIR: a name apart in the kernel caches)
        return codegen.build(func.with_attr("bench_mode", "whole" if whole else "pieces"))
    finally:
        stmt.needs_pieces = saved


def inputs(func, rng) -> list[np.ndarray]:
    out = []
    for p in func.params:
        b = func.buffer_map[p]
        shape = tuple(int(d) for d in b.shape)
        out.append(rng.standard_normal(shape).astype(b.dtype) if b.dtype.startswith("float")
                   else rng.integers(-50, 50, shape).astype(b.dtype))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default=WIDTHS)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    widths = [int(w) for w in args.widths.split(",")]
    rng = np.random.default_rng(0)
    runs = {}
    for name, make in KERNELS.items():
        for w in widths:
            func = make(w)
            data = inputs(func, rng)
            for whole in (True, False):
                runs[name, w, whole] = (build(func, whole)["main"], [a.copy() for a in data])
    same = {}
    for name in KERNELS:
        for w in widths:
            outs = []
            for whole in (True, False):
                fn, data = runs[name, w, whole]
                fresh = [a.copy() for a in data]
                fn(*fresh)
                outs.append(fresh[-1].tobytes())
            same[name, w] = outs[0] == outs[1]
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.rounds):  # every kernel once a round, both ways side by side
        for key, (fn, data) in runs.items():
            fn(*data)
            t0 = time.perf_counter()
            for _ in range(20):
                fn(*data)
            best[key] = min(best[key], (time.perf_counter() - t0) / 20)
    print(f"us a call, best of {args.rounds} rounds of 20; {TOTAL} elements; "
          "whole = one vector of the width (serial past 64 lanes), pieces = vector_pieces")
    print(f"{'kernel':11s} {'':7s}" + "".join(f"{w:>8d}" for w in widths))
    for name in KERNELS:
        for label, whole in (("whole", True), ("pieces", False)):
            print(f"{name:11s} {label:7s}" + "".join(
                f"{best[name, w, whole] * 1e6:8.1f}" for w in widths))
        print(f"{name:11s} {'ratio':7s}" + "".join(
            f"{best[name, w, False] / best[name, w, True]:7.2f}"
            f"{'' if same[name, w] else '!'}" for w in widths))
    print("ratio: pieces / whole (below 1: faster); '!' marks outputs that differ bit for bit")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

"""What the GEMM micro-kernel tests share: build one generated GEMM and check it against a
float64 numpy product."""

import numpy as np

from minitvm import codegen
from minitvm.schedule import gemm_kernel
from minitvm.tir.expr import Var


def check_gemm(fn, m, n, k, transpose_b=False, bias=False, relu=False, prepacked=False,
               sym=False, mc=None, seed=0):
    """Build ``fn`` (a GEMM builder of ``gemm_kernel``) at the host's default tile for an
    ``m x k`` by ``k x n`` product (rows symbolic when ``sym``) and compare it with numpy."""
    mr, nr = gemm_kernel.default_tile()
    mc = mc if mc is not None else gemm_kernel.default_mc()
    rows = Var("n", "int64") if sym else m
    kern = codegen.build(fn(rows, n, k, transpose_b=transpose_b, bias=bias, relu=relu, mr=mr,
                            nr=nr, mc=mc, prepacked_b=prepacked))
    kern = kern["gemm"]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k) if transpose_b else (k, n), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    wb = gemm_kernel.pack_b(w, nr, transpose_b) if prepacked else w
    kern(*([a, wb] + ([b] if bias else []) + [c]))
    ref = a.astype(np.float64) @ (w.T if transpose_b else w).astype(np.float64)
    if bias:
        ref = ref + b
    if relu:
        ref = np.maximum(ref, 0)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(ref).max()))

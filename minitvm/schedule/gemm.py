"""GEMM anchors (dense, matmul, batch_matmul, conv2d by im2col) as calls to the BLAS shim.

``use_gemm(t)`` decides whether a tagged stage goes to BLAS (float32, at least two rows, BLAS
present); otherwise the stage is lowered as the plain reduction it is defined as, which the
reduction schedule vectorizes (the GEMV case: batch-1 dense).
"""

from __future__ import annotations

from ..runtime.blas import SHIM_SYMBOL
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.op import call_extern
from ..tir.stmt_functor import post_order, substitute, transform_expr
from ..topi.utils import static_shape as _shape
from . import conv_direct, gemm_tb
from .common import allocated as _allocated
from .common import at_own_position, redirect_loads, vector_isa
from .common import dims_of as _dims
from .common import is_static as _is_static
from .common import lanes as _lanes
from .common import prod_dims as _prod_dims
from .common import vector_inner as _vector_inner
from .gemm_kernel import GemmBuilder, computed_width, default_tile, direct_widths, pack_b
from .knobs import select as _knobs
from .options import LoweringOptions

NOTRANS, TRANS = 111, 112
MIN_GEMM_MACS = 1 << 14


def _gemm_dims(t):
    """(M, N, K) of a tagged stage, or None when it is not a plain GEMM shape.

    M (and a batch) may be symbolic PrimExprs; see ``_static_nk``.
    """
    tag, attrs = t.op.tag, t.op.attrs
    a, b = attrs["operands"]
    sa, sb, so = _dims(a), _dims(b), _dims(t)
    if tag == "dense":
        return _prod_dims(sa[:-1]), so[-1], sa[-1]
    if tag == "matmul":
        if len(so) != 2:  # A's leading axes flattened into the rows (B a matrix)
            return _prod_dims(so[:-1]), so[-1], sa[-1]
        k = sa[0] if attrs["transpose_a"] else sa[1]
        return so[0], so[1], k
    if tag == "batch_matmul":  # rank 3, or more with every leading axis a batch axis
        k = sa[-2] if attrs["transpose_a"] else sa[-1]
        return so[-2], so[-1], k
    if tag == "conv2d_nchw":
        if not (_is_static(sa) and _is_static(sb) and _is_static(so)):
            return None
        o, cg, kh, kw = sb
        g = attrs["groups"]
        if cg == 1 and g > 1:
            return None  # depthwise: the reduction schedule does better
        return o // g, so[2] * so[3], cg * kh * kw
    return None


# which GEMM stages use generated code (else BLAS when allowed) is in the LoweringOptions:
# conv2d by the implicit GEMM of conv_direct, dense and batch_matmul by gemm_kernel's packed
# register-blocked GEMM


def use_generated_conv(t, options: LoweringOptions) -> bool:
    """Is ``t`` a conv2d computed by the generated implicit GEMM (``conv_direct``)?"""
    if not (t.op.tag == "conv2d_nchw" and options.generated_conv and conv_direct.supported(t)):
        return False
    return _knobs(options, t)["impl"] != "im2col" or not options.blas


def _static_nk(dims) -> bool:
    """A GEMM shape the generated kernels take: M, N and K static or symbolic int exprs."""
    return dims is not None


# one row (a batch-1 dense: a GEMV) takes the packed kernels from a weight of this many
# elements; the generic schedule sums one 16-lane dot product per output with a serial
# horizontal sum. Zen 4, one thread, dense + bias + relu with a constant weight, us, generic
# -> packed: 784->128 8.8 -> 5.1, 128->512 9.7 -> 3.4 (the LSTM's recurrent product),
# 1024->1000 82 -> 54, 768->3072 189 -> 126; 128->10 0.95 -> 0.87. A smaller weight of at
# least GEMV_MIN_COLUMNS outputs too (a GRU's recurrent product, stop 43): 64->192 2.13 ->
# 0.66, 64->96 1.16 -> 0.39, 40->64 0.59 -> 0.26, 16->48 0.30 -> 0.20, 8->32 0.21 -> 0.17;
# fewer outputs lost (128->10 0.225 -> 0.241)
GEMV_MIN_WEIGHT = 1 << 14
GEMV_MIN_COLUMNS = 16


def _enough_work(m, n, k) -> bool:
    """A GEMM worth the packed kernels: at least two rows and enough multiply-adds, or one row
    and a weight of ``GEMV_MIN_WEIGHT`` elements or ``GEMV_MIN_COLUMNS`` outputs. With a
    symbolic extent (known only at run time) the static ones must not make it tiny."""
    if isinstance(m, int) and isinstance(n, int) and isinstance(k, int):
        if m == 1:
            return n * k >= GEMV_MIN_WEIGHT or n >= GEMV_MIN_COLUMNS
        return m >= 2 and m * n * k >= MIN_GEMM_MACS
    if isinstance(m, int) and m < 2:
        return False
    static = 1
    for d in (m, n, k):
        static *= d if isinstance(d, int) else 1
    return static >= 16


def use_generated_dense(t, options: LoweringOptions) -> bool:
    """Is ``t`` a float32 dense computed by the generated ``gemm_kernel`` (``_enough_work``)?"""
    if t.op.tag != "dense" or not options.generated_dense:
        return False
    a, b = t.op.attrs["operands"]
    if not (t.dtype == a.dtype == b.dtype == "float32"):
        return False
    dims = _gemm_dims(t)
    if not (_static_nk(dims) and _enough_work(*dims)):
        return False
    return _knobs(options, t)["impl"] != "blas" or not options.blas


def use_generated_matmul(t, options: LoweringOptions) -> bool:
    """Is ``t`` a float32 matmul ``A @ op(B)`` (A not transposed, B a matrix, A's leading axes
    the rows) computed by the generated ``gemm_kernel``?"""
    if t.op.tag != "matmul" or not options.generated_dense or t.op.attrs["transpose_a"]:
        return False
    a, b = t.op.attrs["operands"]
    if not (t.dtype == a.dtype == b.dtype == "float32") or len(b.shape) != 2 or \
            len(a.shape) != len(t.shape) or len(t.shape) < 2:
        return False
    dims = _gemm_dims(t)
    return _static_nk(dims) and _enough_work(*dims)


BMM_GENERATED_MIN_ROWS = 16
# per vector ISA: whether a batch of products ``A @ B^T`` each under ``MIN_GEMM_MACS`` (attention
# scores over few tokens) takes the packed kernels when N is whole vectors and the batch
# together has that work. The generic reduction vectorizes across N, where B^T's columns are
# K apart: a gather per multiply-add step. Sapphire Rapids, one thread, us, generic -> packed
# (batch x M x N x K): 16x16x16x20 20.5 -> 6.5 (MobileViT's scores), 16x16x16x16 16.6 -> 5.8,
# 16x16x16x32 32.3 -> 7.8, 8x32x32x8 16.5 -> 2.1, 4x16x16x16 4.6 -> 1.1; with N of 8 (a partial
# tile) the generic one stays faster (16x8x8x16 2.6 vs 4.6). AVX2 not measured: unchanged.
SMALL_TB_BATCH = {"avx512": True, "avx2": False}
# the same for small ``A @ B`` (B not transposed: a mixing or DFT matrix from the left, a batch
# of tiny per-head products), any N. Zen 3 (AVX2), one thread, us, generic -> packed (batch x M
# x K x N): 128x24x24x24 330 -> 65 (spectral pooling's F @ x), 128x16x24x24 220 -> 60,
# 192x12x24x24 250 -> 60, 64x16x16x32 31 -> 21; 64x12x12x12, 16x10x20x10, 32x8x8x16 unchanged
# (+-10%). AVX-512 not measured: unchanged.
SMALL_NT_BATCH = {"avx512": False, "avx2": True}


def _small_batch(t, dims) -> bool:
    """Is ``t`` a static batch of small products that ``SMALL_TB_BATCH`` (B transposed) or
    ``SMALL_NT_BATCH`` (B not) sends to the packed kernels?"""
    m, n, k = dims
    batch = _prod_dims(_dims(t)[:-2])
    tb = t.op.attrs["transpose_b"]
    if not (SMALL_TB_BATCH if tb else SMALL_NT_BATCH)[vector_isa()] or \
            not all(isinstance(d, int) for d in (batch, m, n, k)):
        return False
    whole = n % _lanes(t.dtype) == 0 or not tb
    return m >= 2 and whole and batch * m * n * k >= MIN_GEMM_MACS


def use_generated_batch_matmul(t, options: LoweringOptions) -> bool:
    """Is ``t`` a float32 batch_matmul (A not transposed) computed by ``gemm_kernel.batch_gemm``?

    B is an activation, so it is packed on every call; that packing is cheap next to the
    GEMM once the product is big enough, which the threshold below says.
    """
    if t.op.tag != "batch_matmul" or not options.generated_batch_matmul:
        return False
    a, b = t.op.attrs["operands"]
    if t.op.attrs["transpose_a"] or not (t.dtype == a.dtype == b.dtype == "float32"):
        return False
    dims = _gemm_dims(t)
    if not _static_nk(dims):
        return False
    small = not _enough_work(*dims) and _small_batch(t, dims)
    if not (_enough_work(*dims) or small):
        return False
    m = dims[0]
    if not all(isinstance(d, int) for d in dims) or not isinstance(_dims(t)[0], int):
        return True
    # measured (2 threads): generated 1.4-3.7x faster from 16 rows up (BERT's 12x128x128x64:
    # 0.097 vs 0.135 ms); with fewer rows the per-call packing dominates and BLAS wins (3x at
    # 8x2x512x512), so BLAS keeps those when it is there (BLAS takes no product under
    # MIN_GEMM_MACS: a small batch stays generated)
    return m >= BMM_GENERATED_MIN_ROWS or not options.blas or \
        (small and not t.op.attrs["transpose_b"])


def use_gemm(t, options: LoweringOptions) -> bool:
    """Route this stage to a GEMM (BLAS, or generated: implicit-GEMM conv, packed dense)?"""
    if use_generated_conv(t, options) or use_generated_dense(t, options) or \
            use_generated_batch_matmul(t, options) or use_generated_matmul(t, options):
        return True
    a, b = t.op.attrs["operands"]
    if not (t.dtype == a.dtype == b.dtype == "float32"):
        return False
    dims = _gemm_dims(t)
    if dims is None or not all(isinstance(d, int) for d in dims) or \
            not _is_static(_dims(t)):
        return False
    rank = {"matmul": 2, "batch_matmul": 3}.get(t.op.tag)
    if rank is not None and len(t.shape) != rank:
        return False  # the BLAS calls below take plain matrices / rank-3 batches
    m, n, k = dims
    if m < 2 or m * n * k < MIN_GEMM_MACS:
        return False
    return options.blas


def _i64(v) -> E.PrimExpr:
    return E.as_index(v, "int64")


def _off(buf, extra=0) -> E.PrimExpr:
    base = int(buf.elem_offset) if isinstance(buf.elem_offset, E.IntImm) else buf.elem_offset
    if isinstance(extra, int) and isinstance(base, int):
        return _i64(base + extra)
    return _i64(base) + _i64(extra) if not (isinstance(base, int) and base == 0) else _i64(extra)


def sgemm(ta, tb, m, n, k, a, oa, lda, b, ob, ldb, c, oc, ldc) -> S.Stmt:
    """``C[oc:] = op(A[oa:]) @ op(B[ob:])`` (row-major) through the BLAS shim."""
    call = call_extern("int32", SHIM_SYMBOL, _i64(ta), _i64(tb), _i64(m), _i64(n), _i64(k),
                       a.data, _off(a, oa), _i64(lda), b.data, _off(b, ob), _i64(ldb),
                       c.data, _off(c, oc), _i64(ldc), E.FloatImm("float32", 0.0))
    return S.Evaluate(call)


PARALLEL_GEMM_MACS = 1 << 20


def par_sgemm(ctx, ta, tb, m, n, k, a, oa, lda, b, ob, ldb, c, oc, ldc) -> S.Stmt:
    """``sgemm`` split into column blocks run on the thread pool (BLAS itself single-threaded).

    Row-major ``C[:, j0:j1] = op(A) @ op(B)[:, j0:j1]``: B moves by ``j0`` columns (``j0`` rows
    of the transposed operand), C by ``j0``.
    """
    if m * n * k < PARALLEL_GEMM_MACS or n < 32:
        return sgemm(ta, tb, m, n, k, a, oa, lda, b, ob, ldb, c, oc, ldc)
    width = max(64, (-(-n // 8) + 15) // 16 * 16)
    nblocks = -(-n // width)
    jb = ctx.fresh("jb")
    j0 = jb * width
    cols = E.Min(E.IntImm("int32", width), n - j0)
    b_off = (j0 * ldb) if tb == TRANS else j0
    call = sgemm(ta, tb, m, cols, k, a, oa, lda, b, _add(ob, b_off), ldb, c, _add(oc, j0), ldc)
    return S.For(jb, 0, nblocks, S.ForKind.PARALLEL, call)


def _add(x, y):
    if isinstance(x, int) and x == 0:
        return y
    return x + y


# whether a generated matmul applies its fused elementwise epilogue (bias add, residual add,
# relu: no function calls) to the register tile as it stores it, by vector ISA
# (``fuses_epilogue``); else the epilogue is a second pass over the output. Measured on a Zen 2
# (AVX2, one thread, thread CPU time, BERT layer kernels at seq 128/512, weights passed at run
# time, separate pass -> fused, ms): 768->768 + bias 1.89/7.51 -> 1.90/7.18, + bias + residual
# 1.89/6.89 -> 1.94/7.22 (within the noise; the pass is cheap next to the GEMM), + bias + gelu
# at 512 rows 31.8 -> 34.1 (the erf costs more in the tile store, so an epilogue with calls
# keeps its pass). Both ISAs (the Zen 4 measurement at ``common.vector_isa``).
FUSED_EPILOGUE = {"avx512": True, "avx2": True}


def fuses_epilogue(t, options: LoweringOptions) -> bool:
    """Does generated matmul stage ``t`` apply an elementwise epilogue in its store
    (``emit_fused``)? Where ``FUSED_EPILOGUE`` is on for the host's ISA (both ISAs)."""
    return FUSED_EPILOGUE[vector_isa()] and t.op.tag == "matmul" and \
        use_generated_matmul(t, options)


def emit(ctx, t, out, operand_bufs) -> S.Stmt:
    """The statements computing GEMM stage ``t`` into ``out``."""
    tag, attrs = t.op.tag, t.op.attrs
    a, b = operand_bufs
    if tag == "conv2d_nchw" and use_generated_conv(t, ctx.options):
        return conv_direct.emit(ctx, t, out, a, b)
    if tag == "dense" and use_generated_dense(t, ctx.options):
        return _gen_dense(ctx, t, out, a, b)
    if tag == "batch_matmul" and use_generated_batch_matmul(t, ctx.options):
        return _gen_batch_matmul(ctx, t, out, a, b)
    if tag == "matmul" and use_generated_matmul(t, ctx.options):
        return _gen_matmul(ctx, t, out, a, b)
    m, n, k = _gemm_dims(t)
    if tag == "dense":
        return par_sgemm(ctx, NOTRANS, TRANS, m, n, k, a, 0, k, b, 0, k, out, 0, n)
    if tag == "matmul":
        ta, tb = attrs["transpose_a"], attrs["transpose_b"]
        return par_sgemm(ctx, TRANS if ta else NOTRANS, TRANS if tb else NOTRANS, m, n, k,
                         a, 0, m if ta else k, b, 0, k if tb else n, out, 0, n)
    if tag == "batch_matmul":
        ta, tb = attrs["transpose_a"], attrs["transpose_b"]
        batch = _shape(t)[0]
        sa, sb = _shape(attrs["operands"][0]), _shape(attrs["operands"][1])
        v = ctx.fresh("bi")
        oa = v * (m * k) if sa[0] != 1 else 0
        ob = v * (k * n) if sb[0] != 1 else 0
        call = sgemm(TRANS if ta else NOTRANS, TRANS if tb else NOTRANS, m, n, k,
                     a, oa, m if ta else k, b, ob, k if tb else n, out, v * (m * n), n)
        kind = S.ForKind.PARALLEL if batch * m * n * k >= PARALLEL_GEMM_MACS else \
            S.ForKind.SERIAL
        return S.For(v, 0, batch, kind, call)
    return _conv2d(ctx, t, out, a, b, m, n, k)


def _conv2d(ctx, t, out, x, w, og, ohow, ckk) -> S.Stmt:
    attrs = t.op.attrs
    nb, c, h, wd = _shape(attrs["operands"][0])
    o, cg, kh, kw = _shape(attrs["operands"][1])
    _, _, oh, ow = _shape(t)
    g = attrs["groups"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    pt, pl, pb, pr = attrs["padding"]
    direct = (kh, kw, sh, sw, pt, pl, pb, pr) == (1, 1, 1, 1, 0, 0, 0, 0)
    nv, gv = ctx.fresh("n"), ctx.fresh("g")
    if direct:
        src, src_off = x, (nv * c + gv * cg) * (h * wd)
        prep = None
    else:
        col = ctx.temp((ckk, ohow), "float32", "im2col")
        src, src_off = col, 0
        prep = _im2col(ctx, col, x, nv, gv, (c, h, wd), (cg, kh, kw), (oh, ow),
                       (sh, sw), (dh, dw), (pt, pl))
    call = par_sgemm(ctx, NOTRANS, NOTRANS, og, ohow, ckk, w, gv * (og * ckk), ckk, src,
                     src_off, ohow, out, (nv * o + gv * og) * ohow, ohow)
    body = call if prep is None else S.SeqStmt([prep, call])
    body = S.For(gv, 0, g, S.ForKind.SERIAL, body)
    return S.For(nv, 0, nb, S.ForKind.SERIAL, body)


def _im2col(ctx, col, x, nv, gv, chw, ckk, ohw, strides, dil, pads) -> S.Stmt:
    """``col[(c*KH + ky)*KW + kx, oy*OW + ox] = x_padded[n, g*Cg + c, iy, ix]``."""
    c, h, wd = chw
    cg, kh, kw = ckk
    oh, ow = ohw
    sh, sw = strides
    dh, dw = dil
    pt, pl = pads
    row = ctx.fresh("row")
    ci = E.FloorDiv(row, kh * kw) if kh * kw > 1 else row
    ky = E.FloorMod(E.FloorDiv(row, kw), kh) if kh > 1 else E.IntImm("int32", 0)
    kx = E.FloorMod(row, kw) if kw > 1 else E.IntImm("int32", 0)
    oy = ctx.fresh("oy")
    iy = oy * sh + ky * dh - pt
    zero = E.IntImm("int32", 0)

    def at(ox):
        ix = ox * sw + kx * dw - pl
        ok = E.And(E.And(iy >= 0, iy < h), E.And(ix >= 0, ix < wd))
        cy = E.Max(E.Min(iy, E.IntImm("int32", h - 1)), zero)
        cx = E.Max(E.Min(ix, E.IntImm("int32", wd - 1)), zero)
        v = x[nv, gv * cg + ci, cy, cx] if len(x.shape) == 4 else None
        val = E.Select(ok, v, E.FloatImm("float32", 0.0))
        return S.BufferStore(col, val, [row, oy * ow + ox])

    inner = S.For(oy, 0, oh, S.ForKind.SERIAL, _vector_inner(ctx, ow, _lanes("float32"), at))
    rows = cg * kh * kw
    kind = S.ForKind.PARALLEL if rows * oh * ow >= (1 << 15) else S.ForKind.SERIAL
    return S.For(row, 0, rows, kind, inner)


def _view(ctx, buf, shape, name):
    """``buf`` seen with another (same-size) shape, declared at the function's top."""
    v = decl_buffer(shape, buf.dtype, name, data=buf.data, elem_offset=buf.elem_offset)
    ctx.ws_views.append(v)
    return v


# a dense GEMM under this many multiply-adds (~35 us on one core) stays on the calling thread.
# It was 2**23 (~280 us) while every parallel loop woke a sleeping pool; executors now keep the
# pool spinning for a whole run (threadpool.keep_warm) and a loop costs a few microseconds to
# dispatch. With 2**23, BERT's attention-probs x V (12 x seq x seq x 64, symbolic seq: the
# symbolic K counted as 64) stayed on one thread up to seq 143.
DENSE_PARALLEL_MIN_WORK = 1 << 20


# up to this N a half-width tile that divides N replaces a full width that does not (below)
HALF_WIDTH_MAX_N = 2048
# per vector ISA: the half width is also taken where the full width's padded columns exceed
# the half width's by at least this fraction of them (N of 33..47, 65..79 with 32-wide tiles),
# or None. AVX-512, one thread, thread CPU time, ONNX graphs (bench_gemm_shapes' run_case, inputs
# zero-copy), us, 32 -> 16 wide: CLIP text attention scores 8x77x64 @ (8x77x64)^T 54.6 -> 49.2
# (ORT 46.4), 16x40x64 @ (16x40x64)^T 38.6 -> 34.4, dense 1x512 -> 77 3.9 -> 3.4, 128x768 -> 40
# (+bias, relu) 67.1 -> 63.1, 300x530 -> 70 159.7 -> 158.4, 64x256 -> 77 18.8 -> 19.8;
# 8x77x64 @ 8x64x77 57.2 -> 56.5. AVX2 (16 wide: no half) off. The full width's padding
# counts its partial panel at the lanes ``gemm_kernel.NARROW_PARTIAL_PANEL`` narrows it to
# (77: 64 + 16 = 80, as many as 16-wide panels: the full width; 33..47 and 65..79 all stay
# full). AVX-512, one thread, relay graphs, both narrowed, us, 16 -> 32 wide: 8x77x64 @
# (8x77x64)^T 50.2 -> 44.0, 16x40x64 @ (16x40x64)^T 32.8 -> 31.8, 8x77x64 @ 8x64x77 56.1 ->
# 52.4, dense 128x768 -> 40 (+bias, relu) 59.0 -> 52.5, 300x530 -> 70 167.9 -> 149.8,
# 64x256 -> 77 18.4 -> 15.8, 1x512 -> 77 2.8 -> 2.9.
HALF_WIDTH_PAD_SAVING = {"avx512": 0.15, "avx2": None}


def _dense_nr(n) -> int:
    """The packed GEMM's default tile width for ``n`` columns: the ISA's (``default_tile``),
    halved when ``n`` is narrower than it, or under ``HALF_WIDTH_MAX_N`` when the half divides
    ``n`` and the full width does not; never below 16 (AVX2, Zen 2, N=10 at 64 rows: 16 wide
    15 us, 8 wide 20 us).

    A last panel only partly inside ``n`` is packed with a bounds check per element and stored
    element by element. Zen 4, one thread, us, 32 -> 16 wide: dense 96x128 -> 48 29 -> 11,
    196x192 -> 48 325 -> 36, 96x256 -> 208 131 -> 92, 128x256 -> 784 524 -> 466,
    32x256 -> 1040 176 -> 158, 384x384 -> 1296 3853 -> 3802, 64x256 -> 1008 328 -> 297, but
    64x512 -> 3088 2109 -> 2147; batch_matmul 16x48x48 (K 16, B transposed, attention
    scores) 65 -> 25, 12x64x112 (K 64) 266 -> 139."""
    nr = default_tile()[1]
    if not isinstance(n, int):
        return nr
    half = max(16, nr // 2)
    if n < nr or (n % nr and n % half == 0 and n < HALF_WIDTH_MAX_N):
        return half
    saving = HALF_WIDTH_PAD_SAVING[vector_isa()]
    padded, padded_half = computed_width(n, nr), -(-n // half) * half
    if saving and half < nr and padded - padded_half >= saving * padded:
        return half
    return nr


class _PackB:
    """Picklable numpy transform: a ``[N, K]`` weight (``[K, N]`` when not ``transpose_b``) to
    ``gemm_kernel``'s packed layout."""

    def __init__(self, nr: int, transpose_b: bool = True):
        self.nr = nr
        self.transpose_b = transpose_b

    def __call__(self, w):
        return pack_b(w, self.nr, transpose_b=self.transpose_b)


def packed_weight(t, options: LoweringOptions | None = None):
    """(packed shape, numpy transform) of dense ``t``'s weight for the generated GEMM."""
    _, n, k = _gemm_dims(t)
    nr = _knobs(options if options is not None else LoweringOptions(), t)["nr"]
    return (-(-n // nr), k, nr), _PackB(nr)


def packed_matmul_weight(t, options: LoweringOptions | None = None):
    """(packed shape, numpy transform) of matmul ``t``'s B, a build-time constant, for the
    generated GEMM (``_gen_matmul`` then reads it packed: no packing per call)."""
    _, n, k = _gemm_dims(t)
    nr = _knobs(options if options is not None else LoweringOptions(), t)["nr"]
    return (-(-n // nr), k, nr), _PackB(nr, bool(t.op.attrs["transpose_b"]))


# per vector ISA: whether a dense whose ``[N, K]`` weight arrives at run time (a graph input,
# or computed: ONNX MatMul / Gemm of two activations, torch's F.linear with a weight argument)
# takes ``_gen_matmul``'s rules for a transposed B (read in place for few rows, the swapped
# ``C.T = W @ A.T``, or W packed K block by K block as the tiles use it) instead of packing all
# of W into panels on every call. Measured (AVX-512, one thread, thread CPU time, the dense
# kernel alone, us, packed per call -> matmul rules): 1x768x768 289 -> 67, 4x4096x1024 4685 ->
# 1245, 64x768x768 799 -> 587, 64x3072x768 4176 -> 3522. AVX2: the gemm_tb measurements (in
# place beat packing per call at every size measured on a Zen 2) are the ones these rules
# already follow for a matmul.
RUNTIME_W_AS_MATMUL = {"avx512": True, "avx2": True}


def _gen_dense(ctx, t, out, a, w) -> S.Stmt:
    """``out = a @ w.T`` by ``gemm_kernel``'s packed micro-kernels, the weight prepacked at
    build time when it is a constant; a weight given at run time goes by ``_gen_matmul``'s
    rules for ``[N, K]`` B (``RUNTIME_W_AS_MATMUL``), else it is packed per call."""
    m, n, k = _gemm_dims(t)
    prepacked = id(t) in ctx.packed
    if not prepacked and RUNTIME_W_AS_MATMUL[vector_isa()] and gemm_tb.supported(m, n, k):
        return _gen_matmul(ctx, t, out, a, w, transpose_b=True)
    kn = _knobs(ctx.options, t)
    nr = kn["nr"]
    bld = GemmBuilder(None, m, n, k, True, False, False, "float32", kn["mr"], nr, kn["mc"], False,
                      False, False, kn["min_work"])
    bld.gemv_split = kn["gemv_split"]
    bld.A = _view(ctx, a, (m, k), "dense_a") if len(a.shape) != 2 else a
    bld.B = w
    bld.C = _view(ctx, out, (m, n), "dense_c") if len(out.shape) != 2 else out
    if prepacked:
        bld.Bp = w
        return bld.compute()
    bld.Bp = ctx.temp((bld.np, k, nr), "float32", "dense_wpack")
    return S.SeqStmt([bld.pack(), bld.compute()])


def _direct_nr(n) -> int | None:
    """A register tile width that divides ``n`` (B then needs no packing), or None. A narrow
    ``n`` is its own tile when it fits one vector register; between one and the widest tile
    only a whole number of vectors: a ragged tile (17..31 columns of 16 lanes) splits into
    odd-width vectors that run at a fraction of the packed kernel's speed. Zen 4, one thread,
    in place -> packed, us: linear attention's 8x16x64 @ 8x64x17 42.4 -> 13.9, 8x64x16 @
    8x16x17 46.3 -> 7.8, matmul 64x64 @ 64x24 39.3 -> 4.6; 4 to 16 columns stay in place
    (64x64 @ 64x8 1.8 in place, 2.7 packed)."""
    if not isinstance(n, int):
        return None
    widths = direct_widths()
    for nr in widths:
        if n % nr == 0:
            return nr
    lanes = _lanes("float32")
    return n if n <= widths[0] and (n <= lanes or n % lanes == 0) else None


# rows up to which a matmul reads a ``[K, N]`` B in place instead of packing it per call (the
# packing copies all of B: worth it only when many rows reuse each packed panel). Measured
# (2 threads, 768-wide BERT GEMMs): in place is 1.2-2.4x faster up to 128 rows while K <= 1024;
# with a longer K the strided panel falls out of cache and packing wins from 16 rows.
DIRECT_B_MAX_ROWS = 128
DIRECT_B_MAX_ROWS_LONG_K = 16
DIRECT_B_LONG_K = 1024
# ... and the packing is skipped for any row count when B is this small (cache resident)
DIRECT_B_MAX_BYTES = 512 * 1024


# per vector ISA: (tile width, partial sums) of a one-row matmul reading a ``[K, N]`` B in place
# when the width divides N, or None. Each K step of the one-row tile reads a run of ``nr``
# floats from a row of B, the next step N floats on: at 32 wide (128 bytes) the hardware
# prefetcher streams B poorly once it leaves the caches; 64 wide reads 256 bytes a row, and
# its 4 accumulators need no interleaved partial sums. AVX-512, one thread, thread CPU time, us,
# 32 wide 4 sums -> 64 wide 1 sum (1 x N x K): 1x768x768 69.1 -> 57.8, 1x3072x768 862 -> 396,
# 1x768x3072 484 -> 436, 1x1024x4096 903 -> 766, 1x4096x4096 4587 -> 3552. AVX2 not measured.
DIRECT_GEMV_TILE = {"avx512": (64, 1), "avx2": None}


def _int_as(v, dtype):
    """Index ``v`` (an int or an integer expr) as a ``dtype`` expression."""
    if isinstance(v, int):
        return E.IntImm(dtype, v)
    if v.dtype == dtype:
        return v
    return E.IntImm(dtype, v.value) if isinstance(v, E.IntImm) else E.Cast(dtype, v)


def _unravel(row, lead: list, dtype: str) -> list:
    """The indices of the leading axes (extents ``lead``) of flat row ``row``, as ``dtype``.
    Unit axes are 0; a single other axis is the row itself."""
    out = [None] * len(lead)
    multi = [p for p, d in enumerate(lead) if not (isinstance(d, int) and d == 1)]
    q = row
    for j, p in enumerate(reversed(multi)):
        if j == len(multi) - 1:
            out[p] = q
        else:
            d = _int_as(lead[p], q.dtype)
            out[p], q = E.FloorMod(q, d), E.FloorDiv(q, d)
    return [E.IntImm(dtype, 0) if o is None else _int_as(o, dtype) for o in out]


def emit_fused(ctx, t, u, out, operand_bufs, body, separate) -> S.Stmt:
    """Generated matmul ``t`` (``fuses_epilogue``) with its elementwise consumer ``u`` applied
    to each value as the micro-kernel stores it into ``out``, the buffer both share (``body``:
    ``u``'s expression, reading the matmul from ``out``). ``separate(expr)`` gives the
    epilogue as a pass of its own storing ``expr`` into ``out`` after the matmul: used when
    ``u`` calls a function (``FUSED_EPILOGUE``: a ``gelu``'s ``erf`` costs more in the tile's
    store than in a pass of its own), and when ``u`` reads the matmul away from its own output
    position (the matmul then goes to a temporary the pass reads).
    """
    axes = [iv.var for iv in u.op.axis]
    shape = _dims(u)
    value = E.Var("matmul_value", out.dtype)
    ok = [True]

    def fpost(e):
        if isinstance(e, E.BufferLoad) and e.buffer is out:
            ok[0] = ok[0] and at_own_position(e.indices, axes, shape)
            return value
        return None

    template = transform_expr(body, fpost)
    if not ok[0]:  # the matmul into a temporary the epilogue pass reads (not in place)
        tmp = ctx.temp(_dims(t), t.dtype, "matmul_out")
        return S.SeqStmt([emit(ctx, t, tmp, operand_bufs), separate(redirect_loads(body, out, tmp))])
    if any(isinstance(e, E.Call) for e in post_order(template)):
        return S.SeqStmt([emit(ctx, t, out, operand_bufs), separate(body)])

    def epilogue(row, col, val):
        dt = axes[-1].dtype
        idx = [*_unravel(row, list(shape[:-1]), dt), _int_as(col, dt)]
        return substitute(template, {value: val, **dict(zip(axes, idx))})

    a, b = operand_bufs
    return _gen_matmul(ctx, t, out, a, b, epilogue)


# ``C = A @ W.T`` with W ``[N, K]`` passed at run time (not a constant packed at build time),
# by vector ISA: between SWAP_MIN_ROWS and gemm_tb.max_rows() rows, for a weight of at least
# SWAP_MIN_WEIGHT elements that is no wider than long (N <= K), computed as ``C.T = W @ A.T``:
# the packed micro-kernel reads W in place as its rows and packs only A (M x K, smaller than
# W there), storing its tiles transposed. Measured on a Zen 2 (AVX2, one thread, thread CPU
# time, BERT layer kernels with weights passed at run time, in-place gemm_tb -> swapped, ms):
# 768->768 (+bias) at 32/128 rows 0.47/2.16 -> 0.46/1.78, 3072->768 (+bias, +residual)
# 2.24/9.37 -> 1.98/7.64; at 512 rows within the noise of packing W (kept). Slower where not
# used: 768->3072 (N > K) at 128 rows 8.9 -> 10.6; the seed MLP's 784->128 at 64 rows 0.185 ->
# 0.216 (a weight that stays in cache: gemm_tb). Both ISAs (the Zen 4 measurement at
# ``common.vector_isa``).
SWAP_TB = {"avx512": True, "avx2": True}
# whether a [N, K] W packed per call (static N and K, cache-blocked schedule) is packed one K
# block of a panel group at a time, just before the row tiles use it (``GemmBuilder.
# compute_inline_pack``), instead of in a pass over all of W first, by vector ISA. Measured on
# a Zen 2 (one thread, thread CPU time, best of 9, BERT layer kernels with weights passed at
# run time, whole pass -> inline, ms): at 200/512 rows 768->768 + bias 3.76/9.33 -> 3.48/8.45,
# + residual 4.36/9.55 -> 3.78/8.57, 768->3072 + gelu 17.0/37.3 -> 14.0/34.4, 3072->768 +
# residual 13.8/33.8 -> 11.9/30.6. The rows run in chunks of gemm_kernel.INLINE_PACK_ROWS
# (tasks for the pool beside the panel groups; each chunk packs its own copy of its panels),
# within the noise of one chunk at one thread. A weight under INLINE_PACK_MIN_WEIGHT elements
# (it stays in cache; the seed MLP's 784->128 at 1024 rows: 2.54 whole pass, 2.84 inline, its
# chunks repacking it) keeps the pass. Both ISAs (the Zen 4 measurement at
# ``common.vector_isa``; AVX-512 had no cache-blocked schedule before it).
INLINE_PACK = {"avx512": True, "avx2": True}
INLINE_PACK_MIN_WEIGHT = 1 << 19
SWAP_MIN_ROWS = 16
SWAP_MIN_WEIGHT = 1 << 19


def _gen_matmul(ctx, t, out, a, b, epilogue=None, transpose_b=None) -> S.Stmt:
    """``out = a @ op(b)`` by ``gemm_kernel``'s micro-kernels.

    A ``[K, N]`` B whose width splits into whole register tiles is read in place when there
    are few rows (a GEMV-like call: packing would cost more than the product) or B is small;
    otherwise it is packed into panels per call. With a symbolic row count both variants are
    generated and the row count picks one at run time. ``epilogue(row, col, value)`` (from
    ``emit_fused``) is applied to each value as it is stored. ``transpose_b`` overrides the
    stage's own attribute (a dense: always True).
    """
    m, n, k = _gemm_dims(t)
    tb = bool(t.op.attrs["transpose_b"]) if transpose_b is None else transpose_b
    a2 = _view(ctx, a, (m, k), "matmul_a") if len(a.shape) != 2 else a
    c2 = _view(ctx, out, (m, n), "matmul_c") if len(out.shape) != 2 else out
    kn = _knobs(ctx.options, t)

    def builder(nr):
        bld = GemmBuilder(None, m, n, k, tb, False, False, "float32", kn["mr"], nr, kn["mc"],
                          False, False, False, kn["min_work"])
        bld.A, bld.B, bld.C = a2, b, c2
        bld.epilogue = epilogue
        return bld

    def packed(own=True):
        bld = builder(kn["nr"])
        if tb and gemm_tb.supported(m, n, k) and INLINE_PACK[vector_isa()] and \
                bld.blocking is not None and n * k >= INLINE_PACK_MIN_WEIGHT:
            # each K block of a group's panels packed just before the row tiles use it
            shape = bld.inline_pack_shape()
            if ctx.own_temps and own:
                bld.Bp = decl_buffer(shape, "float32", "matmul_bblock")
                return _allocated(bld.Bp, bld.compute_inline_pack())
            bld.Bp = ctx.temp(shape, "float32", "matmul_bblock")
            return bld.compute_inline_pack()

        def pack():  # an [N, K] weight: the L1-blocked packing of gemm_tb
            return gemm_tb.pack_panels(bld) if tb and gemm_tb.supported(m, n, k) else \
                bld.pack()

        if ctx.own_temps and own:  # allocated around the GEMM that packs, freed after it
            bld.Bp = decl_buffer((bld.np, k, bld.nr), "float32", "matmul_bpack")
            return _allocated(bld.Bp, S.SeqStmt([pack(), bld.compute()]))
        bld.Bp = ctx.temp((bld.np, k, bld.nr), "float32", "matmul_bpack")
        return S.SeqStmt([pack(), bld.compute()])

    def direct(nr):
        split = None
        wide = DIRECT_GEMV_TILE[vector_isa()]
        if wide and isinstance(m, int) and m == 1 and n % wide[0] == 0:
            nr, split = wide  # (one row: a wider tile reads longer runs of each row of B)
        bld = builder(nr)
        bld.direct_b = True
        if split is not None:
            bld.gemv_split = split
        return bld.compute()

    def swapped(own=True):
        # C.T = W @ A.T: W [N, K] is read in place as the micro-kernel's rows and A [M, K]
        # (the smaller operand) is packed into panels of M; the tile is stored transposed
        bld = GemmBuilder(None, n, m, k, True, False, False, "float32", kn["mr"], kn["nr"],
                          kn["mc"], False, False, False, kn["min_work"])
        bld.A, bld.B, bld.C = b, a2, c2
        bld.c_transposed = True
        if epilogue is not None:
            bld.epilogue = lambda row, col, v: epilogue(col, row, v)
        shape = (bld.np, k, bld.nr)
        if ctx.own_temps and own:
            bld.Bp = decl_buffer(shape, "float32", "matmul_apack")
            return _allocated(bld.Bp, S.SeqStmt([bld.pack(), bld.compute()]))
        bld.Bp = ctx.temp(shape, "float32", "matmul_apack")
        return S.SeqStmt([bld.pack(), bld.compute()])

    if id(t) in ctx.packed:  # B is a constant packed at build time (packed_matmul_weight)
        bld = builder(kn["nr"])
        bld.Bp = b
        return bld.compute()
    if tb and gemm_tb.supported(m, n, k):  # W [N, K] read in place for few rows
        def in_place():
            return gemm_tb.emit(m, n, k, a2, b, c2, epilogue)

        if SWAP_TB[vector_isa()] and n <= k and n * k >= SWAP_MIN_WEIGHT:
            lo, hi = SWAP_MIN_ROWS, gemm_tb.max_rows()
            if isinstance(m, int):
                return swapped() if lo <= m <= hi else in_place() if m < lo else packed()
            return S.IfThenElse(m < lo, in_place(), S.IfThenElse(
                m <= hi, swapped(own=False), packed(own=False)))
        if isinstance(m, int):
            return in_place() if m <= gemm_tb.max_rows() else packed()
        return S.IfThenElse(m <= gemm_tb.max_rows(), in_place(), packed(own=False))
    nr = None if tb else _direct_nr(n)
    if nr is None:
        return packed()
    if isinstance(k, int) and n * k * 4 <= DIRECT_B_MAX_BYTES:
        return direct(nr)
    rows = DIRECT_B_MAX_ROWS if isinstance(k, int) and k <= DIRECT_B_LONG_K else \
        DIRECT_B_MAX_ROWS_LONG_K
    if isinstance(m, int):
        return direct(nr) if m <= rows else packed()
    # (the panel buffer is not allocated inside the branch: a heap allocation there would not
    # dominate the code after the branch, which parallel loops capture their values from)
    return S.IfThenElse(m <= rows, direct(nr), packed(own=False))


def _direct_bmm_nr(m, n, k, tb: bool) -> int | None:
    """The tile width with which a batch_matmul reads each batch's ``[K, N]`` B in place (no
    packing per call), or None to pack: ``_gen_matmul``'s rule for one batch (N splits into
    whole tiles; B small enough to stay in cache, or few rows reuse each panel). Zen 4, one
    thread, packed -> in place, us: MoE's experts 1x64x128 @ 1x128x1024 309 -> 160 and
    4x64x256 @ 4x256x128 226 -> 153, attention's probs @ v 16x48x48 @ 16x48x16 15.5 -> 13.1."""
    nr = None if tb or not isinstance(k, int) else _direct_nr(n)
    if nr is None:
        return None
    if n * k * 4 <= DIRECT_B_MAX_BYTES:
        return nr
    rows = DIRECT_B_MAX_ROWS if k <= DIRECT_B_LONG_K else DIRECT_B_MAX_ROWS_LONG_K
    return nr if isinstance(m, int) and m <= rows else None


def _gen_batch_matmul(ctx, t, out, a, b) -> S.Stmt:
    """``out[i] = a[i] @ op(b[i])`` by ``gemm_kernel``'s micro-kernels; B (an activation) is
    read in place (``_direct_bmm_nr``) or packed per call into a workspace temporary. A
    batch-1 operand is broadcast."""
    m, n, k = _gemm_dims(t)
    so = _dims(t)
    batch = so[0] if len(so) == 3 else _prod_dims(so[:-2])
    tb = bool(t.op.attrs["transpose_b"])
    sa, sb = _dims(t.op.attrs["operands"][0]), _dims(t.op.attrs["operands"][1])
    if len(so) > 3:  # leading axes flattened into one batch axis (no broadcasting there)
        a = _view(ctx, a, (batch, *sa[-2:]), "bmm_a3")
        b = _view(ctx, b, (batch, *sb[-2:]), "bmm_b3")
        out = _view(ctx, out, (batch, m, n), "bmm_c3")
        sa, sb = (batch, *sa[-2:]), (batch, *sb[-2:])
    many = not isinstance(batch, int) or batch > 1
    bcast_a, bcast_b = sa[0] == 1 and many, sb[0] == 1 and many
    kn = _knobs(ctx.options, t)
    direct = _direct_bmm_nr(m, n, k, tb)
    nr = kn["nr"] if direct is None else direct
    bld = GemmBuilder(batch, m, n, k, tb, False, False, "float32", kn["mr"], nr, kn["mc"], False,
                      bcast_a, bcast_b, kn["min_work"])
    bld.A = _view(ctx, a, (m, k), "bmm_a") if bcast_a else a
    bld.B = _view(ctx, b, sb[1:], "bmm_b") if bcast_b else b
    bld.C = out
    if direct is not None:  # each batch's [K, N] B read in place, as _gen_matmul's direct
        bld.direct_b = True
        return bld.compute()
    nbp = 1 if bcast_b else batch
    shape = (nbp, bld.np, k, nr) if not bcast_b else (bld.np, k, nr)
    if ctx.own_temps:  # allocated where it is used (freed right after)
        bp = decl_buffer(shape, "float32", "bmm_bpack")
        bld.Bp = bp
        return _allocated(bp, S.SeqStmt([bld.pack(), bld.compute()]))
    bld.Bp = ctx.temp(shape, "float32", "bmm_bpack")
    return S.SeqStmt([bld.pack(), bld.compute()])

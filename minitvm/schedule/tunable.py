"""The search spaces of the tunable schedules (packed GEMM, implicit-GEMM conv2d), per workload.

Each declaration names the workload — op, static shapes, dtype, layout attributes — and lists
the values worth trying for each constant the schedule uses; the default is the constant the
schedule used before it was tunable, so an untuned build is unchanged. Stages with symbolic
extents get the defaults and no key (they are not tuned).
"""

from __future__ import annotations

from .common import const_int, dims_of
from .conv_direct import PARALLEL_MIN_MACS as CONV_PARALLEL_MIN_MACS
from .gemm import (
    DENSE_PARALLEL_MIN_WORK,
    _dense_nr,
    _enough_work,
    _gemm_dims,
    use_generated_batch_matmul,
    use_generated_matmul,
)
from .gemm_kernel import GEMV_SPLIT, default_mc, default_tile
from .knobs import Space, register_space

NEVER_PARALLEL = 1 << 40  # a parallel threshold no workload reaches: run on the calling thread
_MR = (4, 6, 8, 12, 16)
_NR = (16, 32, 48, 64)
_MC = (32, 64, 128, 256)
_MIN_WORK = (1 << 18, 1 << 20, 1 << 23, NEVER_PARALLEL)


def _static_ints(*dims) -> tuple[int, ...] | None:
    out = []
    for d in dims:
        c = const_int(d)
        if c is None:
            return None
        out.append(c)
    return tuple(out)


def _float32(t) -> bool:
    a, b = t.op.attrs["operands"]
    return t.dtype == a.dtype == b.dtype == "float32"


def _gemm_space(t, defaults: dict, options, blas_alternative: bool) -> Space:
    impl = ("generated", "blas") if blas_alternative and getattr(options, "blas", False) else \
        ("generated",)
    cands = dict(mr=_MR, nr=_NR, mc=_MC, min_work=_MIN_WORK)
    if "gemv_split" in defaults:
        cands["gemv_split"] = (1, 2, 4, 8)
    if "impl" in defaults:
        cands["impl"] = impl
    return Space.of(defaults, **cands)


def dense_space(t, options):
    """dense ``[M, K] x [N, K]^T``: register tile ``mr x nr``, row block ``mc``, parallel
    threshold, one-row kernel's partial sums, and generated code vs the process's BLAS."""
    m, n, k = _gemm_dims(t)
    defaults = dict(impl="generated", mr=default_tile()[0], nr=_dense_nr(n), mc=default_mc(),
                    min_work=DENSE_PARALLEL_MIN_WORK, gemv_split=GEMV_SPLIT)
    space = _gemm_space(t, defaults, options, True)
    mnk = _static_ints(m, n, k)
    ok = mnk is not None and _float32(t) and getattr(options, "generated_dense", True) and \
        _enough_work(*mnk)
    key = ["dense", *mnk, t.dtype] if ok else None  # (only stages the packed GEMM computes)
    return key, space


def matmul_space(t, options):
    """matmul ``A @ op(B)``: the packed kernel's tile, row block and parallel threshold."""
    m, n, k = _gemm_dims(t)
    defaults = dict(mr=default_tile()[0], nr=_dense_nr(n), mc=default_mc(),
                    min_work=DENSE_PARALLEL_MIN_WORK)
    space = _gemm_space(t, defaults, options, False)
    mnk = _static_ints(m, n, k)
    ok = mnk is not None and use_generated_matmul(t, options)
    key = ["matmul", *mnk, bool(t.op.attrs["transpose_b"]), t.dtype] if ok else None
    return key, space


def batch_matmul_space(t, options):
    """batch_matmul: the batched packed kernel's tile, row block and parallel threshold."""
    _, n, _ = _gemm_dims(t)
    defaults = dict(mr=default_tile()[0], nr=_dense_nr(n), mc=default_mc(),
                    min_work=DENSE_PARALLEL_MIN_WORK)
    space = _gemm_space(t, defaults, options, False)
    a, b = t.op.attrs["operands"]
    sa, sb = _static_ints(*dims_of(a)), _static_ints(*dims_of(b))
    ok = sa is not None and sb is not None and use_generated_batch_matmul(t, options)
    key = ["batch_matmul", list(sa), list(sb), bool(t.op.attrs["transpose_b"]), t.dtype] \
        if ok else None
    return key, space


def conv2d_space(t, options):
    """conv2d NCHW by implicit GEMM: output-channel x pixel register tile, parallel threshold,
    unrolled filter columns, and the implicit GEMM vs im2col + BLAS; for a conv ``conv_lanes``
    computes, its loop order, channel block, band of partial sums, parallel parts, whether
    the filter's columns are unrolled, its tile's output channels (``lanes_width``), whether
    it reads the input without a padded copy (``lanes_direct``) and whether its tiles follow
    the output rows to store each channel as a vector (``lanes_rowstore``); for a
    1x1 conv ``conv_pointwise`` computes, its micro-kernel (``pw_mode``), whether its input is
    packed for the tiles (``pw_pack``), the tiles' width (``pw_width``) and height
    (``pw_rows``). A grouped conv (not depthwise) declares ``conv_lanes``' knobs where that
    schedule takes it, and Winograd's where its groups are 3x3 convs it computes."""
    from . import conv_direct, conv_lanes, conv_pointwise, conv_winograd

    mr, nr = conv_direct.default_tile(t)
    defaults = dict(impl="direct", mr=mr, nr=nr, min_macs=CONV_PARALLEL_MIN_MACS,
                    unroll_kw=True)
    impl = ("direct", "im2col") if getattr(options, "blas", False) else ("direct",)
    space = Space.of(defaults, impl=impl, mr=_MR, nr=_NR,
                     min_macs=(1 << 18, 1 << 20, 1 << 23, NEVER_PARALLEL),
                     unroll_kw=(True, False))
    a, w = t.op.attrs["operands"]
    sa, sw, so = _static_ints(*dims_of(a)), _static_ints(*dims_of(w)), _static_ints(*dims_of(t))
    grouped = int(t.op.attrs["groups"]) != 1
    if sa is None or sw is None or so is None or not getattr(options, "generated_conv", True) \
            or not (conv_direct.supported(t) or grouped and (
                conv_lanes.grouped_supported(t, options) or conv_winograd.block_sizes(t))):
        return None, space
    if grouped and conv_lanes.grouped_supported(t, options):  # its groups on channel lanes
        lanes_g = conv_lanes.geometry(t)
        space = Space.of({**defaults, **conv_lanes.default_knobs(lanes_g)},
                         **{k: (v,) for k, v in defaults.items()}, **_lanes_choices(lanes_g))
    elif conv_pointwise.supported(t, options):
        # its own kernels: the pixel or channel vectors where both apply, the input packed or
        # read in place; conv_direct's knobs fixed (its kernel never runs)
        # at each tile width (``pw_width``: the host ISA's by default)
        g = conv_pointwise.geometry(t)
        widths = (g["width"], *(w for w in conv_pointwise.WIDTHS if w != g["width"]))
        modes = list(g["modes"])
        for wd in widths[1:]:
            modes += [m for m in conv_pointwise.geometry(t, {"pw_width": wd})["modes"]
                      if m not in modes]
        fixed = {k: (v,) for k, v in defaults.items()}
        space = Space.of({**defaults, "pw_mode": modes[0], "pw_pack": g["pw_pack"],
                          "pw_width": g["width"], "pw_rows": g["rows"]}, **fixed,
                         pw_mode=tuple(modes), pw_pack=(g["pw_pack"], not g["pw_pack"]),
                         pw_width=widths, pw_rows=conv_pointwise.ROWS_CHOICES)
    if not grouped and conv_direct.lanes_candidate(t, options):  # conv_lanes computes it: its knobs
        fixed = {k: (v,) for k, v in defaults.items() if k != "impl"}
        lanes_g = conv_lanes.geometry(t)
        lanes_defaults = conv_lanes.default_knobs(lanes_g)
        space = Space.of({**defaults, **lanes_defaults}, **fixed, impl=impl,
                         **_lanes_choices(lanes_g))
    wino = conv_winograd.block_sizes(t)
    if wino:  # Winograd F(m x m, 3 x 3) as one more implementation, with its own knobs
        cands = dict(space.knobs, wino_m=wino, wino_nr=(16, 32))
        cands["impl"] = (*cands["impl"], "winograd")
        space = Space.of(dict(space.defaults, **conv_winograd.default_knobs(t)), **cands)
    attrs = t.op.attrs
    key = ["conv2d_nchw", list(sa), list(sw), *([int(v) for v in attrs[name]]
           for name in ("strides", "padding", "dilation")), int(attrs["groups"]), t.dtype]
    return key, space


def _lanes_choices(g) -> dict:
    """The values ``conv_lanes``' knobs may take for a conv of geometry ``g``."""
    from . import conv_lanes

    return dict(lanes_order=conv_lanes.ORDERS, lanes_cblock=(0, 8192, 16384, 32768),
                lanes_sums=(2048, 4096, 8192), lanes_parts=(2, 4, 8, 16),
                lanes_unroll_kx=(False, True), lanes_width=conv_lanes.widths(g),
                lanes_direct=(False, True), lanes_rowstore=(False, True))


register_space("dense", dense_space)
register_space("matmul", matmul_space)
register_space("batch_matmul", batch_matmul_space)
register_space("conv2d_nchw", conv2d_space)

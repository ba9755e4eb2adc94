"""conv2d (NCHW, groups 1, a filter wider than 1x1) with the output channels in the vector
lanes, for constant (prepacked) weights (written for AVX2; AVX-512 runs tiles twice as wide).

``conv_direct`` puts 16 flattened output pixels in the lanes of each accumulator and pays for
it at the edges: the pixels of a ``Wq``-wide grid include ``Wq - OW`` padding columns (2 of 16
at 14x14, 2 of 9 at 7x7), stride 2 needs a phased copy of the input, and every input vector
load is unaligned. Here a tile is 16 output channels x 6 (or 5) output pixels, held in 12 (or
10) accumulators: per filter tap, two aligned vector loads of the weights, prepacked at build
time as ``[O/16][C][KH][KW][16]``, and one broadcast input value per pixel. A pixel is read
through its own offset into a zero-padded copy of the input (from a table of offsets filled
once per call), so the tiles cover the output plane exactly (any size, any stride or
dilation, rows crossed freely) and nothing is computed twice. The fused elementwise epilogue
(bias, residual add, relu) is applied to the tile and stored one output channel per lane.

The code is kept small for LLVM, whose optimizer is most of a cold build: the filter rows are
a loop and a tile is stored one pixel an iteration (both were unrolled, with the columns: 4,800
LLVM instructions for a 3x3 conv, about 1,000 with all taps as loops; LLVM's time 2x less, the
run time the same on a Zen 2, but 5-25% slower on a Zen 3 until the columns were unrolled
again: ``UNROLL_TAPS``). (One tile size with the last tile moved back over the one before,
instead of 6s and 5s, saves a third of the rest but ran 3-5% slower at 7x7 and 14x14: 10
tiles of 5 for 49 pixels, or 9 of 6 computing 54.)

On AVX-512 a tile is 32 output channels (``WIDTH``, the ``lanes_width`` knob: two zmm
registers a pixel, 12 accumulators) reading two consecutive 16-channel blocks of the same packed
weight; convs whose output channels (a group's) are not a multiple of 32 keep 16-channel tiles.
Measured on a Sapphire Rapids Xeon (two 512-bit FMA ports, one thread, conv + bias + relu, ms,
32 vs 16 channels a tile, ONNX Runtime): 512 -> 512 at 7x7 1.29 vs 1.89 (1.40), stride-2
128 -> 128 at 56x56 1.34 vs 1.77 (1.25), 256 -> 256 at 28x28 1.27 vs 1.68 (1.27), 512 -> 512 at
14x14 1.41 vs 1.94 (1.37). Stride-1 convs with small weights take 64 channels a tile (24
accumulators) in one pass over the input channels (``WIDE``). A group of 48 output channels
(Inception's 1x7 / 7x1 convs) takes 48-channel tiles (``ODD_WIDTH``: three zmm a pixel, 18
accumulators), and 16-channel tiles (RegNet's grouped convs, 16 channels a group) hold 12 pixels
rather than 6 (``NARROW_PIXELS``: 12 accumulators where 6 left the two FMA ports waiting on the
FMA latency). Sapphire Rapids, one thread, conv + bias + relu, ms, 6-pixel 16-wide tiles ->
12-pixel (ONNX Runtime alone, which pays its layout conversions; in the models it is faster):
groups of 16 at 14x14, 208 channels 0.088 -> 0.075 (0.099), at 56x56 48 channels 0.321 ->
0.257 (0.343), 96 at 28x28 0.161 -> 0.131 (0.175), stride-2 96 at 56x56 0.166 -> 0.134 (0.258);
32 -> 48 1x7 at 23x23 0.087 -> 0.074 -> 0.066 48 wide (0.071), 7x1 0.082 -> 0.072 -> 0.058
(0.060).

The tiles of output channels are the outer (parallel) loop. Inside one, the input channels
run in blocks whose weights (16 KB) stay in L1 while a band of pixel tiles reads them, the
band's partial sums kept in a scratch between blocks (measured on a loaded Zen 2, one thread:
64 -> 64 at 56x56 16% faster than one pass over all channels, 512 -> 512 at 7x7 7%).

Measured on a Zen 2 (one thread, thread CPU time, conv + bias + relu, ms, against
``conv_direct``): 64 -> 64 3x3 at 56x56 2.37 vs 2.55, 128 -> 128 at 28x28 2.46 vs 2.64,
256 -> 256 at 14x14 2.53 vs 2.75, 512 -> 512 at 7x7 2.97 vs 3.19, the stride-2 3x3 convs of
ResNet-18 1.29 / 1.19 / 1.28 vs 1.65 / 1.62 / 1.63. A 7x7 stride-2 stem of 3 channels (whose
output rows are whole vectors, ``conv_direct``'s row mode) stays on ``conv_direct``: 2.79 here
vs 2.47 there.

A dilated conv on a small plane (DeepLab's 3x3 branches of dilation 6 at 32x32) has output
columns whose outer filter columns read only padding. There the tiles follow the output rows,
cut at the runs of columns that share their filter columns (``row_segments``), and each tile
runs only its run's filter columns and its row's filter rows: no tap reads padding, so the
input is copied unpadded, in blocks of 16 channels side by side (``_pack``). ``conv_direct``'s
row mode, whose pixel vectors compute every filter column, leaves such convs to this schedule
(``conv_direct.lanes_candidate``).

On AVX-512 the tiles read the input itself, with no zero-padded copy (``DIRECT``, the
``lanes_direct`` knob): the output plane is cut in rectangles of pixels that read input through
the same filter rows and columns (``pixel_classes``: the interior, the border strips, the
corners), the pixel table lists them class by class, and each class's tiles run only their taps
(a second table gives each slot's output pixel). The copy was a pass of its own over an input
that, in a model, arrives from memory: ResNet-50's stride-2 convs on a Sapphire Rapids Xeon,
one thread, the caches flushed before each run, ms, direct / padded copy (ONNX Runtime):
128 -> 128 at 56x56 1.35 / 1.57 (1.50), 256 -> 256 at 28x28 1.40 / 1.49 (1.50), 512 -> 512 at
14x14 1.55 / 1.69 (2.10); 512 -> 512 at 7x7 (stride 1, four 1-pixel corner tiles) 1.47 / 1.42
(1.91), in the model 1.49 / 1.60. AVX2 keeps the copy (not measured there).

Read directly, 16-lane tiles (RegNet's groups of 16 channels; by default also strided convs of
3x3 filters) follow the output rows of the wider classes (``ROW_STORE``): a tile's pixels are
then consecutive in one row, so the tile is transposed in registers and each output channel
stored as a vector of pixels, where a tile across rows stores each pixel's channels one lane at
a time.

On both ISAs (``ENABLED``: the Zen 4 measurement at ``common.vector_isa``), for prepacked
weights; anything else keeps ``conv_direct``.
"""

from __future__ import annotations

import numpy as np

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from .common import allocated as _allocated
from .common import (
    divisor_near,
    int8_weight_conv,
    num_threads,
    prefetch,
    static_grouped_conv2d_dims,
    vector_isa,
)
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import vector_inner as _vector_inner
from .knobs import select as _knobs
from .lane_transpose import costly_plane_epilogue, reads_plane, transpose16

ENABLED = {"avx512": True, "avx2": True}
LANES = 16  # output channels of a tile: two AVX2 vectors (the weights are packed in 16s)
# output channels of a tile by default (``lanes_width``, a knob: 16, 32 or 64 on AVX-512, 16
# on AVX2, whose 16 ymm registers hold no wider tile) where a group's output channels are a
# multiple of it (else 16). On AVX-512, 16 lanes are one zmm register: a
# tile of 16 x 6 pixels keeps 6 accumulators and loads 7 values (6 of them folded broadcasts)
# per 6 FMAs, too few chains for two FMA ports of latency 4 and bound on loads; 32 lanes x 6
# pixels keeps 12 (two weight vectors, each broadcast pixel used twice).
WIDTH = {"avx512": 32, "avx2": 16}
WIDTHS = {"avx512": (16, 32, 48, 64), "avx2": (16,)}
# ... where 32 does not divide a group's output channels but this does (Inception's 48): three
# zmm a pixel, 18 accumulators, 9 loads per 18 FMAs, rather than 16-lane tiles
ODD_WIDTH = {"avx512": 48, "avx2": None}
# ... and 64 (24 accumulators) in one pass over the input channels (no blocks: a tile's
# weights, read once per pixel tile, stream from L2) where a tile's weights are at most
# WIDE_MAX_TILE_WEIGHT_BYTES (3x3 convs of up to 256 input channels) and the stride is 1. Sapphire Rapids, one
# thread, ms, 32 in blocks / 64 in one pass / 32 in one pass (ONNX Runtime): 128 -> 128 at
# 28x28 1.13 / 1.07 / 1.28 (1.13), 256 -> 256 at 14x14 1.20 / 1.16 / 1.33 (1.18), 64 -> 64 at
# 56x56 1.27 / 1.20 / 1.42 (1.17), stride 2: 128 -> 128 at 56x56 1.26 / 1.25 / 1.43 (1.31),
# 256 -> 256 at 28x28 1.30 / 1.30 / 1.46 (1.36); 512 channels lost: at 7x7 1.23 / 1.30,
# stride-2 at 14x14 1.24 / 1.48. With the caches flushed before each run (as in a model) the
# stride-2 convs lost in one pass, 32 in blocks / 64 in one pass (ORT): 128 -> 128 at 56x56
# 1.70 / 1.83 (1.68), 256 -> 256 at 28x28 1.70 / 1.85 (1.88), where stride 1 gained: 256 -> 256
# at 14x14 1.46 / 1.34 (1.50), 128 -> 128 at 28x28 1.41 / 1.40 (1.42).
WIDE = {"avx512": 64, "avx2": None}
WIDE_MAX_TILE_WEIGHT_BYTES = 640 * 1024
# ... strided convs too where the output plane is at most this many pixels (the input, a few
# KB a channel, is no stream from memory): stride 2 at 7x7, 32 in blocks -> 64 in one pass
# (ORT): 128 -> 256 0.075 -> 0.066 (0.066), 96 -> 192 0.044 -> 0.040 (0.038), 256 -> 512 0.355
# -> 0.324 (0.366)
WIDE_STRIDED_MAX_PIXELS = 64
# groups-1 convs whose output channels (rounded up to 16) are an odd number of 16s, at least
# PAD_WIDTH_MIN_CHANNELS and not a multiple of ODD_WIDTH, on planes of at most
# PAD_WIDTH_MAX_PIXELS output pixels, get 16 more zero channels for tiles of this width: a
# 16-lane tile (one zmm a pixel) needs 12 pixels to keep the FMA ports busy, which such a plane
# cuts into few short tiles. Sapphire Rapids, one thread, ms, 16 lanes -> padded to 32 (ONNX
# Runtime): 240 -> 112 at 4x4 0.060 -> 0.054 (0.053), at 5x5 0.090 -> 0.071 (0.077), at 7x7
# 0.180 -> 0.146 (0.163), 512 -> 208 at 7x7 0.746 -> 0.664 (0.728); on larger planes it gained
# nothing (240 -> 112 at 14x14 0.469 -> 0.450, 96 -> 80 0.126 both) or lost (12 -> 44, padded
# to 64, at 55x55 0.227 -> 0.269)
PAD_WIDTH = {"avx512": 32, "avx2": None}
PAD_WIDTH_MIN_CHANNELS = 64
PAD_WIDTH_MAX_PIXELS = 64
# pixels of a tile: 6 or 5 (12 or 10 accumulators, enough FMA chains for the FMA latency).
# Planes of fewer output pixels than MIN_PIXELS keep conv_direct; it was 20 (the least extent
# any larger one of which is a sum of 6s and 5s: ``SIXES_MIN``; smaller planes are cut in
# ``even_tiles``), then 9: conv_direct ran such planes 1.5-1.9x slower than ONNX Runtime,
# and planes of 1-8 pixels (a 3x3 conv at 1x1 or 2x2, stride 2 at 4x4: the late stages of small
# nets) 2-23x, computing every tap of a padded pixel grid. Sapphire Rapids, one thread, ms,
# conv_direct -> here (ORT): 240 -> 120 3x3 at 4x4 0.099 -> 0.056 (0.055), stride-2 at 7x7
# 0.104 -> 0.065 (0.057), 512 -> 512 at 4x4 0.844 -> 0.741 (0.654); 512 -> 512 at 1x1 0.560 ->
# 0.026 (0.024), at 2x2 0.781 -> 0.339 (0.393), 128 -> 256 stride 2 at 2x2 0.110 -> 0.006
# (0.012)
MIN_PIXELS = 1
SIXES_MIN = 20
# ... but a 16-lane tile on AVX-512 (one zmm a pixel: a group of 16 output channels, RegNet's
# grouped convs, or 16s of output channels not a multiple of 32, Inception's 48) holds this many
# pixels (``tile_pixels``): at 6 it keeps 6 accumulators, too few FMA chains for two FMA ports
# of latency 4, and loads 7 values per 6 FMAs; at 12, 12 chains and 13 loads per 12 FMAs.
NARROW_PIXELS = {"avx512": 12, "avx2": 6}
# grouped convs with at least this many taps per output channel (a group's input channels x
# filter taps) run here (``grouped_supported``), fewer on ``depthwise``'s schedule. Zen 4, one
# thread, conv + bias + relu against ONNX Runtime: 16 channels a group (144 taps) 512@28 g32
# depthwise 4.16 ms, im2col GEMM 7.62, ORT 1.42; 4 or 8 channels (36, 72 taps) depthwise 0.74
# and 1.00 ms against ORT's 1.57 and 1.54.
GROUPED_MIN_TAPS = 100
# filter taps unrolled in the reduction: the rows and columns of a filter of at most this many
# taps, the columns of one at most this wide (``lanes_unroll_kx``, a knob); the rest are loops.
# On a Zen 2 ResNet-50's 3x3 convs ran within 1% of fully unrolled taps with the taps as loops.
# On a Zen 3 the 3-iteration column loop cost 5-25%: with the columns unrolled (one thread, ms,
# against ONNX Runtime side by side) 64->64 at 56x56 3.03 -> 2.87 (ORT 2.95), 128->128 at 28x28
# 3.48 -> 2.92 (2.93), 256->256 at 14x14 3.46 -> 3.05 (3.08), 512->512 at 7x7 5.64 -> 4.36
# (4.47); at two threads 2.21 -> 1.72 ms at 14x14, 3.06 -> 2.28 at 7x7.
UNROLL_TAPS = 3
# a convolution of at least this many multiply-adds per image splits over the thread pool
PARALLEL_MIN_MACS = 1 << 21
# the weights of a block of input channels (``channel_block``; 0: one pass over them all)
CHANNEL_BLOCK_BYTES = 16 * 1024
# ... twice that for a plane whose tiles follow its rows (``row_segments``: a dilated conv on a
# small plane), even at ``WIDE`` tiles (which otherwise make one pass over the channels): there
# a band is one output row, whose input rows (three, a dilation apart) and weights for all the
# channels overflow L1. Sapphire Rapids, one thread, DeepLab's 256 -> 64 3x3 dilation 6 at
# 32x32 + bias + relu, ms, 64-channel tiles (ONNX Runtime 1.51): one pass 1.98, blocks of 8
# channels 1.75, 16 (this) 1.57, either order; 32-channel tiles 1.96-2.25 at any block
ROW_TILES_CHANNEL_BLOCK_BYTES = 32 * 1024
BLOCK_SUMS = 4096  # floats of partial sums per channel tile (a band of pixel tiles)
# in the "channels" order, each filter tap of a tile also prefetches its weights one block of
# input channels on (without blocks, PREFETCH_CHANNELS on), so that weights coming from memory
# (a model's later layers: 9.4 MB for 512 -> 512 3x3) are in cache when the next block starts
# (the hardware prefetchers stop at each 4 KB page). In the "bands" order the weights are
# re-read from L2 by every band. Sapphire Rapids, one thread, the caches flushed before each
# run, ms, without -> with (ONNX Runtime): 512 -> 512 at 7x7 1.65 -> 1.41 (1.74), stride-2
# 512 -> 512 at 14x14 1.90 -> 1.62 (1.95); warm 2-7% faster. Weights that fit in L2 lose when
# warm: stride-2 256 -> 256 at 28x28 (2.4 MB) 1.25-1.35 -> 1.34-1.35 warm, 1.41-1.53 cold both.
PREFETCH_WEIGHTS = {"avx512": True, "avx2": False}
PREFETCH_MIN_WEIGHT_BYTES = 4 << 20
PREFETCH_CHANNELS = 4
# tiles within output rows, each running only the filter rows and columns that read input
# (``_row_tiles``), when the filter columns reading only padding are at least this share of a
# row's taps (``row_segments``). Measured on a Zen 4, one thread, 256 -> 64 3x3 + bias + relu
# at 32x32 against ONNX Runtime (row tiles vs conv_direct's row mode, which computes every
# filter column): dilation 4 1.01x vs 1.02x, 6 0.98x vs 1.04x, 12 0.93-0.99x vs 1.09-1.15x, 18
# 0.92-0.95x vs 1.27x; read from the unpadded input itself (planes of 32x32 floats, 4 KB apart,
# alias in L1) rather than ``_pack``'s copy 1.55x. Both ISAs (the Zen 4 measurement)
ROW_TILES = {"avx512": True, "avx2": True}
ROW_TILES_MIN_SKIPPED = 0.08
# ... and each run of columns is at least this wide: a tile of fewer pixels waits on its few
# accumulators' FMA latency (a 3x3 conv at 7x7 would run tiles of 1, 5 and 1 pixels); measured
# on a Zen 4, one thread, 256 -> 64 at 32x32 against ONNX Runtime: dilation 2 (runs of 2, 28,
# 2) 1.08x in row tiles, 0.96x on conv_direct
ROW_TILES_MIN_RUN = 4
# read the input itself, without a zero-padded copy (``lanes_direct``, a knob): the output
# pixels are grouped in rectangles whose pixels read input through the same filter rows and
# columns (``pixel_classes``: the interior, the border strips, the corners), and each class's
# tiles run only those taps, so no tap reads padding. The copy (0.09-0.19 ms in ResNet-50's
# stride-2 convs, whose input arrives from memory) was a pass of its own before any tile ran.
DIRECT = {"avx512": True, "avx2": False}
# ... except on planes of at most this many output pixels whose classes cut the tiles smaller
# than the padded copy's, by a model of a tile's cycles a filter tap (``tap_cycles``): a 3x3
# conv at 3x3 is nine classes of one pixel (a 1-pixel tile keeps 2 accumulators of 32 lanes,
# waiting on the FMA latency), over the padded copy one 9-pixel tile. Sapphire Rapids, one
# thread, ms, direct -> padded copy (ONNX Runtime): 512 -> 512 at 3x3 0.725 -> 0.468 (0.512),
# at 2x2 0.413 -> 0.339 (0.396), 240 -> 112 at 5x5 0.112 -> 0.089 (0.075); 1x1 planes (one
# tap of nine) stay direct, and so do planes the model finds within DIRECT_MODEL_MARGIN (512 ->
# 512 at 7x7: 409 vs 408 cycles, measured 1.39 vs 1.43 ms, in a model, whose input comes from
# memory, 1.49 vs 1.60)
DIRECT_MODEL_MAX_PIXELS = 64
DIRECT_MODEL_MARGIN = 1.1
# 16-lane tiles read directly: the tiles of a class at least ROW_STORE_MIN_COLUMNS wide follow
# its rows (each row cut in ``even_tiles`` of ``row_tile_pixels``; ``lanes_rowstore``, a knob),
# so that a tile's pixels are consecutive in one output row: the tile is transposed in
# registers (``transpose16``: 64 shuffles) and each output channel stored as a vector of its
# pixels. A tile across rows stores a pixel's 16 channels one lane at a time (16
# extract-and-store instructions a pixel: storing the tile as 16-channel vectors instead, a
# wrong layout, made a 16-channel group's 3x3 conv at 56x56 10% faster, ONNX Runtime's time).
# Grouped 3x3 convs of 16 channels a group, Zen 4, one thread, conv + bias + relu alone, A/B
# one process, 15 interleaved rounds, ms, across rows -> in rows: 48 at 56x56 0.440 -> 0.410,
# 96 at 28x28 0.212 -> 0.198, 208 at 14x14 0.110 -> 0.102, stride 2 96 at 56x56 0.216 ->
# 0.201, 208 at 28x28 0.116 -> 0.112. (Read across the tile's scratch by scalar loads, which
# LLVM turns into inserts or shuffle trees, the stores gained 0-4% instead.)
ROW_STORE = {"avx512": True, "avx2": False}
ROW_STORE_MIN_COLUMNS = 8
# ... a row's tiles may hold this many pixels more than ``tile_pixels`` to make fewer of them
# (a row of 26: two tiles of 13 rather than three of 8 or 9; 96 at 28x28 0.198 -> 0.196-0.200,
# where 3 more lost 2-3% at 56x56, rows of 54 in tiles of 14 and 13 rather than 11 and 10)
ROW_TILE_SLACK = 1
# A strided conv of at most 9 taps a filter whose plane has such a class takes 16-lane tiles in
# rows by default rather than 32-lane ones. Stride-2 3x3 + bias + relu alone, ms, 32-lane /
# 16-lane in rows: to a 16x16 plane 32 -> 32 0.046 / 0.042, 64 -> 64 0.170 / 0.161, 64 -> 128
# 0.341 / 0.326, 96 -> 96 0.415 / 0.388, 128 -> 128 0.671 / 0.646; 256 -> 256 to 14x14 2.05 /
# 2.03; 128 -> 128 to 28x28 2.13 / 2.05-2.07. (ConvMixer's 8x8 stride-8 patches, 3 -> 128 to
# 16x16, within the noise: 0.124 / 0.128-0.131; not taken.)
FMA_LATENCY, FMA_PORTS, LOAD_PORTS = 4, 2, 2

PARALLEL_PARTS = 4  # parallel iterations at least (channel tiles x parts of the pixel tiles)
# the outer loop: "channels" (channel tiles, each over every pixel) or "bands" (bands of pixel
# tiles, each running every channel tile while its input rows stay in L2); "bands" by default
# when the weights are at most BANDS_MAX_WEIGHT_BYTES (re-read from L2 by every band) and the
# plane gives at least BANDS_MIN bands
BANDS_MAX_WEIGHT_BYTES = 1024 * 1024
BANDS_MIN = 4
ORDERS = ("channels", "bands")
# a parallel "bands" order chooses its split at run time: on one thread (a pool of one, or one
# image of a batch whose images run on the pool, as Relax's per-image kernels do) the serial
# split's bands of up to ``_band_tiles`` tiles, each block of weights loaded once for all of
# them, instead of ``lanes_parts`` bands of fewer tiles. Rocket Lake, one thread, Relax (batch
# 4, per-image kernel) against Relay's static batch-4 kernel (whose images run the serial split),
# medians of 300 interleaved calls: 64 -> 96 3x3/2 at 16x16 1.05-1.06x -> 1.03-1.04x (0.977x of
# before). The split as two static loop nests behind that test ran 1.03x of before instead.
SOLO_BANDS = True
# a batch of images is split over the pool image by image as in conv_direct
BATCH_PARALLEL_MIN_MACS = 1 << 21
BATCH_PARALLEL_MIN_IMAGES = 4


def geometry(t) -> dict | None:
    """Sizes of conv2d stage ``t`` for this schedule, or None when it does not apply: not a
    static float32 NCHW conv (its weight float32, or int8: ``common.int8_weight_conv``), a
    filter of two or more taps, a multiple of 16 output channels per group for a grouped conv
    (groups 1: ``o`` is rounded up to one, or on a small plane to 32s, ``PAD_WIDTH``;
    ``real_o`` the conv's) and at least ``MIN_PIXELS`` output pixels.

    A grouped conv (ResNeXt's later stages, RegNet) runs as its groups' convs side by side: a
    tile's 16 output channels belong to one group, and its reduction runs over that group's
    ``c`` input channels (``groups``, ``og`` output channels a group; the weight is already
    ``[O, c, KH, KW]``)."""
    dims = static_grouped_conv2d_dims(t, int8_weight=True)
    if dims is None:
        return None
    groups, n, c, h, wd, o, kh, kw, oh, ow = dims
    a = t.op.attrs
    og, real = o // groups, o
    if groups == 1 and o % LANES:  # zero channels up to a whole tile of 16
        o = og = -(-o // LANES) * LANES
    pad = PAD_WIDTH[vector_isa()]
    if groups == 1 and pad and o % pad and o >= PAD_WIDTH_MIN_CHANNELS and \
            oh * ow <= PAD_WIDTH_MAX_PIXELS and not (ODD_WIDTH[vector_isa()] and
                                                     o % ODD_WIDTH[vector_isa()] == 0):
        o = og = -(-o // pad) * pad  # (16 more zero channels: 32-lane tiles, ``PAD_WIDTH``)
    if kh * kw < 2 or og % LANES or oh * ow < MIN_PIXELS:
        return None
    sh, sw = (int(s) for s in a["strides"])
    dh, dw = (int(d) for d in a["dilation"])
    pt, pl = (int(p) for p in a["padding"][:2])
    hp = (oh - 1) * sh + (kh - 1) * dh + 1  # padded rows and columns the taps read
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    return dict(n=n, c=c, h=h, w=wd, o=o, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, dh=dh,
                dw=dw, pt=pt, pl=pl, hp=hp, wp=wp, grid=oh * ow, groups=groups, og=og,
                cin=c * groups, real_o=real,
                parallel=o * c * kh * kw * oh * ow >= PARALLEL_MIN_MACS)


def default_knobs(g) -> dict:
    """The knob values of geometry ``g`` untuned (``tunable.conv2d_space`` declares the rest)."""
    weights = g["o"] * g["c"] * g["kh"] * g["kw"] * 4
    knobs = dict(lanes_order="channels", lanes_cblock=CHANNEL_BLOCK_BYTES,
                 lanes_sums=BLOCK_SUMS, lanes_parts=PARALLEL_PARTS,
                 lanes_unroll_kx=g["kw"] <= UNROLL_TAPS, lanes_width=widths(g)[-1],
                 lanes_direct=DIRECT[vector_isa()], lanes_rowstore=ROW_STORE[vector_isa()])
    wide = WIDE[vector_isa()]
    if wide in widths(g) and g["c"] * g["kh"] * g["kw"] * wide * 4 <= WIDE_MAX_TILE_WEIGHT_BYTES \
            and (g.get("sh", 1) * g.get("sw", 1) == 1 or g["grid"] <= WIDE_STRIDED_MAX_PIXELS):
        knobs.update(lanes_width=wide, lanes_cblock=0)  # (one pass over the channels)
    if "ow" in g and row_segments(g) is not None:
        knobs["lanes_cblock"] = ROW_TILES_CHANNEL_BLOCK_BYTES
    if "ow" in g and knobs["lanes_rowstore"] and knobs["lanes_direct"] and \
            g["sh"] * g["sw"] > 1 and g["kh"] * g["kw"] <= 9 and LANES in widths(g) and \
            max(k[3] for k in pixel_classes(g)) >= ROW_STORE_MIN_COLUMNS:
        knobs["lanes_width"] = LANES  # (strided: 16-lane tiles in rows, ROW_STORE)
    if knobs["lanes_direct"] and g["grid"] <= DIRECT_MODEL_MAX_PIXELS and "oh" in g and \
            tap_cycles(dict(g, **knobs), True) > \
            DIRECT_MODEL_MARGIN * tap_cycles(dict(g, **knobs), False):
        knobs["lanes_direct"] = False  # (a small plane's classes make tiles too small)
    if weights <= BANDS_MAX_WEIGHT_BYTES and \
            _band_split(dict(g, **knobs), plane_tiles(dict(g, **knobs), g["grid"])[0][2])[0] \
            >= BANDS_MIN:
        knobs["lanes_order"] = "bands"
    return knobs


def tap_cycles(g, direct: bool) -> float:
    """A model of the cycles the pixel tiles of geometry ``g`` (with its knobs) take per input
    channel and output-channel tile, reading the input itself (``direct``: each class of
    ``pixel_classes`` runs its own tiles and only its taps) or the padded copy (tiles over the
    whole plane, the filter rows trimmed to their output rows', ``tap_rows``): per tap, a tile
    of ``a`` accumulator vectors and ``l`` loads takes the most of the FMA latency, ``a`` over
    the FMA ports and ``l`` over the load ports."""
    vecs = max(1, _width(g) // (16 if vector_isa() == "avx512" else 8))  # vector registers

    def cost(pixels, taps):
        return taps * max(FMA_LATENCY, pixels * vecs / FMA_PORTS, (pixels + vecs) / LOAD_PORTS)

    total = 0.0
    if direct:
        for _, nr, _, nc, (ky0, ky1), (kx0, kx1) in pixel_classes(g):
            taps = max(0, ky1 - ky0) * max(0, kx1 - kx0)
            total += sum(m * cost(pixels, taps) for _, pixels, m in plane_tiles(g, nr * nc))
        return total
    for first, pixels, m in plane_tiles(g, g["grid"]):
        for k in range(m):
            p0 = first + k * pixels
            lo = _row_bounds(g, (p0 + pixels - 1) // g["ow"])[0]
            hi = _row_bounds(g, p0 // g["ow"])[1]
            total += cost(pixels, max(0, hi - lo) * g["kw"])
    return total


def widths(g) -> tuple[int, ...]:
    """The tile widths (output channels a tile) geometry ``g`` can run on the host's ISA, the
    default last: ``WIDTH`` where it divides a group's output channels, else ``ODD_WIDTH``
    where that does, else 16; on AVX-512 also the other multiples of 16 up to 64 that divide
    them (``WIDTHS``)."""
    isa = vector_isa()
    og = g.get("og", g["o"])
    odd = ODD_WIDTH[isa]
    best = WIDTH[isa] if og % WIDTH[isa] == 0 else odd if odd and og % odd == 0 else LANES
    return (*[w for w in WIDTHS[isa] if og % w == 0 and w != best], best)


def with_knobs(g, knobs: dict | None) -> dict:
    """Geometry ``g`` with its knob values: the defaults, overridden by ``knobs``' lanes_*
    (a tile width that does not divide a group's output channels falls back to 16)."""
    out = dict(g, **default_knobs(g))
    out.update({k: v for k, v in (knobs or {}).items() if k.startswith("lanes_")})
    if out["lanes_width"] not in widths(out):
        out["lanes_width"] = LANES
    return out


def _width(g) -> int:
    """Output channels of a tile of geometry ``g`` (``lanes_width``)."""
    return g.get("lanes_width", LANES)


def _enabled(options) -> bool:
    return ENABLED[vector_isa()] and (options is None or options.generated_conv)


def supported(t, options=None) -> bool:
    """Would this schedule take stage ``t`` once its weight is prepacked (``ENABLED`` for the
    host's ISA, generated convs allowed)?"""
    return _enabled(options) and geometry(t) is not None


def grouped_supported(t, options=None) -> bool:
    """Does this schedule take grouped conv ``t`` (its rule in ``lower.RULES``): a group of at
    least ``GROUPED_MIN_TAPS`` taps per output channel (fewer: ``depthwise``'s) and 16s of
    output channels a group; the weight must be a constant, prepacked at build time."""
    g = geometry(t) if _enabled(options) and not int8_weight_conv(t) else None
    return g is not None and g["groups"] > 1 and g["c"] * g["kh"] * g["kw"] >= GROUPED_MIN_TAPS


class PackWeight:
    """Picklable numpy transform of a ``[O, C, KH, KW]`` weight to ``[O/16, C, KH, KW, 16]``
    (``o`` a multiple of 16: the weight's ``real_o`` channels, then zeros): float32, or int8
    for an int8 weight (``common.int8_weight_conv``: ``_tile`` widens it as it loads it)."""

    def __init__(self, o: int, c: int, kh: int, kw: int, real_o: int | None = None):
        self.o, self.c, self.kh, self.kw = o, c, kh, kw
        self.real_o = o if real_o is None else real_o

    def __call__(self, w):
        w = np.asarray(w)
        w = w if w.dtype == np.int8 else w.astype("float32")
        if getattr(self, "real_o", self.o) != self.o:  # (archives pickled before real_o)
            w = np.concatenate([w, np.zeros((self.o - w.shape[0], *w.shape[1:]), w.dtype)])
        w = w.reshape(self.o // LANES, LANES, self.c, self.kh, self.kw)
        return np.ascontiguousarray(w.transpose(0, 2, 3, 4, 1))


def packed_weight(t) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of conv2d ``t``'s constant weight."""
    g = geometry(t)
    if g is None:
        raise ValueError(f"conv_lanes.packed_weight: stage {t.name!r} is not a conv2d this "
                         "schedule takes")
    return (g["o"] // LANES, g["c"], g["kh"], g["kw"], LANES), \
        PackWeight(g["o"], g["c"], g["kh"], g["kw"], g["real_o"])


def tile_pixels(g) -> int:
    """The most pixels a tile of geometry ``g`` holds: 6, or ``NARROW_PIXELS`` for 16 lanes."""
    return NARROW_PIXELS[vector_isa()] if _width(g) == LANES else 6


def row_tile_pixels(g, cols: int) -> int:
    """The most pixels a tile of a row of ``cols`` pixels holds in rows (``lanes_rowstore``):
    the row in the nearest number of ``tile_pixels`` tiles where none is more than
    ``ROW_TILE_SLACK`` pixels larger (16 lanes; other widths none), else in the fewest tiles of
    at most ``tile_pixels``."""
    most = tile_pixels(g)
    slack = ROW_TILE_SLACK if _width(g) == LANES else 0
    n = max(1, round(cols / most))
    if -(-cols // n) > most + slack:
        n = -(-cols // most)
    return -(-cols // n)


def plane_tiles(g, extent: int) -> list[tuple[int, int, int]]:
    """``extent`` pixels as groups ``(first, pixels, tiles)`` of tiles of geometry ``g``:
    ``pixel_tiles`` (from ``SIXES_MIN`` pixels up), or ``even_tiles`` of ``tile_pixels``."""
    most = tile_pixels(g)
    return pixel_tiles(extent) if most == 6 and extent >= SIXES_MIN else \
        even_tiles(extent, most)


def pixel_tiles(extent: int) -> list[tuple[int, int, int]]:
    """``extent`` pixels as groups ``(first pixel, pixels per tile, tiles)`` of 6- and 5-pixel
    tiles covering them exactly (any extent from 20 up is a sum of 6s and 5s)."""
    five = (-extent) % 6  # 6a + 5b = extent: b = -extent mod 6
    six = (extent - 5 * five) // 6
    if six < 0:
        raise ValueError(f"conv_lanes.pixel_tiles: {extent} pixels is not a sum of 6s and 5s")
    groups = []
    if six:
        groups.append((0, 6, six))
    if five:
        groups.append((6 * six, 5, five))
    return groups


def emit(ctx, t, out, x, wp, epilogue=None) -> S.Stmt:
    """Statements computing conv2d ``t`` into ``out`` (read and written at ``[n, o, oy, ox]``)
    from input ``x`` and the prepacked weight ``wp`` (``packed_weight``); ``epilogue(indices,
    value)``, when given, is the fused elementwise stage applied before the store.

    Images run in turn, each padded once and its tiles split over the thread pool, or, as in
    ``conv_direct``, the images themselves are split over the pool (each padding its own copy)
    when one image is too small to split or there are enough of them to balance. Where whole
    filter columns read only padding (``row_segments``) the tiles follow the output rows and
    skip those taps (``_row_tiles``), reading an unpadded copy instead (``_pack``)."""
    g = geometry(t)
    g = with_knobs(g, _knobs(ctx.options, t) if g["groups"] == 1 else None)
    if g["lanes_rowstore"] and epilogue is not None and costly_plane_epilogue(epilogue):
        g = dict(g, lanes_rowstore=False)  # (its calls would run on pieces of rows)
    nv = ctx.fresh("n")
    segments = row_segments(g)
    if segments is not None:  # no tap reads padding: an unpadded, channel-blocked copy
        g = dict(g, hp=g["h"], wp=g["w"], cb=pack_channels(g))
    pix, fill = _pixel_offsets(ctx, g)
    size = g["cin"] * g["hp"] * g["wp"]
    macs = g["o"] * g["c"] * g["kh"] * g["kw"] * g["grid"]
    by_image = g["n"] > 1 and g["n"] * macs >= BATCH_PARALLEL_MIN_MACS and \
        (not g["parallel"] or g["n"] >= BATCH_PARALLEL_MIN_IMAGES)
    if segments is not None:
        one = dict(g, parallel=False) if by_image else g
        xp = decl_buffer((size,), "float32", "xpack") if by_image else \
            ctx.temp((size,), "float32", "xpack")
        body = S.SeqStmt([_pack(ctx, one, xp, x, nv),
                          _row_tiles(ctx, one, xp, wp, out, nv, epilogue, pix, segments)])
        if by_image:
            body = S.Allocate(xp.data, "float32", [size], True, S.DeclBuffer(xp, body))
        kind = S.ForKind.PARALLEL if by_image else S.ForKind.SERIAL
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], kind, body)])
    if g["lanes_direct"]:  # no padded copy: each class of pixels runs its own taps
        pix, fill, g = _direct_tables(ctx, g)
        one = dict(g, parallel=False) if by_image else g
        kind = S.ForKind.PARALLEL if by_image else S.ForKind.SERIAL
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], kind, _tiles(
            ctx, one, ctx.flat_view(x), wp, out, nv, epilogue, pix))])
    if by_image:
        one = dict(g, parallel=False)  # the loops inside one image stay on its thread
        xp = decl_buffer((size,), "float32", "xpad")
        body = S.SeqStmt([_pad(ctx, one, xp, x, nv), _tiles(ctx, one, xp, wp, out, nv,
                                                             epilogue, pix)])
        body = S.Allocate(xp.data, "float32", [size], True, S.DeclBuffer(xp, body))
        return S.SeqStmt([fill, S.For(nv, 0, g["n"], S.ForKind.PARALLEL, body)])
    xp = ctx.temp((size,), "float32", "xpad")
    body = S.SeqStmt([_pad(ctx, g, xp, x, nv), _tiles(ctx, g, xp, wp, out, nv, epilogue, pix)])
    return S.SeqStmt([fill, S.For(nv, 0, g["n"], S.ForKind.SERIAL, body)])


def _pixel_offsets(ctx, g):
    """(table, fill): ``table[p]``, the padded-input offset of output pixel ``p`` at tap (0, 0)
    of channel 0 (in ``_pack``'s copy for ``row_segments``' tiles), filled once per call so
    that a pixel tile loads its pixels' offsets rather than dividing by the row width for each
    (the tile's setup runs once per channel block)."""
    pix = ctx.temp((g["grid"],), "int32", "cl_pix")
    p = ctx.fresh("pp")
    at = E.FloorDiv(p, g["ow"]) * (g["sh"] * g["wp"]) + E.FloorMod(p, g["ow"]) * g["sw"]
    if g.get("cb"):  # (into ``_pack``'s unpadded copy: negative where tap (0, 0) is)
        at = (at - (g["pt"] * g["wp"] + g["pl"])) * g["cb"]
    return pix, S.For(p, 0, g["grid"], S.ForKind.SERIAL, S.BufferStore(pix, at, [p]))


def _runs(extent: int, bounds) -> list[tuple[int, int, int, int]]:
    """``range(extent)`` as runs ``(first, count, lo, hi)`` of consecutive indices whose
    ``bounds(i)`` are the same ``(lo, hi)`` (an empty range as ``(0, 0)``)."""
    runs: list[list[int]] = []
    for i in range(extent):
        lo, hi = bounds(i)
        lo, hi = (lo, hi) if hi > lo else (0, 0)
        if runs and (runs[-1][2], runs[-1][3]) == (lo, hi):
            runs[-1][1] += 1
        else:
            runs.append([i, 1, lo, hi])
    return [(a, n, lo, hi) for a, n, lo, hi in runs]


def pixel_classes(g) -> list[tuple[int, int, int, int, tuple[int, int], tuple[int, int]]]:
    """The output plane as rectangles ``(first row, rows, first column, columns, filter rows,
    filter columns)`` whose pixels read input through the same filter rows and columns (the
    ranges ``(first, one past the last)``; the other taps read padding), the largest first:
    for a 3x3 conv of padding 1 the interior, four border strips and four corners (two strips
    and a corner at stride 2 on an even plane)."""
    rows = _runs(g["oh"], lambda oy: _row_bounds(g, oy))
    cols = col_segments(g)
    out = [(r0, nr, c0, nc, (ky0, ky1), (kx0, kx1)) for r0, nr, ky0, ky1 in rows
           for c0, nc, kx0, kx1 in cols]
    return sorted(out, key=lambda k: -k[1] * k[3])


def _direct_tables(ctx, g):
    """(table, fill, geometry) for the tiles reading the input itself (``lanes_direct``): the
    pixels ordered class by class (``pixel_classes``), each class's rows in turn; ``table[s]``
    the input offset of the pixel at slot ``s`` at tap (0, 0) of channel 0 (outside the plane
    where that tap reads padding: its class never runs it), the geometry's ``out_pix[s]`` its
    output offset ``oy * ow + ox`` and ``classes`` its tiles, ``(first slot, pixels, tiles,
    filter rows, filter columns, in rows)`` (6s and 5s, or the fewest even tiles of a small
    class).

    With ``lanes_rowstore`` a class of at least ``ROW_STORE_MIN_COLUMNS`` columns has its rows
    cut in ``even_tiles`` instead, each size of them a group whose slots list those tiles row
    by row (the ``in rows`` flag: every tile's pixels are consecutive in one output row)."""
    pix = ctx.temp((g["grid"],), "int32", "cl_pix")
    opix = ctx.temp((g["grid"],), "int32", "cl_opix")
    fills, groups, base = [], [], 0

    def fill(r0, nr, c0, nc, base):  # the slots of rows r0.. x columns c0.., row by row
        a, b = ctx.fresh("pa"), ctx.fresh("pb")
        oy, ox, slot = a + r0, b + c0, base + a * nc + b
        at = (oy * g["sh"] - g["pt"]) * g["w"] + ox * g["sw"] - g["pl"]
        return S.For(a, 0, nr, S.ForKind.SERIAL, S.For(b, 0, nc, S.ForKind.SERIAL, S.SeqStmt([
            S.BufferStore(pix, at, [slot]), S.BufferStore(opix, oy * g["ow"] + ox, [slot])])))

    for r0, nr, c0, nc, ky, kx in pixel_classes(g):
        if g.get("lanes_rowstore") and _width(g) == LANES and nc >= ROW_STORE_MIN_COLUMNS:
            for f, pixels, m in even_tiles(nc, row_tile_pixels(g, nc)):
                fills.append(fill(r0, nr, c0 + f, pixels * m, base))
                groups.append((base, pixels, nr * m, ky, kx, True))
                base += nr * pixels * m
            continue
        fills.append(fill(r0, nr, c0, nc, base))
        groups += [(base + f, pixels, m, ky, kx, False)
                   for f, pixels, m in plane_tiles(g, nr * nc)]
        base += nr * nc
    return pix, S.SeqStmt(fills), dict(g, out_pix=opix, classes=groups)


def _groups(g) -> list[tuple]:
    """The pixel tiles as groups ``(first, pixels, tiles, filter rows, filter columns, in
    rows)``: the classes' (``lanes_direct``) or, over the padded copy, ``pixel_tiles`` of the
    plane (the filter ranges None: every tap; tiles crossing rows)."""
    if "classes" in g:
        return g["classes"]
    return [(f, p, m, None, None, False) for f, p, m in plane_tiles(g, g["grid"])]


def pack_channels(g) -> int:
    """Input channels a block of ``_pack``'s copy holds side by side: 16, else the largest power
    of two dividing a group's channels."""
    cb = 16
    while g["c"] % cb:
        cb //= 2
    return cb


def _pack(ctx, g, xp, x, nv) -> S.Stmt:
    """``xp[c // cb, i, j, c % cb] = x[n, c, i, j]``: the input in blocks of ``cb`` channels
    (``pack_channels``), so that a tile's taps over consecutive channels read consecutive
    floats, one cache line a pixel, rather than ``cb`` planes whose rows alias in L1 (planes of
    32x32 floats are 4 KB apart)."""
    cb, h, w = g["cb"], g["h"], g["w"]
    r, j, k = ctx.fresh("pr"), ctx.fresh("pj"), ctx.fresh("pc")
    blk, i = E.FloorDiv(r, h), E.FloorMod(r, h)
    body = S.For(j, 0, w, S.ForKind.SERIAL, S.For(k, 0, cb, S.ForKind.UNROLLED, S.BufferStore(
        xp, x[nv, blk * cb + k, i, j], [(r * w + j) * cb + k])))
    rows = g["cin"] // cb * h
    kind = S.ForKind.PARALLEL if g["parallel"] and rows * w * cb >= (1 << 15) else \
        S.ForKind.SERIAL
    return S.For(r, 0, rows, kind, body)


def _pad(ctx, g, xp, x, nv) -> S.Stmt:
    """``xp[c, i, j] = x_padded[n, c, i, j]`` for the ``hp x wp`` padded rows and columns the
    taps read: vector copies between zero columns, or zeros for a padding row."""
    hp, wp, pl, w = g["hp"], g["wp"], g["pl"], g["w"]
    lanes = _lanes("float32")
    r = ctx.fresh("pr")
    c, i = E.FloorDiv(r, hp), E.FloorMod(r, hp)
    iy = i - g["pt"]
    zero = E.FloatImm("float32", 0.0)

    def put(j0, count, value):
        return _vector_inner(ctx, count, lanes, lambda j: S.BufferStore(
            xp, value(j0 + j), [r * wp + j0 + j]))

    j0 = min(wp, pl)
    j1 = min(wp, max(j0, pl + w))  # one past the last column inside the input
    parts = [put(0, j0, lambda j: zero)] if j0 else []
    if j1 > j0:
        parts.append(put(j0, j1 - j0, lambda j: x[nv, c, iy, j - pl]))
    if wp > j1:
        parts.append(put(j1, wp - j1, lambda j: zero))
    row = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
    body = S.IfThenElse(E.And(iy >= 0, iy < g["h"]), row, put(0, wp, lambda j: zero))
    rows = g["cin"] * hp
    kind = S.ForKind.PARALLEL if g["parallel"] and rows * wp >= (1 << 15) else S.ForKind.SERIAL
    return S.For(r, 0, rows, kind, body)


def _col_bounds(g, ox: int) -> tuple[int, int]:
    """(first, one past the last) filter column reading an input column at output column
    ``ox``; empty when every column reads padding."""
    dw, left = g["dw"], g["pl"] - ox * g["sw"]
    return max(0, -(-left // dw)), min(g["kw"], (g["w"] - 1 + left) // dw + 1)


def col_segments(g) -> list[tuple[int, int, int, int]]:
    """The output columns as runs ``(first column, columns, first filter column, one past the
    last)`` of columns that read input through the same filter columns (an empty range where
    every filter column reads padding)."""
    return _runs(g["ow"], lambda ox: _col_bounds(g, ox))


def row_segments(g) -> list[tuple[int, int, int, int]] | None:
    """``col_segments`` when the tiles follow them (``_row_tiles``): when the filter columns
    that read only padding are at least ``ROW_TILES_MIN_SKIPPED`` of the taps of a row (a
    dilated conv on a small plane: 12% at dilation 6 on 32 columns, 38% at 18) and every run
    is at least ``ROW_TILES_MIN_RUN`` columns wide; else None."""
    runs = col_segments(g)
    taps = sum(n * (hi - lo) for _, n, lo, hi in runs)
    if not ROW_TILES[vector_isa()] or taps > (1 - ROW_TILES_MIN_SKIPPED) * g["ow"] * g["kw"] \
            or min(n for _, n, _, _ in runs) < ROW_TILES_MIN_RUN:
        return None
    return runs


def even_tiles(cols: int, most: int = 6) -> list[tuple[int, int, int]]:
    """``cols`` pixels as groups ``(first, pixels, tiles)`` of the fewest tiles of at most
    ``most`` pixels, their sizes differing by one at most (6s and 5s from 20 pixels up)."""
    n = -(-cols // most)
    small, big = cols // n, cols % n  # ``big`` tiles of small + 1 pixels, then the rest
    groups = [(0, small + 1, big)] if big else []
    return [*groups, (big * (small + 1), small, n - big)]


def _row_tiles(ctx, g, xp, wp, out, nv, epilogue, pix, segments) -> S.Stmt:
    """The tiles of a plane whose columns trim filter columns (``row_segments``): each output
    row is cut into its runs' tiles (``even_tiles``), so a tile runs only its run's filter
    columns, and the filter rows of its one row (``tap_rows``): no tap reads padding, and ``xp``
    is the unpadded channel-blocked copy (``_pack``). Bands of output rows x tiles of 16 output
    channels are the outer (parallel) loop, band-major in the "bands" order; inside one, blocks
    of input channels (``channel_block``) over the band's tiles, their partial sums in a scratch
    between blocks, as in ``_tiles``."""
    groups = [(c0 + f, pixels, m, lo, hi) for c0, cols, lo, hi in segments
              for f, pixels, m in even_tiles(cols, tile_pixels(g))]
    per_row = sum(m for _, _, m, _, _ in groups)
    rows = max(1, _band_tiles(g) // per_row)
    nbands = -(-g["oh"] // rows)
    rows = -(-g["oh"] // nbands)  # (the bands as even as the rows allow)
    obs, kc = g["o"] // _width(g), channel_block(g)
    dims = [nbands, obs] if g["lanes_order"] == "bands" else [obs, nbands]

    def one(idx):
        b, ob = idx if g["lanes_order"] == "bands" else idx[::-1]
        sums = decl_buffer((rows * per_row * tile_pixels(g) * _width(g),), "float32", "cl_sums") \
            if kc < g["c"] else None
        kb = None if sums is None else ctx.fresh("kb")
        parts, slot = [], 0
        for first, pixels, m, lo, hi in groups:
            kk = ctx.fresh("pk")
            oy = b * rows + E.FloorDiv(kk, m) if m > 1 else b * rows + kk
            p0 = oy * g["ow"] + (first + E.FloorMod(kk, m) * pixels if m > 1 else first)
            blk = None if kb is None else (kb, kc, g["c"] // kc, sums, slot + kk * pixels)
            tile = _tile(ctx, g, xp, wp, out, nv, pix, ob, p0, pixels, epilogue, blk, (lo, hi))
            if nbands * rows != g["oh"]:
                tile = S.IfThenElse(oy < g["oh"], tile)
            parts.append(S.For(kk, 0, rows * m, S.ForKind.SERIAL, tile))
            slot += rows * m * pixels
        body = parts[0] if len(parts) == 1 else S.SeqStmt(parts)
        if kb is not None:
            body = S.For(kb, 0, g["c"] // kc, S.ForKind.SERIAL, body)
        return body if sums is None else _allocated(sums, body)

    return _outer_loops(ctx, dims, g["parallel"], one)


def _tiles(ctx, g, xp, wp, out, nv, epilogue, pix) -> S.Stmt:
    """Channel tiles x pixel tiles, the channel tiles outer; inside one, bands of pixel tiles
    x blocks of input channels (``channel_block``). On the thread pool the pixel tiles are
    also cut in a few parts when there are fewer than ``PARALLEL_PARTS`` channel tiles, so that
    a conv of 16 or 32 output channels still splits. The "bands" order (``lanes_order``) runs
    ``_bands_outer`` instead: on a Zen 2 it measured within the noise of this one at 56x56; on
    a Zen 3 at two threads, with the filter columns as a loop, 17% faster at 56x56 and 10% at
    28x28 (with them unrolled, within 2%)."""
    if g["lanes_order"] == "bands":
        return _bands_outer(ctx, g, xp, wp, out, nv, epilogue, pix)
    obs = g["o"] // _width(g)
    groups = _groups(g)
    parts = 1
    if g["parallel"] and obs < g["lanes_parts"]:
        parts = max(1, min(-(-g["lanes_parts"] // obs), groups[0][2]))

    kc = channel_block(g)
    band = _band_tiles(g)

    def run(ob, first, pixels, lo, count, sums, ky, kx, row):
        """Tiles ``lo .. lo+count`` of a group, in bands over the channel blocks (or, with
        one block, in turn)."""
        k = ctx.fresh("pt")
        if kc == g["c"]:
            return S.For(k, lo, count, S.ForKind.SERIAL, _tile(
                ctx, g, xp, wp, out, nv, pix, ob, first + k * pixels, pixels, epilogue,
                kx_range=kx, ky_range=ky, row=row))
        b, kb, kk = ctx.fresh("band"), ctx.fresh("kb"), ctx.fresh("pk")
        tile = _tile(ctx, g, xp, wp, out, nv, pix, ob, first + (lo + b * band + kk) * pixels,
                     pixels, epilogue, (kb, kc, g["c"] // kc, sums, kk * pixels), kx, ky,
                     row)
        static = isinstance(count, int)
        if not static or count % band:
            tile = S.IfThenElse(b * band + kk < count, tile)
        bands = -(-count // band) if static else E.FloorDiv(count + (band - 1), band)
        return S.For(b, 0, bands, S.ForKind.SERIAL, S.For(
            kb, 0, g["c"] // kc, S.ForKind.SERIAL, S.For(kk, 0, band, S.ForKind.SERIAL, tile)))

    def over_pixels(idx):
        part, ob = idx
        sums = _sums_scratch(g, band) if kc < g["c"] else None
        out_parts = []
        for gi, (first, pixels, count, ky, kx, row) in enumerate(groups):
            if gi == 0 and parts > 1:  # this part's share of the first group's tiles
                lo = E.FloorDiv(part * count, parts)
                hi = E.FloorDiv((part + 1) * count, parts)
                loop = run(ob, first, pixels, lo, hi - lo, sums, ky, kx, row)
            else:
                loop = run(ob, first, pixels, 0, count, sums, ky, kx, row)
                if parts > 1:  # the other groups go with the last part
                    loop = S.IfThenElse(E.EQ(part, parts - 1), loop)
            out_parts.append(loop)
        body = out_parts[0] if len(out_parts) == 1 else S.SeqStmt(out_parts)
        return body if sums is None else _allocated(sums, body)

    return _outer_loops(ctx, [parts, obs], g["parallel"], over_pixels)


def _band_tiles(g) -> int:
    """Pixel tiles whose partial sums one scratch of ``lanes_sums`` floats holds."""
    return max(1, g["lanes_sums"] // (tile_pixels(g) * _width(g)))


def _sums_scratch(g, band: int):
    """The partial sums of a band of ``band`` pixel tiles between blocks of input channels,
    room for the geometry's largest tile (a row tile of ``lanes_rowstore`` may hold
    ``ROW_TILE_SLACK`` pixels more than ``tile_pixels``)."""
    most = max(pixels for _, pixels, *_ in _groups(g))
    return decl_buffer((band * max(most, tile_pixels(g)) * _width(g),), "float32", "cl_sums")


def _band_split(g, count: int) -> tuple[int, int]:
    """(bands, tiles a band) of ``count`` pixel tiles in the "bands" order: bands of at most
    ``_band_tiles`` tiles, their number a multiple of ``lanes_parts`` on the thread pool so that
    the threads get equal shares."""
    bands = -(-count // _band_tiles(g))
    if g["parallel"]:
        parts = g["lanes_parts"]
        bands = min(count, -(-bands // parts) * parts)
    return bands, -(-count // bands)


def _bands_outer(ctx, g, xp, wp, out, nv, epilogue, pix) -> S.Stmt:
    """The "bands" order: bands of pixel tiles outermost (the parallel loop), each running every
    channel tile (and block of input channels) over its pixels, so that a band's input rows are
    read from memory once and stay in L2 while the weights, re-read by every band, come from L2
    too; the few 5-pixel tiles at the end then run per channel tile."""
    obs = g["o"] // _width(g)
    (first, pixels, count, ky, kx, row), *rest = _groups(g)
    kc = channel_block(g)
    nbands, band = _band_split(g, count)
    solo = _band_split(dict(g, parallel=False), count)  # (on one thread: SOLO_BANDS)
    most = max(band, solo[1])
    uneven = nbands * band != count or solo[0] * solo[1] != count

    def one_band(idx, band=band):
        b, ob, kk = idx[0], ctx.fresh("ob"), ctx.fresh("pk")
        sums = _sums_scratch(g, most) if kc < g["c"] else None
        kb = None if sums is None else ctx.fresh("kb")
        tile = _tile(ctx, g, xp, wp, out, nv, pix, ob, first + (b * band + kk) * pixels, pixels,
                     epilogue, None if kb is None else (kb, kc, g["c"] // kc, sums, kk * pixels),
                     kx, ky, row)
        if uneven:
            tile = S.IfThenElse(b * band + kk < count, tile)
        body = S.For(kk, 0, band, S.ForKind.SERIAL, tile)
        if kb is not None:
            body = S.For(kb, 0, g["c"] // kc, S.ForKind.SERIAL, body)
        body = S.For(ob, 0, obs, S.ForKind.SERIAL, body)
        return body if sums is None else _allocated(sums, body)

    if g["parallel"] and SOLO_BANDS and solo != (nbands, band):
        # the split at run time: on one thread (a pool of one, or an image of a batch whose
        # images are on the pool) the serial split's larger bands, each weight block serving
        # more pixel tiles; on the pool ``lanes_parts`` shares
        alone = E.LE(num_threads(), E.IntImm("int32", 1))
        nb, bv, b = ctx.fresh("nbands"), ctx.fresh("band"), ctx.fresh("b")
        loop = S.For(b, 0, nb, S.ForKind.PARALLEL, one_band([b], bv))
        parts = [S.LetStmt(nb, E.Select(alone, E.IntImm("int32", solo[0]),
                                        E.IntImm("int32", nbands)),
                           S.LetStmt(bv, E.Select(alone, E.IntImm("int32", solo[1]),
                                                  E.IntImm("int32", band)), loop))]
    else:
        parts = [_outer_loops(ctx, [nbands], g["parallel"], one_band)]
    for first2, pixels2, count2, ky2, kx2, row2 in rest:
        def tail(idx, first2=first2, pixels2=pixels2, count2=count2, ky2=ky2, kx2=kx2,
                 row2=row2):
            k = ctx.fresh("pt")
            return S.For(k, 0, count2, S.ForKind.SERIAL, _tile(
                ctx, g, xp, wp, out, nv, pix, idx[0], first2 + k * pixels2, pixels2, epilogue,
                kx_range=kx2, ky_range=ky2, row=row2))
        parts.append(_outer_loops(ctx, [obs], g["parallel"], tail))
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def trims_rows(g) -> bool:
    """Does some output row of geometry ``g`` have filter rows that read only padding (rows
    ``pt`` above or below the input: a dilated conv, or a small plane)? Then a tile runs only
    the filter rows some of its output rows need (``tap_rows``), as ONNX Runtime skips the
    padding taps: a 3x3 conv of dilation 6 at 32x32 does 12% fewer multiply-adds, one of
    dilation 2 4%, a 3x3 conv at 7x7 10%."""
    return _row_bounds(g, 0)[0] > 0 or _row_bounds(g, g["oh"] - 1)[1] < g["kh"]


def _row_bounds(g, oy):
    """(first, one past the last) filter row reading an input row at output row ``oy`` (an
    int, or a PrimExpr of int32)."""
    dh, top = g["dh"], g["pt"] - oy * g["sh"]
    if isinstance(oy, int):
        return max(0, -(-top // dh)), min(g["kh"], (g["h"] - 1 + top) // dh + 1)
    return (E.Max(E.FloorDiv(top + (dh - 1), dh), E.IntImm("int32", 0)),
            E.Min(E.FloorDiv(top + (g["h"] - 1), dh) + 1, E.IntImm("int32", g["kh"])))


def tap_rows(g, first, last):
    """(first filter row, filter rows) that output rows ``first .. last`` (PrimExprs, int32)
    need: the union of their rows' ranges, as the range is monotone in the output row; the
    other rows read only zero padding for every pixel of those rows."""
    lo, hi = _row_bounds(g, last)[0], _row_bounds(g, first)[1]
    return lo, E.Max(hi - lo, E.IntImm("int32", 0))


def channel_block(g) -> int:
    """Input channels per pass over a band of pixel tiles: their weights (``KH*KW*16`` floats
    a channel) kept to about ``CHANNEL_BLOCK_BYTES`` so that they stay in L1 over the band;
    block sizes divide the channel count, else there is one pass."""
    c = g["c"]
    if not g["lanes_cblock"]:
        return c
    target = max(1, g["lanes_cblock"] // (g["kh"] * g["kw"] * _width(g) * 4))
    if c < 2 * target:
        return c
    return divisor_near(c, target) or c


def _row_store(ctx, g, out, nv, ob, first, pixels: int, res, epilogue) -> S.Stmt:
    """Store a 16-channel tile whose ``pixels`` are consecutive in one output row from output
    pixel ``first`` (``oy * ow + ox``) on: the tile ``res`` ``[pixels, 16]`` transposed in
    registers (``transpose16``), then each output channel as vectors of its pixels (powers of
    two, ``_pieces``); a last tile's channels past the conv's real ones are not stored.

    An epilogue that reads an operand at the pixel (a residual) runs on the stored vectors of
    pixels (contiguous loads); one that reads none runs before the transpose on whole vectors
    of 16 channels, as the tiles across rows apply it (a SiLU's exp on pieces of 8, 4 and 1
    pixels cost YOLOv5's 16 -> 32 stride-2 conv at 80x80 6%)."""
    cw = _width(g)
    oy, ox = E.FloorDiv(first, g["ow"]), E.FloorMod(first, g["ow"])
    after = epilogue is not None and reads_plane(epilogue, nv, ob * cw)

    def piece(tr, ll, lo, n):
        j = ctx.fresh("jr")
        idx = [nv, ob * cw + ll, oy, ox + (lo + j)]
        val = tr[ll, lo + j]
        val = epilogue(idx, val) if after else val
        return S.For(j, 0, n, S.ForKind.VECTORIZED, S.BufferStore(out, val, idx))

    def stores(tr):
        out_ = []
        for ll in range(cw):
            body = S.SeqStmt([piece(tr, ll, lo, n) for lo, n in _pieces(pixels)])
            if g["real_o"] % cw:  # (the last tile's zero channels)
                body = S.IfThenElse(E.LT(ob * cw + ll, g["real_o"]), body)
            out_.append(body)
        return S.SeqStmt(out_)

    if epilogue is None or after:
        return transpose16(res, pixels, stores)
    pre = decl_buffer((pixels, LANES), "float32", "cl_epi", scope="local")
    fills = []
    for jj in range(pixels):  # (the epilogue on each pixel's 16 channels)
        ll = ctx.fresh("ll")
        idx = [nv, ob * cw + ll, oy, ox + jj]
        fills.append(S.For(ll, 0, LANES, S.ForKind.VECTORIZED, S.BufferStore(
            pre, epilogue(idx, res[jj, ll]), [jj, ll])))
    body = S.SeqStmt([*fills, transpose16(pre, pixels, stores)])
    return S.Allocate(pre.data, "float32", [pixels * LANES], True, S.DeclBuffer(pre, body))


def _pieces(count: int) -> list[tuple[int, int]]:
    """(start, length) of ``count`` lanes cut in vectors of 16 lanes, then powers of two."""
    out, lo = [], 0
    for n in (LANES, 8, 4, 2, 1):
        while count - lo >= n:
            out.append((lo, n))
            lo += n
    return out


def _tile(ctx, g, xp, wp, out, nv, pix, ob, p0, pixels: int, epilogue, kb=None,
          kx_range=None, ky_range=None, row: bool = False) -> S.Stmt:
    """Output channels ``ob*width ..`` (``lanes_width``) x output pixels ``p0 .. p0+pixels``
    (flattened).

    The tile's pixel offsets into the padded input are read from the table ``pix`` once; the
    filter taps run as loops (only the tile's pixels are unrolled: ``UNROLL_TAPS``), which
    keeps the code LLVM optimizes small at no cost in speed.

    ``kb = (block var, channels per block, blocks, scratch, slot)``: the tile sums one block
    of input channels, starting from (and, but for the last block, ending in) its partial sums
    from pixel ``slot`` of the scratch on. ``kx_range``, when given, is the static range of
    filter columns the tile's pixels read input through (``col_segments``); the rest read
    padding; ``ky_range`` likewise the filter rows. Where the geometry has ``out_pix``
    (``lanes_direct``), ``xp`` is the input itself (flat), ``p0`` a slot of the tables and the
    tile's pixels are stored at ``out_pix``; ``row``: they are consecutive in one output row,
    each output channel stored as a vector of them (``lanes_rowstore``)."""
    c, ow, hp, wpd = g["c"], g["ow"], g["hp"], g["wp"]
    cw = _width(g)
    acc = decl_buffer((pixels, cw), "float32", "cl_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def loop(name, extent, kind, fbody, dtype="int32"):
        v = ctx.fresh(name, dtype)
        lo = E.IntImm(dtype, 0)
        return S.For(v, lo, E.IntImm(dtype, extent), kind, fbody(v))

    def lanes_loop(fbody):  # a tile's lanes: vectors of 16 when they are 48
        if cw & (cw - 1) == 0:
            return loop("ll", cw, vec, fbody)
        return loop("lo", cw // LANES, unroll, lambda lo: loop(
            "ll", LANES, vec, lambda ll: fbody(lo * LANES + ll)))

    def ky_loop(fbody):  # the filter rows: those the tile's output rows need (trims_rows)
        if ky_range is not None:
            v, (first, end) = ctx.fresh("ky"), ky_range
            return S.For(v, E.IntImm("int32", first), E.IntImm("int32", end - first), ky_kind,
                         fbody(v))
        if ky_kind == unroll or not trims_rows(g):
            return loop("ky", g["kh"], ky_kind, fbody)
        v = ctx.fresh("ky")
        first, count = tap_rows(g, E.FloorDiv(p0, ow), E.FloorDiv(p0 + (pixels - 1), ow))
        return S.For(v, first, count, ky_kind, fbody(v))

    q = [ctx.fresh("q") for _ in range(pixels)]  # padded-input offsets of its pixels
    init = loop("jj", pixels, unroll, lambda jj: lanes_loop(lambda ll:
                S.BufferStore(acc, E.FloatImm("float32", 0.0), [jj, ll])))
    if kb is not None:
        kv, kc, nkb, sums, slot = kb

        def at_sums(jj, ll):
            return (slot + jj) * cw + ll

        init = S.IfThenElse(E.EQ(kv, 0), init, loop("jj", pixels, unroll, lambda jj: lanes_loop(
            lambda ll: S.BufferStore(acc, sums[at_sums(jj, ll)], [jj, ll]))))

    wv = decl_buffer((cw,), "float32", "cl_w", scope="local")  # the tap's weights

    def widen(w):  # (an int8 weight: sign-extended and converted as it is loaded)
        return w if w.dtype == "float32" else E.Cast("float32", w)

    def tap(ci, ky, kx):  # (the pixels written out: each reads its own offset variable)
        xo = ctx.fresh("xo", "int64")
        macs = [lanes_loop(lambda ll, jj=jj: S.BufferStore(
            acc, acc[jj, ll] + wv[ll] * xp[xo + q[jj]], [jj, ll])) for jj in range(pixels)]
        # (a wider tile reads its 16s of output channels from consecutive weight blocks)
        loads = [loop("ll", LANES, vec, lambda ll, v=v: S.BufferStore(
            wv, widen(wp[ob * (cw // LANES) + v, ci, ky, kx, ll]), [v * LANES + ll]))
            for v in range(cw // LANES)]
        if ahead:  # (the last channels' prefetches may run past the weights)
            loads += [prefetch(wp[ob * (cw // LANES) + v, ci + ahead, ky, kx, 0])
                      for v in range(cw // LANES)]
        if g["groups"] > 1:  # the input channels of the tile's group
            ci = E.Cast("int64", E.FloorDiv(ob * cw, g["og"]) * c) + ci
        cb = g.get("cb")
        if "out_pix" in g:  # the input itself, this image's planes
            off = (E.Cast("int64", nv) * g["cin"] + ci) * (g["h"] * g["w"]) + \
                (ky * g["dh"]) * g["w"] + kx * g["dw"]
        elif cb:  # the channel-blocked copy (``_pack``)
            off = E.FloorDiv(ci, cb) * (hp * wpd * cb) + E.FloorMod(ci, cb) + \
                ((ky * g["dh"]) * wpd + kx * g["dw"]) * cb
        else:
            off = ci * (hp * wpd) + (ky * g["dh"]) * wpd + kx * g["dw"]
        return S.LetStmt(xo, E.Cast("int64", off), S.SeqStmt([*loads, *macs]))

    def kx_loop(fbody):  # the filter columns: those the tile's pixels read input through
        if kx_range is None:
            return loop("kx", g["kw"], kx_kind, fbody)
        v, (first, end) = ctx.fresh("kx"), kx_range
        return S.For(v, E.IntImm("int32", first), E.IntImm("int32", end - first), kx_kind,
                     fbody(v))

    taps = g["kh"] * g["kw"]
    # each tap also prefetches its weights a block of channels on (``PREFETCH_WEIGHTS``)
    ahead = 0
    if PREFETCH_WEIGHTS[vector_isa()] and g["lanes_order"] == "channels" and \
            g["o"] * c * taps * 4 >= PREFETCH_MIN_WEIGHT_BYTES:
        ahead = kb[1] if kb is not None else PREFETCH_CHANNELS
    ky_kind = unroll if taps <= UNROLL_TAPS else S.ForKind.SERIAL
    kx_kind = unroll if g["lanes_unroll_kx"] else S.ForKind.SERIAL
    if any(r is not None and r[1] <= r[0] for r in (kx_range, ky_range)):  # all padding
        macs = S.Evaluate(E.IntImm("int32", 0))
    elif kb is None:
        macs = loop("c", c, S.ForKind.SERIAL, lambda ci: ky_loop(lambda ky: kx_loop(
            lambda kx: tap(ci, ky, kx))), dtype="int64")
    else:
        macs = loop("c", kc, S.ForKind.SERIAL, lambda cc: ky_loop(lambda ky: kx_loop(
            lambda kx: tap(E.Cast("int64", kv * kc) + cc, ky, kx))), dtype="int64")

    # the tile is stored through a scratch copy, one pixel an iteration (a pixel's 16 output
    # channels are 16 scalar stores: unrolled over the pixels they were most of the kernel's
    # code)
    res = decl_buffer((pixels, cw), "float32", "cl_res")

    def put(jj, ll):
        p = g["out_pix"][p0 + jj] if "out_pix" in g else p0 + jj
        idx = [nv, ob * cw + ll, E.FloorDiv(p, ow), E.FloorMod(p, ow)]
        val = res[jj, ll] if epilogue is None else epilogue(idx, res[jj, ll])
        return S.BufferStore(out, val, idx)

    jp = ctx.fresh("jj")
    outs = lanes_loop(lambda ll: put(jp, ll))
    tail = g["real_o"] - (g["o"] // cw - 1) * cw  # real output channels of the last tile
    if tail != cw:  # it stores them in vectors of powers of two (a loop of them ran 2x slower)
        outs = S.IfThenElse(E.LE((ob + 1) * cw, g["real_o"]), outs, S.SeqStmt([
            loop("ll", n, vec, lambda ll, lo=lo: put(jp, lo + ll)) for lo, n in _pieces(tail)]))
    if row and "out_pix" in g:  # (transposed in registers, from the accumulators)
        store = _row_store(ctx, g, out, nv, ob, g["out_pix"][p0], pixels, acc, epilogue)
    else:
        store = S.SeqStmt([
            loop("jj", pixels, unroll, lambda jj: lanes_loop(lambda ll: S.BufferStore(
                res, acc[jj, ll], [jj, ll]))), S.For(jp, 0, pixels, S.ForKind.SERIAL, outs)])
        store = S.Allocate(res.data, "float32", [pixels * cw], True, S.DeclBuffer(res, store))
    if kb is not None:
        store = S.IfThenElse(E.EQ(kv, nkb - 1), store, loop(
            "jj", pixels, unroll, lambda jj: lanes_loop(
                lambda ll: S.BufferStore(sums, acc[jj, ll], [at_sums(jj, ll)]))))
    body = S.DeclBuffer(acc, S.DeclBuffer(wv, S.SeqStmt([init, macs, store])))
    body = S.Allocate(wv.data, "float32", [cw], True, body)
    body = S.Allocate(acc.data, "float32", [pixels * cw], True, body)
    for jj in range(pixels - 1, -1, -1):
        body = S.LetStmt(q[jj], pix[p0 + jj], body)
    return body

"""conv2d (NCHW, a filter wider than 1x1; grouped convs as their groups side by side) with the
output channels in the vector lanes, for constant (prepacked) weights, or a grouped conv's
computed weight packed per call (``conv_lanes_emit.pack_at_run_time``) (written for AVX2;
AVX-512 runs tiles twice as wide).

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

On AVX-512 a tile is 32 output channels (``WIDTH``, the ``lanes_width`` knob: two zmm
registers a pixel, 12 accumulators) reading two consecutive 16-channel blocks of the same packed
weight; convs whose output channels (a group's) are not a multiple of 32 keep 16-channel tiles.
Measured on a Sapphire Rapids Xeon (two 512-bit FMA ports, one thread, conv + bias + relu, ms,
32 vs 16 channels a tile, ONNX Runtime): 512 -> 512 at 7x7 1.29 vs 1.89 (1.40), stride-2
128 -> 128 at 56x56 1.34 vs 1.77 (1.25), 256 -> 256 at 28x28 1.27 vs 1.68 (1.27), 512 -> 512 at
14x14 1.41 vs 1.94 (1.37). Stride-1 convs with small weights take 64 channels a tile (24
accumulators) in one pass over the input channels (``WIDE``), and so do strided ones on Rocket
Lake, whose two FMA ports a 16-lane tile leaves waiting on loads (``WIDE_STRIDED_ANY_PLANE``). A group of 48 output channels
(Inception's 1x7 / 7x1 convs) takes 48-channel tiles (``ODD_WIDTH``: three zmm a pixel, 18
accumulators), and 16-channel tiles (RegNet's grouped convs, 16 channels a group) hold 12 pixels
rather than 6 (``NARROW_PIXELS``: 12 accumulators where 6 left the two FMA ports waiting on the
FMA latency). Sapphire Rapids, one thread, conv + bias + relu, ms, 6-pixel 16-wide tiles ->
12-pixel (ONNX Runtime alone, which pays its layout conversions; in the models it is faster):
groups of 16 at 14x14, 208 channels 0.088 -> 0.075 (0.099), at 56x56 48 channels 0.321 ->
0.257 (0.343), 96 at 28x28 0.161 -> 0.131 (0.175), stride-2 96 at 56x56 0.166 -> 0.134 (0.258);
32 -> 48 1x7 at 23x23 0.087 -> 0.074 -> 0.066 48 wide (0.071), 7x1 0.082 -> 0.072 -> 0.058
(0.060).

Measured on a Zen 2 (one thread, thread CPU time, conv + bias + relu, ms, against
``conv_direct``): 64 -> 64 3x3 at 56x56 2.37 vs 2.55, 128 -> 128 at 28x28 2.46 vs 2.64,
256 -> 256 at 14x14 2.53 vs 2.75, 512 -> 512 at 7x7 2.97 vs 3.19, the stride-2 3x3 convs of
ResNet-18 1.29 / 1.19 / 1.28 vs 1.65 / 1.62 / 1.63. A 7x7 stride-2 stem of 3 channels (whose
output rows are whole vectors, ``conv_direct``'s row mode) stays on ``conv_direct``: 2.79 here
vs 2.47 there.

On both ISAs (``ENABLED``: the Zen 4 measurement at ``common.vector_isa``), for prepacked
weights; anything else keeps ``conv_direct``.


This module is the plan: which convs run here, the geometry of their tiles, the knobs (``lanes_*``)
and their defaults, and every constant the schedule reads. ``conv_lanes_emit`` writes the loop
nests over the tiles (``emit``), ``conv_lanes_tile`` one tile; both read these constants through
this module, so that a test or the tuner changes them in one place."""

from __future__ import annotations

import numpy as np

from ..runtime.ndarray import aligned_empty
from ..tir import expr as E
from .common import (
    divisor_near,
    host_switch,
    int8_weight_conv,
    static_grouped_conv2d_dims,
    vector_isa,
)

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
# ... but a stride-1 conv (groups 1) of at most FEW_TAPS_MAX taps an output (input channels x
# filter taps: an RGB or grayscale stem) takes 16-lane tiles of ``NARROW_PIXELS`` pixels
# (``few_taps``): with so few FMAs a tile its time is the epilogue and the stores, one output
# channel per lane, and 12 pixels a channel store longer row pieces than 6. Intel Xeon (LLVM's
# "rocketlake"), one thread, conv + bias + relu, A/B in one process, 7 interleaved rounds of
# median-of-10, ms, the wider default tile -> 16 lanes (ONNX Runtime): 3 -> 32 3x3 at 28x28
# batch 75 (ProtoNet's stem) 1.271 -> 1.113 and 1.336 -> 1.166 (1.46-1.52), batch 25 0.434 ->
# 0.390 (0.524), batch 1 0.019 -> 0.015 (0.024), 3 -> 32 at 56x56 n4 0.252 -> 0.207 (0.283),
# 1 -> 32 at 28x28 n16 0.199 -> 0.117 (0.171), 3 -> 64 (64 wide) n8 0.276 -> 0.248 (0.276),
# 3 -> 48 at 27x27 (48 wide) n8 0.194 -> 0.170 (0.294). More taps gain nothing or lose: 4 -> 32
# (36 taps) n16 0.314 -> 0.313, 8 -> 32 (72) 0.505 -> 0.525; 3 -> 32 5x5 (75) 0.522 -> 0.489
# but not taken. Strided and grouped convs not measured. AVX2 (16 lanes its only width, so the
# tiles are as before): the same limit, for the max pool in the tiles it lets ``conv_pool``
# fuse (``POOL_TILE_VECTORS``' numbers)
FEW_TAPS_MAX = {"avx512": 32, "avx2": 32}
# ... and on these hosts (``common.host_switch``) a strided groups-1 conv of at most 9 taps a
# filter takes them on a plane of any size (``wide_strided``), in the "channels" order, in one
# pass where the weights allow (else in blocks of channels), rather than 16-lane tiles in rows
# (``ROW_STORE``). On the Intel Xeon LLVM calls "rocketlake" (two 512-bit FMA ports) a 16-lane
# tile of 12 pixels loads 13 values (12 broadcasts) per 12 FMAs, bound on the two load ports;
# 64 x 6 loads 10 per 24. There, one thread, 3x3 / 2 + bias + relu, A/B in one process, 5-7
# interleaved rounds, thread CPU ms, 16 in rows -> 64 in one pass (ONNX Runtime): 128 -> 256 at
# 28x28 0.850 -> 0.627 (0.778), 64 -> 128 at 56x56 0.755 -> 0.648 (0.736), 32 -> 64 at 112x112
# 0.888 -> 0.802 (0.936), 256 -> 256 at 28x28 1.684 -> 1.293 (1.433), 128 -> 128 at 56x56
# 1.579 -> 1.366 (1.417); 512 -> 512 at 28x28 (in blocks) 8.58 -> 6.76 (6.57). In the "bands"
# order 64-lane tiles lost at batch 4 (images on the pool): 32 -> 64 at 112x112 5.06 against
# 3.94 in channels (16 in rows 4.22). Elsewhere not measured: off. Only from
# WIDE_STRIDED_MIN_CHANNELS input channels: with fewer, a 64 x 6 tile's 384 one-lane stores
# (a pixel's channels, one plane each) weigh on few FMAs, and it was mixed (ms, 16 in rows -> 64
# (ONNX Runtime), 9 rounds): 16 -> 64 at 112x112 0.387 -> 0.401 (0.453), 8 -> 64 0.211 -> 0.220
# (0.236), 16 -> 64 at 56x56 0.099 -> 0.093 (0.094); 32 -> 64 at 56x56 0.187 -> 0.171 (0.184)
WIDE_STRIDED_ANY_PLANE = {"rocketlake": True, "avx512": False, "avx2": False}
WIDE_STRIDED_MIN_CHANNELS = 32
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
# ... and by host (``common.host_switch``) the widest filter whose columns are unrolled by
# default (``lanes_unroll_kx``): on the Intel Xeon LLVM calls "rocketlake" up to 7 columns.
# There, one thread, conv + bias + relu, A/B in one process, 7 interleaved rounds, ms, columns
# as a loop -> unrolled (ONNX Runtime): 128 -> 128 5x5 at 28x28 3.56 -> 3.23 (3.85), 64 -> 64
# 5x5 at 56x56 3.64 -> 3.36 (3.88). Other hosts not measured: UNROLL_TAPS
UNROLL_COLUMNS = {"rocketlake": 7, "avx512": UNROLL_TAPS, "avx2": UNROLL_TAPS}
# a convolution of at least this many multiply-adds per image splits over the thread pool
PARALLEL_MIN_MACS = 1 << 21
# the weights of a block of input channels (``channel_block``; 0: one pass over them all)
CHANNEL_BLOCK_BYTES = 16 * 1024
# ... twice that for a plane whose tiles follow its rows (``row_segments``: a dilated conv on a
# small plane), even at ``WIDE`` tiles (which otherwise make one pass over the channels): there
# a band is one output row, whose input rows (three, a dilation apart) and weights for all the
# channels overflow L1. Sapphire Rapids, one thread, DeepLab's 256 -> 64 3x3 dilation 6 at
# 32x32 + bias + relu, ms, 64-channel tiles (ONNX Runtime 1.51): one pass 1.98, blocks of 8
# channels 1.75, 16 (this) 1.57, either order; 32-channel tiles 1.96-2.25 at any block. (At
# 64-channel tiles, 2304 bytes a channel, ``channel_block`` makes these 32 KB 8-channel blocks.)
# Rocket Lake, the same conv alone, one thread, A/B one process, 9 interleaved rounds, thread
# CPU ms (ONNX Runtime 1.64-1.75): with the columns unrolled, blocks of 8 channels 2.79-2.85,
# 16 2.13-2.15, 32 2.78, one pass 2.31; with them as loops (``ROW_TILES_UNROLL_KX``) 8
# channels 1.82-1.87, 16 1.82-1.88, one pass 1.95 (kept)
ROW_TILES_CHANNEL_BLOCK_BYTES = 32 * 1024
# ... and their filter columns unrolled (``lanes_unroll_kx``) or loops: a row tile runs each
# run of columns with its own taps, so unrolled columns multiply its code. Rocket Lake, the same
# conv alone (16-channel blocks; 8 within the noise of it, above; one thread, one process, 9
# interleaved rounds, thread CPU ms;
# ONNX Runtime 1.71-1.75): unrolled 2.13-2.18, loops 1.92 (the filter rows loops too: 1.89-2.00).
# Elsewhere not measured: unrolled
ROW_TILES_UNROLL_KX = {"rocketlake": False, "avx512": True, "avx2": True}
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
# (``conv_lanes_emit``'s row tiles), when the filter columns reading only padding are at least this share of a
# row's taps (``row_segments``). Measured on a Zen 4, one thread, 256 -> 64 3x3 + bias + relu
# at 32x32 against ONNX Runtime (row tiles vs conv_direct's row mode, which computes every
# filter column): dilation 4 1.01x vs 1.02x, 6 0.98x vs 1.04x, 12 0.93-0.99x vs 1.09-1.15x, 18
# 0.92-0.95x vs 1.27x; read from the unpadded input itself (planes of 32x32 floats, 4 KB apart,
# alias in L1) rather than ``conv_lanes_emit``'s packed copy's copy 1.55x. Both ISAs (the Zen 4 measurement)
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
# ... and strided convs on these ISAs too (where ``DIRECT`` is off): a stride-2 conv's copy is
# four times the plane its tiles compute, and a grouped conv's tiles reduce over few channels
# (16 a group in RegNet), so the copy is a large share of the call. Zen 3 (AVX2), one thread,
# conv + bias + relu alone, A/B in one process, 9-11 interleaved rounds, ms, padded copy ->
# direct (ONNX Runtime): regnet_like's grouped 3x3 / 2 convs, 16 channels a group, 96 at 56x56
# 0.432 -> 0.303 (0.411) / 0.420 -> 0.346 (0.463), 208 at 28x28 0.268 -> 0.205 (0.277) / 0.266
# -> 0.193 (0.237), 432 at 14x14 0.163 -> 0.095 (0.140) / 0.159 -> 0.089 (0.131); ResNet-50's
# 3x3 / 2 convs within the noise (128 at 56x56 3.23 -> 3.20, 256 at 28x28 3.04 -> 3.12, 512 at
# 14x14 3.55 -> 3.36). Stride-1 grouped convs gained nothing (48 at 56x56 0.469 -> 0.455, 208 at
# 14x14 0.213 -> 0.231): they keep ``DIRECT``'s choice
DIRECT_STRIDED = {"avx512": True, "avx2": True}
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


def geometry(t) -> dict | None:
    """Sizes of conv2d stage ``t`` for this schedule, or None when it does not apply: not a
    static float32 NCHW conv (its weight float32, or int8: ``common.int8_weight_conv``), a
    filter of two or more taps, a multiple of 16 output channels per group for a grouped conv
    (groups 1: ``o`` is rounded up to one, or on a small plane to 32s, ``PAD_WIDTH``;
    ``real_o`` the conv's) and at least ``MIN_PIXELS`` output pixels.

    A grouped conv (ResNeXt's later stages, RegNet) runs as its groups' convs side by side: a
    tile's 16 output channels belong to one group, and its reduction runs over that group's
    ``c`` input channels (``groups``, ``og`` output channels a group; the weight is already
    ``[O, c, KH, KW]``). A group of output channels not a multiple of 16 (RegNet-X's 24 or 56)
    is zero-padded to one in the packed weight (``real_og`` the group's own; ``o`` and ``og``
    count the padded channels, ``out_channel`` maps a tile's lane to the conv's channel)."""
    dims = static_grouped_conv2d_dims(t, int8_weight=True)
    if dims is None:
        return None
    groups, n, c, h, wd, o, kh, kw, oh, ow = dims
    a = t.op.attrs
    og, real = o // groups, o
    real_og = og
    if groups == 1 and o % LANES:  # zero channels up to a whole tile of 16
        o = og = -(-o // LANES) * LANES
    elif og % LANES:  # (each group's, up to whole tiles: a tile stays in one group)
        og = -(-og // LANES) * LANES
        o = og * groups
    pad = PAD_WIDTH[vector_isa()]
    if groups == 1 and pad and o % pad and o >= PAD_WIDTH_MIN_CHANNELS and \
            oh * ow <= PAD_WIDTH_MAX_PIXELS and not (ODD_WIDTH[vector_isa()] and
                                                     o % ODD_WIDTH[vector_isa()] == 0):
        o = og = -(-o // pad) * pad  # (16 more zero channels: 32-lane tiles, ``PAD_WIDTH``)
    if groups == 1:
        real_og = real
    if kh * kw < 2 or og % LANES or oh * ow < MIN_PIXELS:
        return None
    sh, sw = (int(s) for s in a["strides"])
    dh, dw = (int(d) for d in a["dilation"])
    pt, pl = (int(p) for p in a["padding"][:2])
    hp = (oh - 1) * sh + (kh - 1) * dh + 1  # padded rows and columns the taps read
    wp = (ow - 1) * sw + (kw - 1) * dw + 1
    return dict(n=n, c=c, h=h, w=wd, o=o, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, dh=dh,
                dw=dw, pt=pt, pl=pl, hp=hp, wp=wp, grid=oh * ow, groups=groups, og=og,
                cin=c * groups, real_o=real, real_og=real_og,
                parallel=o * c * kh * kw * oh * ow >= PARALLEL_MIN_MACS)


def direct_default(g) -> bool:
    """Do the tiles of geometry ``g`` read the input itself by default (``DIRECT``, or
    ``DIRECT_STRIDED`` for a strided conv), rather than a zero-padded copy?"""
    strided = g.get("sh", 1) * g.get("sw", 1) > 1
    return DIRECT[vector_isa()] or strided and DIRECT_STRIDED[vector_isa()]


def default_knobs(g) -> dict:
    """The knob values of geometry ``g`` untuned (``tunable.conv2d_space`` declares the rest)."""
    weights = g["o"] * g["c"] * g["kh"] * g["kw"] * 4
    knobs = dict(lanes_order="channels", lanes_cblock=CHANNEL_BLOCK_BYTES,
                 lanes_sums=BLOCK_SUMS, lanes_parts=PARALLEL_PARTS,
                 lanes_unroll_kx=g["kw"] <= host_switch(UNROLL_COLUMNS),
                 lanes_width=widths(g)[-1],
                 lanes_direct=direct_default(g), lanes_rowstore=ROW_STORE[vector_isa()])
    wide = WIDE[vector_isa()]
    if wide in widths(g) and g["c"] * g["kh"] * g["kw"] * wide * 4 <= WIDE_MAX_TILE_WEIGHT_BYTES \
            and (g.get("sh", 1) * g.get("sw", 1) == 1 or g["grid"] <= WIDE_STRIDED_MAX_PIXELS):
        knobs.update(lanes_width=wide, lanes_cblock=0)  # (one pass over the channels)
    if few_taps(g):
        knobs["lanes_width"] = LANES  # (few FMAs a tile: store-bound, FEW_TAPS_MAX)
    if "ow" in g and row_segments(g) is not None:
        knobs["lanes_cblock"] = ROW_TILES_CHANNEL_BLOCK_BYTES
        knobs["lanes_unroll_kx"] = knobs["lanes_unroll_kx"] and host_switch(ROW_TILES_UNROLL_KX)
    if "ow" in g and knobs["lanes_rowstore"] and knobs["lanes_direct"] and \
            g["sh"] * g["sw"] > 1 and g["kh"] * g["kw"] <= 9 and LANES in widths(g) and \
            max(k[3] for k in pixel_classes(g)) >= ROW_STORE_MIN_COLUMNS:
        knobs["lanes_width"] = LANES  # (strided: 16-lane tiles in rows, ROW_STORE)
    wide_strided = "ow" in g and wide_strided_tiles(g)
    if wide_strided:
        one_pass = g["c"] * g["kh"] * g["kw"] * wide * 4 <= WIDE_MAX_TILE_WEIGHT_BYTES
        knobs.update(lanes_width=wide, lanes_cblock=0 if one_pass else CHANNEL_BLOCK_BYTES)
    if knobs["lanes_direct"] and g["grid"] <= DIRECT_MODEL_MAX_PIXELS and "oh" in g and \
            tap_cycles(dict(g, **knobs), True) > \
            DIRECT_MODEL_MARGIN * tap_cycles(dict(g, **knobs), False):
        knobs["lanes_direct"] = False  # (a small plane's classes make tiles too small)
    if weights <= BANDS_MAX_WEIGHT_BYTES and not wide_strided and \
            band_split(dict(g, **knobs), plane_tiles(dict(g, **knobs), g["grid"])[0][2])[0] \
            >= BANDS_MIN:
        knobs["lanes_order"] = "bands"
    return knobs


def few_taps(g) -> bool:
    """Does conv geometry ``g`` take 16-lane tiles for its few taps an output (``FEW_TAPS_MAX``,
    by ISA; an int: every ISA's, as an A/B sets it): groups 1, stride 1, at most that many input
    channels x filter taps, 16 a width it runs?"""
    limit = FEW_TAPS_MAX if isinstance(FEW_TAPS_MAX, int) else FEW_TAPS_MAX[vector_isa()]
    return g.get("groups", 1) == 1 and g.get("sh", 1) * g.get("sw", 1) == 1 and \
        g["c"] * g["kh"] * g["kw"] <= limit and LANES in widths(g)


def wide_strided_tiles(g) -> bool:
    """Does strided conv geometry ``g`` take ``WIDE`` tiles whatever its plane
    (``WIDE_STRIDED_ANY_PLANE``, by host): groups 1, at most 9 taps a filter, at least
    ``WIDE_STRIDED_MIN_CHANNELS`` input channels, output channels a multiple of ``WIDE``?"""
    wide = WIDE[vector_isa()]
    return bool(wide) and g["groups"] == 1 and g["sh"] * g["sw"] > 1 and \
        g["c"] >= WIDE_STRIDED_MIN_CHANNELS and \
        g["kh"] * g["kw"] <= 9 and wide in widths(g) and host_switch(WIDE_STRIDED_ANY_PLANE)


def tap_cycles(g, direct: bool) -> float:
    """A model of the cycles the pixel tiles of geometry ``g`` (with its knobs) take per input
    channel and output-channel tile, reading the input itself (``direct``: each class of
    ``pixel_classes`` runs its own tiles and only its taps) or the padded copy (tiles over the
    whole plane, the filter rows trimmed to their output rows', ``tap_rows``): per tap, a tile
    of ``a`` accumulator vectors and ``l`` loads takes the most of the FMA latency, ``a`` over
    the FMA ports and ``l`` over the load ports."""
    vecs = max(1, width(g) // (16 if vector_isa() == "avx512" else 8))  # vector registers

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
            lo = row_bounds(g, (p0 + pixels - 1) // g["ow"])[0]
            hi = row_bounds(g, p0 // g["ow"])[1]
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


def width(g) -> int:
    """Output channels of a tile of geometry ``g`` (``lanes_width``)."""
    return g.get("lanes_width", LANES)


def _enabled(options) -> bool:
    return ENABLED[vector_isa()] and (options is None or options.generated_conv)


def supported(t, options=None) -> bool:
    """Would this schedule take stage ``t`` once its weight is prepacked (``ENABLED`` for the
    host's ISA, generated convs allowed)?"""
    return _enabled(options) and geometry(t) is not None


def out_channel(g, ob, ll):
    """The conv's output channel of lane ``ll`` of channel tile ``ob`` (``lanes_width`` wide):
    ``ob * width + ll``, but where a group's channels are padded to whole tiles, the group's
    first real channel plus the lane's place in the group."""
    cw = width(g)
    if g["groups"] == 1 or g["real_og"] == g["og"]:
        return ob * cw + ll
    gi = E.FloorDiv(ob * cw, g["og"])
    return gi * g["real_og"] + (E.FloorMod(ob * cw, g["og"]) + ll)


def tile_tail(g, ob):
    """(real output channels of a last tile, the condition that tile ``ob`` is whole) where
    some tile holds padding channels (the conv's last tile, or each group's last where groups
    are padded), else None."""
    cw = width(g)
    tail = g["real_og"] - (g["og"] // cw - 1) * cw
    if tail == cw:
        return None
    if g["groups"] == 1:
        return tail, E.LE((ob + 1) * cw, g["real_o"])
    return tail, E.LE(E.FloorMod(ob * cw, g["og"]) + cw, g["real_og"])


def lane_is_real(g, ob, ll):
    """Does lane ``ll`` of channel tile ``ob`` hold a real output channel (not padding)?"""
    if g["groups"] == 1:
        return E.LT(ob * width(g) + ll, g["real_o"])
    return E.LT(E.FloorMod(ob * width(g), g["og"]) + ll, g["real_og"])


def grouped_supported(t, options=None) -> bool:
    """Does this schedule take grouped conv ``t`` (its rule in ``lower.RULES``): a group of at
    least ``GROUPED_MIN_TAPS`` taps per output channel (fewer: ``depthwise``'s) and 16s of
    output channels a group; the weight must be a constant, prepacked at build time."""
    g = geometry(t) if _enabled(options) and not int8_weight_conv(t) else None
    return g is not None and g["groups"] > 1 and g["c"] * g["kh"] * g["kw"] >= GROUPED_MIN_TAPS


class PackWeight:
    """Picklable numpy transform of a ``[O, C, KH, KW]`` weight to ``[O/16, C, KH, KW, 16]``
    (``o`` a multiple of 16: the weight's ``real_o`` channels, then zeros; with ``groups``
    whose channels are padded, each group's real channels, then its zeros): float32, or int8
    for an int8 weight (``common.int8_weight_conv``: ``tile`` widens it as it loads it)."""

    def __init__(self, o: int, c: int, kh: int, kw: int, real_o: int | None = None,
                 groups: int = 1):
        self.o, self.c, self.kh, self.kw, self.groups = o, c, kh, kw, groups
        self.real_o = o if real_o is None else real_o

    def __call__(self, w):
        w = np.asarray(w)
        w = w if w.dtype == np.int8 else w.astype("float32", copy=False)  # (no 2nd copy)
        groups = getattr(self, "groups", 1)  # (archives pickled before groups)
        if getattr(self, "real_o", self.o) != self.o:  # (archives pickled before real_o)
            w = w.reshape(groups, w.shape[0] // groups, *w.shape[1:])
            pad = np.zeros((groups, (self.o - self.real_o) // groups, *w.shape[2:]), w.dtype)
            w = np.concatenate([w, pad], axis=1).reshape(self.o, *w.shape[2:])
        w = w.reshape(self.o // LANES, LANES, self.c, self.kh, self.kw).transpose(0, 2, 3, 4, 1)
        out = aligned_empty(w.shape, w.dtype)  # (kept as is by ``aligned``: one copy)
        np.copyto(out, w)
        return out


def packed_weight(t) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of conv2d ``t``'s constant weight."""
    g = geometry(t)
    if g is None:
        raise ValueError(f"conv_lanes.packed_weight: stage {t.name!r} is not a conv2d this "
                         "schedule takes")
    return (g["o"] // LANES, g["c"], g["kh"], g["kw"], LANES), \
        PackWeight(g["o"], g["c"], g["kh"], g["kw"], g["real_o"], g["groups"])


def tile_pixels(g) -> int:
    """The most pixels a tile of geometry ``g`` holds: 6, or ``NARROW_PIXELS`` for 16 lanes."""
    return NARROW_PIXELS[vector_isa()] if width(g) == LANES else 6


def row_tile_pixels(g, cols: int) -> int:
    """The most pixels a tile of a row of ``cols`` pixels holds in rows (``lanes_rowstore``):
    the row in the nearest number of ``tile_pixels`` tiles where none is more than
    ``ROW_TILE_SLACK`` pixels larger (16 lanes; other widths none), else in the fewest tiles of
    at most ``tile_pixels``."""
    most = tile_pixels(g)
    slack = ROW_TILE_SLACK if width(g) == LANES else 0
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
    rows = _runs(g["oh"], lambda oy: row_bounds(g, oy))
    cols = col_segments(g)
    out = [(r0, nr, c0, nc, (ky0, ky1), (kx0, kx1)) for r0, nr, ky0, ky1 in rows
           for c0, nc, kx0, kx1 in cols]
    return sorted(out, key=lambda k: -k[1] * k[3])


def pack_channels(g) -> int:
    """Input channels a block of ``conv_lanes_emit``'s packed copy's copy holds side by side: 16, else the largest power
    of two dividing a group's channels."""
    cb = 16
    while g["c"] % cb:
        cb //= 2
    return cb


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
    """``col_segments`` when the tiles follow them (``conv_lanes_emit``'s row tiles): when the filter columns
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


def band_tiles(g) -> int:
    """Pixel tiles whose partial sums one scratch of ``lanes_sums`` floats holds."""
    return max(1, g["lanes_sums"] // (tile_pixels(g) * width(g)))


def band_split(g, count: int) -> tuple[int, int]:
    """(bands, tiles a band) of ``count`` pixel tiles in the "bands" order: bands of at most
    ``band_tiles`` tiles, their number a multiple of ``lanes_parts`` on the thread pool so that
    the threads get equal shares."""
    bands = -(-count // band_tiles(g))
    if g["parallel"]:
        parts = g["lanes_parts"]
        bands = min(count, -(-bands // parts) * parts)
    return bands, -(-count // bands)


def trims_rows(g) -> bool:
    """Does some output row of geometry ``g`` have filter rows that read only padding (rows
    ``pt`` above or below the input: a dilated conv, or a small plane)? Then a tile runs only
    the filter rows some of its output rows need (``tap_rows``), as ONNX Runtime skips the
    padding taps: a 3x3 conv of dilation 6 at 32x32 does 12% fewer multiply-adds, one of
    dilation 2 4%, a 3x3 conv at 7x7 10%."""
    return row_bounds(g, 0)[0] > 0 or row_bounds(g, g["oh"] - 1)[1] < g["kh"]


def row_bounds(g, oy):
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
    lo, hi = row_bounds(g, last)[0], row_bounds(g, first)[1]
    return lo, E.Max(hi - lo, E.IntImm("int32", 0))


def channel_block(g) -> int:
    """Input channels per pass over a band of pixel tiles: their weights (``KH*KW*16`` floats
    a channel) kept to about ``CHANNEL_BLOCK_BYTES`` so that they stay in L1 over the band;
    block sizes divide the channel count, else there is one pass."""
    c = g["c"]
    if not g["lanes_cblock"]:
        return c
    target = max(1, g["lanes_cblock"] // (g["kh"] * g["kw"] * width(g) * 4))
    if c < 2 * target:
        return c
    return divisor_near(c, target) or c


# a conv whose only reader is a k x k / k max pool (``conv_pool``; padded or ceil-mode windows
# clamped into the plane, ``window_pixel``) pools in its tiles: the
# pixel table lists the pooled windows one after another (each window's k*k conv pixels in
# turn), a tile holds whole windows, and its store applies the conv's elementwise epilogue to
# each pixel, combines a window's pixels and stores one pooled value a window, so the conv's
# map is never written. A tile keeps at most POOL_MAX_ACCUMULATORS accumulators of 16 lanes.
POOL_MAX_ACCUMULATORS = 24
# ... and more than one window only within POOL_TILE_VECTORS vector registers of accumulators
# (``pool_windows``, by ISA): on AVX2 a 16-lane tile is two ymm registers a pixel, so two 2x2
# windows (8 pixels, 16 accumulators) left no register of the 16 for the weights and the
# broadcast input and spilled. Zen 3 (AVX2), one thread, conv + bias + relu + 2x2 max pool,
# A/B in one process, 9 interleaved rounds of median-of-10, thread CPU ms, two kernels /
# pooled two windows a tile / one window a tile (ONNX Runtime): 1 -> 16 3x3 at 28x28 batch 32
# (soft_decision_tree's stem) 0.342 / 0.244 / 0.180 (0.202). AVX-512 (16 lanes one zmm): the
# same bound as POOL_MAX_ACCUMULATORS
POOL_TILE_VECTORS = {"avx512": 24, "avx2": 12}
# ... by default only for convs of few taps an output (``few_taps``: an RGB or grayscale stem,
# whose tiles' time is their stores, so that the map's stores and the pool's pass are most of
# the two kernels' time); ``POOL_ANY_CONV`` pools every conv whose tiles hold a window. The
# pooled tiles read the padded copy and compute the taps that read padding (a window's pixels
# share its tile's taps) where the direct tiles skip them. Intel Xeon (LLVM's "rocketlake"),
# one thread, conv + bias + relu + 2x2 max pool, A/B in one process, 15 interleaved rounds,
# ms, two kernels / pooled in the tiles: few taps, 3 -> 32 3x3 at 28x28 batch 75 (ProtoNet's
# stem) 1.66 / 1.14, batch 1 0.0175 / 0.0142, 3 -> 32 at 56x56 batch 8 0.629 / 0.415, at
# 112x112 batch 1 0.225 / 0.222; more taps, mixed: 32 -> 32 at 14x14 batch 1 0.025 / 0.032,
# at 7x7 batch 1 / 25 / 75 0.0067 / 0.0065, 0.169 / 0.159, 0.474 / 0.485, 16 -> 64 at 10x10
# 0.0151 / 0.0132, 16 -> 32 5x5 at 32x32 0.155 / 0.148, 32 -> 64 3x3 / 2 at 56x56 0.202 /
# 0.215 (64-lane tiles of one window). (Convs Winograd or ``conv_direct`` take are not pooled.)
POOL_ANY_CONV = False
# ... and windows at a stride below their size (overlapping: ResNet's and SqueezeNet's 3x3 / 2)
# only with POOL_OVERLAP: each window's k*k pixels are computed for it (``window_pixel``), those
# its neighbours share again, 2.25x the conv's multiply-adds at 3x3 / 2, 4x at 2x2 / 1, which
# lost where the map's stores saved. Padded and overhanging (ceil-mode) windows at stride k are
# pooled (their outside positions clamped into the window: no pixel computed twice). Intel Xeon
# (LLVM's "rocketlake"), a loaded machine, one thread, conv + bias + relu + max pool, A/B in one
# process, 7 interleaved rounds of median-of-10, thread CPU ms, two kernels / pooled in the
# tiles: 3 -> 32 3x3 at 28x28 batch 25, 2x2 / 2 padding 1: 0.498 / 0.339; overlapping: 3x3 / 2
# padding 1, 3 -> 32 at 56x56 batch 4 0.274 / 0.451, 3 -> 64 batch 2 0.298 / 0.447; 2x2 / 1
# batch 25 0.582 / 1.245; 1 -> 32 at 28x28 batch 16, 3x3 / 2 0.171 / 0.174.
POOL_OVERLAP = False


def pool_windows(g, k: int) -> int | None:
    """Pooled windows of ``k x k`` conv pixels a tile of geometry ``g`` (with its knobs) holds:
    the nearest whole number of windows to ``tile_pixels``, at least one, within
    ``POOL_MAX_ACCUMULATORS`` accumulators of 16 lanes and, beyond one window, within
    ``POOL_TILE_VECTORS`` vector registers (by ISA); None when one window is too many."""
    taps = k * k
    if taps * (width(g) // LANES) > POOL_MAX_ACCUMULATORS:
        return None
    vecs = width(g) // (16 if vector_isa() == "avx512" else 8)  # vector registers a pixel
    n = max(1, round(tile_pixels(g) / taps))
    while n > 1 and n * taps * vecs > POOL_TILE_VECTORS[vector_isa()]:
        n -= 1
    return n


def pool_tiles(g, windows: int) -> list[tuple[int, int, int]]:
    """``windows`` pooled windows (``g["pool"]``: k, pooled rows and columns) as groups
    ``(first slot, pixels, tiles)`` of tiles of ``pool_windows`` whole windows each, the rest
    in one last tile."""
    k = g["pool"][0]
    per = pool_windows(g, k)
    taps = k * k
    whole, rest = divmod(windows, per)
    groups = [(0, per * taps, whole)] if whole else []
    if rest:
        groups.append((whole * per * taps, rest * taps, 1))
    return groups


def pool_classes(g) -> list[tuple[int, int, int, int, tuple[int, int], tuple[int, int]]]:
    """The pooled plane (``g["pool"]``: k, pooled rows and columns) as rectangles of windows
    ``(first row, rows, first column, columns, filter rows, filter columns)`` whose ``k x k``
    conv pixels together read input through the same filter rows and columns (the union of
    their pixels' ranges; the other taps read only padding for every pixel of the window), the
    largest first: ``pixel_classes`` for windows."""
    k, ph, pw = g["pool"]
    s, pt, pl = pool_at(g)

    def span(i, pad, n):  # (first, last) conv row or column of the windows at ``i``
        return min(max(i * s - pad, 0), n - 1), min(max(i * s - pad + k - 1, 0), n - 1)

    rows = _runs(ph, lambda py: (row_bounds(g, span(py, pt, g["oh"])[1])[0],
                                 row_bounds(g, span(py, pt, g["oh"])[0])[1]))
    cols = _runs(pw, lambda px: (_col_bounds(g, span(px, pl, g["ow"])[1])[0],
                                 _col_bounds(g, span(px, pl, g["ow"])[0])[1]))
    out = [(r0, nr, c0, nc, (ky0, ky1), (kx0, kx1)) for r0, nr, ky0, ky1 in rows
           for c0, nc, kx0, kx1 in cols]
    return sorted(out, key=lambda c: -c[1] * c[3])


def pool_at(g) -> tuple[int, int, int]:
    """(stride, top padding, left padding) of the pooled windows of geometry ``g``
    (``g["pool_at"]``; without it windows of ``k`` at stride ``k``, unpadded)."""
    return g.get("pool_at") or (g["pool"][0], 0, 0)


def window_pixel(g, py, px, r):
    """(conv row, conv column) of pixel ``r`` (row-major in the ``k x k`` window) of the
    pooled window at ``(py, px)`` (ints or PrimExprs of int32): a position of a padded or
    overhanging window outside the conv's plane is clamped into it, to a pixel of the same
    window (every window holds one: ``conv_pool``), which a max takes twice to the same
    value, as the pool's padding never wins."""
    k, ph, pw = g["pool"]
    s, pt, pl = pool_at(g)

    def at(i, dr, pad, n, count):
        v = (i * s if s != 1 else i) + dr
        v = v - pad if pad else v
        if pad == 0 and (count - 1) * s + k <= n:  # (no window leaves the plane)
            return v
        if isinstance(v, int):
            return min(max(v, 0), n - 1)
        return E.Min(E.Max(v, E.IntImm("int32", 0)), E.IntImm("int32", n - 1))

    dy, dx = (r // k, r % k) if isinstance(r, int) else (E.FloorDiv(r, k), E.FloorMod(r, k))
    return at(py, dy, pt, g["oh"], ph), at(px, dx, pl, g["ow"], pw)

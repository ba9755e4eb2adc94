"""conv2d 3x3, stride 1 (NCHW, constant weights) by Winograd's minimal filtering; a grouped
conv as its groups' dense convs in turn, its weight also computed in the graph (transformed
per call, ``transform_at_run_time``).

F(m x m, 3 x 3) (Lavin and Gray, 2015) computes an ``m x m`` block of outputs from an
``a x a`` input tile (``a = m + 2``) as ``Y = A^T [(G g G^T) * (B^T d B)] A``: per tile and
channel pair, ``a * a`` multiplies instead of ``9 m^2`` (F(2x2): 16 for 36, 2.25x fewer;
F(4x4): 36 for 144, 4x fewer). Summed over input channels, the elementwise product becomes
``a * a`` independent GEMMs ``M[xi] = U[xi] @ V[xi]`` of output channels x input channels x
tiles, so the work is a batch of small GEMMs between two cheap linear transforms.

The weights are transformed at build time (``U = G g G^T``, packed per tile of output channels
as ``conv_pointwise`` packs a 1x1 conv's). At run time the parallel loop runs over bands of
tile rows of each image (or, for a batch of small planes, of several whole images:
``IMAGE_BAND_BYTES``); a band

1. copies its input rows, zero padded, into a scratch (``wg_x``) in ``m`` column phases;
2. transforms them into ``V[xi][C][T]`` (``T`` tiles of the band, tile columns in the vector
   lanes: the ``d`` values of 4, 8 or 16 neighbouring tiles are contiguous in a phase);
3. per chunk of output channels (``out_chunk``: all of them unless their products would pass
   ``M_CHUNK_BYTES``), runs the ``a * a`` GEMMs into ``M[xi][O][T]``, per ``xi`` and panel of
   ``nr`` tiles a register tile of each 5 or 6 output channels x the panel; then transforms
   ``M`` back to ``m x m`` output blocks, interleaves each output row's ``m`` phases in
   registers, applies the fused elementwise epilogue (bias, residual add, relu) and stores the
   row.

A band's scratch (``wg_x``, ``V``, ``M``) is a slice of the kernel's workspace: one per thread of
the call where bands run on the pool (``SCRATCH_SLOTS``).

The transforms are written from the matrices (zero coefficients skipped, +-1 as adds), so F(2x2)
and F(4x4) share the code (``wino_m``, a knob). F(4x4)'s transforms have larger coefficients:
its error is about 10x F(2x2)'s (still ~1e-6 relative in float32 for the convs measured).

Measured on a Zen 4 (AVX-512, one thread, thread CPU time, conv + bias + residual + relu, ms,
the direct kernel / F(2x2) / F(4x4), the GEMM tile 16 tiles wide; ONNX Runtime's direct conv
2.26 at 64->64 56x56): 64->64 at 56x56 2.62 / 1.59 / 1.17, 128->128 at 28x28 2.48 / 1.36 /
1.15, 256->256 at 14x14 2.62 / 1.84 / 1.71. The ResNet stem + 2 blocks went from 1.08x
ONNX Runtime's latency to 0.69x, ResNet-50 from 1.00x to 0.86x.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..runtime.ndarray import aligned_empty
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import substitute, transform_expr
from .common import allocated as _allocated
from .common import (
    emit_with_epilogue,
    host_switch,
    per_thread_slices,
    static_grouped_conv2d_dims,
    vector_isa,
)
from .common import imm as _i
from .conv_pointwise import row_tiles
from .knobs import select as _knobs

_F = Fraction
# (B^T, G, A^T) of F(m x m, 3 x 3): input, filter and output transforms
MATRICES = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [_F(1, 2), _F(1, 2), _F(1, 2)], [_F(1, 2), _F(-1, 2), _F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
         [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[_F(1, 4), 0, 0], [_F(-1, 6), _F(-1, 6), _F(-1, 6)], [_F(-1, 6), _F(1, 6), _F(-1, 6)],
         [_F(1, 24), _F(1, 12), _F(1, 6)], [_F(1, 24), _F(-1, 12), _F(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}
# the GEMM's register tile width (tiles, a multiple of 16) by vector ISA. 6 output channels x
# 16 tiles is 12 accumulators of AVX2's 16 ymm registers, but only 6 zmm: too few chains for
# two 512-bit FMA ports, and 7 loads per 6 FMAs. On a Zen 4 (AVX-512, one thread, conv + bias
# + relu, ms, direct 2.41 / 2.41) 64->64 at 56x56 F(4x4) 1.03 at 16, 1.35 at 32, when a band's
# last register tile was moved back over the one before (a band of 42 tiles computed 64 at 32);
# with a tail panel only as wide as the tiles left (``tail_width``: 42 tiles in 32 + 16) the
# band computes no more tiles at 32 than at 16. On an Intel Xeon (Sapphire Rapids class, two
# 512-bit FMA ports), one thread, conv + bias + relu, ms, 16 -> 32 (ONNX Runtime): 32->64
# at 47x47 0.440 -> 0.407 (0.401), 64->64 at 56x56 0.742 -> 0.742 (1.174), 128->128 at 28x28
# 1.015 -> 0.653 (1.104), 256->256 at 14x14 1.304 -> 0.921 (1.095). Rows of 8 or 12 output
# channels (16, 24 accumulators) instead of 6 measured the same there. (AVX2 unchanged)
NR = {"avx512": 32, "avx2": 16}
# the GEMMs' loops per ``xi`` and panel with the output-channel tiles innermost (``_gemms``):
# on AVX-512 (measured on an Intel Xeon); AVX2 keeps the channel tiles outermost, as measured
CHANNEL_TILES_INNER = {"avx512": True, "avx2": False}
# the transforms' last vector of a row, where the tiles left fit half a vector, half as wide
# (``_over_chunks``): on AVX-512. Measured on an Intel Xeon, one thread, conv + bias + relu, ms
# (ONNX Runtime): 32->64 at 47x47 (12 tiles a row) 0.418 -> 0.371 (0.431), 64->96 at 35x35 (9)
# 0.507 -> 0.472 (0.725). AVX2 keeps the whole vector moved back
HALF_TAIL = {"avx512": True, "avx2": False}
# the band's transformed input ``V`` (``a*a * C * T`` floats) is kept at about this size, so it
# stays in L2 while every output-channel tile's GEMMs read it
BAND_BYTES = 1024 * 1024
# (Each band's GEMMs read all of ``U``, so a batch of small planes, a band an image, reads it
# once per image: DeepLab's dilation-2 branch as four 16x16 phase images, 256->64 F(4x4), 16
# tiles an image at the 16-wide tile, ``U`` 2.4 MB. Tried: a band holding the tiles of two
# images (1.2 MB of ``V``), their GEMMs at the 32-wide tile, reading ``U`` half as often.
# Measured on an Intel Xeon (2 MB L2), one thread, ms: that conv alone side by side, after
# 32 MB written elsewhere / run again at once, 1.71 / 1.13 -> 1.61 / 0.98, 1.81 / 1.09 ->
# 1.72 / 1.03 (two images at the 16-wide tile 1.73 / 1.17; all four a band, 2.4 MB of ``V``
# past the L2, 1.81 / 1.50; F(2x2), ``U`` 1 MB, 1.75 / 1.35); but in the model's run order,
# both builds side by side in one process, five runs: 1.45 / 1.60 / 1.53 / 1.48 / 1.41 ->
# 1.49 / 1.56 / 1.51 / 1.47 / 1.41, no gain, as the prefetchers stream ``U`` from L3.
# Not kept.)
# smaller bands where they compute at most this share more tiles than the fewest (``band_rows``),
# by vector ISA: a band's V and M (written by the transforms, read by the GEMMs) of 1 MB each
# filled the L2 of an Intel Xeon; with another process on the machine, 64->64 at 56x56 (two
# bands of 8 tile rows) took 1.54 ms, in bands of 3 rows (7% more tiles) 0.68 (ONNX Runtime
# 1.16); quiet, both 0.66-0.68. AVX2 as measured before
BAND_SLACK = {"avx512": 0.1, "avx2": 0.0}
# a band's products ``M`` (``a*a * O * T`` floats) are computed and transformed back a chunk of
# output channels at a time where all of them would take more than this and more than twice the
# band's transformed input ``V`` (``out_chunk``). With few input and many output channels ``M``
# dominates the scratch: SqueezeNet's 16->64 expand convs at 55x55 (F(4x4), bands of 98 tiles)
# wrote 884 KB of products a band, 1.2 MB of scratch with ``V`` and the input rows, evicting from
# the 2 MB L2 what the next layers read (the 128->16 squeeze conv after them 0.139 ms in the
# model, 0.082 alone); in chunks of 16 channels, 221 KB, read back while still in L2. But each
# chunk reads all of ``V`` again, and its register tiles are the chunk's (``row_tiles``: 64
# channels in 9 tiles of 6 rows and 2 of 5, a chunk of 32 in 2 of 6 and 4 of 5). Measured on an
# Intel Xeon (2 MB L2), one thread, whole models (``bench_winograd_chunks.py``), ms, unbounded ->
# chunked: every conv past 256 KB in chunks, UNet 21.40 -> 23.02, SqueezeNet 4.11 -> 3.97; past
# ``V`` too (UNet's 32->64, 64->128, 128->256 convs in two chunks) UNet 19.52 -> 20.03. As kept
# (only SqueezeNet's expand convs, 16->64 .. 64->256, in chunks of 16-64 channels): SqueezeNet
# chunked / whole over six runs 0.97-1.00, median 0.986 (ORT 3.8-3.9 ms; two identical builds
# side by side differ by up to 2%); the convs alone (``bench_conv_ort.py --against``, before ->
# after): 16->64 at 55x55 0.332 -> 0.322, 32->128 at 27x27 0.241 -> 0.239, 48->192 at 13x13
# 0.143 -> 0.145, 64->256 at 13x13 0.264 -> 0.257; convs of as many input as output channels
# (ResNet's, UNet's) keep their kernels.
M_CHUNK_BYTES = 256 * 1024
MIN_CHUNK_CHANNELS = 16  # a chunk's output channels at least (its register tiles stay full)
# the transforms store (read) a tile vector to (from) all ``a * a`` matrices ``V[xi]`` (``M[xi]``)
# at once: where a matrix (``C`` or ``O`` x the band's tiles) is a multiple of 4 KB, those
# ``a * a`` streams fall in one set of the L1 cache. Where set for the vector ISA, each matrix
# is padded to an odd number of cache lines (``padded``). Measured on an Intel Xeon, one
# thread, conv + bias + relu, ms, unpadded -> padded (direct conv, ONNX Runtime): at 32x32,
# F(4x4), bands of 32 tiles: 64->16 0.149 -> 0.078 (0.100, 0.137), 32->16 0.082 -> 0.044
# (0.050, 0.071), 128->16 0.290 -> 0.149 (0.200, 0.267), 64->64 0.251 -> 0.178 (0.339,
# 0.344), 128->128 0.703 -> 0.557 (1.388, 1.450); ResNet-50's convs (bands of 42 or 49 tiles)
# the same. AVX2 unpadded (not measured)
PAD_MATRICES = {"avx512": True, "avx2": False}
MIN_BLOCKS = 4
# a ragged row's last chunk (``ow`` no multiple of ``m``: SqueezeNet's 55-, 27- and 13-wide
# planes) stores its whole tiles as one vector and only the last tile's columns one by one
# (``_row_store``), where every column of it was a scalar store under a test in a loop.
# Measured on the Intel Xeon LLVM calls "rocketlake", one thread, thread CPU time, interleaved
# rounds, ms, per column -> vector (ONNX Runtime): alone (``bench_conv_ort.py --against``)
# 16->64 at 55x55 0.423 -> 0.350 (0.454), 32->128 at 27x27 0.300 -> 0.282 (0.367), 64->64 at
# 35x35 0.442 -> 0.421 (0.584), 64->96 at 71x71 2.085 -> 2.017 (3.457); SqueezeNet in one
# process (``bench_model_switch.py``) 4.48 / 4.39 -> 4.28 / 4.21 and 4.29 / 4.25 -> 4.12 /
# 4.08 (4.29, 4.25), outputs bit-identical; inception_v3_mini the same (0.965 / 0.962).
RAGGED_TAIL_VECTOR = True
# a row's last block may reach this share of the row past it (Inception v3's 71- and 147-wide
# planes at m = 4, 35 at 4 or 2, 17 at 2; not 7x7 planes, 1/7 at m = 2). Inception v3 at one
# thread, side by side on a Zen 4: 121.2 ms with whole blocks only, 102.9 ms so (ORT 107.4)
RAGGED_WASTE = 1 / 16
MIN_CHANNELS = 16  # fewer input or output channels: the transforms cost more than they save
PARALLEL_MIN_MACS = 1 << 21  # (direct-conv multiply-adds) bands go to the thread pool
INNER_PARALLEL_BELOW = 4  # fewer bands (of all images): a band's channel loops go instead
# A band's scratch (``wg_x``, ``wg_v``, ``wg_m``: 0.2-1 MB, ``scratch_sizes``) is a slice of the
# kernel's workspace, which the executor allocates once: a call neither mallocs nor page-faults
# it. Malloc'd per band and freed, glibc gave the blocks back to the OS unless its thresholds
# were raised (``runtime.malloc_policy``): with MINITVM_NO_MALLOC_TUNING=1, one thread, ms,
# 128->128 at 28x28 1.12 with 530 page faults a call, 0.58 with none from the workspace. Bands on
# the pool run on one slice per thread of the call (``common.num_threads``, at most this many
# slices in the workspace), each thread's bands in turn: a slice per band instead made one thread
# touch them all, 64->64 at 56x56 (5 bands) 0.68 -> 0.74 ms, as they left the L2 cache. Serial
# bands, or bands whose channel loops run on the pool instead, share one slice.
SCRATCH_SLOTS = 8
# untuned builds take this schedule where it applies, with the largest output block that does
# (the measurements at ``NR``: 2.3x and 1.7x faster than the direct convs); where ``MIN_GAIN``
# is set for the vector ISA, only where ``default_choice`` finds a block and tile worth it
DEFAULT_ON = True
# The default on AVX-512 (``default_choice``), from a sweep of 3x3 stride-1 convs on an Intel
# Xeon (Sapphire Rapids class), one thread, conv + bias + relu, ms. The direct convs run near
# the FMA peak (75-100 G multiply-adds/s) at every size, so Winograd wins only by the multiplies
# it saves, and it saves fewer where its bands compute tiles past the plane: a band holds at
# least one register tile of ``NR`` = 32 tiles, so a 16x16 plane at m = 4 (16 tiles) computes
# 32, 4x32 at m = 4 (8 tiles) 32, 14x14 at m = 2 with 512 channels (a band's V capped by
# ``BAND_BYTES``) 96 for 49. The estimate is ``gain`` = ``9 m^2 / (m+2)^2`` (4 at m = 4, 2.25
# at m = 2) times the share of computed tiles that are the plane's (``real_share``); the
# default takes the block size and tile width (``NR``, or ``NARROW_NR``, its gain times
# ``NARROW_WEIGHT``) of the largest, and Winograd only where that is at least ``MIN_GAIN`` and
# the conv has at least ``MIN_DEFAULT_MACS`` direct multiply-adds. Measured with the matrices
# padded (``PAD_MATRICES``), old default (F(4x4) or F(2x2) at 32 wide) / direct / new default
# (ONNX Runtime): to the direct conv: 64->16 at 16x16 0.041 / 0.025 (0.046), 64->16 at 8x8
# 0.017 / 0.009 (0.015), 512->512 at 14x14 5.78 / 4.53 (4.34), 512->128 at 14x14 1.64 / 1.08
# (1.11); a block or tile that fills the register tile: 128->128 at 4x32 0.264 / 0.141 / 0.107
# at m = 2 (0.149), 64->64 at 16x16 0.089 / 0.085 / 0.057 at 16 wide (0.093), 128->128 at
# 16x16 0.282 / 0.328 / 0.182 (0.339), 256->256 at 16x16 0.970 / 1.342 / 0.614 (1.499),
# 64->128 at 8x32 0.146 / 0.160 / 0.094 (0.163), 256->256 at 28x28 3.11 / 4.12 / 2.45 (4.31),
# 256->64 at 28x28 0.997 / 1.000 / 0.800 (1.116). With the same share of real tiles 32 wide beat
# 16 (128->32 at 28x28 0.213, 0.247; 64->64 at 56x56 0.665, 0.681, 128->128 at 56x56 2.32,
# 2.80). Unchanged: ResNet-50's 64 at 56x56 0.671 (direct 1.089), 128 at 28x28 0.579 (1.010),
# 256 at 14x14 at m = 2 0.923 (0.991). Under ``MIN_DEFAULT_MACS`` the best Winograd was at
# most 10% faster than the direct conv, often slower (32->32 at 16x16 0.021 / 0.023, 16->16 at
# 32x32 0.023 / 0.024, 16->16 at 16x16 0.008 / 0.007). AVX2 keeps every conv that applies, at
# the largest block and ``NR`` (not measured here)
MIN_GAIN = {"avx512": 1.6, "avx2": None}
MIN_DEFAULT_MACS = {"avx512": 1 << 22, "avx2": 0}
# AVX2's exception to "every conv that applies": a conv of fewer output than input channels
# whose output has at most DIRECT_SMALL_OUTPUT elements (channels x pixels; groups of one) is
# direct, where each input channel's transform serves few outputs. AVX2 code (-mcpu=haswell on
# the Rocket Lake Xeon, one thread, conv alone, 7 interleaved rounds, thread CPU ms, Winograd /
# direct): lost, 64->16 at 16x16 0.068 / 0.053, at 8x8 0.025 / 0.016, 32->16 at 16x16 0.030 /
# 0.026, 128->16 at 16x16 0.125 / 0.104, 256->16 at 8x8 0.085 / 0.063, 64->32 at 8x8 0.030 /
# 0.026, 64->8 at 16x16 0.027 / 0.028; kept, 64->64 at 8x8 0.042 / 0.052, 16->16 at 16x16
# 0.010 / 0.013, 32->32 at 16x16 0.041 / 0.049, 64->16 at 32x32 0.154 / 0.202, 32->16 at 32x32
# 0.078 / 0.097, 64->32 at 16x16 0.078 / 0.098, 128->24 at 14x14 0.097 / 0.224, and every
# ResNet-50 stage (0.29-0.96x of direct; 512->512 at 7x7 equal)
DIRECT_SMALL_OUTPUT = {"avx512": 0, "avx2": 4096}
# A batch of small planes: a band may hold several whole images (``band_images``), so its
# GEMMs' register tiles of ``NR`` tiles run over the tiles of all of them, where one image's
# band computes many tiles past the plane (14x14 at F(2x2), 7x7 tiles: bands of 28 tiles in two
# 16-wide panels, 64 computed for 49; four images a band, 208 for 196). Where set for the
# vector ISA, the most bytes a band's ``V`` and ``M`` take together so (0: a band is one
# image's rows). Measured on a Zen 3 (AVX2, 512 KB L2, loaded), one thread, thread CPU time,
# 9 interleaved rounds, conv + bias + relu + 2x2 max pool, ms, budget 0 / 512 KB / 1 MB (ORT):
# soft_decision_tree's 16->32 at 14x14 batch 32 0.740 / 0.609 / 0.579 (0.674), 16->32 at 28x28
# batch 8 0.626 / 0.616 / 0.575 (0.681), 32->64 at 14x14 batch 16 1.088 / 1.065 / 0.965
# (1.324), 32->32 at 16x16 batch 4 0.179 / 0.183 / 0.187 (0.219, one image's bands already
# whole panels: unchanged); 4 MB lost again (16->32 at 14x14 batch 32 0.95 against 0.68 at
# 1 MB). The direct conv (``impl`` direct) lost to Winograd on each of these (conv alone,
# ``bench_conv_ort.py --set small_channel``: 16->32 at 14x14 batch 32 0.996 / 0.591, 16->64 at
# 56x56 0.807 / 0.469). Not measured on AVX-512, where it stays off
IMAGE_BAND_BYTES = {"avx512": 0, "avx2": 1024 * 1024}
NARROW_NR = 16
NARROW_WEIGHT = 0.85
# A grouped conv's groups of fewer input channels than this (RegNet's 16, ResNeXt 32x4d's 16
# at 14x14) take F(2x2) by default, and only where ``default_choice``'s gain is at least
# GROUPED_NARROW_MIN_GAIN (a share of computed tiles that are the plane's of 7/8 or more):
# the transforms, per input and output channel, weigh more against a group's short GEMMs
# (``c`` long) than against a dense conv's, and so do the tiles computed past the plane. Zen 4,
# one thread, conv + bias + relu, ms, conv_lanes / F(2x2) / F(4x4) (ONNX Runtime), 16 channels
# a group, F(2x2)'s gain: won, 48 g3 at 56x56 0.395 / 0.292 / 0.297 (0.443) 2.25, 96 g6 at
# 28x28 0.190 / 0.160 / 0.192 (0.248) 1.97, 128 g8 at 28x28 0.254 / 0.214 / 0.254 (0.311)
# 1.97, at 32x32 0.358 / 0.232 (0.388) 2.25, at 24x24 0.186 / 0.144 (0.238) 2.25, at 16x16
# 0.084 / 0.061 (0.108) 2.25, 160 g10 at 20x20 0.161 / 0.153, 0.160 / 0.140 (0.196) 2.01;
# lost, 144 g9 at 18x18 0.115 / 0.120 (0.161) 1.90, at 14x14 (1.72) 208 g13 0.101 / 0.113
# (0.132), 256 g16 0.123 / 0.145 (0.163), 512 g32 0.250 / 0.282 (0.307). 32 a group at
# 14x14, 256 g8 0.251 / 0.211 (0.267); 64 at 14x14, 512 g8 1.026 / 0.729 (1.145)
# By host (``common.host_switch``): on the Intel Xeon LLVM calls "rocketlake" (two 512-bit FMA
# ports), where conv_lanes' 16-channel tiles of 12 pixels run these groups faster, only a gain
# of 2.1 (every computed tile real, or nearly). There, one thread, conv + bias + relu, A/B in
# one process, 9 interleaved rounds, thread CPU ms, F(2x2) / conv_lanes (ONNX Runtime), gain:
# 96 g6 at 28x28 0.204 / 0.149 (0.207) 1.97, 128 g8 at 28x28 0.272 / 0.194 (0.297) 1.97, 160
# g10 at 20x20 0.164 / 0.130 (0.159) 2.01; kept on F(2x2), 128 g8 at 32x32 0.219 / 0.306
# (0.388) 2.25, at 24x24 0.161 / 0.144 (0.221) 2.25, at 16x16 0.072 / 0.071 (0.094) 2.25, 48 g3
# at 56x56 0.320 / 0.307 (0.439) 2.25. (At a gain of 2.25 neither wins everywhere: after a 4 MB
# flush, F(2x2) / conv_lanes, 48 g3 at 56x56 0.40 / 0.36, 96 g6 at 56x56 0.76 / 0.72, 128 g8 at
# 24x24 0.22 / 0.20, 256 g16 at 16x16 0.20 / 0.19, but 64 g4 at 48x48 0.34 / 0.36, 128 g8 at
# 32x32 0.29 / 0.35 and 64 g4 at 64x64 0.54 / 0.65, planes whose rows alias in L1; in
# regnet_like's graph order its 48 g3 at 56x56 0.427 / 0.356.)
GROUPED_NARROW_CHANNELS = 32
GROUPED_NARROW_MIN_GAIN = {"rocketlake": 2.1, "avx512": 1.95, "avx2": 1.95}
# (Not acted on: a 24x24 output, where F(4x4)'s one band of 36 tiles is a 32-tile panel and a
# 4-tile tail (``real_share`` 0.75, gain 3.0 against F(2x2)'s 2.25), measured faster at F(2x2)
# with 32 or 64 channels a group. Intel Xeon, one thread, conv + bias + relu alone, 9
# interleaved rounds, thread CPU ms, default F(4x4) / F(2x2) (ONNX Runtime): SiamFC's 2 groups
# of 32 at 26x26 -> 24x24 batch 2 0.282 / 0.216 (0.282), again 0.307 / 0.233 (0.297); dense
# 64 -> 64 at 24x24 0.178 / 0.168 (0.249), at 26x26 -> 24x24 batch 2 0.371 / 0.341 (0.502); but
# 128 -> 128 at 24x24 0.576 / 0.638 (1.057), and grouped 4 of 32 at 28x28 (share 0.766) 0.356 /
# 0.426, 2 of 64 at 32x32 0.436 / 0.557, 2 of 32 at 56x56 0.556 / 0.596 kept F(4x4). One
# geometry's data: no rule drawn from it.)
# a grouped conv whose weight the graph computes (a hypernetwork's dynamic conv: its batch as
# groups) has the weight transformed per call (``transform_at_run_time``, scalar code: about
# 130 multiply-adds and a2 scattered stores a filter) on planes of at least
# RUN_TIME_MIN_PIXELS output pixels; on smaller ones the transform costs what it saves, and the
# conv runs on channel lanes, the weight packed per call. A dense one keeps the direct conv.
# Zen 4, one thread, conv + relu, the weight an input times a constant, ms, channel lanes /
# Winograd here / split into dense direct convs (the SplitGroupedConv pass this replaced)
# (ONNX Runtime): 2 groups of 32 at 32x32 0.503 / 0.269 / 0.349 (0.510), 3 of 32 at 32x32
# 0.763 / 0.431 / 0.549 (0.872), 2 of 32 at 56x56 - / 0.676 / 1.210 (1.570); 4 of 32 at
# 28x28 0.540 / 0.585 (0.875), 2 of 64 at 16x16 0.363 / 0.791 / 0.376 (0.472). (Stride 2, on
# channel lanes: 2 of 64 to 14x14 0.276, split 0.424, ORT 0.425.)
RUN_TIME_WEIGHTS = True
RUN_TIME_MIN_PIXELS = 1024
# (Tried: the narrow tile for convs of at most 16 input channels whose band at ``NR`` holds
# over ``BAND_BYTES`` of V and M together and at ``NARROW_NR`` does not (``band_rows`` bounds V
# only; at 16 inputs M is the traffic). Alone, one thread, ms, 32 -> 16 wide (ONNX Runtime):
# SqueezeNet's 16->64 at 55x55 (bands of 7 tile rows, V + M 1.1 MB -> 2 rows, 0.3 MB) 0.347 ->
# 0.325, 0.325 -> 0.308, 0.297 -> 0.280, 0.333 -> 0.315 (0.345, 0.322, 0.312, 0.339), 16->128 at
# 55x55 0.665 -> 0.590 (0.666); where the band is no smaller the narrow tile lost (16->64 at
# 111x111 1.351 -> 1.388, 16->96 at 40x40 0.225 -> 0.231), as with more inputs (32->64 at
# 55x55 0.463 -> 0.476). But in SqueezeNet's run order, both builds side by side in one
# process, the two 16->64 convs went 0.429 / 0.389 -> 0.439 / 0.357 and 0.447 / 0.344, the
# model 4.285 -> 4.280 and 4.247 -> 4.252 ms: no gain. Not kept.)
# (Tried on the Intel Xeon LLVM calls "rocketlake", one thread, one process, interleaved, ms:
# SqueezeNet's 16-input-channel 3x3 convs on the direct conv (``MIN_CHANNELS`` 17), the model
# 4.19 -> 4.45 (ONNX Runtime 4.34); F(2x2) only, in graph order, its 16->64 at 55x55 0.407 /
# 0.394 -> 0.433 / 0.366, all its kernels 4.07 -> 4.14; DeepLab's dilation-2 branch (256->64
# at 4x16x16 after space-to-batch, F(4x4): 2.4 MB of transformed weights) 1.44 -> 1.31 in graph
# order, but alone after a 4 MB flush 0.97 -> 1.12, the model 14.17 -> 13.93 (ORT 14.11),
# within its noise. Not changed. Again there, both builds in one process, 15 interleaved rounds
# of a median of 5 runs, thread CPU ms: F(2x2) for that branch (every conv whose F(4x4) ``U``
# would pass 2 MB), the model 13.62 -> 14.03, F(2x2) faster in 4 of 15; the same rule on
# ResNet-50 (its 128->128 3x3 convs at 28x28, 11 rounds) 50.52 -> 52.68. That conv's in-model
# loss is its data out of the caches the other layers leave (``bench_cache_state.py``: graph
# 1.21 / hot 0.91 / after a 32 MB pass 0.87 / after the other kernels 1.16 ms), which F(2x2)'s
# 1 MB ``U`` does not win back.)


def geometry(t, knobs: dict | None = None) -> dict | None:
    """Sizes of conv2d stage ``t`` for this schedule, or None when it does not apply: not a
    static float32 NCHW 3x3 conv of stride and dilation 1, at least ``MIN_CHANNELS`` input
    and output channels (a group's), at least ``MIN_BLOCKS`` ``m``-wide blocks in a row (the
    vector lanes: 4, 8 or 16), the last of which may reach past the row by at most
    ``RAGGED_WASTE`` of it (71 columns in 18 blocks of 4: its 72nd is computed, not stored).

    A grouped conv (ResNeXt, RegNet) is its ``groups`` dense convs of ``c`` input and ``og``
    output channels each, run in turn inside a band (``_emit``): the band's scratch holds one
    group's transformed input and products (``c`` the input channels of a group, ``o`` all
    the output channels)."""
    dims = static_grouped_conv2d_dims(t)
    if dims is None:
        return None
    groups, n, c, h, wd, o, kh, kw, oh, ow = dims
    og = o // groups
    a = t.op.attrs
    if (kh, kw) != (3, 3) or tuple(int(s) for s in a["strides"]) != (1, 1) or \
            tuple(int(d) for d in a["dilation"]) != (1, 1) or min(c, og) < MIN_CHANNELS:
        return None
    knobs = knobs if knobs and "wino_m" in knobs else default_knobs(t)
    m = knobs["wino_m"]
    tw = -(-ow // m)
    if tw < MIN_BLOCKS or tw * m - ow > RAGGED_WASTE * ow:
        return None
    th = -(-oh // m)
    lx = 16 if tw >= 16 else 8 if tw >= 8 else 4
    alpha = m + 2
    nr = knobs.get("wino_nr", NR[vector_isa()])
    rows = band_rows(th, tw, nr, alpha * alpha * c * 4)
    parallel = n * o * c * 9 * oh * ow >= PARALLEL_MIN_MACS
    imgs = band_images(n, th, tw, nr, rows, alpha * alpha * (c + og) * 4, parallel)
    rows = th if imgs > 1 else rows
    tiles = imgs * rows * tw
    oc = out_chunk(og, alpha * alpha * tiles * 4, alpha * alpha * c * tiles * 4)
    pt, pl = (int(p) for p in a["padding"][:2])
    bands = -(-th // rows)
    return dict(n=n, c=c, h=h, w=wd, o=o, oh=oh, ow=ow, pt=pt, pl=pl, m=m, alpha=alpha, th=th,
                tw=tw, lx=lx, nr=nr, rows=rows, bands=bands, tiles=tiles, imgs=imgs,
                tasks=n // imgs * bands, vstride=padded(c * tiles), mstride=padded(oc * tiles),
                xrows=rows * m + 2, wq=tw + 1, groups=groups, og=og, oc=oc,
                parallel=parallel)


def out_chunk(og: int, channel_bytes: int, v_bytes: int = 0) -> int:
    """Output channels a chunk of a band's GEMMs and output transform takes: ``og`` where their
    products (``channel_bytes`` each) fit ``M_CHUNK_BYTES`` or twice the band's transformed
    input (``v_bytes``, which every chunk reads again), else the most of the divisors of ``og``
    of at least ``MIN_CHUNK_CHANNELS`` whose products fit ``M_CHUNK_BYTES`` or ``v_bytes`` (none
    fits: the fewest)."""
    if og * channel_bytes <= max(M_CHUNK_BYTES, 2 * v_bytes):
        return og
    limit = max(M_CHUNK_BYTES, v_bytes)
    sizes = [d for d in range(MIN_CHUNK_CHANNELS, og) if og % d == 0]
    fit = [d for d in sizes if d * channel_bytes <= limit]
    return max(fit) if fit else min(sizes, default=og)


def padded(n: int) -> int:
    """The stride of a ``V`` or ``M`` matrix of ``n`` floats: ``n``, or where ``PAD_MATRICES``
    is set for the vector ISA, ``n`` rounded up to an odd number of 64-byte lines."""
    if not PAD_MATRICES[vector_isa()]:
        return n
    lines = -(-n // 16)
    return (lines | 1) * 16


def band_rows(th: int, tw: int, nr: int, tile_bytes: int) -> int:
    """Tile rows per band: of the counts whose transformed input fits ``BAND_BYTES`` (at least
    the fewest that hold one register tile of ``nr`` tiles), of those computing at most
    ``BAND_SLACK`` more tiles in all than the fewest (a band's tiles past its last whole register
    tile take a tail panel, ``tail_width``, moved back to end at the band's last tile; the last
    band's rows past the plane are computed too), the one of the most bands, then the fewest
    tiles."""
    least = -(-nr // tw)
    fits = [r for r in range(least, max(least, th) + 1) if r * tw * tile_bytes <= BAND_BYTES]

    def computed(r):
        return -(-th // r) * (r * tw // nr * nr + tail_width(r * tw % nr, nr))

    fewest = min(computed(r) for r in fits or [least])
    near = [r for r in fits or [least] if computed(r) <= fewest * (1 + BAND_SLACK[vector_isa()])]
    return min(near, key=lambda r: (th // -r, computed(r)))  # (the most bands, then fewest)


def band_images(n: int, th: int, tw: int, nr: int, rows: int, tile_bytes: int,
                parallel: bool = False) -> int:
    """Images a band holds whole (``IMAGE_BAND_BYTES``): 1, or of the divisors of the batch ``n``
    whose bands' ``V`` and ``M`` (``tile_bytes`` a tile) fit the budget (and, for bands run on
    the pool, that leave ``INNER_PARALLEL_BELOW`` bands at least), the one computing the fewest
    tiles an image (ties: the fewest images), where that is fewer than bands of ``rows`` tile
    rows of one image (``band_rows``) compute."""
    budget = IMAGE_BAND_BYTES[vector_isa()]
    plane = th * tw
    if not budget or n == 1:
        return 1

    def panels(t):  # tiles computed for a band of t
        return t // nr * nr + tail_width(t % nr, nr)

    alone = -(-th // rows) * panels(rows * tw)
    fits = [k for k in range(2, n + 1) if n % k == 0 and k * plane * tile_bytes <= budget and
            (not parallel or n // k >= INNER_PARALLEL_BELOW)]
    best = min(fits, key=lambda k: (panels(k * plane) / k, k), default=1)
    return best if best > 1 and panels(best * plane) < alone * best else 1


def tail_width(left: int, nr: int) -> int:
    """The width of the register tile computing the ``left`` tiles past a band's whole ``nr``
    wide ones: the fewest whole vectors of 16 tiles that hold them (0 for none)."""
    return min(nr, -(-left // 16) * 16)


def supported(t, options=None) -> bool:
    """Does this schedule take stage ``t`` (the conv's ``impl`` knob says ``winograd``)?"""
    if options is not None and not options.generated_conv:
        return False
    if not block_sizes(t):
        return False
    knobs = _knobs(options, t) if options is not None else default_knobs(t)
    return knobs["impl"] == "winograd" and geometry(t, knobs) is not None


def block_sizes(t) -> tuple[int, ...]:
    """The output blocks ``m`` this schedule can compute stage ``t`` with (none: not at all)."""
    return tuple(m for m in sorted(MATRICES) if geometry(t, {"wino_m": m}) is not None)


def default_knobs(t) -> dict:
    """This schedule's knobs untuned: ``wino_m``, ``wino_nr`` (and ``impl`` when it is the
    default implementation of ``t``): the largest block and ``NR`` (the direct conv for
    ``DIRECT_SMALL_OUTPUT``'s), or where ``MIN_GAIN`` is set for the vector ISA,
    ``default_choice``'s (of a grouped conv of narrow groups, F(2x2) only, at a larger gain:
    ``GROUPED_NARROW_CHANNELS``)."""
    sizes = block_sizes(t)
    isa = vector_isa()
    out = dict(wino_m=max(sizes, default=2), wino_nr=NR[isa])
    groups, n, c, _, _, o, _, _, oh, ow = static_grouped_conv2d_dims(t)
    narrow = groups > 1 and c < GROUPED_NARROW_CHANNELS  # (few channels a group: F(2x2))
    if narrow:
        sizes = tuple(m for m in sizes if m == 2)
    if not sizes:
        return out
    if MIN_GAIN[isa] is None:
        small = groups == 1 and o < c and o * oh * ow <= DIRECT_SMALL_OUTPUT[isa]
        if DEFAULT_ON and not small:
            out["impl"] = "winograd"
        return out
    gain, m, nr = default_choice(t, sizes)
    out.update(wino_m=m, wino_nr=nr)
    macs = n * c * o * 9 * oh * ow
    least = max(MIN_GAIN[isa], host_switch(GROUPED_NARROW_MIN_GAIN)) if narrow else MIN_GAIN[isa]
    if DEFAULT_ON and gain >= least and macs >= MIN_DEFAULT_MACS[isa]:
        out["impl"] = "winograd"
    return out


def real_share(g: dict) -> float:
    """The share of the tiles geometry ``g``'s bands compute (whole register tiles, each band's
    tail panel, the last band's rows past the plane) that are tiles of the plane."""
    per_band = g["tiles"] // g["nr"] * g["nr"] + tail_width(g["tiles"] % g["nr"], g["nr"])
    return g["imgs"] * g["th"] * g["tw"] / (g["bands"] * per_band)


def default_choice(t, sizes=None) -> tuple[float, int, int]:
    """(gain, wino_m, wino_nr) of the block size and register tile width (``NR`` or
    ``NARROW_NR``) of the largest estimated gain
    over the direct conv: the multiplies F(m x m) saves (``9 m^2 / (m+2)^2``) times
    ``real_share``, the narrow tile's times ``NARROW_WEIGHT`` (ties: the larger block, ``NR``)."""
    nr = NR[vector_isa()]
    best = None
    for m in sorted(block_sizes(t) if sizes is None else sizes, reverse=True):
        for width in (nr, NARROW_NR) if NARROW_NR != nr else (nr,):
            g = geometry(t, {"wino_m": m, "wino_nr": width})
            gain = 9 * m * m / (m + 2) ** 2 * real_share(g) * (1 if width == nr else NARROW_WEIGHT)
            if best is None or gain > best[0] + 1e-9:
                best = (gain, m, width)
    return best


class PackWeight:
    """Picklable numpy transform of a ``[O, C, 3, 3]`` weight to ``U = G g G^T``, packed
    ``[a*a][O * C]`` tile by tile of output channels (``[C][rows]`` each, ``row_tiles``); with
    ``groups``, each group's ``O / groups`` output channels tiled on their own, group after
    group (``C`` the channels of a group); with ``chunk``, each chunk of that many of a group's
    output channels tiled on its own (``out_chunk``)."""

    def __init__(self, m: int, o: int, c: int, groups: int = 1, chunk: int | None = None):
        self.m, self.o, self.c, self.groups = m, o, c, groups
        self.chunk = o // groups if chunk is None else chunk

    def __call__(self, w):
        g = np.array(MATRICES[self.m][1], dtype="float64")
        w = np.asarray(w, dtype="float32").reshape(self.o, self.c, 9)
        # the 9 taps of every (o, c) put in the packed order first (each row tile [C][rows]),
        # then U = G g G^T of all of them as one GEMM straight into the packed array:
        # (G kron G) [a*a, 9] @ [9, O*C]
        taps = np.empty((self.o * self.c, 9), dtype="float32")
        og = self.o // getattr(self, "groups", 1)  # (archives pickled before groups: 1)
        og = getattr(self, "chunk", og)  # (before chunks: a group's channels together)
        for g0 in range(0, self.o, og):
            for start, rows, count in row_tiles(og):
                first = g0 + start
                block = w[first:first + rows * count].reshape(count, rows, self.c, 9)
                taps[first * self.c:(first + rows * count) * self.c] = \
                    block.transpose(0, 2, 1, 3).reshape(-1, 9)
        kron = np.kron(g, g).astype("float32")
        out = aligned_empty((kron.shape[0], self.o * self.c), "float32")
        np.matmul(kron, taps.T, out=out)
        return out


def packed_weight(t, options=None) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of conv ``t``'s constant weight."""
    g = geometry(t, None if options is None else _knobs(options, t))
    if g is None:
        raise ValueError(f"conv_winograd.packed_weight: stage {t.name!r} is not a conv this "
                         "schedule takes")
    return (g["alpha"] ** 2, g["o"] * g["c"]), PackWeight(g["m"], g["o"], g["c"], g["groups"],
                                                          g["oc"])


# ---------------------------------------------------------------------------------- emit
def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing conv ``t`` (and its fused epilogue, when the lowering driver names
    one in ``ctx.epilogues``) into ``out``."""
    g = geometry(t, _knobs(ctx.options, t))
    shape = [g["n"], g["o"], g["oh"], g["ow"]]
    if id(t) not in ctx.packed and g["groups"] > 1 and RUN_TIME_WEIGHTS and \
            g["oh"] * g["ow"] >= RUN_TIME_MIN_PIXELS:
        pre, u = transform_at_run_time(ctx, g, ctx.buf[id(t.op.attrs["operands"][1])])
        return S.SeqStmt([pre, emit_with_epilogue(
            ctx, t, out, bodies, lambda buf, epi: _emit(ctx, g, t, buf, epi, u), shape)])
    if id(t) not in ctx.packed:  # the weights transformed per call would cost more
        from .lower import _emit_gemm, _emit_grouped  # (lower imports this module)

        return (_emit_gemm if g["groups"] == 1 else _emit_grouped)(ctx, t, out, bodies)
    return emit_with_epilogue(ctx, t, out, bodies, lambda buf, epi: _emit(ctx, g, t, buf, epi),
                              shape)


def transform_at_run_time(ctx, g, w):
    """(statement, buffer): ``U = G g G^T`` of a weight ``w`` (``[O, C, 3, 3]``) the graph
    computes, per call, into ``PackWeight``'s layout: ``G g`` of each filter into a local
    ``a x 3``, then its ``a x a`` values, each stored at its place in ``U[xi]`` (zero
    coefficients skipped). A grouped conv of a computed weight (a hypernetwork's dynamic conv,
    its batch as groups) then runs as Winograd convs as a constant one does."""
    gm = MATRICES[g["m"]][1]
    alpha, c, og = g["alpha"], g["c"], g["og"]
    u = ctx.temp((alpha * alpha, g["o"] * c), "float32", "wg_u")
    parts = []
    for start, rows, count in row_tiles(g["oc"]):
        def filt(gi, ch, k, ci, ii, start=start, rows=rows):
            first = _offset(_first(g, ch, start + k * rows), gi, og)
            o, pos = first + ii, first * c + ci * rows + ii
            f = decl_buffer((9,), "float32", "wg_f", scope="local")
            tt = decl_buffer((alpha * 3,), "float32", "wg_gf", scope="local")
            loads = [S.BufferStore(f, w[o, ci, r, q], [r * 3 + q])
                     for r in range(3) for q in range(3)]
            gf = [S.BufferStore(tt, _combine([(gm[i][r], f[r * 3 + q]) for r in range(3)]),
                                [i * 3 + q]) for i in range(alpha) for q in range(3)]
            us = [S.BufferStore(u, _combine([(gm[j][q], tt[i * 3 + q]) for q in range(3)]),
                                [i * alpha + j, pos]) for i in range(alpha)
                  for j in range(alpha)]
            return _allocated(f, _allocated(tt, _seq(loads + gf + us)))

        def chunk(gi, ch, filt=filt, rows=rows, count=count):
            return _loop(ctx, "uk", count, S.ForKind.SERIAL, lambda k: _loop(
                ctx, "uc", c, S.ForKind.SERIAL, lambda ci: _loop(
                    ctx, "ui", rows, S.ForKind.SERIAL, lambda ii: filt(gi, ch, k, ci, ii))))

        def one(gi, chunk=chunk):
            return _over_out_chunks(ctx, g, lambda ch: chunk(gi, ch), "uch")

        parts.append(one(None) if g["groups"] == 1 else
                     _loop(ctx, "ug", g["groups"], S.ForKind.SERIAL, one))
    return _seq(parts), u


def _first(g, ch, o):
    """Output channel ``o`` of chunk ``ch`` as a channel of its group (``ch`` None: one chunk)."""
    return o if ch is None else ch * g["oc"] + o


def _over_out_chunks(ctx, g, fbody, name: str = "wg_oc") -> S.Stmt:
    """``fbody(ch)`` for each chunk ``ch`` of a group's output channels (``out_chunk``), in turn;
    ``fbody(None)`` where one chunk holds them all."""
    chunks = g["og"] // g["oc"]
    if chunks == 1:
        return fbody(None)
    return _loop(ctx, name, chunks, S.ForKind.SERIAL, fbody)


def _seq(parts) -> S.Stmt:
    parts = [p for p in parts if p is not None]
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def _loop(ctx, name, extent, kind, fbody):
    v = ctx.fresh(name)
    return S.For(v, 0, extent, kind, fbody(v))


def _vec(ctx, lanes, fbody) -> S.Stmt:
    return _loop(ctx, "l", lanes, S.ForKind.VECTORIZED, fbody)


def _combine(terms) -> E.PrimExpr:
    """``sum(coef * value)`` over ``terms`` with zero coefficients skipped and +-1 as adds."""
    out = None
    for coef, val in terms:
        if coef == 0:
            continue
        neg = coef < 0
        mag = -coef if neg else coef
        term = val if mag == 1 else E.FloatImm("float32", float(mag)) * val
        if out is None:
            out = E.FloatImm("float32", 0.0) - term if neg else term
        else:
            out = out - term if neg else out + term
    return out if out is not None else E.FloatImm("float32", 0.0)


def _over_chunks(ctx, g, fbody) -> S.Stmt:
    """``fbody(tx0, lanes)`` for the first tile column of each vector of ``lanes`` tiles along a
    row: vectors of ``lx``, the last one moved back to end at the last tile (its overlap is
    computed twice, the same values); one loop, so the transforms are emitted once. Where
    ``HALF_TAIL`` is on and the tiles past the whole vectors fit half a vector, they take one
    vector of ``lx / 2`` instead (12 tiles as 8 + 4, not 8 + 8)."""
    tw, lx = g["tw"], g["lx"]
    count = -(-tw // lx)
    whole, left, half = tw // lx, tw % lx, lx // 2
    if HALF_TAIL[vector_isa()] and 0 < left <= half and half >= 4 and whole:
        tail = fbody(_i(tw - half), half)
        if whole == 1:
            return _seq([fbody(_i(0), lx), tail])
        tx0 = ctx.fresh("wg_tx")
        return _seq([_loop(ctx, "k", whole, S.ForKind.SERIAL, lambda k: S.LetStmt(
            tx0, k * lx, fbody(tx0, lx))), tail])
    if count == 1:
        return fbody(_i(0), lx)
    tx0 = ctx.fresh("wg_tx")
    return _loop(ctx, "k", count, S.ForKind.SERIAL, lambda k: S.LetStmt(
        tx0, E.Min(k * lx, _i(tw - lx)), fbody(tx0, lx)))


def _emit(ctx, g, t, out, epi, u=None) -> S.Stmt:
    """The bands of conv ``t`` into ``out`` from its packed ``U`` (the prepacked weight, or
    ``u`` transformed per call)."""
    x, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    w = w if u is None else u
    xf = ctx.flat_view(x)
    # few bands (a small plane): the channel loops inside a band run on the pool instead
    tasks = g["tasks"]
    inner = g["parallel"] and tasks < INNER_PARALLEL_BELOW
    kind = S.ForKind.PARALLEL if inner else S.ForKind.SERIAL
    outer = g["parallel"] and not inner and tasks > 1
    slots = min(tasks, SCRATCH_SLOTS) if outer else 1
    sizes = scratch_sizes(g)
    scratch = ctx.temp((slots * sum(sizes),), "float32", "wg_scratch")

    def band(task, slot):
        if g["imgs"] > 1:  # (a band of whole images: their first)
            nv, b = task * g["imgs"], _i(0)
        else:
            nv = _i(0) if g["n"] == 1 else E.FloorDiv(task, g["bands"])
            b = _i(0) if g["bands"] == 1 else E.FloorMod(task, g["bands"]) if g["n"] > 1 \
                else task
        base = scratch.elem_offset + slot * sum(sizes)
        xb, v, mt = (decl_buffer((size,), "float32", name, data=scratch.data,
                                 elem_offset=base + sum(sizes[:k]))
                     for k, (name, size) in enumerate(zip(("wg_x", "wg_v", "wg_m"), sizes)))
        def group(gi):  # (one group's dense conv; gi None: the conv has one group)
            return _seq([_copy_rows(ctx, g, xf, xb, nv, b, kind, gi),
                         _input_transform(ctx, g, xb, v, kind),
                         _over_out_chunks(ctx, g, lambda ch: _seq([
                             _gemms(ctx, g, w, v, mt, kind, gi, ch),
                             _output_transform(ctx, g, mt, out, epi, nv, b, kind, gi, ch)]))])

        body = group(None) if g["groups"] == 1 else \
            _loop(ctx, "wg_g", g["groups"], S.ForKind.SERIAL, group)
        return S.DeclBuffer(xb, S.DeclBuffer(v, S.DeclBuffer(mt, body)))

    if not outer:  # one slice serves every band in turn
        return _loop(ctx, "o", tasks, S.ForKind.SERIAL, lambda task: band(task, _i(0)))
    # one slice per thread of the call (one thread: one slice, as the serial loop)
    return per_thread_slices(ctx, tasks, slots, band, "wg")


def scratch_sizes(g) -> tuple[int, int, int]:
    """Floats of a band's scratch ``wg_x``, ``wg_v``, ``wg_m`` (each a whole number of 64-byte
    lines): its input rows, transformed input and products (of a chunk of output channels)."""
    a2 = g["alpha"] ** 2  # (one group's: a grouped conv's groups run in turn)
    sizes = (g["c"] * g["imgs"] * g["xrows"] * g["m"] * g["wq"], a2 * g["vstride"],
             a2 * g["mstride"])
    return tuple(-(-n // 16) * 16 for n in sizes)


def _offset(base, gi, size: int):
    """``base`` plus group ``gi``'s first index of ``size`` a group (``gi`` None: one group)."""
    return base if gi is None else gi * size + base


def _over_images(ctx, g, fbody) -> S.Stmt:
    """``fbody(im)`` for each image ``im`` of a band of whole images; ``fbody(None)`` where a
    band is one image's (``_at_image`` then adds nothing)."""
    if g["imgs"] == 1:
        return fbody(None)
    return _loop(ctx, "wg_im", g["imgs"], S.ForKind.SERIAL, fbody)


def _at_image(base, im, size: int):
    """``base`` plus ``im`` times ``size`` (``im`` None: ``base``)."""
    return base if im is None else base + im * size


def _channel_image(ci, im, imgs: int):
    """The index of channel ``ci``'s rows of image ``im`` in a band's input rows (``[C][imgs]``;
    ``im`` None: ``ci``)."""
    return ci if im is None else ci * imgs + im


def _copy_rows(ctx, g, xf, xb, nv, b, kind, gi=None) -> S.Stmt:
    """``xb[c][r][p][j]``: the input rows band ``b`` reads (of group ``gi``'s channels), zero
    padded, in ``m`` column phases (``j`` of phase ``p`` is padded column ``j*m + p``): the
    transform then reads each input value of its tiles with contiguous vector loads (the
    strided loads, ``m`` per vector of columns, are made here once instead of ``a*a`` per
    vector of tiles)."""
    c, h, wd, xrows, m, wq = g["c"], g["h"], g["w"], g["xrows"], g["m"], g["wq"]
    pl = g["pl"]
    zero = E.FloatImm("float32", 0.0)

    def row(ci, im, r):
        y = b * (g["rows"] * m) + r - g["pt"]  # the input row it holds
        src = ((_at_image(nv, im, 1) * (c * g["groups"]) + _offset(ci, gi, c)) * h + y) * wd
        dst = (_channel_image(ci, im, g["imgs"]) * xrows + r) * (m * wq)

        def zeros(start, count):
            if count <= 0:
                return None
            return _loop(ctx, "z", count, S.ForKind.SERIAL,
                         lambda j: S.BufferStore(xb, zero, [dst + start + j]))

        parts = []
        for p in range(m):
            lo = max(0, -(-(pl - p) // m))  # phase columns inside the image: [lo, hi)
            hi = min(wq, (wd - 1 + pl - p) // m + 1)
            base = dst + p * wq

            def put(j, p=p, base=base):
                return S.BufferStore(xb, xf[src + j * m + (p - pl)], [base + j])

            parts.append(zeros(p * wq, lo))
            count = hi - lo
            lanes = 16 if count >= 16 else 8 if count >= 8 else 4 if count >= 4 else 1
            if lanes == 1 and count > 0:
                parts.append(_loop(ctx, "j", count, S.ForKind.SERIAL,
                                   lambda j, lo=lo, put=put: put(j + lo)))
            elif lanes > 1:
                for k in range(-(-count // lanes)):
                    first = lo + min(k * lanes, count - lanes)
                    parts.append(_vec(ctx, lanes, lambda j, first=first, put=put: put(j + first)))
            parts.append(zeros(p * wq + max(hi, lo), wq - max(hi, lo)))
        inside = _seq(parts)
        n = m * wq
        blank = _seq([_loop(ctx, "zo", n // 16, S.ForKind.SERIAL, lambda jo: _vec(
            ctx, 16, lambda j: S.BufferStore(xb, zero, [dst + jo * 16 + j]))),
            zeros(n - n % 16, n % 16)])
        return S.IfThenElse(E.And(E.GE(y, _i(0)), E.LT(y, _i(h))), inside, blank)

    return _loop(ctx, "c", c, kind, lambda ci: _over_images(ctx, g, lambda im: _loop(
        ctx, "r", xrows, S.ForKind.SERIAL, lambda r: row(ci, im, r))))


def _input_transform(ctx, g, xb, v, kind) -> S.Stmt:
    """``V[xi][c][t] = (B^T d B)[xi]`` for every tile ``t`` of the band and input channel."""
    bt = MATRICES[g["m"]][0]
    m, alpha, wq, tiles = g["m"], g["alpha"], g["wq"], g["tiles"]
    c, xrows = g["c"], g["xrows"]

    def tile_vector(ci, im, r, tx0, lx):
        d = decl_buffer((alpha * alpha, lx), "float32", "wg_d", scope="local")
        s = decl_buffer((alpha * alpha, lx), "float32", "wg_s", scope="local")
        base = (_channel_image(ci, im, g["imgs"]) * xrows + r * m) * (m * wq) + tx0
        loads = [_vec(ctx, lx, lambda ln, i=i, j=j: S.BufferStore(
            d, xb[base + (i * m + j % m) * wq + j // m + ln], [i * alpha + j, ln]))
            for i in range(alpha) for j in range(alpha)]
        cols = [_vec(ctx, lx, lambda ln, i=i, k=k: S.BufferStore(
            s, _combine([(bt[k][j], d[i * alpha + j, ln]) for j in range(alpha)]),
            [i * alpha + k, ln])) for i in range(alpha) for k in range(alpha)]
        t0 = _at_image(r, im, g["rows"]) * g["tw"] + tx0
        rows = [_vec(ctx, lx, lambda ln, k=k, l2=l2: S.BufferStore(
            v, _combine([(bt[k][i], s[i * alpha + l2, ln]) for i in range(alpha)]),
            [(k * alpha + l2) * g["vstride"] + ci * tiles + t0 + ln]))
            for k in range(alpha) for l2 in range(alpha)]
        return _allocated(d, _allocated(s, _seq(loads + cols + rows)))

    return _loop(ctx, "c", c, kind, lambda ci: _over_images(ctx, g, lambda im: _loop(
        ctx, "r", g["rows"], S.ForKind.SERIAL, lambda r: _over_chunks(
            ctx, g, lambda tx0, lx: tile_vector(ci, im, r, tx0, lx)))))


def _gemms(ctx, g, w, v, mt, kind, gi=None, ch=None) -> S.Stmt:
    """``M[xi][o][t] = sum_c U[xi][o][c] V[xi][c][t]``: where ``CHANNEL_TILES_INNER``, per
    ``xi`` (the loop of ``kind``), per panel of ``nr`` tiles (then a tail panel of the tiles
    left, ``tail_width``, moved back to end at the last tile), a register tile of each
    output-channel tile (``row_tiles``) x the panel (else the channel tiles outermost, the loop
    of ``kind``).
    The panel's ``V`` (``C x nr``) is read by every channel tile while it is in L1; ``U[xi]``
    is read once per panel, in order (measured on an Intel Xeon, one thread: with the channel
    tiles outermost, each re-reading all of ``V`` from L2, ms, ONNX Runtime beside: 32->64 at
    47x47 0.449 -> 0.425 (0.442), 64->64 at 56x56 0.735 -> 0.676 (1.141), 128->128 at 28x28
    0.625 -> 0.561 (1.054), 256->256 at 14x14 0.971 -> 0.889 (1.077)). Of a grouped conv,
    group ``gi``'s: its ``og`` output channels' ``U`` rows, its channels' ``V`` (the band's).
    Of chunk ``ch`` of the output channels (``out_chunk``; None: all), that chunk's."""
    c, tiles, nr = g["c"], g["tiles"], g["nr"]
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def panel(xi, base, width: int, o0, rows: int):
        acc = decl_buffer((rows, width), "float32", "wg_acc", scope="local")
        init = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(
            ctx, "jj", width, vec, lambda jj: S.BufferStore(acc, E.FloatImm("float32", 0.0),
                                                            [ii, jj])))

        first = _offset(_first(g, ch, o0), gi, g["og"])  # (of U's rows)

        def mac(ci):
            return _loop(ctx, "ii", rows, unroll, lambda ii: _loop(
                ctx, "jj", width, vec, lambda jj: S.BufferStore(
                    acc, acc[ii, jj] + w[xi, first * c + ci * rows + ii] *
                    v[xi * g["vstride"] + ci * tiles + base + jj], [ii, jj])))

        macs = _loop(ctx, "c", c, S.ForKind.SERIAL, mac)
        store = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(
            ctx, "jj", width, vec, lambda jj: S.BufferStore(
                mt, acc[ii, jj], [xi * g["mstride"] + (o0 + ii) * tiles + base + jj])))
        return _allocated(acc, S.SeqStmt([init, macs, store]))

    def channel_tiles(xi, base, width: int):
        return _seq([_loop(ctx, "ot", count, S.ForKind.SERIAL, lambda k, s=start, r=rows:
                           panel(xi, base, width, s + k * r, r))
                     for start, rows, count in row_tiles(g["oc"])])

    whole, tail = tiles // nr, tail_width(tiles % nr, nr)

    def panels(xi, fpanel):
        parts = [_loop(ctx, "q", whole, S.ForKind.SERIAL, lambda q: fpanel(q * nr, nr))
                 if whole else None]
        if tail:  # (ends at the band's last tile, over part of the panel before)
            parts.append(fpanel(_i(tiles - tail), tail))
        return _seq(parts)

    a2 = g["alpha"] ** 2
    if not CHANNEL_TILES_INNER[vector_isa()]:
        # each channel tile over every xi and panel, the last panel a whole one moved back
        def moved_back(xi, o0, rows):
            base = ctx.fresh("wg_t")
            return _loop(ctx, "q", -(-tiles // nr), S.ForKind.SERIAL, lambda q: S.LetStmt(
                base, E.Min(q * nr, _i(tiles - nr)), panel(xi, base, nr, o0, rows)))

        return _seq([_loop(ctx, "ot", count, kind, lambda k, s=start, r=rows: _loop(
            ctx, "xi", a2, S.ForKind.SERIAL, lambda xi: moved_back(xi, s + k * r, r)))
            for start, rows, count in row_tiles(g["oc"])])
    return _loop(ctx, "xi", a2, kind, lambda xi: panels(
        xi, lambda base, width: channel_tiles(xi, base, width)))


def _output_transform(ctx, g, mt, out, epi, nv, b, kind, gi=None, ch=None) -> S.Stmt:
    """``Y = A^T M A`` of every tile of the band and output channel (of group ``gi``, of chunk
    ``ch`` of its output channels), through
    the epilogue, stored as ``m x m`` output blocks (tile rows past the plane skipped)."""
    at = MATRICES[g["m"]][2]
    m, alpha, tiles = g["m"], g["alpha"], g["tiles"]

    def tile_vector(o, im, r, tx0, lx):
        mm = decl_buffer((alpha * alpha, lx), "float32", "wg_mm", scope="local")
        s = decl_buffer((alpha * m, lx), "float32", "wg_ms", scope="local")
        t0 = _at_image(r, im, g["rows"]) * g["tw"] + tx0
        loads = [_vec(ctx, lx, lambda ln, xi=xi: S.BufferStore(
            mm, mt[xi * g["mstride"] + o * tiles + t0 + ln], [xi, ln]))
            for xi in range(alpha * alpha)]
        cols = [_vec(ctx, lx, lambda ln, k=k, bb=bb: S.BufferStore(
            s, _combine([(at[bb][l2], mm[k * alpha + l2, ln]) for l2 in range(alpha)]),
            [k * m + bb, ln])) for k in range(alpha) for bb in range(m)]
        ty = b * g["rows"] + r
        stores = []
        for a in range(m):
            oy = ty * m + a
            # the row's m phases interleaved in registers (``y``, a local array that LLVM
            # turns into shuffles), then one contiguous store through the epilogue
            y = decl_buffer((m * lx,), "float32", "wg_y", scope="local")
            row = [_vec(ctx, lx, lambda ln, a=a, bb=bb, y=y: S.BufferStore(
                y, _combine([(at[a][k], s[k * m + bb, ln]) for k in range(alpha)]),
                [ln * m + bb])) for bb in range(m)]
            row.append(_row_store(ctx, g, tx0, lx, lambda q, oy=oy, y=y: _store(
                ctx, g, out, epi, _at_image(nv, im, 1), _offset(_first(g, ch, o), gi, g["og"]),
                oy, tx0 * m + q,
                y[q])))
            row = _allocated(y, _seq(row))
            stores.append(S.IfThenElse(E.LT(oy, _i(g["oh"])), row, None)
                          if g["th"] * m > g["oh"] or g["bands"] * g["rows"] > g["th"] else row)
        return _allocated(mm, _allocated(s, _seq(loads + cols + stores)))

    return _loop(ctx, "o", g["oc"], kind, lambda o: _over_images(ctx, g, lambda im: _loop(
        ctx, "r", g["rows"], S.ForKind.SERIAL, lambda r: _over_chunks(
            ctx, g, lambda tx0, lx: tile_vector(o, im, r, tx0, lx)))))


def _row_store(ctx, g, tx0, lx: int, put) -> S.Stmt:
    """``put(q)`` for the ``m * lx`` columns of a chunk's row from column ``tx0 * m``: one vector
    store, but for a chunk reaching past a ragged row's end (``ow`` no multiple of ``m``) the
    columns up to the edge. A chunk reaching past the end holds the row's last tile (the last
    chunk ends there), and only that tile's columns can pass ``ow``: with ``RAGGED_TAIL_VECTOR``
    the tiles before it are one vector store and its ``m`` columns each a store under its own
    test, at constant places in the interleaved row (else every column is tested in a loop)."""
    m, width = g["m"], g["m"] * lx
    vec = _loop(ctx, "q", width, S.ForKind.VECTORIZED, put)
    if g["tw"] * m == g["ow"]:
        return vec
    if RAGGED_TAIL_VECTOR and lx > 1:
        last = [S.IfThenElse(E.LT(tx0 * m + _i(q), _i(g["ow"])), put(_i(q)), None)
                for q in range(width - m, width)]
        edge = _seq([_loop(ctx, "q", width - m, S.ForKind.VECTORIZED, put), *last])
    else:
        edge = _loop(ctx, "q", width, S.ForKind.SERIAL, lambda q: S.IfThenElse(
            E.LT(tx0 * m + q, _i(g["ow"])), put(q), None))
    return S.IfThenElse(E.LE(tx0 * m + width, _i(g["ow"])), vec, edge)


def _store(ctx, g, out, epi, nv, o, oy, ox, value) -> S.Stmt:
    """Store ``value`` at ``out[nv, o, oy, ox]`` through the epilogue (its body and axis vars,
    or None): the epilogue's loads of the conv read ``value``."""
    if epi is not None:
        body, axes = epi
        e = substitute(body, dict(zip(axes, [nv, o, oy, ox])))
        value = transform_expr(e, lambda ld: value if isinstance(ld, E.BufferLoad) and
                               ld.buffer is out else None)
    return S.BufferStore(out, value, [nv, o, oy, ox])

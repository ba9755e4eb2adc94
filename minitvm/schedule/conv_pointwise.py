"""1x1 conv2d (NCHW, groups 1, no padding) as a register-blocked GEMM (written for AVX2; AVX-512
runs it too).

Per image a 1x1 conv is ``out[O, P] = W[O, C] @ x[C, P]`` over the ``P = OH * OW`` output
pixels. Two micro-kernels, both reading the input in place (no phased copy, no im2col); a
strided conv first copies the pixels it reads into a temporary (``subsample``, static batch):

- pixel vectors (``P`` a whole number of 16-pixel panels, or nearly: ``OVERLAP_PANEL_WASTE``;
  stride 1): a tile of 5 or 6 output
  channels x 16 pixels; per input channel, two vector loads of the input row and one broadcast
  weight per channel row. The weights are read prepacked (``[tile][C][rows]``, contiguous per
  tile) when they are a build-time constant, else in place. The tile is stored along output
  rows, so the fused epilogue (bias, clip, residual add) reads its operands as vectors.
- channel vectors (any ``P``; ``O`` a multiple of 8, or any ``O`` where pixel panels do not
  fit: ``CHANNEL_TAIL``): a tile of 5 or 6 pixels x 16
  output channels; per input channel, two vector loads of the transposed weights (prepacked
  ``[O/16][C][16]``) and one broadcast input value per pixel. Pixel counts like 49 or 196 (7x7,
  14x14) split into 6- and 5-pixel tiles with nothing computed twice, where 16-pixel panels
  would waste up to a quarter of the work. Each tile is stored an output row at a time
  (``_store_tile``), and the next block of weights is prefetched while a block runs.
  This kernel needs the prepacked weights (transposing them per call costs a third of a 7x7
  conv); without them the conv goes to the implicit GEMM of ``conv_direct``.

Both tiles keep 10 or 12 accumulators in AVX2's 16 vector registers (``row_tiles``: 6- and
5-row tiles), enough independent FMA chains to hide the FMA latency. On AVX-512 the tiles are
32 lanes wide (``WIDTH``: two zmm a row; the pixel count of a pixel-vector panel, the output
channels of a channel-vector panel, whose packed weights are then ``[O/32][C][32]``) and the
channel-vector tiles 8 pixels high (12 on some hosts: ``ROWS_WIDE_CHANNELS``; 12 for few output channels with
weights past L1: ``ROWS_WIDE_CHANNELS_FEW``): 12 or 16 of the 32 zmm
accumulators, 8 loads per 12 FMAs or 10 per 16, no spills (the 16-lane tiles were one zmm a
row: 6 accumulators, 7 loads per 6 FMAs, load-bound and too few chains for two FMA ports).
Pixel-vector tiles are 8 channel rows there (16 accumulators), 12 from 256 input channels
(96 on some hosts: ``ROWS_WIDE_PIXELS_DEEP``). In a model the input, output and residual are
cold (written or read layers before) and each is hundreds of rows a plane apart, more streams
than the hardware prefetchers follow: on AVX-512 the tiles prefetch them a panel or block
ahead (``PREFETCH_INPUT_BLOCKS``, ``PREFETCH_OUTPUT``, ``PREFETCH_CHANNEL_INPUT``; some hosts
two panels for convs that widen few channels: ``PREFETCH_OUTPUT_WIDENING``).
A plane whose pixels are no whole number of 32-pixel panels, or nearly, takes the channel
vectors; output channels past the last whole panel are one narrower tile (8, 16 or 24 lanes);
a conv neither kernel takes at 32 lanes takes the 16-lane tiles. The reduction runs over an
int64 variable, two input channels a turn (``_reduce64``: these kernels skip LLVM's loop
passes, which would otherwise unroll it). Either tile can read its input packed for it first
(``pw_pack``, ``_pack_panels`` / ``_pack_tiles``): contiguous, so that a tile's reads neither
straddle cache lines (a 14x14 plane's rows are 784 bytes) nor map a panel's 256 rows onto a few
L1 sets (rows 4 KB apart). Measured on a Zen 2, one thread, thread CPU time, this kernel
alone (warm caches) against ONNX Runtime's NCHWc kernel in its MobileNetV2 profile (us), and
conv_direct in minitvm's: 96->576 at 14x14 252 vs 242 (267), 160->960 at 7x7 164 vs 192 (273),
320->1280 at 7x7 473 vs 462 (770), 576->96 + residual at 14x14 232 vs 222 (290), 16->96 at
112x112 580 vs 619 (870), 144->24 + residual at 56x56 273 vs 255 (350).

On both ISAs (``ENABLED``: the Zen 4 measurement at ``common.vector_isa``).
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime.ndarray import aligned_empty
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, substitute, transform_expr
from .common import allocated as _allocated
from .common import const_int as _const_int
from .common import dims_of as _dims
from .common import (
    divisor_near,
    emit_with_epilogue,
    float32_conv2d,
    host_switch,
    vector_isa,
)
from .common import imm as _i
from .common import outer_loops as _outer_loops
from .common import prefetch as _prefetch
from .gemm_kernel import pack_b
from .knobs import select as _knobs

ENABLED = {"avx512": True, "avx2": True}
LANES = 16  # AVX2's tile width: pixels of a pixel-vector tile, channels of a channel panel
# the tile width per ISA (``pw_width``, a knob): on AVX-512 16 lanes are one zmm, so a 6-row
# tile of 16 keeps only 6 accumulators and loads 7 vectors per 6 FMAs (load-bound, too few
# FMA chains for two 512-bit FMA ports); 32 lanes are two zmm, 12 accumulators, 8 loads per
# 12 FMAs. See ``default_width``.
WIDTH = {"avx512": 32, "avx2": LANES}
WIDTHS = (16, 32)
# the tallest tiles' rows (``row_tiles``; ``pw_rows``, a knob): 6 (12 accumulators at two
# vectors a row) but for the 32-wide channel vectors: tiles of 8 pixels, 16 zmm accumulators,
# 10 loads per 16 FMAs (against 8 per 12). Measured on a Sapphire Rapids Xeon (one thread,
# against ONNX Runtime side by side, ms, 6 -> 12 pixels a tile): 1024->256 at 14x14 0.531 ->
# 0.478 (ORT 0.548), 2048->512 at 7x7 0.607 -> 0.545 (0.584), 512->128 at 28x28 0.684 ->
# 0.587 (0.611), 384->96 at 14x14 0.080 -> 0.066 (0.079); 8 pixels were 3-11% slower than 12
# (1024->256 0.576 against 0.532, 512->128 0.647 against 0.595, 2048->512 0.607 against
# 0.587) but compile 2-4x faster (2048->512 at 7x7 0.08 s against 0.32 s, its 10- and 9-pixel
# tiles; 12 took ResNet-50's cold build from 1.7 to 3.1 CPU s, 8 to 2.1), so 12 is left to
# tuning. Pixel vectors alone (warm caches) gained nothing measurable from 8 or 12 rows
# (256->64 at 56x56 0.60 -> 0.63 at 12), but in a model they did, so on AVX-512 they are
# taller: 8 channel rows (16 zmm accumulators, 10 loads per 16 FMAs; one tile body where O is
# a multiple of 8), 12 from ROWS_WIDE_PIXELS_DEEP's input channels (24 accumulators, 14 loads
# per 24 FMAs), whose panel (256 channels x 32 pixels: 32 KB, 512: 64 KB, more than L1) each
# tile reads again from L2: taller tiles read it half as often. Measured on that Xeon in
# ResNet-50 in graph order (one thread, ms, median of 6 rounds, load 5-6 on 2 vCPUs, with the
# prefetches below; 6 -> 8 -> 12 rows): 512->256 at 28x28 1.34 -> 1.34 -> 1.16, 256->128 at
# 56x56 1.32 -> 1.26 -> 1.17, 256->64 at 56x56 0.73 -> 0.71 -> 0.65, 64->256 + residual at
# 56x56 0.86 -> 0.80 -> 0.78, 128->512 + residual at 28x28 0.70 -> 0.70 -> 0.68. Channel
# vectors at 12 pixels on 14x14 and 28x28 planes gained 3-6% there too (512->128 at 28x28
# 0.66 -> 0.62, 1024->256 at 14x14 0.57 -> 0.55) but took ResNet-50's cold build from 3.3 to
# 3.9 CPU s (their 12 x 32 transposed stores), so they are left to tuning as well.
ROWS = 6
# channel-vector tiles' pixels per host (``wide_channel_rows``): 8 (16 accumulators), but 12
# (24 accumulators, 14 loads per 24 FMAs) on the Intel Xeon LLVM calls "rocketlake" (two
# 512-bit FMA ports, 2 MB L2, 48 KB L1): a 32-channel weight panel of 432 input channels (55 KB)
# is past L1, and each pixel tile reads it again from L2, so 12-pixel tiles read it 5 times at
# 7x7 where 8-pixel tiles read it 7. Measured there in whole models (one thread, one process,
# interleaved, thread CPU time, median of 15 rounds, load ~9 on 2 vCPUs, 8 -> 12, ms (ONNX
# Runtime)): regnet_like 9.71 -> 9.17 (8.78) and 9.67 -> 9.32 (9.22), resnext50_32x4d 61.2 ->
# 59.7 (68.2); per kernel regnet_like's 432->432 at 7x7 (+ residual + relu) 1.007 -> 0.960 for
# its six. Other AVX-512 hosts (a Zen 4: not measured) keep 8
ROWS_WIDE_CHANNELS = {"rocketlake": 12, "avx512": 8, "avx2": 8}
ROWS_WIDE_PIXELS = 8
# (rows, from input channels): the input channels are by host (``common.host_switch``; an int:
# every host's, as tests set it). 256 (measured on Sapphire Rapids, above), but 96 on the Intel
# Xeon LLVM calls "rocketlake" (two 512-bit FMA ports, 48 KB L1, 2 MB L2). There, whole models,
# one thread, built with 256 and with 96 in one process, interleaved with ONNX Runtime (thread
# CPU time, median of 9-15 rounds), and each changed kernel in graph order (median of 3 x 9
# calls), ms, 256 -> 96: regnet_like's pixel-vector 1x1 convs of 96 input channels at 28x28,
# 96->96 + residual + relu 0.098 / 0.093 / 0.096 -> 0.094 / 0.088 / 0.088, 96->96 + relu
# 0.088 / 0.086 -> 0.086 / 0.086, 96->208 + relu 0.191 -> 0.187 (the model 0.997x -> 0.996x
# ORT); MobileNetV2's 96->24 at 56x56 0.113 -> 0.099, 144->24 + residual 0.200 -> 0.186 (the
# model 0.900x -> 0.890x ORT); ResNet-50's four 128->512 + residual at 28x28, two runs, 0.755 /
# 0.773 / 0.779 / 0.754 -> 0.726 / 0.750 / 0.748 / 0.734 and mixed within the noise (the model
# 1.023x -> 1.019x and 1.055x -> 1.047x ORT); det_postprocess's 96->12 and 96->60 at 8x8 the
# same. BERT has no conv. Later runs of both models with PREFETCH_OUTPUT_WIDENING too moved
# the whole models by -2.4% to +1.6%, this machine's noise (an unchanged model moved 2.5%).
# (Also from 48 channels: regnet_like 1.007x -> 1.031x ORT, not taken)
ROWS_WIDE_PIXELS_DEEP = (12, {"rocketlake": 96, "avx512": 256, "avx2": 256})
# channel vectors with pixel tiles outer, at most two panels of output channels and weights
# past L1 (a fire module's squeeze conv: 384->48 at 13x13, 72 KB) on AVX-512: 12-pixel tiles,
# (rows, most output channels, fewest weight bytes). Each pixel tile reads every weight from
# L2; taller tiles read them a third less often, and few panels keep the compile cost of the
# 12 x 32 transposed stores small. Measured on a Sapphire Rapids Xeon (one thread, ms, 8 -> 12
# rows), alone against ONNX Runtime side by side: 256->48 at 13x13 0.029 -> 0.025, 384->48
# 0.044 -> 0.038, 384->64 0.051 -> 0.044, 512->64 0.071 -> 0.061; in SqueezeNet in graph order
# (median of 10 rounds) 5-7% on each. 256->32 at 27x27 (32 KB of weights) gained alone (0.089
# -> 0.076) but lost in the model (0.097 -> 0.103, its input cold): not taken.
ROWS_WIDE_CHANNELS_FEW = (12, 64, 32 * 1024)
ROWS_CHOICES = (4, 6, 8, 12)
# a conv of at least this many multiply-adds splits over the thread pool (as conv_direct)
PARALLEL_MIN_MACS = 1 << 21
PANEL_BLOCK, PANEL_BLOCK_BYTES = 8, 16 * 1024  # see ``panel_block``
PANEL_BLOCK_RES, PANEL_BLOCK_RES_BYTES = 16, 64 * 1024  # (with a residual epilogue)
CHANNEL_BLOCKS, CHANNEL_BLOCK = True, 64  # see ``channel_block``
# strided 1x1 convs (ResNet's downsampling) copy the pixels they read into the workspace, then
# run the stride-1 kernels on it; see ``subsample``
STRIDED = True
# pixel vectors also for a pixel count not a multiple of 16 when the last panel, moved back to
# end at the last pixel, recomputes at most this share of the pixels (14x14: 12 of 196), and
# there are at most OVERLAP_PANEL_CHANNELS input channels (the channel-vector tile's scalar
# stores, one output channel per lane, are then a large share of its work) or at least
# OVERLAP_PANEL_OUTPUTS output channels. Measured at 14x14, one thread, kernel alone: on a Zen 2
# 96->576 0.306 -> 0.261 ms, and with 256 or more input channels pixel panels were 1-3% slower
# (256->1024 + residual, 512->128, 1024->256); on a Zen 3, against ONNX Runtime side by side,
# 256->1024 + residual 2.80 -> 2.29 ms, 256->1024 1.95 -> 1.70, 1024->512 3.54 -> 3.40,
# 1024->256 the same, but 384->96 0.22 -> 0.30 and 576->96 + residual 0.36 -> 0.38 (few
# output channels). ``pw_mode`` (a knob) picks either kernel per workload.
OVERLAP_PANEL_WASTE = 1 / 16
OVERLAP_PANEL_CHANNELS = 128
OVERLAP_PANEL_OUTPUTS = 256
# the input is packed for the tiles (``pw_pack``, a knob): pixel vectors copy each panel's
# 16 pixels of every input channel into one contiguous block (``_pack_panels``) when the plane
# rows are not whole cache lines (P % 16: 14x14) or there are at least PACK_MIN_OUTPUTS output
# channels (the copy is read by O / 6 tiles); channel vectors copy the image tile by tile
# (``_pack_tiles``) from PACK_MIN_CHANNELS input channels. Measured on a Zen 3 (one thread, kernel
# beside ONNX Runtime's, ms, in place -> packed): 256->1024 + residual at 14x14 1.98 -> 1.68,
# 1024->256 at 14x14 1.94 -> 1.64, 128->512 at 28x28 1.68 -> 1.46, 64->256 + residual at
# 56x56 2.08 -> 1.83; with few output channels a loss (96->24 at 56x56 0.21 -> 0.26, 512->128 at
# 28x28 1.60 -> 1.70). Channel vectors: 2048->512 at 7x7 2.19 -> 1.84, but 512->2048 + residual
# 1.92 -> 2.13 and 960->160 0.23 -> 0.29. On a Zen 4 (AVX-512), with the weights prefetched
# (``PREFETCH_WEIGHTS``), channel vectors lost packed (one thread, against ONNX Runtime side by
# side, us, in place -> packed): 1152->192 at 7x7 195 -> 212 warm, 254 -> 292 with the weights
# in DRAM; 2048->512 at 7x7 961 -> 1004 warm, the same cold: per ISA, None for never.
PACK_MIN_OUTPUTS = 256
# Planes whose rows are no whole cache lines pack per ISA: on a Zen 4 (AVX-512, one thread) the
# copy no longer paid. Kernel alone (us, packed -> in place): 64->64 at 25x5 11.21 -> 10.73,
# 32->64 at 25x5 6.60 -> 6.31, at 14x14 96->576 121.0 -> 121.8, 576->96 185.7 -> 182.6,
# 128->128 62.3 -> 62.2, 64->64 20.9 -> 20.9; in DS-CNN (Relax, four 64->64 at 25x5) the
# model 62.9 -> 61.0 us at batch 1, 242.6 -> 234.3 at batch 4. AVX2 packs as measured there.
PACK_MISALIGNED = {"avx512": False, "avx2": True}
PACK_MIN_CHANNELS = {"avx512": None, "avx2": 1024}
# 32-pixel panels (AVX-512) also pack from PACK_MIN_CHANNELS_WIDE input channels: a panel's
# rows, two cache lines each from as many planes, are more streams than the prefetchers follow.
# Measured on a Sapphire Rapids Xeon (one thread, in ResNet-50 in graph order, ms, in place ->
# packed): 256->64 at 56x56 0.80-0.84 -> 0.70-0.73, 256->128 at 56x56 1.28 -> 1.17; alone
# (warm) 256->128 1.24 -> 1.09, 256->64 the same; MobileNetV2's 96->24 and 144->24 at 56x56
# (few channels, not packed) the same either way.
PACK_MIN_CHANNELS_WIDE = 256
# pixel vectors also pack when the plane's rows alias in L1 (``aliased_rows``): rows a multiple
# of 4 KB apart (a 32x32 or 64x64 plane) fall on one set of the 32 KB 8-way L1, so a panel's
# rows of more than 8 channels evict each other before the next tile of output channels reads
# them again. At most ALIAS_MAX_SETS sets visited counts as aliased. Measured on a Zen 4 (one
# thread, against ONNX Runtime side by side, ms, in place -> packed): 256->64 at 32x32 0.49 ->
# 0.34 (ORT 0.40), 320->64 at 32x32 0.60 -> 0.42 (0.46), 128->32 at 64x64 0.53 -> 0.37 (0.43);
# at 56x56 (16 sets) packing lost: 256->64 0.96 -> 1.04, 256->128 1.91 -> 2.04.
ALIAS_MAX_SETS = 4
L1_SET_BYTES, L1_WAYS = 4096, 8
# input channels a turn of the reduction loop (``_reduce64``). The kernels skip LLVM's loop
# passes; with one channel a turn (and no unroller) 512->128 at 28x28 took 1.81 ms on a Zen 3
# against 1.55 ms when LLVM's O3 pipeline unrolled it, and 1.46 ms with two a turn.
REDUCE_UNROLL = 2
# channel vectors, panels outer: each turn of a tile's reduction also prefetches the weights
# one channel block (or panel) on, so the next block is in cache when its first tile starts
# (the hardware prefetchers stop at each 4 KB block). Measured on a Zen 4 (one thread, against
# ONNX Runtime side by side, us, weights evicted to DRAM, without -> with): 192->1152 + silu at
# 7x7 401 -> 358, 960->320 491 -> 428, 320->1280 674 -> 604, 432->432 304 -> 270; warm the
# same. With the pixel tiles outer (every tile over every panel, the weights mostly in cache)
# it lost: 480->80 at 14x14 195 -> 211.
PREFETCH_WEIGHTS = True
TRANSPOSED_STORE = True  # see ``_store_tile``
# Output channels one turn of the transposed store's loop reads back (``_store_tile``): 1, a
# rolled loop. Fully unrolled (32 channels of 7-8 pixels, each gathered from the tile's rows
# by a scalar load and vector inserts) it was the largest part of LLVM's instruction selection
# in the 1x1 convs; rolled, the same loads and inserts run as fast. Measured on a Zen 4 (one
# thread, every changed kernel A/B in one process, interleaved, outputs bit for bit, LLVM CPU s
# and summed kernel time, unroll 32 -> 1): ResNet-50's 12 kernels 0.84 -> 0.42 s, 10.11 ->
# 10.08 ms; MobileNet's 4 kernels 0.26 -> 0.14 s, 2.55 -> 2.55 ms. (Unrolled 4: 0.50 s, run
# time the same to 1.05x; 8: 0.60 s; 16: no saving.)
TRANSPOSE_UNROLL = 1
# channel vectors for an O not a multiple of 8 (a classifier's 1x1 conv, 512->100 at 13x13,
# where pixel vectors do not fit 32-pixel panels either): the last panel's tile computes its
# ``O % width`` channels rounded up to this many lanes (the packed weights are zero there) and
# stores only the real ones (``_tile_lanes``). Measured on a Sapphire Rapids Xeon (one thread,
# against ONNX Runtime side by side, ms, 16-lane pixel vectors -> channel vectors): 512->100 at
# 13x13 0.146 -> 0.135 (ORT 0.131), 1000->100 at 7x7 0.099 -> 0.072 (0.077), 256->13 at 17x17
# 0.022 -> 0.019; with few input channels the tile's transposed store outweighs it (20->13 at
# 17x17 0.0028 -> 0.0032), so from CHANNEL_TAIL_MIN_INPUTS input channels only.
CHANNEL_TAIL = 8
CHANNEL_TAIL_MIN_INPUTS = 64
# Software prefetches for the streams the hardware prefetchers lose (each is hundreds of rows
# a plane apart, a few cache lines at a time: more 4 KB pages than the streamers track), per
# ISA (0 or None: none). In a model these streams are cold: written or read layers before.
# - PREFETCH_INPUT_BLOCKS: pixel vectors, each turn of a tile's reduction prefetches the input
#   row of its channel that many panel blocks on (the next block's panel copy then hits cache);
# - PREFETCH_OUTPUT: pixel vectors, a tile first prefetches its output lines and those of an
#   operand its epilogue reads laid out like the output (a residual), that many panels on (1:
#   the tile after it in a block; with blocks of one panel, the next block's);
# - PREFETCH_CHANNEL_INPUT: channel vectors, pixel tiles outer, input read in place: each turn
#   of a tile's reduction prefetches its channel's row that many pixels on (16: the cache line
#   two 8-pixel tiles on).
# Measured on a Sapphire Rapids Xeon, in ResNet-50 in graph order (one thread, ms, the median
# of 6 rounds, load 4-6 on 2 vCPUs; without -> with all three): 64->256 + residual at 56x56
# 0.78 -> 0.74, 256->64 at 56x56 0.68 -> 0.65, 512->128 at 28x28 0.75 -> 0.66, 1024->256 at
# 14x14 0.59 -> 0.57, 512->2048 + residual at 7x7 0.81 -> 0.79; the 1x1 convs 23.8 -> 22.9.
# AVX2 (measured on AMD, without them) is left as it was.
PREFETCH_INPUT_BLOCKS = {"avx512": 1, "avx2": 0}
PREFETCH_OUTPUT = {"avx512": 1, "avx2": None}
# ... and by host (``common.host_switch``), (panels ahead, most input channels) or None: a
# stride-1 conv that at least doubles the channels from at most that many input channels, its
# epilogue reading no plane operand, prefetches its output that many panels ahead instead. Its
# tiles' reductions are short (few input channels) and its output stream long (twice the
# input's), so one panel ahead is too little lead. Measured on the Intel Xeon LLVM calls
# "rocketlake" in whole models, one thread, one process, interleaved with ONNX Runtime, each
# changed kernel in graph order (median of 3 x 9 calls), ms, 1 -> 2 panels ahead: regnet_like's
# 48->96 + relu at 56x56 0.227 -> 0.213 / 0.222 -> 0.206 / 0.232 -> 0.203 (three runs),
# ResNet-50's 64->256 shortcut at 56x56 0.974 -> 0.836 / 0.944 -> 0.790 (two runs);
# MobileNetV2's 16->96 at 112x112, 24->144 at 56x56 and 32->192 at 28x28 within 3% either way
# (their sum 0.865 -> 0.862), xception_mini's 64->128 at 64x64 and SqueezeNet's 16->64 at
# 55x55 and 32->128 at 27x27 within 3% either way (two runs). All 1x1 convs 2 ahead lost as
# often as they gained (ResNet-50's 128->512 + residual at 28x28 +4-11%, regnet_like's 96->208
# at 28x28 +2%, 64->48 +2-4%). Other hosts not measured: None
PREFETCH_OUTPUT_WIDENING = {"rocketlake": (2, 64), "avx512": None, "avx2": None}
PREFETCH_CHANNEL_INPUT = {"avx512": 16, "avx2": 0}


def default_width() -> int:
    """The tile width (``WIDTH``) for the host's ISA."""
    return WIDTH[vector_isa()]


def modes_of(c: int, o: int, p: int, width: int = LANES) -> list[str]:
    """The micro-kernels that can compute a 1x1 conv of ``c`` -> ``o`` channels over ``p``
    pixels with tiles ``width`` lanes wide, the default first: pixel vectors when ``p`` is a
    whole number of panels, or nearly (the last panel of a plane of P % width pixels overlaps
    the one before) with at most ``OVERLAP_PANEL_CHANNELS`` input channels or at least
    ``OVERLAP_PANEL_OUTPUTS`` output channels; channel vectors when ``o`` is a multiple of 8,
    or when pixel vectors do not fit and there are ``CHANNEL_TAIL_MIN_INPUTS`` input channels
    (the last panel then computes ``o % width`` channels rounded up to 8, from zero weights,
    and stores the real ones: ``CHANNEL_TAIL``)."""
    whole = p % width == 0
    nearly = p > width and (-p) % width <= OVERLAP_PANEL_WASTE * p
    odd = c >= CHANNEL_TAIL_MIN_INPUTS and not (whole or nearly)
    modes = ["channels"] if o % 8 == 0 or odd else []
    if whole or (nearly and (c <= OVERLAP_PANEL_CHANNELS or o >= OVERLAP_PANEL_OUTPUTS)):
        modes.insert(0, "pixels")
    elif nearly:
        modes.append("pixels")
    return modes


def geometry(t, knobs: dict | None = None) -> dict | None:
    """Sizes and kernel choice of 1x1 conv stage ``t`` (None when this schedule does not
    apply: not a float32 1x1 conv with one group, stride 1 and no padding, static but for the
    batch, or no kernel fits). The kernel is ``modes_of``'s default, or ``knobs["pw_mode"]``
    when that is one of them."""
    if not float32_conv2d(t):
        return None
    a = t.op.attrs
    x, w = a["operands"]
    dims = [_const_int(d) for d in (*x.shape[1:], *w.shape, *t.shape[1:])]
    if any(d is None for d in dims):
        return None
    c, h, wd, o, cw, kh, kw, _, oh, ow = dims
    n = _dims(x)[0]  # the batch may be symbolic
    if (kh, kw) != (1, 1) or cw != c or any(int(p) != 0 for p in a["padding"]):
        return None
    sh, sw = (int(s) for s in a["strides"])
    if (sh, sw) != (1, 1) and (not STRIDED or not isinstance(n, int) or
                               (oh - 1) * sh >= h or (ow - 1) * sw >= wd):
        # (a strided conv subsamples its input into the workspace first: a static batch)
        return None
    p = oh * ow
    width = knobs.get("pw_width") if knobs else None
    width = width if width in WIDTHS else default_width()
    modes = modes_of(c, o, p, width)
    if not modes and width != LANES:  # (neither kernel fits the wide tiles: the narrow ones)
        width, modes = LANES, modes_of(c, o, p, LANES)
    if not modes:
        return None
    mode = modes[0]
    want = knobs.get("pw_mode") if knobs else None
    if want is not None and want not in modes and want in modes_of(c, o, p, LANES):
        width, modes = LANES, modes_of(c, o, p, LANES)  # (that kernel fits the narrow tiles)
    if want in modes:
        mode = want
    static_n = n if isinstance(n, int) else 1
    if static_n * max(c * h * wd, o * p) >= 1 << 31:
        return None  # (int32 offsets inside one image's planes)
    misaligned = p % LANES != 0 and PACK_MISALIGNED[vector_isa()]
    pack = misaligned or o >= PACK_MIN_OUTPUTS or aliased_rows(c, p) or \
        (width > LANES and c >= PACK_MIN_CHANNELS_WIDE) if mode == "pixels" else _at_least(c, PACK_MIN_CHANNELS[vector_isa()])
    if knobs and knobs.get("pw_pack") in (False, True):
        pack = knobs["pw_pack"]
    return dict(n=n, c=c, h=h, w=wd, o=o, oh=oh, ow=ow, p=p, mode=mode, modes=modes, sh=sh,
                sw=sw, pw_pack=pack, width=width,
                rows=_rows(mode, width, c, o, p, knobs),
                # (a symbolic batch: parallel once there are enough images at run time)
                parallel=not isinstance(n, int) or n * o * c * p >= PARALLEL_MIN_MACS,
                # channel vectors: the weight panels outer (each read once) when the weights
                # are larger than the image, else the pixel tiles (the image read once)
                panels_outer=o > p)


def _rows(mode: str, width: int, c: int, o: int, p: int, knobs: dict | None) -> int:
    """The rows of the tallest tiles of a ``c`` -> ``o`` channel conv over ``p`` pixels."""
    if knobs and knobs.get("pw_rows") in ROWS_CHOICES:
        return knobs["pw_rows"]
    if width <= LANES:
        return ROWS
    if mode == "pixels":
        return ROWS_WIDE_PIXELS_DEEP[0] if c >= wide_pixel_rows_from() else ROWS_WIDE_PIXELS
    rows, most_outputs, least_bytes = ROWS_WIDE_CHANNELS_FEW
    if o <= most_outputs and o <= p and c * o * 4 > least_bytes:  # (pixel tiles outer)
        return rows
    return wide_channel_rows()


def wide_pixel_rows_from() -> int:
    """The input channels from which 32-lane pixel-vector tiles take ``ROWS_WIDE_PIXELS_DEEP``'s
    rows on this host (an int there: every host's)."""
    start = ROWS_WIDE_PIXELS_DEEP[1]
    return start if isinstance(start, int) else host_switch(start)


def wide_channel_rows() -> int:
    """The pixels of the tallest 32-lane channel-vector tiles on this host
    (``ROWS_WIDE_CHANNELS``)."""
    return host_switch(ROWS_WIDE_CHANNELS)


def _at_least(value: int, bound: int | None) -> bool:
    return bound is not None and value >= bound


def aliased_rows(c: int, p: int) -> bool:
    """Do the ``c`` input rows of a pixel panel (``p`` float32 pixels apart) visit so few L1
    sets (``ALIAS_MAX_SETS`` at most) that they do not fit its ways?"""
    sets = max(1, L1_SET_BYTES // max(64, math.gcd(p * 4, L1_SET_BYTES)))
    return sets <= ALIAS_MAX_SETS and c > L1_WAYS * sets


def panel_block(g, plane_operand: bool = False) -> int:
    """Pixel panels a channel tile runs over before the next tile (pixel vectors): their input
    (``C`` rows of ``16 * block`` pixels) stays in L1 for the next tiles, and each output row is
    written ``block`` panels at a time, a sequential stream the prefetcher follows (one panel
    at a time writes ``O`` rows 64 bytes each, far apart). The largest divisor of the panel
    count up to ``PANEL_BLOCK`` whose input fits ``PANEL_BLOCK_BYTES``; with an epilogue reading
    an operand laid out like the output (a residual), up to ``PANEL_BLOCK_RES`` panels whose
    input fits ``PANEL_BLOCK_RES_BYTES`` (L2): the residual's rows are then read in runs long
    enough for the prefetcher too. Measured on a Zen 2 (one thread, kernel alone, against the
    L1-sized blocks): 64->256 + residual at 56x56 1.78 -> 1.49 ms, 128->512 + residual at
    28x28 1.84 -> 1.44 ms, MobileNetV2's 144->24 + residual at 56x56 0.50 -> 0.46 ms; the
    input in L2 rather than L1 costs nothing measurable there."""
    wd = g["width"]
    panels = -(-g["p"] // wd)
    most, nbytes = (PANEL_BLOCK_RES, PANEL_BLOCK_RES_BYTES) if plane_operand else \
        (PANEL_BLOCK, PANEL_BLOCK_BYTES)
    most = max(1, most * LANES // wd)  # (the same pixels a block at any width)
    cap = max(1, min(most, nbytes // (g["c"] * wd * 4)))
    return max(d for d in range(1, cap + 1) if panels % d == 0)


def channel_block(g) -> int | None:
    """Input channels per pass over a weight panel's pixel tiles (channel vectors, panels
    outer), or None for one pass. In one pass each tile runs the whole reduction, so the first
    tile streams the panel's weights from memory with 12 multiply-adds per cache line, faster
    than memory delivers them, while the other tiles find them in cache; in blocks every tile
    uses a block of weights while the next block streams in. The largest divisor of ``C`` up
    to ``CHANNEL_BLOCK`` (at least half of it), when ``CHANNEL_BLOCKS`` is on."""
    if not CHANNEL_BLOCKS or g["c"] <= CHANNEL_BLOCK:
        return None
    return divisor_near(g["c"], CHANNEL_BLOCK)


def supported(t, options=None) -> bool:
    """Does this schedule take stage ``t`` (``ENABLED`` for the host's ISA, generated convs
    allowed)?"""
    if not ENABLED[vector_isa()] or (options is not None and not options.generated_conv):
        return False
    return geometry(t) is not None


def row_tiles(extent: int, most: int = 6) -> list[tuple[int, int, int]]:
    """``extent`` rows as groups ``(first row, rows per tile, tiles)`` of ``m``- and
    ``m - 1``-row tiles, ``m`` the largest from ``most`` down to 6 for which some number of
    ``m``-row tiles leaves a multiple of ``m - 1`` (as many of those as can be; 49 rows at most
    12: 10, 10, 10, 10, 9), else tiles of 6 (or ``most``, when fewer) and one shorter tile: by
    default 12 or 10 accumulators for two-vector tiles."""
    if most < 2:
        raise ValueError(f"row_tiles: at least 2 rows a tile, got {most}")
    sizes = None
    for m in range(most, min(most, 6) - 1, -1):
        for k in range(extent // m, -1, -1):
            if (extent - m * k) % (m - 1) == 0:
                sizes = [(m, k), (m - 1, (extent - m * k) // (m - 1))]
                break
        if sizes:
            break
    else:
        m = min(most, 6)
        sizes = [(m, extent // m), (extent % m, 1)]
    groups, start = [], 0
    for rows, count in sizes:
        if rows and count:
            groups.append((start, rows, count))
            start += rows * count
    return groups


class PackWeight:
    """Picklable numpy transform of a ``[O, C, 1, 1]`` weight to the kernel's packed layout:
    ``[O * C]`` tile by tile (``[C][rows]`` each) for pixel vectors, ``[ceil(O/width), C,
    width]`` (zero padded) for channel vectors."""

    def __init__(self, mode: str, o: int, c: int, width: int = LANES, rows: int = ROWS):
        self.mode, self.o, self.c, self.width, self.rows = mode, o, c, width, rows

    def __call__(self, w):
        # each layout written in one copy from views of ``w`` (a build packs every weight)
        w = np.asarray(w, dtype="float32").reshape(self.o, self.c)
        if self.mode == "pixels":
            out = aligned_empty(self.o * self.c, "float32")
            for start, rows, count in row_tiles(self.o, self.rows):
                for k in range(count):
                    o0 = start + k * rows
                    out[o0 * self.c:(o0 + rows) * self.c].reshape(self.c, rows)[:] = \
                        w[o0:o0 + rows].T
            return out
        return pack_b(w, self.width, transpose_b=True)  # [ceil(O/width), C, width]


def packed_weight(t, options=None) -> tuple[tuple[int, ...], PackWeight]:
    """(packed shape, numpy transform) of 1x1 conv ``t``'s constant weight (for the kernel the
    knobs of ``options`` choose)."""
    g = geometry(t, None if options is None else _knobs(options, t))
    if g is None:
        raise ValueError(f"conv_pointwise.packed_weight: stage {t.name!r} is not a 1x1 conv "
                         "this schedule takes")
    wd = g["width"]
    shape = (g["o"] * g["c"],) if g["mode"] == "pixels" else (-(-g["o"] // wd), g["c"], wd)
    return shape, PackWeight(g["mode"], g["o"], g["c"], wd, g["rows"])


# ---------------------------------------------------------------------------------- emit
def emit(ctx, t, out, bodies) -> S.Stmt:
    """Statements computing 1x1 conv ``t`` (and its fused epilogue, when the lowering driver
    names one in ``ctx.epilogues``) into ``out``."""
    g = geometry(t, _knobs(ctx.options, t))
    if g["mode"] == "channels" and id(t) not in ctx.packed:
        from .lower import _emit_gemm  # (lower imports this module)

        return _emit_gemm(ctx, t, out, bodies)  # transposing the weights per call costs more
    return emit_with_epilogue(ctx, t, out, bodies, lambda buf, epi: _emit(ctx, g, t, buf, epi),
                              _dims(t))


def pixel_value(ctx, g, out, epi, n, o, p, value):
    """The stored value at output channel ``o``, pixel ``p`` of image ``n``: the conv's
    ``value`` through the epilogue ``epi`` (its body and axis vars, or None). Epilogue operands
    laid out like the output plane (a residual) are read through flat views at ``p``: vector
    loads along the pixels (a channel-vector tile's too, when it is stored by output rows:
    ``_store_tile``), or one element per lane (output channel) in a channel-vector tile stored
    by lanes (measured on a Zen 2, 384->64 + residual at 14x14: 129 us so, 133 us with the conv
    stored first and the epilogue in a pass of its own along the pixels)."""
    if epi is None:
        return value
    body, axes = epi
    oy, ox = E.Var("pw_oy", "int32"), E.Var("pw_ox", "int32")
    e = substitute(body, dict(zip(axes, [n, o, oy, ox])))
    plane = [g["oh"], g["ow"]]

    def fpost(ld):
        if not isinstance(ld, E.BufferLoad):
            return None
        if ld.buffer is out:
            return value
        if len(ld.indices) >= 2 and ld.indices[-2] is oy and ld.indices[-1] is ox and \
                [_const_int(d) for d in ld.buffer.shape[-2:]] == plane:
            lead = _i(0)
            for i, d in zip(ld.indices[:-2], ld.buffer.shape[:-2]):
                lead = lead * d + i
            return E.BufferLoad(ctx.flat_view(ld.buffer), [lead * g["p"] + p])
        return None

    e = transform_expr(e, fpost)
    return substitute(e, {oy: E.FloorDiv(p, g["ow"]), ox: E.FloorMod(p, g["ow"])})


def _plane_loads(ctx, g, out, epi, n, o, p) -> list:
    """The loads of epilogue ``epi``'s operands laid out like the output plane (a residual) at
    output channel ``o``, pixel ``p`` of image ``n`` (through flat views, as ``pixel_value``)."""
    if epi is None:
        return []
    body, axes = epi
    oy, ox = E.Var("pw_oy", "int32"), E.Var("pw_ox", "int32")
    e = substitute(body, dict(zip(axes, [n, o, oy, ox])))
    plane, found = [g["oh"], g["ow"]], []
    for ld in post_order(e):
        if isinstance(ld, E.BufferLoad) and ld.buffer is not out and len(ld.indices) >= 2 and \
                ld.indices[-2] is oy and ld.indices[-1] is ox and \
                [_const_int(d) for d in ld.buffer.shape[-2:]] == plane:
            lead = _i(0)
            for i, d in zip(ld.indices[:-2], ld.buffer.shape[:-2]):
                lead = lead * d + i
            found.append(E.BufferLoad(ctx.flat_view(ld.buffer), [lead * g["p"] + p]))
    return found


def _reads_plane(g, out, body) -> bool:
    """Does epilogue ``body`` read an operand other than the conv laid out like the output
    plane (a residual)?"""
    plane = [g["oh"], g["ow"]]
    return any(isinstance(e, E.BufferLoad) and e.buffer is not out and len(e.buffer.shape) >= 2
               and [_const_int(d) for d in e.buffer.shape[-2:]] == plane
               for e in post_order(body))


def _loop(ctx, name, extent, kind, fbody):
    v = ctx.fresh(name)
    return S.For(v, 0, extent, kind, fbody(v))


def _loop64(ctx, name, extent: int, fbody):
    """A serial loop over an int64 variable: index arithmetic with it is int64 throughout, so
    no int32 sum needs sign-extending per access (inside a parallel loop's body LLVM does not
    widen the int32 index of every unrolled load by itself)."""
    v = ctx.fresh(name, "int64")
    return S.For(v, E.IntImm("int64", 0), E.IntImm("int64", extent), S.ForKind.SERIAL, fbody(v))


def _reduce64(ctx, name, extent: int, fbody) -> S.Stmt:
    """The reduction over input channels, ``REDUCE_UNROLL`` channels an iteration (an int64
    variable, as ``_loop64``)."""
    u = REDUCE_UNROLL
    if u <= 1 or extent < 2 * u:
        return _loop64(ctx, name, extent, fbody)
    main = _loop64(ctx, name, extent // u, lambda co: _loop(
        ctx, name + "i", u, S.ForKind.UNROLLED, lambda ci: fbody(co * u + E.Cast("int64", ci))))
    if extent % u == 0:
        return main
    tail = _loop(ctx, name + "t", extent % u, S.ForKind.UNROLLED,
                 lambda ci: fbody(E.Cast("int64", ci) + (extent - extent % u)))
    return S.SeqStmt([main, tail])


def _outer(ctx, g, dims, work: int, fbody) -> S.Stmt:
    """``outer_loops`` over ``dims`` with each index bound once to a variable (the fused loop's
    div/mod appear once per iteration, not in every address of the tile)."""
    def body(idx):
        names = [ctx.fresh("ix", i.dtype) if not isinstance(i, (E.Var, E.IntImm)) else None
                 for i in idx]
        stmt = fbody([v if v is not None else i for v, i in zip(names, idx)])
        for v, i in reversed(list(zip(names, idx))):
            if v is not None:
                stmt = S.LetStmt(v, i, stmt)
        return stmt

    return _outer_loops(ctx, dims, g["parallel"], body, work)


def _seq(parts) -> S.Stmt:
    return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def subsample(ctx, g, x) -> tuple[S.Stmt, object]:
    """(statement, buffer): the pixels a strided 1x1 conv reads, copied from input ``x`` into a
    ``[N * C * OH * OW]`` temporary (row by row, vector loads at the column stride), so the
    stride-1 kernels run unchanged on it. The copy reads a quarter or less of the input once;
    reading the strided pixels in the kernels themselves gathers every vector of the
    reduction. On a Zen 2 (one thread, in ResNet-50) this takes the downsampling convs
    256->512 at 56x56, 512->1024 at 28x28 and 1024->2048 at 14x14 from conv_direct's 2.59,
    2.85 and 3.76 ms to 2.15, 2.28 and 2.62 ms (ONNX Runtime's: 2.30, 2.49 and 3.14 ms)."""
    n, c, h, w, oh, ow = (g[k] for k in ("n", "c", "h", "w", "oh", "ow"))
    sh, sw = g["sh"], g["sw"]
    xf = ctx.flat_view(x)
    sub = ctx.temp((n * c * g["p"],), "float32", "pw_sub")
    lanes = 8

    def row(idx):
        r = idx[0]  # (image, channel, output row) fused
        src = (r // oh) * (h * w) + (r % oh) * (sh * w)

        def put(j):
            return S.BufferStore(sub, xf[src + j * sw], [r * ow + j])

        if ow < lanes:
            return _loop(ctx, "j", ow, S.ForKind.SERIAL, put)
        parts = [_loop(ctx, "jo", ow // lanes, S.ForKind.SERIAL, lambda jo: _loop(
            ctx, "ji", lanes, S.ForKind.VECTORIZED, lambda ji: put(jo * lanes + ji)))]
        if ow % lanes:  # the last vector overlaps the one before it
            parts.append(_loop(ctx, "ji", lanes, S.ForKind.VECTORIZED,
                               lambda ji: put(ji + (ow - lanes))))
        return _seq(parts)

    copy = _outer_loops(ctx, [n * c * oh], n * c * oh * ow >= PARALLEL_MIN_MACS >> 6, row)
    return copy, sub


def _emit(ctx, g, t, out, epi) -> S.Stmt:
    x, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    if (g["sh"], g["sw"]) != (1, 1):
        copy, xf = subsample(ctx, g, x)
        return _seq([copy, _emit_stride1(ctx, g, t, out, epi, xf)])
    return _emit_stride1(ctx, g, t, out, epi, ctx.flat_view(x))


def _emit_stride1(ctx, g, t, out, epi, xf) -> S.Stmt:
    w = ctx.buf[id(t.op.attrs["operands"][1])]
    of = ctx.flat_view(out)
    packed = id(t) in ctx.packed
    wd = g["width"]
    if g["mode"] == "pixels":
        nb = panel_block(g, epi is not None and _reads_plane(g, out, epi[0]))
        g = dict(g, panel_block=nb)

        def block(idx):
            nv, b = idx
            xpk = decl_buffer((nb * g["c"] * wd,), "float32", "pw_panel") \
                if g["pw_pack"] else None

            def tiles(k, s, r):
                return _loop(ctx, "q", nb, S.ForKind.SERIAL, lambda j: _pixel_tile(
                    ctx, g, xf, w, of, out, epi, nv, s + k * r, r, b * nb + j, packed,
                    None if xpk is None else (xpk, j)))

            body = _seq([_loop(ctx, "pt", count, S.ForKind.SERIAL, lambda k, s=start, r=rows:
                               tiles(k, s, r)) for start, rows, count in row_tiles(g["o"], g["rows"])])
            if xpk is None:
                return body
            return _allocated(xpk, _seq([_pack_panels(ctx, g, xf, xpk, nv, b, nb), body]))

        return _outer(ctx, g, [g["n"], -(-g["p"] // wd) // nb],
                      g["o"] * g["c"] * wd * nb, block)
    # whole panels of ``wd`` output channels, then one of the rest (8, 16 or 24 lanes)
    panels, rest = g["o"] // wd, g["o"] % wd
    groups = row_tiles(g["p"], g["rows"])
    pre = []
    xt = None
    if g["pw_pack"] and isinstance(g["n"], int):
        xt = ctx.temp((g["n"] * g["c"] * g["p"],), "float32", "pw_xt")
        pre.append(_pack_tiles(ctx, g, xf, xt, groups))

    def tile(nv, ob, lanes, p0, rows, blk=None):
        return _channel_tile(ctx, g, xf, w, of, out, epi, nv, ob, lanes, p0, rows, blk, xt)

    def over_panels(nv, p0, rows):
        parts = []
        if panels:
            parts.append(_loop(ctx, "ob", panels, S.ForKind.SERIAL,
                               lambda ob: tile(nv, ob, wd, p0, rows)))
        if rest:
            parts.append(tile(nv, _i(panels), rest, p0, rows))
        return _seq(parts)

    def over_pixels(nv, ob, lanes):
        kc = channel_block(g)
        if kc is None:
            return _seq([_loop(ctx, "pt", count, S.ForKind.SERIAL, lambda k, s=start, r=rows:
                               tile(nv, ob, lanes, s + k * r, r))
                         for start, rows, count in groups])
        # channel blocks: every pixel tile sums one block before the next block's weights
        sums = decl_buffer((g["p"] * _tile_lanes(g, lanes),), "float32", "pw_sums")

        def blocks(kb):
            blk = (kb, kc, g["c"] // kc, sums)
            return _seq([_loop(ctx, "pt", count, S.ForKind.SERIAL, lambda k, s=start, r=rows:
                               tile(nv, ob, lanes, s + k * r, r, blk))
                         for start, rows, count in groups])

        body = _loop(ctx, "kb", g["c"] // kc, S.ForKind.SERIAL, blocks)
        return _allocated(sums, body)

    if g["panels_outer"]:
        parts = []
        if panels:
            parts.append(_outer(ctx, g, [g["n"], panels], g["p"] * g["c"] * wd, lambda idx:
                                over_pixels(idx[0], idx[1], wd)))
        if rest:
            parts.append(_outer(ctx, g, [g["n"]], g["p"] * g["c"] * rest, lambda idx:
                                over_pixels(idx[0], _i(panels), rest)))
        return _seq(pre + parts)
    return _seq(pre + [_outer(ctx, g, [g["n"], count], rows * g["o"] * g["c"], lambda idx,
                              s=start, r=rows: over_panels(idx[0], s + idx[1] * r, r))
                       for start, rows, count in groups])


def _pack_tiles(ctx, g, xf, xt, groups) -> S.Stmt:
    """``xt``: each image's input with every pixel tile's values contiguous, ``[tile][C][rows]``
    (the tile of pixels ``p0 ..`` at ``p0 * C``), so that a channel-vector tile broadcasts its
    pixels from one stream instead of ``rows`` floats per plane row ``P`` apart."""
    c, p = g["c"], g["p"]

    def one(idx, start, rows):
        nv, k = idx
        p0 = start + k * rows
        return _loop64(ctx, "c", c, lambda ci: _loop(
            ctx, "ii", rows, S.ForKind.UNROLLED, lambda ii: S.BufferStore(
                xt, xf[(nv * c + ci) * p + p0 + ii], [nv * (c * p) + p0 * c + ci * rows + ii])))

    return _seq([_outer_loops(ctx, [g["n"], count], g["parallel"], lambda idx, s=start, r=rows:
                              one(idx, s, r)) for start, rows, count in groups])


def _panel_base(ctx, g, q):
    """(first pixel of panel ``q``, ``bind``): in a plane of ``P % width`` pixels the last panel
    is moved back to end at the last pixel, and the first pixel is then a variable that
    ``bind(stmt)`` binds once around ``stmt`` (these kernels get no loop-invariant code
    motion); for whole panels it is ``q * width`` and ``bind`` returns ``stmt``."""
    wd = g["width"]
    if g["p"] % wd == 0:
        return q * wd, lambda stmt: stmt
    base = ctx.fresh("pw_base")
    return base, lambda stmt: S.LetStmt(base, E.Min(q * wd, _i(g["p"] - wd)), stmt)


def _pack_panels(ctx, g, xf, xpk, nv, b, nb) -> S.Stmt:
    """``xpk[j][c][width]`` = the pixels of panel ``b*nb + j`` of every input channel: each
    tile then reads one or two aligned cache lines an input channel, from a block that stays
    in L1 (in place, a plane of 196 pixels puts a panel's row across two lines, and a panel of
    256 channels in 32 KB)."""
    c, p, wd = g["c"], g["p"], g["width"]

    def panel(j):
        base, bind = _panel_base(ctx, g, b * nb + j)
        return bind(_loop64(ctx, "c", c, lambda ci: _loop(
            ctx, "jj", wd, S.ForKind.VECTORIZED, lambda jj: S.BufferStore(
                xpk, xf[(nv * c + ci) * p + base + jj], [(j * c + ci) * wd + jj]))))

    return _loop(ctx, "j", nb, S.ForKind.SERIAL, panel)


def _pixel_tile(ctx, g, xf, w, of, out, epi, nv, o0, rows: int, q, packed: bool,
                panel=None) -> S.Stmt:
    """Output channels ``o0 ..`` (``rows`` of them) x the ``width`` pixels of panel ``q`` (the
    last panel of a plane of ``P % width`` pixels ends at its last pixel, over part of the
    panel before: those pixels are computed and stored twice, the same values)."""
    c, p, wd = g["c"], g["p"], g["width"]
    acc = decl_buffer((rows, wd), "float32", "pw_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED
    base, bind = _panel_base(ctx, g, q)

    def xin(ci, jj):
        if panel is None:
            return xf[(nv * c + ci) * p + base + jj]
        xpk, j = panel
        return xpk[(j * c + ci) * wd + jj]

    def wt(ii, ci):
        return w[o0 * c + ci * rows + ii] if packed else w[o0 + ii, ci, 0, 0]

    init = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(ctx, "jj", wd, vec, lambda jj:
                 S.BufferStore(acc, E.FloatImm("float32", 0.0), [ii, jj])))
    ahead = PREFETCH_INPUT_BLOCKS[vector_isa()] * g["panel_block"] * wd

    def mac(ci):
        fma = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(
            ctx, "jj", wd, vec, lambda jj: S.BufferStore(
                acc, acc[ii, jj] + wt(ii, ci) * xin(ci, jj), [ii, jj])))
        if not ahead:
            return fma
        # (the prefetches of the last block run past the plane's row: harmless on x86)
        pfs = [_prefetch(xf[(nv * c + ci) * p + base + (ahead + lane)])
               for lane in range(0, wd, LANES)]
        return S.SeqStmt([*pfs, fma])

    macs = _reduce64(ctx, "c", c, mac)
    out_ahead = _output_ahead(g, epi is not None and _reads_plane(g, out, epi[0]))
    if out_ahead is not None:
        pfo = []
        for ii in range(rows):
            for lane in range(0, wd, LANES):
                at = (nv * g["o"] + o0 + ii) * p + base + (lane + out_ahead * wd)
                pfo.append(_prefetch(of[at]))
                pfo += [_prefetch(ld) for ld in _plane_loads(
                    ctx, g, out, epi, nv, o0 + ii, base + (lane + out_ahead * wd))]
        init = S.SeqStmt([*pfo, init])

    def put(ii, jj):
        o = o0 + ii
        val = pixel_value(ctx, g, out, epi, nv, o, base + jj, acc[ii, jj])
        return S.BufferStore(of, val, [(nv * g["o"] + o) * p + base + jj])

    store = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(ctx, "jj", wd, vec,
                                                             lambda jj: put(ii, jj)))
    return _allocated(acc, bind(S.SeqStmt([init, macs, store])))


def _output_ahead(g, operands: bool) -> int | None:
    """Panels ahead of its own whose output lines (and those of the epilogue's plane
    ``operands``) a pixel tile of geometry ``g`` prefetches (``PREFETCH_OUTPUT``, or
    ``PREFETCH_OUTPUT_WIDENING``'s for a stride-1 conv that at least doubles few channels and
    reads no plane operand); None: none."""
    ahead = PREFETCH_OUTPUT[vector_isa()]
    widening = host_switch(PREFETCH_OUTPUT_WIDENING)
    if ahead is None or widening is None or operands:
        return ahead
    further, most_channels = widening
    if (g["sh"], g["sw"]) == (1, 1) and g["c"] <= most_channels and g["o"] >= 2 * g["c"]:
        return further
    return ahead


def _channel_tile(ctx, g, xf, wp, of, out, epi, nv, ob, lanes: int, p0, rows: int,
                  blk=None, xt=None) -> S.Stmt:
    """Pixels ``p0 ..`` (``rows`` of them) x output channels ``ob*width ..`` (``lanes``).

    ``blk = (block var, channels per block, blocks, sums)``: the tile sums one block of input
    channels, starting from (and, but for the last block, ending in) its partial sums in
    ``sums`` (``[pixel][lane]``)."""
    c, p = g["c"], g["p"]
    keep, lanes = lanes, _tile_lanes(g, lanes)
    acc = decl_buffer((rows, lanes), "float32", "pw_acc", scope="local")
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def each(fn):
        return _loop(ctx, "ii", rows, unroll, lambda ii: _loop(ctx, "jj", lanes, vec,
                                                               lambda jj: fn(ii, jj)))

    init = each(lambda ii, jj: S.BufferStore(acc, E.FloatImm("float32", 0.0), [ii, jj]))
    first, extent = E.IntImm("int64", 0), c

    def xin(ci, ii):
        if xt is None:
            return xf[(nv * c + ci) * p + p0 + ii]
        return xt[nv * (c * p) + p0 * c + ci * rows + ii]

    if blk is not None:
        kb, kc, nkb, sums = blk
        init = S.IfThenElse(E.EQ(kb, _i(0)), init, each(lambda ii, jj: S.BufferStore(
            acc, sums[(p0 + ii) * lanes + jj], [ii, jj])))
        first, extent = E.Cast("int64", kb * kc), kc
    # panels outer: the weights one block (or panel) on are fetched into cache while this
    # block's run (``PREFETCH_WEIGHTS``; the prefetch of the last may run past the weights)
    ahead = extent if PREFETCH_WEIGHTS and g["panels_outer"] else 0
    xahead = PREFETCH_CHANNEL_INPUT[vector_isa()] if not g["panels_outer"] and xt is None else 0

    def mac(cc):
        fma = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(
            ctx, "jj", lanes, vec, lambda jj: S.BufferStore(
                acc, acc[ii, jj] + wp[ob, first + cc, jj] * xin(first + cc, ii), [ii, jj])))
        if xahead:
            fma = S.SeqStmt([_prefetch(xf[(nv * c + first + cc) * p + p0 + xahead]), fma])
        if not ahead:
            return fma
        # (every cache line of the row: a 32-lane row is two)
        pfs = [_prefetch(wp[ob, first + cc + ahead, lane]) for lane in range(0, lanes, LANES)]
        return S.SeqStmt([*pfs, fma])

    macs = _reduce64(ctx, "c", extent, mac)
    store = _store_tile(ctx, g, of, out, epi, nv, ob, keep, p0, rows, acc)
    if blk is not None:
        store = S.IfThenElse(E.EQ(kb, _i(nkb - 1)), store, each(lambda ii, jj: S.BufferStore(
            sums, acc[ii, jj], [(p0 + ii) * lanes + jj])))
    body = S.DeclBuffer(acc, S.SeqStmt([init, macs, store]))
    return S.Allocate(acc.data, "float32", [rows * lanes], True, body)


def _tile_lanes(g, lanes: int) -> int:
    """The lanes a channel-vector tile of ``lanes`` output channels computes: a last panel of
    ``O % width`` channels rounded up to a power of two of at least ``CHANNEL_TAIL`` lanes (the
    packed weights are zero past O). Tiles of 20 or 24 lanes measured 3.4-4.3x slower than
    ONNX Runtime on a Sapphire Rapids Xeon (one thread: 116->116 at 14x14 0.176 ms, 128->120
    0.195, 256->56 at 7x7 0.089), rounded up to 32 lanes 0.047 (ORT 0.054)."""
    return min(g["width"], max(CHANNEL_TAIL, 1 << (lanes - 1).bit_length()))


def _store_tile(ctx, g, of, out, epi, nv, ob, lanes: int, p0, rows: int, acc) -> S.Stmt:
    """A channel-vector tile (``acc[pixel][lane]``, its first ``lanes`` lanes real output
    channels) through the epilogue into the output.

    With ``TRANSPOSED_STORE`` through a copy, read back one output channel at a time: each
    output row's ``rows`` pixels are one vector store (gathered from the copy's rows, a loop
    over the channels rolled by ``TRANSPOSE_UNROLL``) instead of one store per lane and pixel. An epilogue reading an operand laid out like the
    output (a residual) then runs on those pixel vectors, its operand read along the pixels;
    any other (bias, silu) on the tile's vectors. Measured on a Zen 4 (one thread, against ONNX
    Runtime side by side, us, one store per lane -> transposed): 192->1152 + silu at 7x7 243 ->
    217, 320->1280 + silu 407 -> 392, 320->1280 + residual 421 -> 379, 208->208 + silu at
    14x14 176 -> 165."""
    p = g["p"]
    unroll, vec = S.ForKind.UNROLLED, S.ForKind.VECTORIZED

    def at(o, px):
        return [(nv * g["o"] + o) * p + px]

    if not TRANSPOSED_STORE:
        return _loop(ctx, "ii", rows, unroll, lambda ii: _loop(ctx, "jj", lanes, vec, lambda jj:
                     S.BufferStore(of, pixel_value(ctx, g, out, epi, nv, ob * g["width"] + jj,
                                                   p0 + ii, acc[ii, jj]),
                                   at(ob * g["width"] + jj, p0 + ii))))
    late = epi is not None and _reads_plane(g, out, epi[0])
    res = decl_buffer((rows, lanes), "float32", "pw_res", scope="local")

    def fill(ii, jj):
        val = acc[ii, jj] if late else pixel_value(ctx, g, out, epi, nv, ob * g["width"] + jj,
                                                   p0 + ii, acc[ii, jj])
        return S.BufferStore(res, val, [ii, jj])

    def put(jj, ii):
        o = ob * g["width"] + jj
        val = pixel_value(ctx, g, out, epi, nv, o, p0 + ii, res[ii, jj]) if late else res[ii, jj]
        return S.BufferStore(of, val, at(o, p0 + ii))

    copy = _loop(ctx, "ii", rows, unroll, lambda ii: _loop(ctx, "jj", lanes, vec,
                                                            lambda jj: fill(ii, jj)))

    def column(jj):
        return _loop(ctx, "ii", rows, vec, lambda ii: put(jj, ii))

    u = TRANSPOSE_UNROLL
    if u >= lanes or lanes % u:
        rows_out = _loop(ctx, "jj", lanes, unroll, column)
    elif u == 1:
        rows_out = _loop(ctx, "jj", lanes, S.ForKind.SERIAL, column)
    else:
        rows_out = _loop(ctx, "jo", lanes // u, S.ForKind.SERIAL, lambda jo: _loop(
            ctx, "jj", u, unroll, lambda jj: column(jo * u + jj)))
    return _allocated(res, S.SeqStmt([copy, rows_out]))

"""conv2d (NCHW, groups 1) as generated code: an implicit GEMM with no im2col buffer.

The input is copied once per call into a zero-padded, stride-phased workspace
``xph[c, py, px, i, j] = x_padded[c, i*sh + py, j*sw + px]``. On that layout every filter tap
``(c, ky, kx)`` reads, for the output grid flattened as ``oy * Wq + ox``, one contiguous window
shifted by a constant offset, so the convolution is ``C[o, j] = sum_k W[o, k] * xph[off(k) + j]``:
a GEMM whose B rows are views of the input. A micro-kernel keeps an ``mr x nr`` tile (output
channels x flattened pixels) in vector registers; the parallel loop runs over (batch, pixel
panel). The grid has ``Wq >= OW`` columns per row; the extra columns are computed and ignored:
the result lands in a ``[N, O, OH, Wq]`` buffer that the fused epilogue (or a crop) reads.

When ``OW`` is a whole number of vectors the pixels are taken row by row instead ("row mode"):
each vector of a panel is one contiguous piece of an output row, so no padding column is
computed (``Wq - OW`` of every ``Wq``: 12% of a 16-wide 3x3 conv) and the kernel writes the
``[N, O, OH, OW]`` output layout itself.

A phased copy larger than L2 is made band by band of output rows (``band_rows``): each band's
phased rows, with the few more rows its filter reaches, are copied into a small workspace just
before the band's tiles read them, so the copy is written and read in L2 rather than written
out to memory and read back (DeepLab's 64 -> 128 3x3 stride-2 conv at 128x128: a 4 MB copy).

On both ISAs (``FUSED_EPILOGUE``, ``CHANNEL_BLOCK``: measured first on AVX2, then the Zen 4
measurement at ``common.vector_isa``) the micro-kernel also applies the conv's fused
elementwise epilogue (bias, residual add, relu) to its register tile and stores the output once
(no grid buffer, crop or epilogue pass), and sums the input channels in blocks whose input
window stays in L1.

This module holds the entry points (``emit``, ``supported``, ``fuses_epilogue``, ...), the
geometry, the knob and host-switch tables and the choices made from them; the phased copy and
its bands are ``conv_direct_phase``'s, the register micro-kernel ``conv_direct_micro``'s, its
stores and the crop ``conv_direct_store``'s. Those read the tables here at call time, so a
switch set on this module (as tests do) reaches them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..codegen.llvm.stmt import MAX_VECTOR_LANES
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order_visit
from ..topi.utils import static_shape as _shape
from . import conv_lanes, conv_lanes_emit
from .common import const_int as _const_int
from .common import dims_of as _dims
from .common import divisor_near, host_switch, int8_weight_conv, per_thread_slices, vector_isa
from .common import imm as _i
from .conv_direct_micro import _gemm
from .conv_direct_phase import _bands, _phase
from .conv_direct_store import _crop
from .knobs import select as _knobs

MR, NR = 12, 32  # register tile: output channels x pixels (nr a multiple of the vector width)
# the tile by vector ISA: its mr * nr / lanes accumulators plus the nr / lanes pixel vectors
# loaded per tap must fit the register file. With AVX2's 16 ymm registers 8x32 needs 32 and
# spills. Measured on a Zen 2 (AVX2), imported ResNet-18, one thread: 8x32 176 ms, 4x32 136,
# 8x16 119, 6x16 101, 5x16 84-100 (ORT 52-63). On AVX-512, 12x32 keeps 24 zmm accumulators
# (30 of the 32 registers with the 2 pixel vectors and a broadcast; no spills), 14 loads per
# 24 FMAs where 8x32 had 16 accumulators and 10 loads per 16 FMAs. Measured on an Intel Xeon
# (two 512-bit FMA ports), one thread, conv + bias + relu, ms, 8x32 -> 12x32 (ONNX Runtime):
# ResNet's 7x7 / 2 stem 1.28 -> 1.21 (1.42), 64->128 3x3 / 2 at 128x128 3.81 -> 3.47 (3.49),
# 128->256 at 64x64 3.20 -> 3.09 (3.10), 3->32 3x3 / 2 at 224x224 0.165 -> 0.162 (0.259); two
# more runs 2-7% faster, one (a loaded machine) within 1.6% either way. On a Zen 4 (one
# 512-bit FMA a cycle) both tiles are FMA-bound; 12x32 loads less per FMA
TILES = {"avx512": (MR, NR), "avx2": (6, 16)}
ROW_LANES = 16  # float32 lanes of one vector: row mode needs OW a multiple of it
# a convolution of fewer multiply-adds per image than this runs on the calling thread: waking
# the pool costs more than it saves. (It was 8M when a parallel loop waited for every worker:
# 0.3 ms on a loaded 2-core machine. The pool's caller now starts at once and never waits for
# a worker that has not joined; with 2M the Relax convnet at batch 1, 2 threads, went from
# 1.27-1.48x ONNX Runtime to 1.05x on a Zen 2.)
PARALLEL_MIN_MACS = 1 << 21
# a batch of images is split over the pool image by image once it has this many multiply-adds
# in all (each image is then one task: no fork-join inside it), and always from this many
# images up (then they balance over the threads better than one image's pixel panels do)
BATCH_PARALLEL_MIN_MACS = 1 << 21
BATCH_PARALLEL_MIN_IMAGES = 4
# strided convs: unroll the filter rows as well as the columns, so each tap's phase plane and
# row are constants (measured on a Zen 2: stride-2 3x3 convs of ResNet-18 5-7% faster; not the
# 7x7 stem). Both ISAs (the Zen 4 measurement at ``common.vector_isa``)
UNROLL_STRIDED_ROWS = {"avx512": True, "avx2": True}
# a last channel tile of at most a third of the tile's rows is merged with the full tile before
# it and split in two about equal ones (see ``_gemm``); both ISAs (the Zen 4 measurement)
SPLIT_SHORT_TILE = {"avx512": True, "avx2": True}
# the fused elementwise epilogue (bias, residual add, relu) applied to the register tile and
# stored once by the micro-kernel, instead of a grid buffer and a separate (crop +) epilogue
# pass over the output; both ISAs (the Zen 4 measurement)
FUSED_EPILOGUE = {"avx512": True, "avx2": True}
# input channels in blocks whose input window stays in L1 while the panel's tiles read it
# (``channel_block``); both ISAs (the Zen 4 measurement)
CHANNEL_BLOCK = {"avx512": True, "avx2": True}
# compact code for LLVM (a cold build spends most of its time optimizing the kernels): each
# tap's pixel vectors loaded once into a local for all the tile's rows and its offset bound
# once, the two equal short channel tiles of ``SPLIT_SHORT_TILE`` one loop, and the fused
# store of a panel running past the grid a loop over a copy of the tile rather than every
# vector with a fallback. Measured on a Zen 2 for ResNet-50's strided 1x1 convs and stem:
# the LLVM IR 6-50% smaller, LLVM's time 0-47% less, the same speed. Both ISAs (the Zen 4
# measurement)
COMPACT = {"avx512": True, "avx2": True}
# in grid mode (OW not a whole number of vectors) with grid rows of whole vectors, the fused
# store writes each row's last, partly outside piece as one masked vector store, where it went
# element by element, through a loop whose variable index into the register tile kept the
# whole tile in memory. Sapphire Rapids, one thread, SqueezeNet's stem (3 -> 64 3x3 / 2 at
# 224x224, OW = 111, conv + bias + relu): 1.09 ms element by element, 0.40 with the masked store
# (``conv_lanes``, which took it, 0.46). AVX2 not measured: off
ROW_TAIL_STORES = {"avx512": True, "avx2": False}
# ... and a conv of at most this many taps an output (input channels x filter taps) whose grid
# rows are whole vectors stays here rather than on ``conv_lanes`` (``few_taps_grid``), whose
# tiles store each pixel's output channels one by one (a scatter over the planes) after only a
# few FMAs each: SqueezeNet's stem (27 taps) above, 0.38 ms here against 0.46 there
FEW_TAPS_MAX = {"avx512": 32, "avx2": 0}
# ... with this register tile by default (None: ``TILES``'): 6 output channels x 64 pixels, 24
# accumulators as in 12 x 32. Sapphire Rapids, one thread, SqueezeNet's stem, ms, 12 x 32 /
# 6 x 64 / 4 x 64 / 8 x 32 (ONNX Runtime, its NCHW output): 0.386 / 0.355 / 0.357 / 0.377 (0.54)
FEW_TAPS_TILE = {"avx512": (6, 64), "avx2": None}
# a conv of at least WIDE_FILTER_COLUMNS filter columns (5x5, 7x7, 1x7) takes this register tile
# by default (None: ``TILES``'), by host (``common.host_switch``): on the Intel Xeon LLVM calls
# "rocketlake" 14 output channels x 32 pixels, 28 accumulators with the 2 pixel vectors and a
# broadcast in 31 of the 32 zmm registers, 28 FMAs per 16 loads where 12 x 32 did 24 per 14.
# There, one thread, conv + bias + relu, A/B in one process, 9 interleaved rounds, ms, 12 x 32 ->
# 14 x 32 (ONNX Runtime): 32 -> 64 5x5 at 112x112 7.05 -> 6.72 (7.47), 64 -> 128 5x5 at 64x64
# 8.86 -> 8.54 (9.41), 64 -> 128 5x5 / 2 at 128x128 10.39 -> 10.02 (10.49), 32 -> 48 1x7 at
# 32x32 0.125 -> 0.120 (0.142); within the noise: 16 -> 32 7x7 at 112x112 3.32 / 3.33, 64 -> 64
# 5x5 at 56x56, 128 -> 128 5x5 at 28x28, ResNet's 7x7 / 2 stem. Other hosts not measured: off
WIDE_FILTER_TILE = {"rocketlake": (14, 32), "avx512": None, "avx2": None}
WIDE_FILTER_COLUMNS = 5
# a conv of fewer output channels than the tile's ``mr`` (a 1-channel cross-correlation, the
# last layers of a decoder: DCCRN's transposed convs to 8 and 1 channels, SiamFC's 64 -> 1 8x8
# response map) keeps the tile's accumulators busy with more pixels instead: ``few_channels_nr``
# widens the panel to as many pixel vectors as the tile had accumulators (``mr * nr`` floats),
# the pixel vectors of a tap counted too, at most FEW_CHANNELS_MAX_VECTORS, the grid split into
# panels of about equal width. A 1 x 32 tile holds two accumulators: two FMA chains, each
# waiting out the FMA's latency. Intel Xeon (LLVM's "rocketlake"), one thread, ms: SiamFC's
# 64 -> 1 8x8 map at 24x24 (a run-time weight) 0.074 -> 0.053 (a panel of 4 vectors 0.058);
# whole models, the switch off / on in one process with ONNX Runtime, 7 interleaved rounds:
# DCCRN 0.90x -> 0.74x ORT, SiamFC 0.96x -> 0.92x (the kernels of RegNet, SqueezeNet, Xception
# and det_postprocess unchanged). By vector ISA; measured on AVX-512 only: AVX2 off
FEW_CHANNELS_WIDE = {"avx512": True, "avx2": False}
FEW_CHANNELS_MAX_VECTORS = 8
# ... and such a conv of at most this many output channels stays here where ``conv_lanes``
# would take it (``few_channels_direct``), whose 16-channel tiles compute 1 real channel in 16.
# Intel Xeon (LLVM's "rocketlake"), one thread, conv + bias + relu, constant weight, ms, on
# conv_lanes -> here: 3x3 64 -> 4 / 5 / 6 / 7 / 8 at 28x28 0.100 / 0.103 / 0.107 / 0.103 /
# 0.104 -> 0.038 / 0.050 / 0.057 / 0.125 / 0.141 (7 and 8 get no wider panel: 2 vectors),
# 24 -> 3 at 14x14 0.0104 -> 0.0040, 32 -> 4 at 56x56 0.20 -> 0.077, 16 -> 1 at 112x112 0.081
# -> 0.075, DCCRN's 3x2 phases 16 -> 1 at 32x65 batch 4 0.038 -> 0.037
FEW_CHANNELS_DIRECT_MAX = 6
CHANNEL_BLOCK_BYTES = 12 * 1024
# a strided conv in row mode whose output plane is at most this many pixels goes to
# ``conv_lanes`` all the same (``lanes_candidate``), on a Zen 4 only (``common.host_switch``).
# Zen 4, one thread, 3x3 stride 2 + bias + relu, ms, here / there (ONNX Runtime), output
# 16x16: 64 -> 64 0.181 / 0.168 (0.186), 32 -> 32 0.0468 / 0.0458 (0.054), 32 -> 64 0.0915 /
# 0.0889 (0.097), 96 -> 96 0.395 / 0.370 (0.393), 128 -> 128 0.678 / 0.660 (0.686), 256 -> 256
# 2.78 / 2.67 (2.72), 64 -> 128 0.337 / 0.335 (0.350); at 32x32 it lost: 32 -> 64 0.355 / 0.50
# (0.38), 64 -> 64 0.716 / 0.825 (0.736), 16 -> 32 0.096 / 0.170 (0.107). On an Intel Xeon
# (LLVM's "rocketlake": two 512-bit FMA ports) it lost at 16x16 too, so other AVX-512 hosts
# keep row mode. There, one thread, A/B in one process, 9 interleaved rounds, ms, here / there
# (ONNX Runtime): 64 -> 64 0.144 / 0.158 (0.143), 96 -> 96 0.302 / 0.356 (0.311), 256 -> 256
# 2.34 / 3.27 (2.32), 128 -> 128 0.547 / 0.700 (0.598), 32 -> 64 0.080 / 0.091 (0.088), 32 ->
# 32 0.044 / 0.046 (0.058), 64 -> 128 0.252 / 0.295 (0.262). AVX2: below. Only convs
# of at least STRIDED_ROWS_LANES_MIN_CHANNELS input channels (those measured): a stem of 3
# channels (ConvMixer's 8x8 / 8 patches, whose tuned conv_direct tile is in the znver4 table)
# stays here. (On Rocket Lake, one thread, A/B in one process, 9 interleaved rounds, ms, here /
# on conv_lanes (ONNX Runtime): 3 -> 16 7x7 / 2 at 224x224 0.36 / 0.42 (0.51), 3 -> 64 1.42 /
# 1.71 (1.66), 3 -> 64 3x3 / 2 0.400 / 0.394 (0.62): the 7x7 stems stay here there too.)
# AVX2, since ``conv_lanes.DIRECT_STRIDED`` (its tiles read the input itself, no padded copy):
# Zen 3, one thread, A/B in one process, 11 interleaved rounds, ms, here / there (ONNX
# Runtime): at 32x32 to 16x16 64 -> 64 0.229 / 0.198 (0.225) and 0.223 / 0.199 (0.228), 32 -> 64
# 0.111 / 0.100 (0.120), 32 -> 32 0.061 / 0.052 (0.075), 96 -> 96 0.479 / 0.453 (0.486), 128 ->
# 128 0.836 / 0.830 (0.851), 256 -> 256 3.33 / 3.37 (3.43); at 64x64 to 32x32 it lost (32 -> 64
# 0.429 / 0.546 (0.468)); in det_postprocess (bench_layers_ort, graph order, two runs each,
# alternating) the same conv there lost as well: 0.430 / 0.575 and 0.469 / 0.536 ms (ORT
# 0.404-0.411), the whole model 0.94-0.95x -> 1.04-1.11x ORT
STRIDED_ROWS_LANES_MAX_PIXELS = {"znver4": 256, "avx512": 0, "avx2": 256}
STRIDED_ROWS_LANES_MIN_CHANNELS = 32
# (Measured non-wins, Rocket Lake, det_postprocess's 32 -> 64 3x3 / 2 at 64x64 and 64 -> 64 at
# 32x32 in the whole model, one process, 21 interleaved rounds, in graph order, ms, row mode
# here (ORT's NCHWc node 0.192 / 0.097 in its profile): 0.243 / 0.118; CHANNEL_BLOCK_BYTES
# 24 KB 0.245 / 0.122, 6 KB 0.248 / 0.122; phased rows padded to whole vectors whatever the
# padding 0.242 / 0.122; no PREFETCH_NEXT_CHANNEL 0.249 / 0.128 (one run); another run, here
# 0.255 / 0.125, the 16x16 plane on conv_lanes (this switch at 256) 0.143, both (at 1024)
# 0.395 / 0.143; alone, tiles 6 x 64, 8 x 32, 12 x 16, 16 x 16
# within 5% of 12 x 32 or slower. By perf samples the phased copy is 9% of the 64x64 conv and
# the 12 x 32 tile's loop (2 pixel loads, 12 broadcasts, 24 FMAs a tap, no spills) the rest,
# spread evenly: ORT's node, which reads its blocked layout with no copy, is the gap)
# a conv in row mode whose pixel panels overhang its output grid by at least 1 / this of it (a
# 1-D conv over 48 pixels: panels of 32 compute 64) goes to ``conv_lanes`` (``row_overhang``),
# whose tiles cover the plane exactly; 0: never. On the Intel Xeon LLVM calls "rocketlake", one
# thread, conv + bias + relu, A/B in one process, 7 interleaved rounds, ms, here / there (ONNX
# Runtime), 1-D convs as conv2d over one row: 96 -> 96 k5 at 48 0.040 / 0.030 (0.034), k7
# 0.049 / 0.043 (0.046), k3 0.027 / 0.019 (0.023), 192 -> 192 k3 at 48 0.081 / 0.061 (0.067),
# 64 -> 64 k5 at 16 0.009 / 0.006 (0.013); a smaller overhang even: 96 -> 96 k5 at 80 (a fifth)
# 0.057 / 0.057, at 112 0.068 / 0.068; none (64 -> 64 k7 at 256) lost there, 0.089 / 0.121.
# Other hosts not measured: off
ROW_OVERHANG_LANES = {"rocketlake": 4, "avx512": 0, "avx2": 0}
# a conv strided in width, in row mode, pads its phased rows to a whole number of vectors
# (``_aligned_rows``), so that every phase plane and row starts on a 64-byte line: the pixel
# vectors of the taps that read a phase from its column 0 (two of the three filter columns of a
# 3x3 stride-2 conv) are then aligned loads, not loads split over two lines. Only where that
# adds at most a quarter to a row (OW >= 64). Sapphire Rapids, one thread, conv + bias + relu,
# ms, median of 9 interleaved rounds, unpadded -> padded (ONNX Runtime): 64 -> 128 3x3 / 2 at
# 128x128 3.86 -> 3.66 (3.82), 32 -> 64 at 128x128 0.92 -> 0.88 (1.00), 3 -> 64 at 256x256
# 0.45 -> 0.42 (0.77); in three earlier runs of the first 4-7% faster. Stride 1 (a third of the
# taps aligned) measured within the noise either way (64 -> 64 and 128 -> 128 at 64x64, -4% to
# +3%), ResNet's 7x7 / 2 stem (two of seven filter columns aligned) 1.33 -> 1.36: neither is
# padded (at least half the filter columns must read from column 0). AVX2 (a vector is half a
# line) not measured: off
ALIGNED_PHASE_ROWS = {"avx512": True, "avx2": False}
# a phased copy of more than BAND_MIN_BYTES is made band by band of output rows, each band's
# rows (plus the rows its filter reaches below it) copied into a workspace of at most
# BAND_BYTES just before its panels read them: the copy never leaves L2, where the whole
# image's copy went out to memory and was read back (``band_rows``). Measured on a Zen 4, one
# thread, conv + bias + relu alone (ms, whole copy -> bands, ONNX Runtime beside it): 64 -> 128
# 3x3 stride 2 at 128x128 6.9-7.1 -> 6.2-6.4 (6.5-6.9), 128 -> 256 at 64x64 5.9-6.1 -> 5.8
# (5.9-6.2), 32 -> 64 at 128x128 1.63 -> 1.53 (1.57); workspaces of 256 KB and 512 KB within the
# noise; DeepLab's head 1.07-1.09x -> 1.03-1.04x ONNX Runtime. Both ISAs (the Zen 4 measurement
# at ``common.vector_isa``)
BANDS = {"avx512": True, "avx2": True}
# The threshold by host (``common.host_switch``; an int: every host's, as tests set it). AVX2
# hosts have at most 512 KB of L2 a core (Haswell 256 KB, Zen 2 / Zen 3 512 KB), so a copy of
# 0.5-1 MB left whole went out of L2 there. Zen 3 (AVX2, 512 KB L2), one thread, conv + bias +
# relu alone, A/B in one process, 9-11 interleaved rounds, ms, 1 MB -> 512 KB (ONNX Runtime):
# det_postprocess's 32 -> 64 3x3 / 2 at 64x64 (a 557 KB copy) 0.469 -> 0.437 (0.482) and 0.467
# -> 0.435 (0.497) (a third run, 256 KB, within 1%); 3 -> 16 and 3 -> 32 stems at 224x224 (613
# KB) 0.171 -> 0.165, 0.304 -> 0.291; copies under 512 KB unchanged
BAND_MIN_BYTES = {"avx512": 1 << 20, "avx2": 512 * 1024}
# The workspace by host (``common.host_switch``; an int: every host's, as tests set it): 512 KB
# on the Intel Xeon LLVM calls "rocketlake" (2 MB L2), where bands of 4 output rows (5 phased
# rows copied for 4) beat 256 KB's 2 (3 copied for 2). There, one thread, A/B in one process,
# thread CPU time, ms, 256 KB -> 512 KB (ONNX Runtime): DeepLab's head (15 interleaved rounds,
# two runs) 17.92 -> 17.30 (17.03) and 18.71 -> 18.35 (18.15); its 64 -> 128 3x3/2 at 128x128
# alone (15 rounds) 4.53 -> 4.37 (5.18), 128 -> 256 at 64x64 4.26 -> 4.25 (4.72)
BAND_BYTES = {"rocketlake": 512 * 1024, "avx512": 256 * 1024, "avx2": 256 * 1024}
# ... and where no band fits BAND_BYTES (a tall filter: each band must have at least twice the
# ``hq - oh`` rows the filter reaches below it), bands of up to this many bytes (``band_rows``)
# rather than one copy of the whole image: that copy (4.5 MB for a 64 -> 128 5x5 stride-2 conv
# at 128x128) did not fit L2 and, the channel tiles outer (``aliased_planes``), every tile read
# it from L3 again. Intel Xeon (LLVM's "rocketlake", 2 MB L2), one thread, conv + bias + relu,
# A/B in one process, 9 interleaved rounds, ms, whole copy -> bands (ONNX Runtime): 64 -> 128
# 5x5 / 2 at 128x128 49.9 -> 13.0 (13.1) (there BAND_BYTES itself is now 512 KB). AVX2 not
# measured: 0 (off)
BAND_BYTES_WIDE = {"avx512": 512 * 1024, "avx2": 0}
# A band's copy (``xph_band``, 0.17-0.2 MB at DeepLab's head and the FPN's convs) is a slice of
# the kernel's workspace, which the executor allocates once, not malloc'd and freed per band per
# call. At these sizes glibc's default (dynamic) thresholds kept the malloc'd copy on the heap
# without page faults even with MINITVM_NO_MALLOC_TUNING=1 (0 a call either way); one thread,
# the two calls interleaved in one process, ms, malloc'd -> slices: 64->128 3x3/2 at 128x128
# 3.29-3.30 -> 3.23-3.25, 128->256 3x3/2 at 64x64 3.11-3.16 -> 3.04-3.10. Serial bands share one
# slice (every ISA: the same loops). Bands on the pool take one slice per thread of the call
# (``common.num_threads``, at most BAND_SLOTS slices), each thread's bands in turn, where
# BAND_SLICES is on: that changes the band loop (threads take fixed bands, not chunks from the
# shared counter), measured on AVX-512 only; AVX2 keeps a copy malloc'd per band.
BAND_SLICES = {"avx512": True, "avx2": False}
# the phase fill of a conv strided in height copies the input rows in order (loop index
# ``(c * hq + i) * sh + py``: input row ``i * sh + py``, each into its row phase) rather than row
# phase by row phase (``(c * sh + py) * hq + i``: every ``sh``-th row, then again from the next),
# so the reads are one sequential stream per channel that the prefetcher follows. Zen 4, one
# thread, conv + bias + relu alone, A/B in one process, median of 9 interleaved rounds, ms,
# phases -> in order: 64 -> 128 3x3 / 2 at 128x128 6.50 -> 6.21 (the copy alone 0.90 -> 0.73),
# 128 -> 256 at 64x64 5.90 -> 5.82; whole models (15 rounds) DeepLab's head 0.990x, the
# RegNet-like net 0.982x, ResNet-50 1.002x. Both ISAs (the Zen 4 measurement)
PHASE_ROWS_IN_ORDER = {"avx512": True, "avx2": True}
# ... and each phased row's copy first prefetches the same input row of the channel
# PREFETCH_AHEAD on, line by line: a band's copy reads only a few rows of each channel, a short
# stream the hardware prefetcher has barely picked up before the next channel's (64 KB on)
# starts. Zen 4, one thread, conv + bias + relu alone, A/B in one process, median of 21
# interleaved rounds, no prefetch -> prefetch: 64 -> 128 3x3 / 2 at 128x128 6.28-6.31 ->
# 5.99-6.00 ms, 128 -> 256 at 64x64 5.74-5.83 -> 5.59-5.74, 32 -> 64 at 128x128 1.47-1.74 ->
# 1.43-1.67, 128 -> 128 at 56x56 (no bands) and 3 -> 64 at 256x256 within 1%; two channels
# ahead as one; DeepLab's head 0.978x (21 rounds), the RegNet-like net and ResNet-50 0.999x,
# 1.001x. Both ISAs (the Zen 4 measurement)
PREFETCH_NEXT_CHANNEL = {"avx512": True, "avx2": True}
PREFETCH_AHEAD = 1
# the strided phase fill as ``conv_phase_fill.fill_strided``: the row phases unrolled in a loop
# over (channel, phased row), each row's vector pieces unrolled with an overlapping last piece
# and single stores for its padding columns, where ``_phase_strided`` divided its loop index
# per phased row and looped over the pieces and a scalar tail (about 100 instructions a row of
# a 3x3 stride-2 conv's 64-wide input)
# (AVX2, measured non-win: Zen 3, det_postprocess in bench_layers_ort, graph order, two runs
# alternating with the defaults, ms, its 32 -> 64 and 64 -> 64 3x3 / 2: defaults 0.431-0.432 /
# 0.199-0.203; this switch on 0.422-0.507 / 0.198-0.230; ``LOOP_PASSES`` on 0.423-0.451 /
# 0.198-0.199; ``BAND_SLICES`` on 0.431-0.433 / 0.196-0.201)
PHASE_ROW_RUNS = {"avx512": True, "avx2": False}
BAND_SLOTS = 8
# Images on the pool (``_by_image``) take one workspace slice per thread of the call, at most
# this many (video3d's and tsm_nonlocal's per-image copies were malloc'd and freed per image)
IMAGE_SLOTS = 8
# in a band the channel tiles are the outer loop (each tile's weights read once per band, not
# once per panel; the band's copy stays in L2 for every tile) given two full tiles
BAND_TILES_OUTER = True
# the channel tiles are the outer loop as well when the output planes alias in L2
# (``aliased_planes``): planes a multiple of 64 KB apart (128x128 pixels) fall on one set of a
# 1 MB 16-way L2, and a panel's stores to 64 of them (the panels outer) evict each other.
# Measured on a Zen 4, one thread, conv + bias + relu (ms, panels -> tiles outer): 3 -> 64
# 3x3 stride 2 at 256x256 0.62 -> 0.56 alone, 0.78-0.98 -> 0.66-0.68 in DeepLab (ONNX Runtime
# 0.70); 3 -> 64 at 128x128 stride 1 0.55 -> 0.53; 3 -> 32 at 224x224 (not aliased) 0.22 -> 0.24
ALIASED_TILES_OUTER = {"avx512": True, "avx2": True}
L2_SET_BYTES, L2_WAYS = 64 * 1024, 16
# the partial sums kept between channel blocks (a panel's over every channel tile, or with
# the channel tiles outermost a tile's over every panel): at most this many floats (stack
# memory of the thread), else one pass
# (by host, ``common.host_switch``). On the Intel Xeon LLVM calls "rocketlake" (48 KB L1) 4096
# floats: a band's tile sums of 24-48 KB (a 5x5 stride-1 conv's bands of 8-16 rows at 64x64,
# 16-32 pixel panels) were loaded and stored by every tile of every channel block, pushing its
# input window and weights out of L1. There, one thread, A/B in one process, thread CPU ms,
# 16384 -> 4096 (ONNX Runtime): 64 -> 128 5x5 at 64x64 + bias + relu (9 rounds) 14.21 -> 10.55
# (10.59), with no channel blocks 10.51; 64 -> 128 3x3/2 at 128x128 (12 KB of sums) 4.25 ->
# 4.22; fpn_upsample (abmodel, 15 rounds) 7.76 -> 6.91 (10.64). Other hosts not measured
CHANNEL_BLOCK_SUMS_MAX = {"rocketlake": 4 * 1024, "avx512": 16 * 1024, "avx2": 16 * 1024}
# convs computed by conv_lanes (``packs_weight``) read an operand laid out like the output (a
# residual) in their fused epilogue, one output channel per lane (measured on a Zen 2 against
# a separate pass: within the noise at 56x56 .. 7x7); it saves a pass over the output
LANES_PLANE_OPERANDS = True
# a tile whose accumulators and the pixel vectors of its unrolled filter columns (with a
# broadcast weight) take more than the vector registers has its channel loop marked
# ``codegen.build.LOOP_PASSES`` (``loop_passes``): LLVM's O1 pipeline rather than the minimal
# one. From the minimal pipeline's IR the code generator hoisted all of a filter row's pixel
# loads to its top and spilled the accumulators to the stack and back each filter row (50-54
# stack moves a row of a 12 x 32 tile of 5x5 and 7x7 filters, whether it did depended on the
# address arithmetic); from O1's it keeps them in registers. Intel Xeon (LLVM's "rocketlake"),
# one thread, conv + bias + relu, A/B in one process, ms, minimal -> O1 (ONNX Runtime):
# 32 -> 64 5x5 at 112x112 10.9 -> 7.0 (7.3), 16 -> 32 7x7 at 112x112 5.1 -> 3.4 (4.1).
# AVX2 (16 registers, 6 x 16 tiles) not measured: off
LOOP_PASSES = {"avx512": True, "avx2": False}
VECTOR_REGISTERS = {"avx512": 32, "avx2": 16}


def default_tile(t=None) -> tuple[int, int]:
    """(mr, nr): the register tile of this machine's vector ISA (``TILES``); for conv2d stage
    ``t``, when given, ``FEW_TAPS_TILE``'s where ``few_taps_grid``, else ``WIDE_FILTER_TILE``'s
    for a filter of at least ``WIDE_FILTER_COLUMNS`` columns."""
    few = FEW_TAPS_TILE[vector_isa()] if t is not None and few_taps_grid(t) else None
    wide = host_switch(WIDE_FILTER_TILE) if t is not None and \
        _shape(t.op.attrs["operands"][1])[3] >= WIDE_FILTER_COLUMNS else None
    mr, nr = few or wide or TILES[vector_isa()]
    if t is not None:
        nr = few_channels_nr(t, mr, nr)
    return mr, nr


def few_channels_direct(t) -> bool:
    """Does conv2d ``t``, of at most ``FEW_CHANNELS_DIRECT_MAX`` output channels, stay here
    (its pixels in the lanes, ``few_channels_nr``' panels) rather than on ``conv_lanes``, whose
    tiles put the output channels in the lanes and leave most of them idle?"""
    return FEW_CHANNELS_WIDE[vector_isa()] and \
        _shape(t.op.attrs["operands"][1])[0] <= FEW_CHANNELS_DIRECT_MAX


def few_channels_nr(t, mr: int, nr: int) -> int:
    """The panel width of conv2d stage ``t`` under an ``mr x nr`` tile: ``nr`` itself, or, for
    a conv of fewer output channels ``o`` than ``mr`` (``FEW_CHANNELS_WIDE``), the pixel vectors
    of the tile's accumulators spread over ``o`` rows: ``v`` vectors with ``o * v`` accumulators
    at most ``mr * nr / lanes`` and ``(o + 1) * v`` (the tap's pixel vectors too) within the
    vector registers less two, up to ``FEW_CHANNELS_MAX_VECTORS``; the grid then in the fewest panels
    of that width, each panel as narrow as they allow (whole vectors; a panel of at most
    ``MAX_VECTOR_LANES``, one vectorized loop, a power of two of them)."""
    o = _shape(t.op.attrs["operands"][1])[0]
    if not FEW_CHANNELS_WIDE[vector_isa()] or o >= mr or nr % ROW_LANES:
        return nr
    base = nr // ROW_LANES  # vectors of the tile's panel
    v = min(mr * base // o, (host_switch(VECTOR_REGISTERS) - 2) // (o + 1),
            FEW_CHANNELS_MAX_VECTORS)
    if v <= base:
        return nr
    g = geometry(t, {"mr": mr, "nr": nr})
    vectors = -(-g["grid"] // ROW_LANES)
    per = -(-vectors // -(-vectors // v))  # vectors a panel, the panels of about equal width
    if per * ROW_LANES <= MAX_VECTOR_LANES:  # one vectorized loop: a power of two lanes
        # (48 lanes ran 15x slower than 32 before codegen's vector_pieces; since, any
        # whole number of vectors measured no faster: kept)
        per = 1 << (per.bit_length() - 1)
    return max(nr, per * ROW_LANES)


def _parallel(g) -> bool:
    return _macs(g) >= g["min_macs"]


def geometry(t, knobs: dict | None = None) -> dict:
    """Sizes of the phased input and of the output grid of conv2d stage ``t``, plus the
    schedule's knobs (register tile ``mr x nr``, parallel threshold, unrolling, the bytes of a
    band's workspace; defaults: the constants above, else ``knobs`` from ``knobs.select``).

    The batch ``n`` may be symbolic (a PrimExpr); every other extent is static.
    """
    kn = knobs or {}
    mr, nr = kn.get("mr") or default_tile()[0], kn.get("nr") or default_tile()[1]
    attrs = t.op.attrs
    x = attrs["operands"][0]
    n = _dims(x)[0]
    c, h, w = (int(d) for d in x.shape[1:])
    o, cg, kh, kw = _shape(attrs["operands"][1])
    oh, ow = (int(d) for d in t.shape[2:])
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilation"]
    pt, pl, _, _ = attrs["padding"]
    hq = oh + ((kh - 1) * dh) // sh
    wq = ow + ((kw - 1) * dw) // sw
    rows_mode = ow % ROW_LANES == 0  # (independent of the knobs: grid_shape relies on it)
    gw = ow if rows_mode else wq  # the width of the grid the kernel writes
    grid = oh * gw
    panels = -(-grid // nr)
    plane = hq * wq
    xph_len = _xph_len(c * sh * sw, hq, wq, oh, ow, nr, rows_mode)
    g = dict(n=n, c=c, h=h, w=w, o=o, kh=kh, kw=kw, oh=oh, ow=ow, sh=sh, sw=sw, dh=dh, dw=dw,
             pt=pt, pl=pl, hq=hq, wq=wq, grid=grid, panels=panels, plane=plane,
             xph_len=xph_len, mr=mr, nr=nr, min_macs=kn.get("min_macs", PARALLEL_MIN_MACS),
             unroll_kw=kn.get("unroll_kw", True), rows_mode=rows_mode, gw=gw,
             band_bytes=kn.get("band_bytes", band_bytes()))
    return _aligned_rows(g)


def band_bytes() -> int:
    """The bytes of a band's workspace on this host (``BAND_BYTES``)."""
    return BAND_BYTES if isinstance(BAND_BYTES, int) else host_switch(BAND_BYTES)


def band_min_bytes() -> int:
    """The largest phased copy made whole (not in bands) on this host (``BAND_MIN_BYTES``)."""
    return BAND_MIN_BYTES if isinstance(BAND_MIN_BYTES, int) else host_switch(BAND_MIN_BYTES)


def _aligned_rows(g) -> dict:
    """Geometry ``g`` with its phased rows padded to whole vectors (``ALIGNED_PHASE_ROWS``)
    where that applies: row mode, strided in width, at least half the filter columns reading a
    phase from its column 0, at most a quarter more floats a row, and a band split
    (``band_rows``) kept; else ``g`` itself. The padding columns are zeros that
    no tap of the grid reads (in row mode a tap reads ``OW`` columns of a row)."""
    if not (g["rows_mode"] and g["sw"] > 1 and ALIGNED_PHASE_ROWS[vector_isa()]):
        return g
    if 2 * sum((kx * g["dw"]) // g["sw"] == 0 for kx in range(g["kw"])) < g["kw"]:
        return g  # most filter columns read a phase from further on: their loads stay split
    wq = -(-g["wq"] // ROW_LANES) * ROW_LANES
    if wq == g["wq"] or 4 * (wq - g["wq"]) > g["wq"]:
        return g
    al = dict(g, wq=wq, plane=g["hq"] * wq,
              xph_len=_xph_len(g["c"] * g["sh"] * g["sw"], g["hq"], wq, g["oh"], g["ow"],
                               g["nr"], True))
    # (nor does the padding move a band split into the wider workspace, BAND_BYTES_WIDE)
    bb = g["band_bytes"]
    kept = band_rows(g) and not band_rows(al) or _rows_within(g, bb) and not _rows_within(al, bb)
    return g if kept else al


def _xph_len(planes: int, hq: int, wq: int, oh: int, ow: int, nr: int, rows_mode: bool) -> int:
    """Floats of a phased copy of ``planes`` planes of ``hq x wq`` for an ``oh``-row output grid
    computed in panels of ``nr`` pixels: the planes, plus the zeroed floats the last panel's
    overhang reads past them."""
    grid = oh * (ow if rows_mode else wq)
    panels = -(-grid // nr)
    if rows_mode:  # whole phased planes, plus zeroed rows the last panel's overhang reads
        return planes * hq * wq + (-(-(panels * nr - grid) // ow) + 1) * wq
    return (planes - 1) * hq * wq + (hq - oh) * wq + (wq - ow) + panels * nr


def supported(t) -> bool:
    """Float32 (the weight float32, or int8: ``int8_weight_conv``, widened as it is read, here
    and in ``conv_lanes``), one group, static shapes: the generated implicit GEMM applies."""
    attrs = t.op.attrs
    a, b = attrs["operands"]
    if not (t.dtype == a.dtype == b.dtype == "float32" or int8_weight_conv(t)) or \
            attrs["groups"] != 1:
        return False
    if any(_const_int(d) is None for d in (*a.shape[1:], *b.shape, *t.shape[1:])):
        return False
    g = geometry(t)
    return g["xph_len"] < (1 << 31) and g["o"] >= 1


def grid_shape(t) -> tuple[int, ...]:
    """Shape of the buffer the kernel writes: ``[N, O, OH, Wq]`` (``[N, O, OH, OW]`` in row
    mode)."""
    g = geometry(t)
    return (g["n"], g["o"], g["oh"], g["gw"])


def fuses_epilogue(t, options) -> bool:
    """Can stage ``t``'s micro-kernel apply an elementwise epilogue to its register tile and
    store the ``[N, O, OH, OW]`` result itself (``emit(..., epilogue=...)``)? Where
    ``FUSED_EPILOGUE`` is on for the host's ISA (both ISAs), when the pixel tile is a whole
    number of store pieces."""
    if not FUSED_EPILOGUE[vector_isa()]:
        return False
    nr = _knobs(options, t).get("nr") or default_tile()[1]
    return nr % _piece() == 0


def fuses_plane_operands(t, options, packed: bool = False) -> bool:
    """May the fused epilogue also read operands laid out like the output plane (a residual)?
    For ``conv_lanes`` (``packed``: the weight is prepacked, ``packs_weight``):
    ``LANES_PLANE_OPERANDS``. Else only with the channel tiles as the outer
    loop: with the pixel panels outer, each panel's tiles read such an operand in as many
    scattered rows as there are channels, which the hardware prefetcher does not follow
    (measured on a Zen 2: a 64 -> 256 1x1 conv at 56x56 with a residual add took 3.96 ms fused,
    3.25 ms with a separate epilogue pass; without the residual 2.49 ms fused, 3.20 ms not)."""
    if packed:
        return LANES_PLANE_OPERANDS
    return weights_outer(geometry(t, _knobs(options, t)))


def packs_weight(t, options) -> bool:
    """Is generated conv2d ``t`` computed by ``conv_lanes`` once its weight is a build-time
    constant (which the lowering then passes prepacked: ``packed_weight``)? Not in row mode,
    where this implicit GEMM computes no padding column either (the ResNet stem: 2.47 ms here,
    2.79 in ``conv_lanes``)."""
    if t.op.tag != "conv2d_nchw" or not options.generated_conv or not supported(t):
        return False
    if _knobs(options, t)["impl"] == "im2col" and options.blas:
        return False
    return lanes_candidate(t, options)


def lanes_candidate(t, options) -> bool:
    """Would ``conv_lanes`` compute supported conv2d ``t`` given a prepacked weight (whatever
    the knobs): a shape ``conv_lanes`` takes, not in row mode unless ``conv_lanes`` skips the
    filter columns that read padding (``conv_lanes.row_segments``: a dilated conv on a small
    plane, whose pixel vectors here compute them), the panels here overhang the grid by much
    (``row_overhang``) or the conv is strided on a small output plane
    with enough input channels (``STRIDED_ROWS_LANES_MAX_PIXELS``)."""
    if not conv_lanes.supported(t, options) or few_taps_grid(t) or few_channels_direct(t):
        return False
    g = geometry(t)
    return not g["rows_mode"] or row_overhang(g) or \
        conv_lanes.row_segments(conv_lanes.geometry(t)) is not None or \
        g["sh"] * g["sw"] > 1 and g["c"] >= STRIDED_ROWS_LANES_MIN_CHANNELS and \
        g["oh"] * g["ow"] <= host_switch(STRIDED_ROWS_LANES_MAX_PIXELS)


def row_overhang(g) -> bool:
    """Do the pixel panels of row-mode geometry ``g`` compute past its output grid at least
    ``1 / ROW_OVERHANG_LANES`` of it (``host_switch``), so that ``conv_lanes`` takes it?"""
    part = host_switch(ROW_OVERHANG_LANES)
    return bool(part) and g["rows_mode"] and part * (g["panels"] * g["nr"] - g["grid"]) >= g["grid"]


def few_taps_grid(t) -> bool:
    """Does supported conv2d ``t`` stay here in grid mode although ``conv_lanes`` could take it
    (``FEW_TAPS_MAX``): few taps an output, grid rows of whole vectors whose last pieces are
    masked stores (``row_tail_stores``: the epilogue reads no operand per pixel unless the
    channel tiles are outer, ``fuses_plane_operands``)."""
    if not supported(t):
        return False
    g = geometry(t)
    lanes = _piece()
    return not g["rows_mode"] and g["c"] * g["kh"] * g["kw"] <= FEW_TAPS_MAX[vector_isa()] and \
        ROW_TAIL_STORES[vector_isa()] and g["wq"] % lanes == 0 and g["nr"] % lanes == 0 and \
        not weights_outer(g)


def packed_weight(t):
    """(packed shape, numpy transform) of the constant weight of conv2d ``t`` (``packs_weight``)."""
    return conv_lanes.packed_weight(t)


def _piece() -> int:
    """Lanes of one fused-epilogue store: one vector register of float32."""
    return 8 if vector_isa() == "avx2" else 16


def emit(ctx, t, out, x, w, epilogue: Callable | None = None) -> S.Stmt:
    """Statements computing conv2d stage ``t`` into ``out`` (``[N,O,OH,Wq]`` or ``[N,O,OH,OW]``).

    Images run one after another with each image's phase copy and pixel panels (or its bands:
    ``band_rows``) split over the thread pool, or, when there are several images and one
    image's work is too small to split (or there are enough images to balance), the images
    themselves are split over the pool, each with its own phased copy. A symbolic batch chooses between the two at run time.

    ``epilogue(indices, value)``, when given (see ``fuses_epilogue``), is the expression of the
    fused elementwise stage at output ``indices`` given the convolution's ``value`` there: the
    micro-kernel applies it to its registers and stores ``out`` (``[N, O, OH, OW]``) once, with
    no grid buffer, crop or separate epilogue pass.
    """
    if id(t) in ctx.packed:  # the weight is prepacked for conv_lanes (packs_weight)
        return conv_lanes_emit.emit(ctx, t, out, x, w, epilogue)
    if w.dtype != "float32":  # an int8 weight: widened to float32 once a call
        wide = ctx.temp(_dims(w), "float32", "w_float")
        return S.SeqStmt([_widen(ctx, w, wide), emit(ctx, t, out, x, wide, epilogue)])
    g = geometry(t, _knobs(ctx.options, t))
    if epilogue is not None:
        g["epi"] = epilogue
    direct = _dims(out)[3] == g["gw"] or epilogue is not None
    dst = out if direct else ctx.temp((g["n"], g["o"], g["oh"], g["gw"]), "float32", "conv_grid")
    nb = g["n"]
    per_image = _macs(g)
    if isinstance(nb, int):
        if nb > 1 and nb * per_image >= BATCH_PARALLEL_MIN_MACS and \
                (not _parallel(g) or nb >= BATCH_PARALLEL_MIN_IMAGES):
            conv = _by_image(ctx, g, x, w, dst)
        else:
            conv = _image_loop(ctx, g, x, w, dst)
    elif _parallel(g):  # big images: split each one unless there are enough of them
        conv = S.IfThenElse(nb >= BATCH_PARALLEL_MIN_IMAGES, _by_image(ctx, g, x, w, dst),
                            _image_loop(ctx, g, x, w, dst))
    else:
        conv = _by_image(ctx, g, x, w, dst)
    if direct:
        return conv
    return S.SeqStmt([conv, _crop(ctx, g, dst, out)])


def _widen(ctx, w, wide) -> S.Stmt:
    """``wide[...] = float32(w[...])`` over the weight: vectors of 16, then the rest."""
    n = 1
    for d in _dims(w):
        n *= d
    src, dst = ctx.flat_view(w), ctx.flat_view(wide)
    io, ii, it = ctx.fresh("wo"), ctx.fresh("wi"), ctx.fresh("wt")

    def put(i):
        return S.BufferStore(dst, E.Cast("float32", src[i]), [i])

    body = [S.For(io, _i(0), _i(n // 16), S.ForKind.SERIAL, S.For(
        ii, _i(0), _i(16), S.ForKind.VECTORIZED, put(io * 16 + ii)))]
    if n % 16:
        body.append(S.For(it, _i(n - n % 16), _i(n % 16), S.ForKind.SERIAL, put(it)))
    return S.SeqStmt(body) if len(body) > 1 else body[0]


def _macs(g) -> int:
    return g["o"] * g["grid"] * g["c"] * g["kh"] * g["kw"]


def _image_loop(ctx, g, x, w, dst) -> S.Stmt:
    """Images in turn, one shared phased copy; its fill and the panels run on the pool."""
    nb = g["n"]
    nv = ctx.fresh("n", "int32" if isinstance(nb, int) else nb.dtype)
    if band_rows(g):
        body = _bands(ctx, g, x, w, dst, nv, _parallel(g))
    else:
        xph = ctx.temp((g["xph_len"],), "float32", "xph")
        body = S.SeqStmt([_phase(ctx, g, xph, x, nv), _gemm(ctx, g, xph, w, dst, nv)])
    lo = 0 if isinstance(nb, int) else E.IntImm(nb.dtype, 0)
    return S.For(nv, lo, nb, S.ForKind.SERIAL, body)


def _by_image(ctx, g, x, w, dst) -> S.Stmt:
    """Images split over the thread pool, each thread's images in turn on a slice of the
    kernel's workspace of its own (``per_thread_slices``, at most ``IMAGE_SLOTS``) that holds
    the image's phased copy (or its bands' copy), rather than a copy malloc'd per image."""
    nb = g["n"]
    serial = dict(g, min_macs=1 << 62)  # the loops inside one image stay on its thread
    dt = "int32" if isinstance(nb, int) else nb.dtype
    rows = band_rows(g)
    size = _band(g, rows, _i(0))["xph_len"] if rows else g["xph_len"]
    stride = -(-size // 16) * 16  # slices on 64-byte lines
    slots = min(nb, IMAGE_SLOTS) if isinstance(nb, int) else IMAGE_SLOTS
    scratch = ctx.temp((slots * stride,), "float32", "xph_images")

    def one(task, p):
        nv = ctx.fresh("n", dt)
        xph = decl_buffer((size,), "float32", "xph_band" if rows else "xph", data=scratch.data,
                          elem_offset=scratch.elem_offset + p * stride)
        if rows:
            body = _bands(ctx, serial, x, w, dst, nv, False, xph=xph)
        else:
            body = S.SeqStmt([_phase(ctx, serial, xph, x, nv),
                              _gemm(ctx, serial, xph, w, dst, nv)])
        return S.LetStmt(nv, task, S.DeclBuffer(xph, body))

    need = max(2, -(-BATCH_PARALLEL_MIN_MACS // max(1, _macs(g))))
    return per_thread_slices(ctx, nb, slots, one, "image", min_tasks=need)


def band_rows(g) -> int:
    """Output rows of a band (``BANDS``), or 0 for one phased copy of the whole image: the
    most rows dividing the output's whose phased rows (with the ``hq - oh`` more rows the
    filter reaches) take at most ``band_bytes`` (where none do, ``BAND_BYTES_WIDE``), whose
    pixels are whole panels, and that are at least twice those extra rows (each band copies
    them again)."""
    if not BANDS[vector_isa()] or g["xph_len"] * 4 <= band_min_bytes():
        return 0
    wide = host_switch(BAND_BYTES_WIDE)
    return _rows_within(g, g["band_bytes"]) or \
        (_rows_within(g, wide) if wide > g["band_bytes"] else 0)


def _rows_within(g, cap: int) -> int:
    """``band_rows``' choice for a workspace of ``cap`` bytes (0: no band fits)."""
    extra = g["hq"] - g["oh"]
    row_bytes = g["c"] * g["sh"] * g["sw"] * g["wq"] * 4
    for r in range(g["oh"] // 2, 0, -1):
        if g["oh"] % r == 0 and (r + extra) * row_bytes <= cap and \
                r * g["gw"] % g["nr"] == 0 and r >= 2 * extra:
            return r
    return 0


def _band(g, rows: int, b) -> dict:
    """The geometry of band ``b`` (a PrimExpr) of ``rows`` output rows: its phased copy and
    pixel panels as those of an image of ``rows`` output rows, its output rows from
    ``y0 = b * rows`` (the output pixels from ``pix0``, in planes of ``out_grid`` pixels)."""
    hq = rows + g["hq"] - g["oh"]
    grid = rows * g["gw"]
    return dict(g, hq=hq, grid=grid, panels=-(-grid // g["nr"]), plane=hq * g["wq"],
                xph_len=_xph_len(g["c"] * g["sh"] * g["sw"], hq, g["wq"], rows, g["ow"],
                                 g["nr"], g["rows_mode"]),
                y0=b * rows, pix0=b * grid, out_grid=g["grid"],
                wo=g["o"] >= 2 * g["mr"] if BAND_TILES_OUTER else weights_outer(g),
                min_macs=1 << 62)


def _in_rows(g, i, py):
    """Input row of phased row ``i`` of phase ``py`` (of a band: from its first row ``y0``)."""
    if g.get("y0") is not None:
        i = i + g["y0"]
    return i * g["sh"] + py - g["pt"]


def _opix(g, p):
    """Output pixel of the plane of band pixel ``p`` (the same pixel but in a band)."""
    return p if g.get("pix0") is None else p + g["pix0"]


def _orow(g, r):
    """Output row of band row ``r``."""
    return r if g.get("y0") is None else r + g["y0"]


def _equal_tails(tails) -> bool:
    """Are the short channel tiles two of the same height, computed by one kernel
    (``COMPACT``)?"""
    return COMPACT[vector_isa()] and len(tails) == 2 and tails[0][1] == tails[1][1]


def channel_block(g) -> int:
    """Input channels per pass over a pixel panel's tiles (all of them: one pass, unless
    ``CHANNEL_BLOCK`` is on for this ISA and the panel's input window would overflow L1).

    Each pass reads, per channel, the filter rows of the input window under the panel: kept
    to about ``CHANNEL_BLOCK_BYTES``, that window stays in L1 while every channel tile of the
    panel reads it (one pass over 64 channels of a 3x3 conv reads 24 KB; a Zen 2's L1 is 32 KB).
    Block sizes divide the channel count, else there is one pass.
    """
    c = g["c"]
    if not CHANNEL_BLOCK[vector_isa()]:
        return c
    planes = len({(kx * g["dw"]) % g["sw"] for kx in range(g["kw"])})
    per_channel = g["kh"] * planes * 128  # two cache lines per filter row of a panel
    target = max(1, CHANNEL_BLOCK_BYTES // per_channel)
    if c < 2 * target:
        return c
    return divisor_near(c, target) or c


def weights_outer(g) -> bool:
    """Do the channel tiles form the outer loop? Given at least two full tiles: when the
    weights are larger than the phased image, or the output planes alias in L2
    (``aliased_planes``); in a band, as ``BAND_TILES_OUTER`` says."""
    if g.get("wo") is not None:
        return g["wo"]
    if g["o"] < 2 * g["mr"]:
        return False
    return g["o"] * g["c"] * g["kh"] * g["kw"] > g["xph_len"] or \
        (ALIASED_TILES_OUTER[vector_isa()] and aliased_planes(g))


def aliased_planes(g) -> bool:
    """Do the output planes (``grid`` floats apart) fall on so few L2 sets that a pixel panel's
    stores to all ``o`` of them (with the panels outer) overflow those sets' ways (half of
    them: the input and the weights use the rest)?"""
    sets = max(1, L2_SET_BYTES // max(64, math.gcd(g["grid"] * 4, L2_SET_BYTES)))
    return g["o"] > L2_WAYS // 2 * sets


def loop_passes(g, rows: int, columns: int) -> bool:
    """Does a ``rows``-row tile of geometry ``g`` with ``columns`` filter columns unrolled take
    LLVM's O1 pipeline (``LOOP_PASSES``): its accumulators, the pixel vectors of those columns
    and a broadcast weight more than the vector registers?"""
    if not host_switch(LOOP_PASSES):
        return False
    vectors = -(-g["nr"] // _piece())
    return (rows + columns) * vectors + 1 > host_switch(VECTOR_REGISTERS)


def row_tail_stores(g, gw: int, lanes: int) -> bool:
    """Does the fused store of grid-mode geometry ``g`` write the last piece of each output row
    as one masked vector store (``ROW_TAIL_STORES``)? When the grid rows are whole pieces (a
    piece never spans two rows) and the epilogue reads no operand per pixel (a masked-off lane
    would read past it)."""
    if not ROW_TAIL_STORES[vector_isa()] or gw % lanes or g["nr"] % lanes:
        return False
    probe = [E.Var("n", "int32"), E.Var("o", "int32"), E.Var("y", "int32"), E.Var("x", "int32")]
    per_pixel = []
    post_order_visit(g["epi"](probe, E.FloatImm("float32", 0.0)), lambda e: per_pixel.append(
        e) if isinstance(e, E.BufferLoad) and any(_uses(i, probe[2:]) for i in e.indices)
        else None)
    return not per_pixel


def _uses(e, vars_) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if any(n is v for v in vars_) else None)
    return bool(found)



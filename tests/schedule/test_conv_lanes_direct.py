"""``conv_lanes`` reading the input itself (``lanes_direct``, the AVX-512 default): the output
pixels run in classes of the same filter rows and columns (``pixel_classes``), each class's
tiles only the taps that read input, so no zero-padded copy is made. Matches numpy on strides
1 and 2, symmetric and uneven padding, odd planes, border pixels whose every tap reads padding,
dilation, groups, batches and the fused epilogue with a residual, in both loop orders and
widths, at one and two threads; AVX2 keeps the padded copy but for strided convs
(``DIRECT_STRIDED``)."""

import re
import sys

import numpy as np
import pytest
from asm_loops import fma_loops
from conv_reference import build_conv, rotated_knobs, run_graph
from conv_reference import conv_kernel as _conv_kernel

import minitvm as tvm
from minitvm import relay, tune
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.contrib import graph_executor
from minitvm.runtime import jit, threadpool
from minitvm.schedule import conv_lanes
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

pytestmark = pytest.mark.usefixtures("no_winograd")  # (conftest)


def _build(shape, o, k, strides, pads, dil, groups, epi, rng):
    return build_conv(shape, o, k, strides, pads, dil, epi, rng, groups)


def _buffers(kernel) -> set[str]:
    """The names of the buffers the kernel stores to or loads from."""
    names = {s.buffer.name for s in walk_stmts(kernel.prim_func.body)
             if isinstance(s, (S.BufferStore, S.DeclBuffer))}
    return names | {e.buffer.name for e in post_order(kernel.prim_func.body)
                    if isinstance(e, E.BufferLoad)}


CASES = [  # shape, output channels, filter, strides, padding, dilation, groups, epilogue
    ((1, 32, 12, 12), 64, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, "residual_relu"),  # ResNet's s2
    ((1, 40, 13, 11), 64, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, "bias_relu"),  # s2, odd plane
    ((1, 64, 7, 7), 64, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "residual_relu"),  # 9 classes
    ((1, 24, 9, 10), 32, 3, (1, 1), (2, 1, 0, 2), (1, 1), 1, "bias_relu"),  # uneven padding
    ((1, 16, 5, 5), 32, 3, (1, 1), (3, 3, 3, 3), (1, 1), 1, "bias_relu"),  # all-padding ring
    ((2, 24, 9, 10), 96, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, "residual_relu"),  # dilated, batch
    ((1, 64, 20, 20), 32, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "residual_relu"),  # channel blocks
    ((1, 64, 11, 9), 64, 3, (2, 2), (1, 1, 1, 1), (1, 1), 2, "residual_relu"),  # grouped, s2
    ((1, 64, 14, 14), 128, 3, (1, 1), (1, 1, 1, 1), (1, 1), 4, "bias_relu"),  # grouped (RegNet)
    ((1, 8, 9, 9), 48, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1, "none"),  # 5x5, 16 wide
    ((4, 16, 8, 8), 32, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "residual_relu"),  # image by image
]


# (each case at both widths, in both orders: "channels" at one width, "bands" at the other,
# alternating over the cases, so each width x order pair runs on five or six of the geometries
# above; the full product compiled 44 kernels)
@pytest.mark.parametrize("case, width, order", rotated_knobs(CASES, [16, 32], conv_lanes.ORDERS))
def test_direct_matches_numpy(case, width, order, force_knobs, restore_threads):
    """The tiles read the input itself (no ``xpad`` copy, the output through ``cl_opix``) and
    match numpy at one and two threads."""
    shape, o, k, strides, pads, dil, groups, epi = case
    force_knobs(lanes_direct=True, lanes_width=width, lanes_order=order)
    lib, inputs, want = _build(shape, o, k, strides, pads, dil, groups, epi,
                               np.random.default_rng(width + o + k))
    names = _buffers(_conv_kernel(lib))
    assert "cl_opix" in names and "xpad" not in names, names
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES[:3])
def test_padded_copy_still_matches_numpy(case, force_knobs):
    """``lanes_direct`` off: the zero-padded copy as before."""
    shape, o, k, strides, pads, dil, groups, epi = case
    force_knobs(lanes_direct=False)
    lib, inputs, want = _build(shape, o, k, strides, pads, dil, groups, epi,
                               np.random.default_rng(3))
    names = _buffers(_conv_kernel(lib))
    assert "xpad" in names and "cl_opix" not in names, names
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def _geometry(h, w, oh, ow, k=3, s=1, p=1, d=1):
    return dict(h=h, w=w, oh=oh, ow=ow, kh=k, kw=k, sh=s, sw=s, dh=d, dw=d, pt=p, pl=p)


@pytest.mark.parametrize("g", [
    _geometry(56, 56, 28, 28, s=2), _geometry(7, 7, 7, 7), _geometry(13, 11, 7, 6, s=2),
    _geometry(5, 5, 9, 9, p=3), _geometry(9, 10, 9, 10, p=2, d=2), _geometry(9, 9, 9, 9, k=5, p=2),
])
def test_pixel_classes_cover_the_plane_with_their_taps(g):
    """Every output pixel is in exactly one class, and a class's filter rows and columns are
    exactly those its pixels read input through (the largest class first)."""
    seen = np.zeros((g["oh"], g["ow"]), int)
    sizes = []
    for r0, nr, c0, nc, (ky0, ky1), (kx0, kx1) in conv_lanes.pixel_classes(g):
        seen[r0:r0 + nr, c0:c0 + nc] += 1
        sizes.append(nr * nc)
        for oy in range(r0, r0 + nr):
            rows = [ky for ky in range(g["kh"]) if 0 <= oy * g["sh"] - g["pt"] + ky * g["dh"]
                    < g["h"]]
            assert (rows[0], rows[-1] + 1) == (ky0, ky1) if rows else ky1 <= ky0
        for ox in range(c0, c0 + nc):
            cols = [kx for kx in range(g["kw"]) if 0 <= ox * g["sw"] - g["pl"] + kx * g["dw"]
                    < g["w"]]
            assert (cols[0], cols[-1] + 1) == (kx0, kx1) if cols else kx1 <= kx0
    assert (seen == 1).all()
    assert sizes == sorted(sizes, reverse=True)


def test_resnet_stride_two_classes():
    """ResNet-50's 3x3 stride-2 conv at 56x56: the interior, the top row, the left column and
    their corner (no bottom or right padding is read)."""
    got = conv_lanes.pixel_classes(_geometry(56, 56, 28, 28, s=2))
    assert got == [(1, 27, 1, 27, (0, 3), (0, 3)), (0, 1, 1, 27, (1, 3), (0, 3)),
                   (1, 27, 0, 1, (0, 3), (1, 3)), (0, 1, 0, 1, (1, 3), (1, 3))]


@pytest.mark.parametrize("isa, stride, want", [("avx512", 2, True), ("avx512", 1, True),
                                               ("avx2", 2, True), ("avx2", 1, False)])
def test_direct_by_default_on_avx512_and_strided(isa, stride, want, monkeypatch):
    """AVX-512 reads the input itself by default; AVX2 does for a strided conv
    (``DIRECT_STRIDED``) and keeps its padded copy for a stride-1 conv."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    g = dict(o=128, og=128, c=128, kh=3, kw=3, grid=784, sh=stride, sw=stride, parallel=False)
    assert conv_lanes.default_knobs(g)["lanes_direct"] is want
    assert conv_lanes.direct_default(g) is want


def test_direct_is_a_declared_knob():
    """The conv's search space declares ``lanes_direct`` (both values), its default the ISA's."""
    x = relay.var("x", shape=(1, 64, 14, 14))
    w = relay.const(np.ones((64, 64, 3, 3), "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(
        x, w, strides=(2, 2), padding=(1, 1), kernel_size=(3, 3), channels=64)))
    (task,) = [t for t in tune.extract_tasks(mod) if t.workload[0] == "conv2d_nchw"]
    assert set(task.space.values("lanes_direct")) == {False, True}
    assert task.space.default()["lanes_direct"] is conv_lanes.direct_default(dict(sh=2, sw=2))


@pytest.mark.skipif(vector_isa() != "avx512", reason="zmm registers")
def test_interior_tile_keeps_its_accumulators_in_registers(force_knobs):
    """128 -> 64 stride 2 at 24x24: the interior class (11 x 11 pixels: 6s and 5s) runs a
    6-pixel tile whose filter-row loop does 3 taps x 12 zmm FMAs into 12 accumulators, each
    pixel broadcast once a tap, with no spill, as over the padded copy."""
    force_knobs(lanes_direct=True, lanes_width=32)
    lib, _, _ = _build((1, 128, 24, 24), 64, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, "bias_relu",
                       np.random.default_rng(0))
    func = _conv_kernel(lib).prim_func
    level = sys.modules["minitvm.codegen.build"].ir_pipeline_level(func, 3)
    asm = jit.assembly(CodeGenLLVM(func, "kern", fast_math=True, gomp=False).generate(), level)
    loops = fma_loops(asm)
    six = [b for b in loops if len(re.findall(r"vfmadd\d+ps", b)) == 36]
    assert six, [len(re.findall(r"vfmadd\d+ps", b)) for b in loops]
    for b in six:
        fmas = re.findall(r"vfmadd\d+ps\s+[^\n]*", b)
        assert len({re.search(r"(%zmm\d+)$", f).group(1) for f in fmas}) == 12
        assert b.count("vbroadcastss") == 18
        assert "rsp" not in b and "rbp" not in b


def test_grouped_strided_conv_reads_directly_by_default():
    """RegNet's grouped 3x3 / 2 conv (16 channels a group) at its default knobs: on every ISA
    the tiles read the input itself (``DIRECT_STRIDED``: no padded copy ``xpad``, a table of
    pixel offsets ``cl_opix``) and the output matches numpy."""
    lib, inputs, want = build_conv((1, 32, 20, 20), 32, 3, (2, 2), (1, 1), (1, 1), "bias_relu",
                                   np.random.default_rng(5), 2)
    names = {s.buffer.name for s in walk_stmts(_conv_kernel(lib).prim_func.body)
             if isinstance(s, S.DeclBuffer)}
    assert "xpad" not in names and "cl_opix" in names
    np.testing.assert_allclose(run_graph(lib, inputs), want, rtol=2e-5, atol=2e-4)

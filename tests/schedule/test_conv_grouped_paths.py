"""Grouped convs (groups > 1, not depthwise) on the dense convs' schedules, in both dialects:
3x3 stride-1 convs of at least 16 channels a group by Winograd, each group a dense Winograd
conv (``conv_winograd``); the rest on channel lanes (``conv_lanes``), groups whose output
channels are not a multiple of 16 padded to whole tiles, and a weight computed in the graph
packed per call (``conv_lanes_emit.pack_at_run_time``). Every conv matches a float64 numpy
reference (``conv_reference``) at one and two threads, with odd channels a group, stride 2,
padding, dilation and batch 2; the tuner sees grouped workloads (a key, their knobs)."""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import grouped_conv_ref, knob_table, run_graph, taking_turns, with_epilogue

import minitvm as tvm
from minitvm import relax, relay, te
from minitvm.backend import kernel_cache
from minitvm.schedule import common, conv_lanes, conv_winograd, knobs, tunable
from minitvm.schedule.lower import LoweringOptions
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _buffers(prim) -> set[str]:
    """Names of the buffers a PrimFunc declares (a schedule's scratch names it)."""
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


def _schedule(names: set[str]) -> str:
    return "winograd" if "wg_v" in names else "lanes" if "cl_acc" in names else "other"


def _relay_conv(shape, o, groups, strides=(1, 1), pads=(1, 1), dil=(1, 1), epi="bias_relu",
                dynamic=False, seed=0):
    """(mod, inputs, want) of a grouped 3x3 conv (+ epilogue); ``dynamic``: its weight is the
    constant times an input scale (computed in the graph, as a hypernetwork's)."""
    rng = np.random.default_rng(seed)
    wv = rng.standard_normal((o, shape[1] // groups, 3, 3)).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    x = relay.var("x", shape=shape)
    args, inputs = [x], {"x": xv}
    weight = relay.const(wv)
    if dynamic:
        sv = (rng.random((o, 1, 1, 1)) + 0.5).astype("float32")
        s = relay.var("s", shape=sv.shape)
        args.append(s)
        inputs["s"] = sv
        weight, wv = relay.multiply(weight, s), wv * sv
    want = grouped_conv_ref(xv, wv, groups, strides, tuple(pads) * 2, dil)
    y = relay.nn.conv2d(x, weight, strides=strides, padding=pads, dilation=dil, groups=groups,
                        kernel_size=(3, 3), channels=o)
    y, want = with_epilogue(y, want, epi, bias, args, inputs, rng)
    return tvm.IRModule.from_expr(relay.Function(args, y)), inputs, want


def _build(mod, table=None):
    kernel_cache.clear_cache()
    with knobs.use_knobs(table), tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm")


def _conv_names(lib) -> set[str]:
    (k,) = [k for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return _buffers(k.prim_func)


def _check(lib, inputs, want, atol):
    scale = np.max(np.abs(want))
    for threads in (1, 2):
        got = run_graph(lib, inputs, threads)
        np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=atol)


def _forced(mod, **values):
    """A knob table giving every conv of ``mod`` these knob values."""
    return knob_table(mod, **values)


WINOGRAD_CASES = [  # (input shape, output channels, groups, padding, epilogue, block sizes)
    ((2, 34, 16, 16), 40, 2, 1, "residual_relu", (2, 4)),  # 17 in, 20 out a group, batch 2
    ((1, 48, 19, 34), 48, 3, 0, "none", (2, 4)),  # odd height, no padding
    ((1, 64, 14, 14), 64, 4, 1, "bias_relu", (2,)),  # 14 % 4: F(2x2) only
    ((1, 96, 35, 35), 48, 2, 1, "bias_relu", (2, 4)),  # 48 in, 24 out a group, ragged rows
]


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape,o,groups,pad,epi,sizes", WINOGRAD_CASES)
def test_grouped_winograd_matches_reference(shape, o, groups, pad, epi, sizes, m):
    if m not in sizes:
        pytest.skip(f"F({m}x{m}) does not apply to this conv")
    mod, inputs, want = _relay_conv(shape, o, groups, pads=(pad, pad), epi=epi)
    lib = _build(mod, _forced(mod, impl="winograd", wino_m=m))
    assert _schedule(_conv_names(lib)) == "winograd"
    _check(lib, inputs, want, 1e-5 if m == 2 else 5e-5)


def test_grouped_winograd_is_the_default_for_wide_groups():
    mod, inputs, want = _relay_conv((1, 128, 28, 28), 128, 4)  # 4 groups of 32
    lib = _build(mod)
    assert _schedule(_conv_names(lib)) == "winograd"
    _check(lib, inputs, want, 5e-5)


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("shape,o,groups", [
    ((2, 34, 32, 32), 40, 2),  # 17 in, 20 out a group, batch 2
    ((1, 96, 32, 36), 96, 3),
])
def test_grouped_winograd_of_a_computed_weight(shape, o, groups, m):
    """A weight computed in the graph is transformed per call (``transform_at_run_time``) on
    a plane of at least ``RUN_TIME_MIN_PIXELS`` pixels."""
    mod, inputs, want = _relay_conv(shape, o, groups, epi="residual_relu", dynamic=True)
    lib = _build(mod, _forced(mod, impl="winograd", wino_m=m))
    names = _conv_names(lib)
    assert _schedule(names) == "winograd" and "wg_u" in names
    _check(lib, inputs, want, 1e-5 if m == 2 else 5e-5)


def test_grouped_winograd_computed_weight_small_plane_runs_on_channel_lanes():
    """On a smaller plane the transform per call would cost what it saves: the weight is
    packed per call for channel lanes instead."""
    mod, inputs, want = _relay_conv((1, 64, 16, 16), 64, 2, dynamic=True)
    lib = _build(mod, _forced(mod, impl="winograd", wino_m=2))
    names = _conv_names(lib)
    assert _schedule(names) == "lanes" and "cl_wpack" in names
    _check(lib, inputs, want, 1e-5)


# (input shape, output channels, groups, strides, pads, dilation, epilogue); at least 160 taps
# a group (fewer: depthwise's schedule, with a computed weight or padded groups)
LANES_CASES = [
    ((1, 192, 28, 28), 192, 8, (2, 2), (1, 1), (1, 1), "bias_relu"),  # 24 a group: padded
    ((2, 96, 14, 14), 120, 4, (1, 1), (1, 1), (1, 1), "residual_relu"),  # 24 in, 30 out
    ((1, 240, 7, 7), 240, 10, (1, 1), (1, 1), (1, 1), "bias_relu"),  # 7x7: no Winograd
    ((1, 80, 9, 9), 40, 2, (2, 2), (0, 0), (1, 1), "none"),  # 20 out a group, stride 2
    ((1, 76, 15, 15), 104, 4, (1, 1), (2, 2), (2, 2), "bias_relu"),  # 19 in, 26 out, dilated
    ((2, 128, 12, 12), 64, 4, (2, 2), (1, 1), (1, 1), "residual_relu"),  # 32 in, 16, batch 2
]


# (the weight constant, prepacked, or computed in the graph, packed per call, taking turns over
# the cases; the padded groups of 24 channels both ways)
@pytest.mark.parametrize("case, dynamic", taking_turns(LANES_CASES, [False, True], every={0}))
def test_grouped_lanes_match_reference(case, dynamic):
    shape, o, groups, strides, pads, dil, epi = case
    mod, inputs, want = _relay_conv(shape, o, groups, strides, pads, dil, epi, dynamic)
    lib = _build(mod, _forced(mod, impl="direct"))
    names = _conv_names(lib)
    assert _schedule(names) == "lanes"
    assert ("cl_wpack" in names) == dynamic
    _check(lib, inputs, want, 1e-5)


def _stage(shape, wshape, groups, stride=1):
    x = te.placeholder(shape, name="x")
    w = te.placeholder(wshape, name="w")
    oh, ow = ((d + 2 - 3) // stride + 1 for d in shape[2:])
    info = {"strides": (stride, stride), "dilation": (1, 1), "padding": (1,) * 4,
            "groups": groups, "operands": (x, w)}
    return te.compute((shape[0], wshape[0], oh, ow), lambda b, o, y, z: x[b, o % shape[1], y, z],
                      name="conv2d", tag="conv2d_nchw", attrs=info)


def test_grouped_geometries():
    # padded groups: 24 output channels a group in 32-channel tiles; lanes map to the conv's
    g = conv_lanes.geometry(_stage((1, 192, 14, 14), (192, 24, 3, 3), 8))
    assert (g["og"], g["real_og"], g["o"], g["real_o"]) == (32, 24, 256, 192)
    # Winograd: each group's channels; depthwise and narrow-input groups not
    w = conv_winograd.geometry(_stage((1, 64, 28, 28), (64, 16, 3, 3), 4), {"wino_m": 2})
    assert (w["groups"], w["c"], w["og"], w["o"]) == (4, 16, 16, 64)
    assert conv_winograd.geometry(_stage((1, 64, 28, 28), (64, 1, 3, 3), 64)) is None
    assert conv_winograd.geometry(_stage((1, 64, 28, 28), (64, 8, 3, 3), 8)) is None
    assert conv_winograd.geometry(_stage((1, 64, 28, 28), (64, 16, 3, 3), 4, 2)) is None


@pytest.mark.parametrize("shape,wshape,groups,want", [
    ((1, 128, 28, 28), (128, 32, 3, 3), 4, ("winograd", 4)),  # wide groups: the dense default
    ((1, 128, 28, 28), (128, 16, 3, 3), 8, ("winograd", 2)),  # narrow groups: F(2x2)
    ((1, 128, 16, 16), (128, 16, 3, 3), 8, ("winograd", 2)),  # every computed tile real
    ((1, 144, 18, 18), (144, 16, 3, 3), 9, ("direct", 2)),  # narrow: 84% of tiles real
    ((1, 208, 14, 14), (208, 16, 3, 3), 13, ("direct", 2)),  # narrow: 77%
])
def test_grouped_winograd_default(monkeypatch, shape, wshape, groups, want):
    """AVX-512's default (``default_choice``; AVX2 takes Winograd wherever it applies)."""
    monkeypatch.setattr(conv_winograd, "vector_isa", lambda: "avx512")
    monkeypatch.setattr(common, "host_key", lambda switch: "avx512")  # not a listed CPU
    t = _stage(shape, wshape, groups)
    k = conv_winograd.default_knobs(t)
    assert (k.get("impl", "direct"), k["wino_m"]) == want


@pytest.mark.parametrize("shape,wshape,groups,want", [
    ((1, 128, 28, 28), (128, 16, 3, 3), 8, "direct"),  # gain 1.97: channel lanes there
    ((1, 160, 20, 20), (160, 16, 3, 3), 10, "direct"),  # 2.01
    ((1, 128, 32, 32), (128, 16, 3, 3), 8, "winograd"),  # 2.25: every computed tile real
    ((1, 128, 28, 28), (128, 32, 3, 3), 4, "winograd"),  # wide groups: the dense default
])
def test_grouped_winograd_default_on_rocketlake(monkeypatch, shape, wshape, groups, want):
    """On the Intel Xeon LLVM calls "rocketlake" narrow groups need a larger gain
    (``GROUPED_NARROW_MIN_GAIN``'s entry for it)."""
    monkeypatch.setattr(conv_winograd, "vector_isa", lambda: "avx512")
    monkeypatch.setattr(common, "host_key", lambda switch: "rocketlake"
                        if "rocketlake" in switch else "avx512")
    k = conv_winograd.default_knobs(_stage(shape, wshape, groups))
    assert k.get("impl", "direct") == want


def test_rocketlake_narrow_groups_build_on_lanes(monkeypatch):
    """The untuned build there: 3 groups of 16 at 20x20 (gain 2.01) on channel lanes, matching
    the reference at one and two threads."""
    isa = common.vector_isa()  # (an AVX2 host keeps its own switches: Winograd there)
    monkeypatch.setattr(common, "host_key", lambda switch: "rocketlake"
                        if "rocketlake" in switch and isa == "avx512" else isa)
    mod, inputs, want = _relay_conv((1, 48, 20, 20), 48, 3)
    lib = _build(mod)
    assert _schedule(_conv_names(lib)) == ("lanes" if isa == "avx512" else "winograd")
    _check(lib, inputs, want, 1e-5)


def test_grouped_workloads_are_tunable():
    """A grouped conv has a workload key (tuned records apply) and declares conv_lanes'
    knobs, and Winograd's where that applies; a depthwise conv declares none."""
    opts = LoweringOptions()
    key, space = tunable.conv2d_space(_stage((1, 128, 28, 28), (128, 32, 3, 3), 4), opts)
    assert key is not None and key[-2] == 4
    assert "winograd" in space.values("impl") and "lanes_width" in space.names
    key, space = tunable.conv2d_space(_stage((1, 192, 14, 14), (192, 24, 3, 3), 8, 2), opts)
    assert key is not None and "winograd" not in space.values("impl")
    assert set(space.values("lanes_width")) <= {16, 32}
    key, _ = tunable.conv2d_space(_stage((1, 64, 28, 28), (64, 1, 3, 3), 64), opts)
    assert key is None


@pytest.mark.parametrize("groups,cg,og,hw,stride,want", [
    (4, 32, 32, 28, 1, "winograd"),  # 4 groups of 32 at 28x28
    (8, 24, 24, 14, 2, "lanes"),  # RegNet-X-like: 24 a group, stride 2, padded tiles
])
def test_relax_builds_take_the_grouped_paths(groups, cg, og, hw, stride, want):
    """relax.build lowers through the same schedules, its constant weight packed once."""
    c, o = groups * cg, groups * og
    rng = np.random.default_rng(groups)
    wt = rng.standard_normal((o, cg, 3, 3)).astype("float32")
    bias = rng.standard_normal((1, o, 1, 1)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([2, c, hw, hw], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=stride, padding=1,
                                           groups=groups))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.add(y, relax.const(bias)))))
        bb.emit_func_output(gv)
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    assert _schedule(_buffers(rec.prim_func)) == want
    a = rng.standard_normal((2, c, hw, hw)).astype("float32")
    ref = np.maximum(grouped_conv_ref(a, wt, groups, (stride, stride), (1,) * 4) + bias, 0)
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(a)).numpy()
    scale = np.max(np.abs(ref))
    np.testing.assert_allclose(got / scale, ref / scale, rtol=0, atol=5e-5)


def test_relax_grouped_conv_of_a_computed_weight():
    """A hypernetwork's dynamic conv in Relax (the weight a constant times an input, its
    groups 2 of 32 at 32x32): Winograd with the weight transformed per call."""
    rng = np.random.default_rng(7)
    groups, cg, hw = 2, 32, 32
    c = groups * cg
    wt = rng.standard_normal((c, cg, 3, 3)).astype("float32")
    x = relax.Var("x", relax.TensorStructInfo([1, c, hw, hw], "float32"))
    s = relax.Var("s", relax.TensorStructInfo([c, 1, 1, 1], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, s]):
        with bb.dataflow():
            w = bb.emit(relax.op.multiply(relax.const(wt), s))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(
                x, w, padding=1, groups=groups))))
        bb.emit_func_output(gv)
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    names = _buffers(rec.prim_func)
    assert _schedule(names) == "winograd" and "wg_u" in names
    a = rng.standard_normal((1, c, hw, hw)).astype("float32")
    sv = (rng.random((c, 1, 1, 1)) + 0.5).astype("float32")
    ref = np.maximum(grouped_conv_ref(a, wt * sv, groups, (1, 1), (1,) * 4), 0)
    got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(a), tvm.nd.array(sv)).numpy()
    scale = np.max(np.abs(ref))
    np.testing.assert_allclose(got / scale, ref / scale, rtol=0, atol=5e-5)

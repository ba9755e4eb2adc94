"""Task extraction and the 1x1 convs the pointwise kernels compute (``conv_pointwise``, on AVX2
and AVX-512 alike): each is a task, whose
knobs are the micro-kernel (``pw_mode``: pixel vectors or channel vectors, where both can compute
it) and whether the input is packed for the tiles (``pw_pack``); the other convs keep theirs."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, tune
from minitvm.contrib import graph_executor
from minitvm.schedule import common, conv_pointwise
from minitvm.schedule.knobs import KnobTable, key_text, use_knobs


def _model(o1=32, plane=14):
    x = relay.var("x", shape=(1, 16, plane, plane))
    w1 = relay.const(np.ones((o1, 16, 1, 1), "float32"))
    w3 = relay.const(np.ones((32, o1, 3, 3), "float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, kernel_size=(1, 1)))
    y = relay.nn.conv2d(y, w3, kernel_size=(3, 3), padding=(1, 1))
    return tvm.IRModule.from_expr(relay.Function([x], y))


def _convs(mod):
    return sorted((tuple(t.workload[2]), t) for t in tune.extract_tasks(mod)
                  if t.workload[0] == "conv2d_nchw")


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_pointwise_convs_with_two_kernels_are_tasks(monkeypatch, isa):
    monkeypatch.setattr(common, "vector_isa", lambda: isa)
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: isa)
    tasks = {w[2:]: t for w, t in _convs(_model())}
    assert (3, 3) in tasks
    # 196 pixels (pixel panels, the last overlapping) and 32 output channels (channel vectors):
    # both kernels apply, on AVX2 and AVX-512 alike (ENABLED)
    assert conv_pointwise.ENABLED[isa]
    assert set(tasks[(1, 1)].space.values("pw_mode")) == {"pixels", "channels"}
    # with the 1x1 schedule switched off for the ISA, conv_direct's knobs make it a task
    monkeypatch.setitem(conv_pointwise.ENABLED, isa, False)
    tasks = {w[2:]: t for w, t in _convs(_model())}
    assert (1, 1) in tasks and "pw_mode" not in tasks[(1, 1)].space.names


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_pointwise_conv_with_one_kernel_tunes_the_packing_only(monkeypatch, isa):
    monkeypatch.setattr(common, "vector_isa", lambda: isa)
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: isa)
    # 20 output channels: no channel-vector kernel, and 256 pixels: pixel panels only
    tasks = {w[2:]: t for w, t in _convs(_model(o1=20, plane=16))}
    assert set(tasks) == {(1, 1), (3, 3)}
    space = tasks[(1, 1)].space
    assert space.default()["pw_mode"] == "pixels"
    # 256 pixels, whole cache lines a row, 20 output channels: read in place by default
    assert space.default()["pw_pack"] is False
    assert set(space.values("pw_pack")) == {False, True}
    assert space.values("pw_mode") == ("pixels",)


def test_modes_of():
    assert conv_pointwise.modes_of(16, 32, 256) == ["pixels", "channels"]
    assert conv_pointwise.modes_of(16, 20, 256) == ["pixels"]
    assert conv_pointwise.modes_of(16, 32, 49) == ["channels"]  # 15 of 64 wasted: too many
    assert conv_pointwise.modes_of(16, 20, 49) == []
    few, many = conv_pointwise.OVERLAP_PANEL_CHANNELS, conv_pointwise.OVERLAP_PANEL_CHANNELS * 2
    assert conv_pointwise.modes_of(few, 64, 196)[0] == "pixels"
    assert conv_pointwise.modes_of(many, 64, 196) == ["channels", "pixels"]
    wide = conv_pointwise.OVERLAP_PANEL_OUTPUTS
    assert conv_pointwise.modes_of(many, wide, 196) == ["pixels", "channels"]


@pytest.mark.skipif(not conv_pointwise.ENABLED[common.vector_isa()],
                    reason="the pointwise kernels are off for this ISA (ENABLED)")
@pytest.mark.parametrize("mode", ["pixels", "channels"])
def test_pw_mode_knob_builds_that_kernel_with_the_same_result(mode):
    """The knob picks the kernel (and the weight packing that goes with it: one flat array
    for pixel vectors, ``[O/16][C][16]`` for channel vectors); both compute the conv with its
    residual epilogue."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 16, 1, 1)).astype("float32")
    x, r = relay.var("x", shape=(1, 16, 14, 14)), relay.var("r", shape=(1, 32, 14, 14))
    y = relay.nn.relu(relay.add(relay.nn.conv2d(x, relay.const(w), kernel_size=(1, 1)), r))
    mod = tvm.IRModule.from_expr(relay.Function([x, r], y))
    ((_, task),) = _convs(mod)
    with use_knobs(KnobTable({key_text(task.workload): {"pw_mode": mode}})):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm")
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    weight = prim.buffer_map[prim.params[1]]
    assert len(weight.shape) == (1 if mode == "pixels" else 3)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    xn = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    rn = rng.standard_normal((1, 32, 14, 14)).astype("float32")
    m.set_input("x", xn)
    m.set_input("r", rn)
    m.run()
    want = np.maximum(np.einsum("oc,nchw->nohw", w[:, :, 0, 0], xn) + rn, 0)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not conv_pointwise.ENABLED[common.vector_isa()],
                    reason="the pointwise kernels are off for this ISA (ENABLED)")
@pytest.mark.parametrize("mode", ["pixels", "channels"])
@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("batch,plane,stride", [(1, 14, 1), (2, 14, 1), (2, 28, 2), (1, 16, 1)])
def test_pw_pack_knob_gives_the_same_result(mode, pack, batch, plane, stride):
    """The input packed for the tiles (a block per pixel panel, or the image tile by tile for
    channel vectors) or read in place: the same conv with its bias, residual and relu, for one
    or two images, a plane whose last panel overlaps the one before, and a strided conv."""
    rng = np.random.default_rng(1)
    c, o = 24, 48
    w = rng.standard_normal((o, c, 1, 1)).astype("float32")
    b = rng.standard_normal((o, 1, 1)).astype("float32")
    out_plane = (plane - 1) // stride + 1
    x = relay.var("x", shape=(batch, c, plane, plane))
    r = relay.var("r", shape=(batch, o, out_plane, out_plane))
    y = relay.nn.conv2d(x, relay.const(w), kernel_size=(1, 1), strides=(stride, stride))
    y = relay.nn.relu(relay.add(relay.add(y, relay.const(b)), r))
    mod = tvm.IRModule.from_expr(relay.Function([x, r], y))
    ((_, task),) = _convs(mod)
    if mode not in task.space.values("pw_mode"):
        pytest.skip(f"{mode} does not compute {task.workload}")
    with use_knobs(KnobTable({key_text(task.workload): {"pw_mode": mode, "pw_pack": pack}})):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm")
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    scratch = "pw_panel" if mode == "pixels" else "pw_xt"
    assert (scratch in prim.script()) == pack
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    xn = rng.standard_normal((batch, c, plane, plane)).astype("float32")
    rn = rng.standard_normal((batch, o, out_plane, out_plane)).astype("float32")
    m.set_input("x", xn)
    m.set_input("r", rn)
    m.run()
    conv = np.einsum("oc,nchw->nohw", w[:, :, 0, 0], xn[:, :, ::stride, ::stride])
    want = np.maximum(conv + b + rn, 0)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)

"""Relax SplitConvPool: a large conv output read only by a pool (through per-channel ops)
becomes convs of channel slices, each with its own pool, concatenated along the channels; the
batch may be symbolic. Anything else is left alone. Outputs are checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.transform import SplitConvPool
from minitvm.relax.transform.split_conv_pool import split_conv_pool
from minitvm.transform import channel_parts


@pytest.fixture
def small(monkeypatch):
    """Split maps from 64 KB an image in parts of 16 KB (keeps the tests small)."""
    monkeypatch.setattr(channel_parts, "MIN_BYTES", 64 << 10)
    monkeypatch.setattr(channel_parts, "PART_BYTES", 16 << 10)


def _stem(batch="n", o=64, hw=32, epilogue="bias_relu", pool="max", groups=1, extra_use=False):
    """conv -> [epilogue] -> pool on a (batch, 3 * groups, hw, hw) input, as FoldConstant
    leaves an imported stem: (module, weight, bias)."""
    rng = np.random.default_rng(0)
    c = 3 * groups
    n = tir.Var(batch, "int64") if isinstance(batch, str) else batch
    w = rng.standard_normal((o, c // groups, 3, 3)).astype("float32")
    b = rng.standard_normal((1, o, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((n, c, hw, hw), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = conv = bb.emit(relax.op.nn.conv2d(x, relax.const(w), padding=1, groups=groups))
            if epilogue == "bias_relu":
                y = bb.emit(relax.op.nn.relu(bb.emit(relax.op.add(y, relax.const(b)))))
            elif epilogue == "scale_clip":
                y = bb.emit(relax.op.multiply(relax.const(b[0]), y))
                y = bb.emit(relax.op.clip(relax.op.add(y, relax.const(0.5, "float32")),
                                          0.0, 6.0))
            elif epilogue == "per_pixel":  # a constant varying over the map: not per channel
                y = bb.emit(relax.op.add(y, relax.const(
                    rng.standard_normal((1, 1, hw, hw)).astype("float32"))))
            if pool == "max":
                y = bb.emit(relax.op.nn.max_pool2d(y, 3, 2, 1))
            else:
                y = bb.emit(relax.op.nn.avg_pool2d(y, 2, 2))
            if extra_use:
                y = bb.emit(relax.op.sum(y) + relax.op.sum(conv))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get(), w, b


def _ops(func, name) -> int:
    return sum(getattr(getattr(b.value, "op", None), "name", "") == name
               for block in func.body.blocks for b in block.bindings)


def _reference(xv, w, b, epilogue, pool):
    from numpy.lib.stride_tricks import sliding_window_view as windows

    pad = np.pad(xv.astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.einsum("nchwij,ocij->nohw", windows(pad, (3, 3), axis=(2, 3)), w)
    if epilogue == "bias_relu":
        y = np.maximum(y + b, 0.0)
    elif epilogue == "scale_clip":
        y = np.clip(b[0] * y + 0.5, 0.0, 6.0)
    if pool == "max":
        p = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        return windows(p, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(-2, -1))
    return windows(y, (2, 2), axis=(2, 3))[:, :, ::2, ::2].mean(axis=(-2, -1))


@pytest.mark.parametrize("epilogue, pool", [("bias_relu", "max"), ("scale_clip", "avg"),
                                            ("none", "max")])
def test_split_in_parts_matches_numpy(small, epilogue, pool):
    rng = np.random.default_rng(1)
    mod, w, b = _stem(epilogue=epilogue, pool=pool)
    before = mod["main"]
    out, count = split_conv_pool(relax.transform.FoldConstant()(mod)["main"])
    assert count == 1
    # 64 x 32 x 32 floats = 256 KB an image, asking for parts of 16 KB: of whole vectors of
    # 16 channels, so 4
    assert _ops(out, "relax.nn.conv2d") == 4 and _ops(out, "relax.concat") == 1
    assert _ops(out, "relax.nn." + pool + "_pool2d") == 4
    assert mod["main"] is before  # the input is not modified
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n in (1, 3):
        xv = rng.standard_normal((n, 3, 32, 32)).astype("float32")
        np.testing.assert_allclose(vm["main"](tvm.nd.array(xv)).numpy(),
                                   _reference(xv, w, b, epilogue, pool), rtol=1e-4, atol=1e-4)


def test_the_pass_object_splits_in_the_build_pipeline(small):
    mod, _, _ = _stem(batch=2)
    out = SplitConvPool()(relax.transform.FoldConstant()(mod))
    assert _ops(out["main"], "relax.nn.conv2d") == 4


@pytest.mark.parametrize("change", ["small map", "groups", "per pixel constant", "extra use"])
def test_left_alone(small, change):
    kwargs = {"small map": {"hw": 8}, "groups": {"groups": 2},
              "per pixel constant": {"epilogue": "per_pixel"},
              "extra use": {"extra_use": True}}[change]
    mod, _, _ = _stem(**kwargs)
    out, count = split_conv_pool(relax.transform.FoldConstant()(mod)["main"])
    assert count == 0 and _ops(out, "relax.nn.conv2d") == 1


def test_channel_parts_are_whole_vectors():
    assert channel_parts.channel_parts(64, 64 * 112 * 112 * 4) == [(0, 16), (16, 32), (32, 48),
                                                                   (48, 64)]
    assert channel_parts.channel_parts(64, 1 << 20) == [(0, 64)]  # under MIN_BYTES
    assert channel_parts.channel_parts(24, 4 << 20) == [(0, 16), (16, 24)]

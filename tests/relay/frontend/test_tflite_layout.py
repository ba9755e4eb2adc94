"""``tflite.layout``: quantized layout-free operators (elementwise ops, pools, reductions)
between the NCHW convs computed on NCHW values at import, so no transposes are left between
the convs: the IR (transposes before and after relay.optimize) and the values (the same
outputs as the plain NHWC converters, and ``tflite_qtwin``'s numpy simulation of TFLite)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

from frontend_models import build_and_run  # noqa: E402
from tflite_qtwin import QTwin  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.ir.op import Op  # noqa: E402
from minitvm.relay.analysis.properties import walk  # noqa: E402
from minitvm.relay.frontend.tflite import layout  # noqa: E402


def _calls(expr, name: str) -> list:
    return [e for e in walk(expr) if isinstance(e, relay.Call) and isinstance(e.op, Op)
            and e.op.name == name]


def _import(blob, sink: bool, monkeypatch):
    if not sink:
        monkeypatch.setattr(layout, "convert_in_nchw", lambda ctx, convert: convert(ctx))
    try:
        return relay.frontend.from_tflite(blob)
    finally:
        monkeypatch.undo()


def _check(t, outputs, monkeypatch, steps=1):
    """Import with and without the NCHW forms; the same outputs, within ``steps`` of the
    numpy simulation; returns both modules."""
    blob, refs = t.finish(outputs)
    feeds = t.inputs()
    mods, results = [], []
    for sink in (True, False):
        mod, params = _import(blob, sink, monkeypatch)
        mods.append(mod)
        results.append(build_and_run(mod, params, feeds))
    for got, plain, ref in zip(*results, refs, strict=True):
        np.testing.assert_array_equal(got, plain)
        assert np.abs(got.astype("int64") - ref).max() <= steps
    return mods


def _optimized_transposes(mod) -> int:
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(mod, target="llvm")
    return len(_calls(opt["main"].body, "transpose"))


def _residual_block(t, x, c):
    a = t.conv(x, c, 1, 1, "relu6")
    b = t.conv(t.conv(a, 0, 3, 1, "relu6", depthwise=True), c, 1, 1, None)
    return t.binary("ADD", a, b)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_residual_add_between_convs_is_nchw(dtype, monkeypatch):
    t = QTwin(dtype, 11)
    x = t.input("x", (1, 8, 8, 8))
    y = _residual_block(t, x, 16)
    y = t.binary("ADD", y, _residual_block(t, y, 16))  # (an ADD of ADDs' outputs)
    out = t.conv(y, 8, 1, 1, "relu")
    sunk, plain = _check(t, [out], monkeypatch)
    adds = [e for e in _calls(sunk["main"].body, "add") if len(e.checked_type.shape) == 4
            and not isinstance(e.args[1], relay.Constant)]
    assert adds and all(tuple(e.checked_type.shape) == (1, 16, 8, 8) for e in adds)
    # only the input's transpose to NCHW and the output's back are left
    assert _optimized_transposes(sunk) == 2
    assert _optimized_transposes(plain) > 2


@pytest.mark.parametrize("kind,k,stride,padding", [("avg", 2, 2, "VALID"), ("max", 3, 2, "SAME"),
                                                   ("avg", 3, 1, "SAME"), ("avg", 6, 1, "VALID")])
def test_pools_of_conv_outputs(kind, k, stride, padding, monkeypatch):
    t = QTwin("uint8", 12)
    x = t.input("x", (1, 6, 6, 8))
    y = t.pool(kind, t.conv(x, 16, 1, 1, "relu6"), k, stride, padding)
    sunk, _ = _check(t, [t.conv(y, 8, 1, 1, None)], monkeypatch)
    pool = _calls(sunk["main"].body, f"nn.{kind}_pool2d")
    assert len(pool) == 1 and str(pool[0].attrs.layout) == "NCHW"


@pytest.mark.parametrize("axes,keep,nchw", [((1, 2), True, True), ((1, 2), False, True),
                                            ((3,), True, True), ((-1,), False, True),
                                            ((1,), False, False)])
def test_reductions_of_conv_outputs(axes, keep, nchw, monkeypatch):
    """Kept axes in another order in NCHW than in NHWC (a reduction over H alone, not kept:
    N, W, C vs N, C, W) stay NHWC."""
    t = QTwin("uint8", 13)
    x = t.input("x", (1, 4, 5, 8))
    sunk, _ = _check(t, [t.mean(t.conv(x, 16, 1, 1, "relu6"), axes, keep)], monkeypatch)
    (total,) = _calls(sunk["main"].body, "sum")  # (TFLite's MEAN: an integer sum, rescaled)
    assert (total.args[0].checked_type.shape[1] == 16) == nchw


@pytest.mark.parametrize("shape", [(1, 1, 1, 16), (16,), (1,)])
def test_constant_operand_is_laid_out_too(shape, monkeypatch):
    t = QTwin("uint8", 14)
    x = t.input("x", (1, 5, 5, 8))
    y = t.conv(x, 16, 1, 1, "relu6")
    vals = t.rng.integers(0, 256, size=shape)
    c = t.b.tensor("c", shape, "uint8", data=vals, quant=(0.03, 100))
    t.val[c], t.qp[c] = vals.astype("int64"), (0.03, 100)
    sunk, _ = _check(t, [t.conv(t.binary("ADD", y, c), 8, 1, 1, None)], monkeypatch)
    assert _optimized_transposes(sunk) == 2


def test_per_channel_and_plain_inputs_stay_nhwc(monkeypatch):
    """An ADD of two graph inputs (no transposes to look through) is left as it was."""
    t = QTwin("uint8", 15)
    a, b = t.input("a", (1, 4, 4, 8)), t.input("b", (1, 4, 4, 8), scale=0.02)
    sunk, plain = _check(t, [t.binary("ADD", a, b)], monkeypatch)
    assert tvm.ir.structural_equal(sunk, plain)
    assert not _calls(sunk["main"].body, "transpose")


@pytest.mark.parametrize("axis", [3, -1, 1, 2])
def test_concatenation_of_conv_outputs(axis, monkeypatch):
    """Inputs of different scales (each requantized to the output's), along channels (NCHW
    axis 1) or a spatial axis."""
    t = QTwin("uint8", 16)
    x = t.input("x", (1, 5, 5, 8))
    a, b = t.conv(x, 8, 1, 1, "relu6"), t.conv(x, 4 if axis in (3, -1) else 8, 3, 1, None)
    sunk, plain = _check(t, [t.conv(t.concat([a, b], axis), 8, 1, 1, None)], monkeypatch)
    (cat,) = _calls(sunk["main"].body, "concatenate")
    assert int(cat.attrs.axis) == (0, 2, 3, 1)[axis % 4]
    assert _optimized_transposes(sunk) == 2 < _optimized_transposes(plain)

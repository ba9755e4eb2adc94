"""A float32 conv whose only consumer requantizes it to uint8 (scale, zero point, round, clip,
cast: what quantized TFLite and ONNX models put after each conv of int8 weights) applies that
epilogue in its own store (``lower.CONV_EPILOGUE_OTHER_DTYPE``), on ``conv_lanes`` (whose
16-lane tiles transpose uint8 vectors when stored by rows) and on ``conv_direct``: numerics
against numpy, one kernel, no float32 output in memory."""

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_lanes, lower
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

SCALE, ZP = 0.05, 100.0


def _build(shape, o, k, stride, residual, weight_dtype, seed=0):
    rng = np.random.default_rng(seed)
    wv = (rng.integers(-127, 128, (o, shape[1], k, k)) if weight_dtype == "int8" else
          rng.standard_normal((o, shape[1], k, k))).astype(weight_dtype)
    pad = k // 2
    oh, ow = (shape[2] + 2 * pad - k) // stride + 1, (shape[3] + 2 * pad - k) // stride + 1
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=(stride, stride), padding=(pad, pad),
                        kernel_size=(k, k), channels=o, out_dtype="float32")
    y = y * relay.const(np.float32(SCALE)) + relay.const(np.float32(ZP))
    args, feeds = [x], {"x": rng.standard_normal(shape).astype("float32") * 4}
    if residual:
        r = relay.var("r", shape=(shape[0], o, oh, ow))
        args.append(r)
        feeds["r"] = rng.standard_normal((shape[0], o, oh, ow)).astype("float32") * 20
        y = y + r
    y = relay.cast(relay.clip(relay.round(y), 0.0, 255.0), "uint8")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, y)), target="llvm")
    want = conv_ref(feeds["x"], wv.astype("float64"), (stride, stride), (pad,) * 4) * SCALE + ZP
    if residual:
        want = want + feeds["r"]
    return lib, feeds, np.clip(np.round(want), 0, 255)


def _check(lib, feeds, want, threads=1):
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**feeds)
        got = m.get_output(0).numpy()
    finally:
        threadpool.set_num_threads(before)
    assert got.dtype == np.uint8
    diff = np.abs(got.astype("int64") - want.astype("int64"))
    assert diff.max() <= 1  # (a float32 sum's order may move a value across a .5)
    assert (diff == 0).mean() > 0.99


def _kernels(lib):
    return lib.get_lib().kernels


def _decls(lib) -> dict:
    """Name -> dtype of the buffers declared in the model's only kernel."""
    (prim,) = [k.prim_func for k in _kernels(lib).values()]
    return {s.buffer.name: s.buffer.dtype for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer)}


CASES = [
    # (N, C, H, W), O, K, stride, residual, weight dtype
    ((1, 3, 40, 40), 32, 3, 2, False, "int8"),     # a stem: 16-lane tiles stored by rows
    ((1, 3, 37, 29), 32, 3, 2, False, "int8"),     # odd sizes: short rows, row tails
    ((1, 16, 14, 14), 48, 3, 1, False, "float32"),  # a wider tile, stored pixel by pixel
    ((2, 8, 12, 12), 32, 3, 1, True, "int8"),      # batch, a residual read at the pixel
    ((1, 5, 13, 11), 7, 3, 1, False, "float32"),   # odd channels (conv_direct's grid)
]


@pytest.mark.parametrize("case", CASES)
def test_requantized_conv_matches_numpy(case):
    _check(*_build(*case))


@pytest.mark.parametrize("case", [CASES[0], CASES[3]])
def test_requantized_conv_two_threads(case):
    _check(*_build(*case, seed=1), threads=2)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.usefixtures("direct_conv_only")
def test_requantized_conv_direct_matches_numpy(case):
    _check(*_build(*case))


@pytest.mark.parametrize("case", [CASES[0], CASES[3]])
def test_one_kernel_stores_uint8(case):
    """The conv and its requantization are one kernel writing the uint8 output (no float32
    output buffer, no pass of its own); the 16-lane row store transposes uint8 vectors."""
    lib, feeds, want = _build(*case)
    (prim,) = [k.prim_func for k in _kernels(lib).values()]
    params = [prim.buffer_map[p] for p in prim.params if p in prim.buffer_map]
    assert [b.dtype for b in params if b.name.startswith("out")] == ["uint8"]
    decls = _decls(lib)
    assert "conv_grid" not in decls and "conv2d" not in decls  # (the conv's float32 output)
    if conv_lanes.ROW_STORE[vector_isa()] and not case[4]:
        assert decls.get("cl_tr3") == "uint8"
    _check(lib, feeds, want)


def test_switch_off_keeps_a_pass_of_its_own(monkeypatch):
    """With ``CONV_EPILOGUE_OTHER_DTYPE`` off the conv writes a float32 temporary that the
    requantization reads in a pass of its own (the behaviour before), with the same values."""
    from minitvm.backend import kernel_cache

    monkeypatch.setattr(lower, "CONV_EPILOGUE_OTHER_DTYPE", False)
    kernel_cache.clear_cache()
    lib, feeds, want = _build(*CASES[0])
    assert _decls(lib).get("conv2d") == "float32"
    _check(lib, feeds, want)
    kernel_cache.clear_cache()

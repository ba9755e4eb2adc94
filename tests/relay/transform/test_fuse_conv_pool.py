"""FuseConvPool: after FuseOps, a fused conv function read only by a fused ``k x k`` / ``k``
max pool (padded or ceil-mode too; overlapping windows with ``conv_lanes.POOL_OVERLAP``)
becomes one function ``max_pool2d(conv's body)``; every other pool, conv or use is left
alone."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import infer

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import FuseConvPool
from minitvm.relay.transform import fuse_conv_pool as fcp
from minitvm.relay.transform.fuse_conv_pool import fuse_conv_pool


@pytest.fixture(autouse=True)
def any_conv_pools(monkeypatch):
    """Pool in the tiles every conv whose tiles hold a window (``conv_lanes.POOL_ANY_CONV``),
    not only the default's few-taps ones: the cases cover the widths and geometries."""
    from minitvm.schedule import conv_lanes as lanes

    monkeypatch.setattr(lanes, "POOL_ANY_CONV", True)


def _rng():
    return np.random.default_rng(0)


def _conv(x, o=16, k=3, groups=1, c=None):
    c = c or int(x.type_annotation.shape[1])
    w = relay.const(_rng().standard_normal((o, c // groups, k, k)).astype("float32"))
    return relay.nn.conv2d(x, w, padding=(k // 2, k // 2), channels=o, kernel_size=(k, k),
                           groups=groups)


def _block(pool=lambda y: relay.nn.max_pool2d(y, (2, 2), (2, 2)), n=2, c=3, hw=12, **conv):
    """conv -> bias -> relu -> ``pool`` on an (n, c, hw, hw) input."""
    x = relay.var("x", shape=(n, c, hw, hw))
    y = _conv(x, **conv)
    o = conv.get("o", 16)
    y = relay.nn.relu(relay.add(y, relay.const(_rng().standard_normal((o, 1, 1)).astype(
        "float32"))))
    return relay.Function([x], pool(y))


def _fused(f):
    """``f`` typed and through FuseOps (opt_level 3)."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    with tvm.transform.PassContext(opt_level=3):
        mod = relay.transform.FuseOps()(mod)
    return relay.transform.InferType()(mod)["main"]


def _primitive_functions(f) -> list:
    """The primitive functions called in ``f``."""
    out = []
    relay.analysis.post_order_visit(f.body, lambda e: out.append(e.op) if (
        isinstance(e, relay.Call) and isinstance(e.op, relay.Function)) else None)
    return out


def _primitive_bodies(f) -> list[list[str]]:
    """The op names of each primitive function called in ``f``, in post order."""
    out = []

    def visit(e):
        if isinstance(e, relay.Call) and isinstance(e.op, relay.Function):
            names = []
            relay.analysis.post_order_visit(e.op.body, lambda n: names.append(n.op.name) if (
                isinstance(n, relay.Call) and hasattr(n.op, "name")) else None)
            out.append(names)

    relay.analysis.post_order_visit(f.body, visit)
    return out


def test_merges_the_conv_and_its_pool():
    f = _fused(_block())
    assert sorted(map(tuple, _primitive_bodies(f))) == [
        ("nn.conv2d", "add", "nn.relu"), ("nn.max_pool2d",)]
    out, n = fuse_conv_pool(f)
    assert n == 1
    assert _primitive_bodies(out) == [["nn.conv2d", "add", "nn.relu", "nn.max_pool2d"]]
    fn = out.body.op
    assert int(fn.attrs["Primitive"]) == 1
    assert fn.body.op.name == "nn.max_pool2d" and fn.body.args[0].op.name == "nn.relu"
    typed = infer(out)
    assert tvm.ir.structural_equal(typed.ret_type, f.ret_type)
    text = typed.astext()
    assert text.count("fn (") == 2 and "nn.max_pool2d" in text  # main and the merged one


def test_a_window_of_three_and_a_floor_plane_merge():
    f = _fused(_block(pool=lambda y: relay.nn.max_pool2d(y, (3, 3), (3, 3)), hw=13))
    assert fuse_conv_pool(f)[1] == 1


@pytest.mark.parametrize("pool, window", [
    (lambda y: relay.nn.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1)), (3, 2, 1, 1)),
    (lambda y: relay.nn.max_pool2d(y, (2, 2), (2, 2), padding=(1, 1)), (2, 2, 1, 1)),
    (lambda y: relay.nn.max_pool2d(y, (2, 2), (1, 1)), (2, 1, 0, 0)),
    (lambda y: relay.nn.max_pool2d(y, (3, 3), (2, 2)), (3, 2, 0, 0)),
    (lambda y: relay.nn.max_pool2d(y, (2, 2), (2, 2), ceil_mode=True), (2, 2, 0, 0)),  # 13: 7
])
def test_merges_overlapping_padded_and_overhanging_pools(pool, window, monkeypatch):
    from minitvm.schedule import conv_lanes

    monkeypatch.setattr(conv_lanes, "POOL_OVERLAP", True)  # (overlapping windows: off by default)
    f = _fused(_block(pool=pool, hw=13))
    (prim,) = [fn for fn in _primitive_functions(f) if fcp.pool_window(fn) is not None]
    assert fcp.pool_window(prim) == window
    out, n = fuse_conv_pool(f)
    assert n == 1
    assert _primitive_bodies(out) == [["nn.conv2d", "add", "nn.relu", "nn.max_pool2d"]]
    assert tvm.ir.structural_equal(infer(out).ret_type, f.ret_type)


def test_overlapping_pools_are_left_alone_by_default():
    f = _fused(_block(pool=lambda y: relay.nn.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1)),
                      hw=13))
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f
    f = _fused(_block(pool=lambda y: relay.nn.max_pool2d(y, (2, 2), (2, 2), padding=(1, 1)),
                      hw=13))
    assert fuse_conv_pool(f)[1] == 1  # padded at stride k: merged


def test_windows_of_only_padding_are_left_alone(monkeypatch):
    from minitvm.schedule import conv_lanes

    monkeypatch.setattr(conv_lanes, "POOL_OVERLAP", True)
    f = _fused(_block(pool=lambda y: relay.nn.max_pool2d(y, (3, 3), (2, 2), padding=(3, 3)),
                      hw=13))  # (the first window: rows -3..-1, all padding)
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f


@pytest.mark.parametrize("pool", [
    lambda y: relay.nn.max_pool2d(y, (2, 2), (3, 3)),                  # stride past the window
    lambda y: relay.nn.max_pool2d(y, (2, 2), (2, 2), padding=(2, 2)),  # a window all padding
    lambda y: relay.nn.max_pool2d(y, (3, 2), (2, 2)),                  # not square
    lambda y: relay.nn.max_pool2d(y, (2, 2), (2, 2), dilation=(2, 2)),
    lambda y: relay.nn.avg_pool2d(y, (2, 2), (2, 2)),
    lambda y: relay.nn.max_pool2d(relay.nn.relu(y), (2, 2), (2, 2)) * relay.const(2.0),
])
def test_other_pools_are_left_alone(pool):
    # (overlapping, padded and ceil-mode max pools were left alone before the tiles clamped a
    # window's outside positions into it: now merged, above)
    f = _fused(_block(pool=pool, hw=13))
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f


@pytest.mark.parametrize("conv", [dict(k=1), dict(groups=2, c=4)])
def test_pointwise_and_grouped_convs_are_left_alone(conv):
    f = _fused(_block(**conv))
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f


def test_convs_whose_tiles_would_not_pool_are_left_alone(monkeypatch):
    from minitvm.schedule import conv_lanes

    f = _fused(_block(n=1, c=8, o=32, hw=14))
    assert fuse_conv_pool(f)[1] == 1
    monkeypatch.setattr(conv_lanes, "POOL_MAX_ACCUMULATORS", 0)  # no window fits a tile
    assert fuse_conv_pool(f)[1] == 0


def test_by_default_only_few_taps_convs_pool(monkeypatch):
    from minitvm.schedule import conv_lanes
    from minitvm.schedule.common import vector_isa

    monkeypatch.setattr(conv_lanes, "POOL_ANY_CONV", False)
    many = _fused(_block(n=1, c=8, o=32, hw=14))  # 72 taps an output
    assert fuse_conv_pool(many)[1] == 0
    few = _fused(_block(n=2, c=3, o=32, hw=28))  # 27 taps: ProtoNet's stem
    assert fuse_conv_pool(few)[1] == (1 if conv_lanes.FEW_TAPS_MAX[vector_isa()] >= 27 else 0)


def test_a_conv_read_twice_is_left_alone():
    x = relay.var("x", shape=(1, 3, 8, 8))
    y = relay.nn.relu(_conv(x))
    f = _fused(relay.Function([x], relay.Tuple([relay.nn.max_pool2d(y, (2, 2), (2, 2)), y])))
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f


def test_a_symbolic_batch_is_left_alone():
    x = relay.var("x", shape=(relay.Any(), 3, 12, 12))
    y = relay.nn.max_pool2d(relay.nn.relu(_conv(x, c=3)), (2, 2), (2, 2))
    f = _fused(relay.Function([x], y))
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f


def test_a_pool_of_no_conv_is_left_alone():
    x = relay.var("x", shape=(1, 3, 8, 8))
    f = _fused(relay.Function([x], relay.nn.max_pool2d(relay.nn.relu(x), (2, 2), (2, 2))))
    assert fuse_conv_pool(f)[1] == 0


def test_the_pass_runs_at_opt_level_3_only_and_with_its_switch(monkeypatch):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(_fused(_block())))

    def functions(opt_level):
        seq = tvm.transform.Sequential([FuseConvPool()])
        with tvm.transform.PassContext(opt_level=opt_level):
            return len(_primitive_bodies(seq(mod)["main"]))

    assert functions(3) == 1
    assert functions(2) == 2
    monkeypatch.setattr(fcp, "ENABLED", False)
    assert functions(3) == 2


def test_relay_build_runs_it():
    x = relay.var("x", shape=(2, 3, 12, 12))
    w = _rng().standard_normal((16, 3, 3, 3)).astype("float32")
    y = relay.nn.conv2d(x, relay.const(w), padding=(1, 1), channels=16, kernel_size=(3, 3))
    y = relay.nn.max_pool2d(relay.nn.relu(y), (2, 2), (2, 2))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    kernels = [k for k in lib.get_lib().kernels if "fused" in k]
    assert len(kernels) == 1 and "conv2d" in kernels[0] and "max_pool2d" in kernels[0]
    xv = _rng().standard_normal((2, 3, 12, 12)).astype("float32")
    g = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.run(x=xv)
    xp = np.pad(xv.astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + 12, j:j + 12], w[:, :, i, j])
               for i in range(3) for j in range(3))
    want = np.maximum(conv, 0).reshape(2, 16, 6, 2, 6, 2).max(axis=(3, 5))
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-5, atol=1e-4)


def test_long_chain_does_not_recurse():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    f = relay.Function([x], e)
    out, n = fuse_conv_pool(f)
    assert n == 0 and out is f
    prim = f.with_attr("Primitive", 1)  # a fused function's body of 100,000 ops
    assert not fcp.conv_function(prim) and fcp.pool_window(prim) is None

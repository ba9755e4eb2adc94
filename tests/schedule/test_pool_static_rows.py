"""Static pools of large windows on ``pool_symbolic``'s forms (``pool_symbolic.takes_static``):
rows combined into a row temporary first (YOLO's SPP 5x5 / 9x9 / 13x13 at stride 1, 7x7 / 2),
or accumulated (7x7 / 7, 1x30), against numpy for max and mean (``count_include_pad`` both
ways), NCHW and 1-D, ceil mode, dilation, int8, a fused epilogue, through Relay and Relax; NaN
at every input position; and small windows (3x3, 2x2) keeping their IR exactly."""

import numpy as np
import pytest
from relay_build import build_runner

import minitvm as tvm
from minitvm import relax, relay
from minitvm.backend import kernel_cache
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps
from minitvm.schedule import pool_symbolic
from minitvm.schedule.prim_func import optimize_prim_func
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _out(n, k, s, d, p0, p1, ceil):
    span = n + p0 + p1 - (k - 1) * d - 1
    o = (-(-span // s) if ceil else span // s) + 1
    return o - 1 if ceil and (o - 1) * s >= n + p0 else o


def _ref(x, kind, k, s, d, pad, ceil=False, include=False):
    """numpy pooling of the last two axes: max (NaN if any tap is), or the sum over the
    in-bounds taps / the taps inside the padded input (``include``)."""
    h, w = x.shape[-2:]
    pt, pl, pb, pr = pad
    oh, ow = _out(h, k[0], s[0], d[0], pt, pb, ceil), _out(w, k[1], s[1], d[1], pl, pr, ceil)
    out = np.zeros(x.shape[:-2] + (oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            ys = [i * s[0] + a * d[0] - pt for a in range(k[0])]
            xs = [j * s[1] + b * d[1] - pl for b in range(k[1])]
            cnt = sum(-pt <= y < h + pb for y in ys) * sum(-pl <= v < w + pr for v in xs)
            ys, xs = [y for y in ys if 0 <= y < h], [v for v in xs if 0 <= v < w]
            win = x[..., ys, :][..., xs].astype("float64")
            if kind == "max":
                out[..., i, j] = win.max(axis=(-2, -1))
            else:
                out[..., i, j] = win.sum(axis=(-2, -1)) / (cnt if include else
                                                              max(1, len(ys) * len(xs)))
    return out


def _pool(x, kind, k, s, d, pad, ceil=False, include=False):
    if kind == "max":
        return relay.nn.max_pool2d(x, k, s, d, pad, ceil_mode=ceil)
    return relay.nn.avg_pool2d(x, k, s, d, pad, ceil_mode=ceil, count_include_pad=include)


def _buffers(lib) -> set:
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "pool" in name]
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


CASES = [
    # shape, kind, pool size, strides, dilation, padding (top, left, bottom, right), ceil, form
    ((2, 3, 13, 17), "max", (13, 13), (1, 1), (1, 1), (6, 6, 6, 6), False, "pool_row"),
    ((1, 4, 11, 30), "max", (9, 9), (1, 1), (1, 1), (4, 4, 4, 4), False, "pool_row"),
    ((1, 3, 12, 19), "max", (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), False, "pool_row"),
    ((1, 3, 9, 21), "max", (4, 4), (1, 1), (1, 1), (1, 2, 2, 1), False, "pool_row"),
    ((1, 3, 20, 23), "max", (7, 7), (2, 2), (1, 1), (3, 3, 3, 3), False, "pool_row"),
    ((1, 2, 17, 26), "max", (7, 7), (3, 3), (1, 1), (1, 0, 2, 1), True, "pool_row"),
    ((1, 2, 16, 40), "max", (7, 7), (7, 7), (1, 1), (0, 0, 0, 0), True, "pool_acc"),
    ((1, 2, 14, 15), "max", (3, 6), (1, 1), (2, 2), (2, 3, 2, 3), False, "pool_row"),  # dilated
    ((1, 2, 3, 45), "max", (1, 30), (1, 1), (1, 1), (0, 3, 0, 3), False, "pool_acc"),
    ((2, 3, 13, 17), "avg", (9, 9), (1, 1), (1, 1), (4, 4, 4, 4), False, "pool_row"),
    ((1, 3, 12, 19), "avg", (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), False, "pool_row"),
    ((1, 2, 20, 23), "avg", (7, 7), (2, 2), (1, 1), (3, 2, 3, 4), True, "pool_row"),
    ((1, 2, 15, 66), "avg", (7, 7), (7, 7), (1, 1), (0, 0, 0, 0), True, "pool_acc"),
]


@pytest.mark.parametrize("case, include", [(c, False) for c in CASES] +
                         [(c, True) for c in CASES if c[1] == "avg"])
def test_large_windows_match_numpy(case, include, rng):
    shape, kind, k, s, d, pad, ceil, form = case
    x = relay.var("x", shape=shape)
    lib, run = build_runner(x, _pool(x, kind, k, s, d, pad, ceil, include))
    assert form in _buffers(lib) and "pool_vrow" not in _buffers(lib)
    xv = rng.standard_normal(shape).astype("float32")
    np.testing.assert_allclose(run(xv), _ref(xv, kind, k, s, d, pad, ceil, include),
                               rtol=1e-5, atol=1e-6)


def test_int8_and_1d_large_windows(rng):
    """An int8 max pool of a 9x9 window (rows first) and a 1-D pool of 27 taps (accumulated)."""
    x = relay.var("x", shape=(1, 4, 12, 37), dtype="int8")
    lib, run = build_runner(x, relay.nn.max_pool2d(x, (9, 9), (1, 1), padding=(4, 4)))
    assert "pool_row" in _buffers(lib)
    xv = rng.integers(-128, 128, (1, 4, 12, 37)).astype("int8")
    np.testing.assert_array_equal(run(xv), _ref(xv, "max", (9, 9), (1, 1), (1, 1), (4,) * 4))
    x = relay.var("x", shape=(2, 3, 40))
    lib, run = build_runner(x, relay.nn.max_pool1d(x, (27,), (1,), padding=(13, 13)))
    assert "pool_acc" in _buffers(lib)
    xv = rng.standard_normal((2, 3, 40)).astype("float32")
    want = _ref(xv[:, :, None], "max", (1, 27), (1, 1), (1, 1), (0, 13, 0, 13))[:, :, 0]
    np.testing.assert_array_equal(run(xv), want)


def test_fused_epilogue(rng):
    """A 9x9 max pool with the add and relu after it fused (the epilogue in its stores)."""
    x = relay.var("x", shape=(1, 4, 13, 13))
    y = relay.nn.relu(relay.nn.max_pool2d(x, (9, 9), (1, 1), padding=(4, 4)) + x)
    lib, run = build_runner(x, y)
    xv = rng.standard_normal((1, 4, 13, 13)).astype("float32")
    want = np.maximum(_ref(xv, "max", (9, 9), (1, 1), (1, 1), (4,) * 4) + xv, 0)
    np.testing.assert_allclose(run(xv), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("k, s, pad", [((9, 9), (1, 1), (4, 4, 4, 4)),
                                       ((7, 7), (2, 2), (3, 2, 3, 4))])
def test_nan_at_every_position(k, s, pad, rng):
    """A NaN anywhere in a window makes that output NaN and no other; -inf next to padding
    gives the padding's value (the dtype's lowest), as the row form."""
    shape = (1, 2, 8, 10)
    x = relay.var("x", shape=shape)
    _, run = build_runner(x, relay.nn.max_pool2d(x, k, s, (1, 1), pad))
    base = rng.standard_normal(shape).astype("float32")
    want = _ref(base, "max", k, s, (1, 1), pad)
    for y in range(shape[2]):
        for c in range(shape[3]):
            xv = base.copy()
            xv[0, 0, y, c] = np.nan if (y + c) % 2 else -np.nan
            got = run(xv)
            hit = np.isnan(_ref(xv, "max", k, s, (1, 1), pad))
            assert hit.any()
            np.testing.assert_array_equal(np.isnan(got), hit)
            np.testing.assert_array_equal(got[~hit], want[~hit])
    xv = np.full(shape, -np.inf, "float32")
    padded = np.pad(xv, ((0, 0), (0, 0), pad[::2], pad[1::2]),
                    constant_values=np.finfo("float32").min)
    want = _ref(padded, "max", k, s, (1, 1), (0, 0, 0, 0))
    assert (want == np.finfo("float32").min).any()
    np.testing.assert_array_equal(run(xv), want)


def test_relax_large_window(rng):
    """Relax's legalized 13x13 max pool is raised onto the same form."""
    shape = (1, 3, 15, 20)
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(nn.max_pool2d(x, (13, 13), (1, 1), (6, 6)), "out"))
        bb.emit_func_output(out)
    legal = LegalizeOps()(bb.get())
    (prim,) = [legal[g] for g in legal.functions if g.name_hint != "main"]
    assert "pool_row" in str(optimize_prim_func(prim))
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    xv = rng.standard_normal(shape).astype("float32")
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(xv)).numpy(),
                                  _ref(xv, "max", (13, 13), (1, 1), (1, 1), (6,) * 4))


@pytest.mark.parametrize("kind, k, s, pad", [("max", (3, 3), (2, 2), (1, 1, 1, 1)),
                                             ("max", (3, 3), (1, 1), (1, 1, 1, 1)),
                                             ("max", (2, 2), (2, 2), (0, 0, 0, 0)),
                                             ("avg", (3, 3), (1, 1), (1, 1, 1, 1)),
                                             ("max", (5, 5), (2, 2), (2, 2, 2, 2))])
def test_small_windows_keep_their_form(kind, k, s, pad, monkeypatch):
    """ResNet's / MobileNet's 3x3 and 2x2 windows (and a strided 5x5) build the same kernel
    with the static forms on and off."""
    texts = []
    for static in (True, False):
        monkeypatch.setattr(pool_symbolic, "STATIC", static)
        kernel_cache.clear_cache()
        try:
            x = relay.var("x", shape=(1, 8, 20, 20))
            with tvm.transform.PassContext(opt_level=3,
                                           config={"relay.backend.use_disk_cache": False}):
                lib = relay.build(tvm.IRModule.from_expr(relay.Function(
                    [x], _pool(x, kind, k, s, (1, 1), pad))), target="llvm")
        finally:
            kernel_cache.clear_cache()
        (prim,) = [kk.prim_func for n, kk in lib.get_lib().kernels.items() if "pool" in n]
        texts.append(str(prim))
    assert texts[0] == texts[1]
    assert "pool_row" not in texts[0] and "pool_acc" not in texts[0]

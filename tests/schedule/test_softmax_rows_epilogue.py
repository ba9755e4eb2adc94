"""A softmax followed by an elementwise epilogue of another dtype (the requantization that
quantized models put after it: ``cast(clip(round(softmax * s) + zp))``) on the row kernel of
``schedule/softmax_rows.py``: one kernel, one parallel loop over rows, exps kept in a float32 row
on the stack, the epilogue applied in the last pass; numerically equal to numpy (and to the stage
lowering) for rows with and without a vector tail. Symbolic or over-long rows, and an epilogue
that reads another tensor, keep the stage lowering."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te, topi
from minitvm.backend import kernel_cache
from minitvm.codegen.build import build
from minitvm.contrib import graph_executor
from minitvm.schedule import lower, optimize_prim_func, softmax_rows
from minitvm.schedule.common import lanes, vector_isa
from minitvm.script.parser import from_source
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

pytestmark = pytest.mark.skipif(not softmax_rows.ROW_SOFTMAX[vector_isa()],
                                reason="the row kernel is off for this ISA (ROW_SOFTMAX)")


@pytest.fixture
def fresh_kernels():
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _requantized(y, scale, zp, dtype):
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    q = relay.add(relay.round(relay.divide(y, relay.const(scale))), relay.const(float(zp)))
    return relay.cast(relay.clip(q, lo, hi), dtype)


def _build(shape, scale=1 / 256, zp=-128, dtype="int8"):
    x = relay.var("x", shape=shape)
    y = _requantized(relay.nn.softmax(x), scale, zp, dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="llvm")


def _run(lib, x):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", x)
    m.run()
    return m.get_output(0).numpy()


def _reference(x, scale, zp, dtype):
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    e = np.exp(x - x.max(-1, keepdims=True))
    sm = (e / e.sum(-1, keepdims=True)).astype("float32")
    return np.clip(np.round(sm / np.float32(scale)) + zp, lo, hi).astype(dtype)


def _kernels(lib):
    return list(lib.get_lib().kernels.values())


def _row_buffers(func) -> set:
    return {s.buffer.name for s in walk_stmts(func.body) if isinstance(s, S.DeclBuffer)}


@pytest.mark.parametrize("shape,dtype,zp", [((1, 4, 128, 128), "int8", -128),
                                            ((2, 3, 37), "int8", -128),
                                            ((5, 197), "uint8", 0), ((3, 7), "int8", -128)])
def test_requantized_softmax_is_one_row_kernel_matching_numpy(shape, dtype, zp, fresh_kernels):
    lib = _build(shape, zp=zp, dtype=dtype)
    (k,) = _kernels(lib)
    names = _row_buffers(k.prim_func)
    assert {"softmax_y", "sm_row"} <= names
    assert sum(isinstance(s, S.For) and s.kind == S.ForKind.PARALLEL
               for s in walk_stmts(k.prim_func.body)) <= 1
    # the output is stored in its own dtype, by vectors where the row has one
    stores = [s for s in walk_stmts(k.prim_func.body) if isinstance(s, S.BufferStore) and
              s.buffer.name == "softmax_y"]
    assert stores and all(s.buffer.dtype == dtype for s in stores)
    vector = [s for s in walk_stmts(k.prim_func.body) if isinstance(s, S.For) and
              s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore) and
              s.body.buffer.name == "softmax_y"]
    assert bool(vector) == (shape[-1] >= lanes("float32"))
    x = (4 * np.random.default_rng(len(shape)).standard_normal(shape)).astype("float32")
    got = _run(lib, x)
    assert got.dtype == dtype
    ref = _reference(x.astype("float64"), 1 / 256, zp, dtype)
    # float32 vs float64 rounding may move a value sitting on a .5 boundary by one step
    assert np.abs(got.astype(int) - ref.astype(int)).max() <= 1
    assert (got != ref).mean() < 1e-3


def test_requantized_softmax_equals_the_stage_lowering(monkeypatch, fresh_kernels):
    shape = (2, 3, 45)
    x = (6 * np.random.default_rng(3).standard_normal(shape)).astype("float32")
    rows = _run(_build(shape), x)
    kernel_cache.clear_cache()
    monkeypatch.setattr(softmax_rows, "EPILOGUE_ROW_LIMIT", 0)
    lib = _build(shape)
    assert "sm_row" not in set().union(*(_row_buffers(k.prim_func) for k in _kernels(lib)))
    np.testing.assert_array_equal(rows, _run(lib, x))


def test_epilogue_peels_a_chain_and_rejects_other_reads():
    x = te.placeholder((4, 16), "float32", "x")
    y = te.placeholder((4, 16), "float32", "y")
    a = te.compute((4, 16), lambda i, j: x[i, j] * 2.0, name="a")
    b = te.compute((4, 16), lambda i, j: te.round(a[i, j]) + 3.0, name="b")
    c = te.compute((4, 16), lambda i, j: b[i, j].astype("int8"), name="c")

    def is_root(t):
        return t is a

    root, epi = softmax_rows.epilogue(c, is_root)
    assert root is a
    v = te.var("v", "float32")
    assert "int8" in str(epi(v)) and "round" in str(epi(v))
    assert softmax_rows.epilogue(a, is_root) == (a, None)
    # a second tensor, a shifted read, or a position-dependent value: no epilogue
    d = te.compute((4, 16), lambda i, j: (a[i, j] + y[i, j]).astype("int8"), name="d")
    assert softmax_rows.epilogue(d, is_root) is None
    e = te.compute((4, 16), lambda i, j: a[i, (j + 1) % 16].astype("int8"), name="e")
    assert softmax_rows.epilogue(e, is_root) is None
    f = te.compute((4, 16), lambda i, j: (a[i, j] + j.astype("float32")).astype("int8"),
                   name="f")
    assert softmax_rows.epilogue(f, is_root) is None


def test_symbolic_rows_keep_the_stages():
    n = te.var("n")
    x = te.placeholder((3, n), "float32", "x")
    # the Relay softmax compute, followed by a requantization, over a symbolic row
    sm = topi.nn.softmax(x, axis=-1)
    q = te.compute((3, n), lambda i, j: te.round(sm[i, j] * 256.0).astype("int8"), name="q")
    assert softmax_rows.match_relay([x], [q]) is None
    f, _ = lower.lower_te([x], [q], "symbolic")
    assert "sm_row" not in _row_buffers(f)


# LegalizeOps' four softmax blocks and a requantizing block after them (as Relax fuses them)
SOFTMAX_Q = """
@T.prim_func
def softmax_q(var_x: T.handle, var_out: T.handle):
    T.func_attr({"tir.noalias": T.bool(True)})
    x = T.match_buffer(var_x, (T.int64(2), T.int64(5), T.int64(37)))
    q = T.match_buffer(var_out, (T.int64(2), T.int64(5), T.int64(37)), "int8")
    mx = T.alloc_buffer((T.int64(2), T.int64(5), T.int64(1)))
    ex = T.alloc_buffer((T.int64(2), T.int64(5), T.int64(37)))
    sm = T.alloc_buffer((T.int64(2), T.int64(5), T.int64(1)))
    out = T.alloc_buffer((T.int64(2), T.int64(5), T.int64(37)))
    for a0, a1, a2, k in T.grid(T.int64(2), T.int64(5), T.int64(1), T.int64(37)):
        with T.block("mx"):
            v0, v1, v2, vk = T.axis.remap("SSSR", [a0, a1, a2, k])
            with T.init():
                mx[v0, v1, v2] = T.float32("-inf")
            mx[v0, v1, v2] = T.max(mx[v0, v1, v2], x[v0, v1, vk])
    for a0, a1, a2 in T.grid(T.int64(2), T.int64(5), T.int64(37)):
        with T.block("ex"):
            v0, v1, v2 = T.axis.remap("SSS", [a0, a1, a2])
            ex[v0, v1, v2] = T.exp(x[v0, v1, v2] - mx[v0, v1, T.int64(0)])
    for a0, a1, a2, k in T.grid(T.int64(2), T.int64(5), T.int64(1), T.int64(37)):
        with T.block("sm"):
            v0, v1, v2, vk = T.axis.remap("SSSR", [a0, a1, a2, k])
            with T.init():
                sm[v0, v1, v2] = T.float32(0.0)
            sm[v0, v1, v2] = sm[v0, v1, v2] + ex[v0, v1, vk]
    for a0, a1, a2 in T.grid(T.int64(2), T.int64(5), T.int64(37)):
        with T.block("out"):
            v0, v1, v2 = T.axis.remap("SSS", [a0, a1, a2])
            out[v0, v1, v2] = ex[v0, v1, v2] / sm[v0, v1, T.int64(0)]
    for a0, a1, a2 in T.grid(T.int64(2), T.int64(5), T.int64(37)):
        with T.block("q"):
            v0, v1, v2 = T.axis.remap("SSS", [a0, a1, a2])
            q[v0, v1, v2] = T.Cast("int8", T.max(T.min(T.round(out[v0, v1, v2] / T.float32(0.00390625)) + T.float32(-128.0), T.float32(127.0)), T.float32(-128.0)))
"""


def test_relax_blocks_with_a_requantizing_block_get_the_row_kernel():
    g = optimize_prim_func(from_source(SOFTMAX_Q))
    assert "sm_row" in _row_buffers(g)
    fn = build(g)["softmax_q"]
    x = (3 * np.random.default_rng(5).standard_normal((2, 5, 37))).astype("float32")
    out = np.zeros(x.shape, "int8")
    fn(x, out)
    ref = _reference(x.astype("float64"), 1 / 256, -128, "int8")
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    assert (out != ref).mean() < 1e-2

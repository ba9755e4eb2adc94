"""Scalar constants every call of a Relax VM kernel shares (a quantized model's scales and zero
points) are read as immediates (``relax/vm/const_scalars``): which parameters qualify, the
rewritten loads, a kernel called with different scalars left as it is, equal results, and a
100,000-deep expression rewritten without recursion."""

import sys

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.vm.const_scalars import inline_scalars, scalar_params
from minitvm.runtime.relax_vm.executable import ARG_CONST, ARG_REG
from minitvm.tir import expr as E
from minitvm.tir.stmt_functor import post_order_visit

N = 100_000


def _scaled(n=4):
    """``B[i] = A[i] * S[()] + Z[()]``: S, Z rank-0 parameters."""
    s = tir.decl_buffer((), "float32", "S")
    z = tir.decl_buffer((), "int32", "Z")
    a = tir.decl_buffer((n,), "float32", "A")
    b = tir.decl_buffer((n,), "float32", "B")
    i = tir.Var("i", "int32")
    body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(
        b, a[i] * s[()] + E.Cast("float32", z[()]), [i]))
    return tir.PrimFunc([s, z, a, b], body), s, z


def _loads_of(func, buf) -> int:
    n = [0]
    post_order_visit(func.body, lambda e: n.__setitem__(0, n[0] + 1) if isinstance(
        e, E.BufferLoad) and e.buffer is buf else None)
    return n[0]


def test_scalar_params_needs_one_value_at_every_site():
    f, _, _ = _scaled()
    consts = [np.array(0.5, "float32"), np.array(3, "int32"), np.array(0.25, "float32"),
              np.array(0.5, "float32"), np.ones(4, "float32"), np.array(True)]
    reg = [ARG_REG, 0]
    sites = {"same": [[[ARG_CONST, 0], [ARG_CONST, 1], reg, reg],
                      [[ARG_CONST, 3], [ARG_CONST, 1], reg, reg]],  # (an equal copy)
             "differ": [[[ARG_CONST, 0], reg, reg, reg], [[ARG_CONST, 2], reg, reg, reg]],
             "shapes": [[[ARG_CONST, 4], [ARG_CONST, 5], reg, reg]],
             "value": [[[ARG_CONST, 0], [ARG_CONST, 1], reg, reg]]}
    prims = dict.fromkeys(sites, f)
    got = scalar_params(sites, consts, prims, as_value={"value"})
    assert set(got) == {"same"}
    assert got["same"] == {0: np.float32(0.5), 1: np.int32(3)}
    assert got["same"][0].dtype == np.float32 and got["same"][1].dtype == np.int32


def test_inline_scalars_rewrites_the_loads():
    f, s, z = _scaled()
    g = inline_scalars(f, {0: np.float32(0.5), 1: np.int32(3)})
    assert _loads_of(g, s) == 0 and _loads_of(g, z) == 0
    assert g.params == f.params  # (the call sites stay as they are)
    imms = []
    post_order_visit(g.body, lambda e: imms.append(e) if isinstance(
        e, E.FloatImm | E.IntImm) else None)
    assert any(isinstance(e, E.FloatImm) and e.value == 0.5 and e.dtype == "float32"
               for e in imms)
    assert any(isinstance(e, E.IntImm) and e.value == 3 and e.dtype == "int32" for e in imms)
    # a value of another dtype than the buffer's, or no value: the function as it is
    assert inline_scalars(f, {0: np.float64(0.5)}) is f
    assert inline_scalars(f, {}) is f


def test_deep_expression_rewritten_iteratively():
    assert sys.getrecursionlimit() <= 10_000
    s = tir.decl_buffer((), "float32", "S")
    b = tir.decl_buffer((1,), "float32", "B")
    e = s[()]
    for _ in range(N):
        e = e + s[()]
    f = tir.PrimFunc([s, b], tir.BufferStore(b, e, [0]))
    g = inline_scalars(f, {0: np.float32(2.0)})
    assert _loads_of(g, s) == 0


W = (np.random.default_rng(1).standard_normal((16, 16)) / 4).astype("float32")


def _module(scales):
    """``main(x)``: ``exp(-relu(x @ W * s + 1))`` for each scalar ``s`` of ``scales`` in turn:
    one kernel (the matmul and its epilogue), called once a scalar."""
    x = relax.Var("x", relax.TensorStructInfo((8, 16), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for s in scales:
                v = bb.emit(relax.op.matmul(v, relax.const(W)))
                v = bb.emit(relax.op.add(relax.op.multiply(v, relax.const(np.float32(s))),
                                         relax.const(np.float32(1))))
                v = bb.emit(relax.op.nn.relu(v))
                v = bb.emit(relax.op.exp(relax.op.negative(v)))
            out = bb.emit_output(v)
        bb.emit_func_output(out)
    return bb.get()


def _kernel_texts(ex) -> list:
    return [str(rec.prim_func) for rec, _ in ex.kernels.values()]


def _expected(x, scales):
    for s in scales:
        x = np.exp(-np.maximum(x @ W * np.float32(s) + np.float32(1), 0)).astype("float32")
    return x


def test_build_reads_shared_scalars_as_immediates():
    x = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    for scales, inlined in (([0.75], True), ([0.75, 1.5], False)):
        ex = relax.build(_module(scales), "llvm")
        got = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(got, _expected(x, scales), rtol=1e-5)
        texts = _kernel_texts(ex)
        assert len(texts) == 1
        assert any("T.float32(0.75)" in t for t in texts) == inlined

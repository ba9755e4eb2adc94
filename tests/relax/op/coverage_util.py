"""Helpers of the relax.op coverage tests: build a one-op Relax function over parameters with a
symbolic dim ``n`` once (relax.build + VirtualMachine), run it at several sizes of ``n`` and
compare each output with numpy."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir.op import Op

n = tir.Var("n", "int64")
F = "float32"
SIZES = (3, 7)  # odd sizes, both run on one build


def sinfo(shape, dtype):
    """TensorStructInfo where the string ``"n"`` stands for the symbolic dim ``n``."""
    return relax.TensorStructInfo([n if d == "n" else d for d in shape], dtype)


def gen(rng, shape, dtype, nv, maker=None):
    s = [nv if d == "n" else d for d in shape]
    if maker is not None:
        return maker(rng, s, nv)
    if dtype.startswith("float"):
        return rng.standard_normal(s).astype(dtype)
    if dtype == "bool":
        return rng.random(s) > 0.5
    return rng.integers(-5, 6, size=s).astype(dtype)


def ints(lo, hi, dtype="int64"):
    """An input maker of integers in ``[lo, hi)`` (``hi`` may be ``"n"``)."""
    return lambda rng, s, nv: rng.integers(lo, nv if hi == "n" else hi, size=s).astype(dtype)


def one_op_module(make, specs):
    params = [relax.Var(f"x{k}", sinfo(sh, dt)) for k, (sh, dt, *_) in enumerate(specs)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(*params), "out"))
        bb.emit_func_output(out)
    return bb.get()


def assert_legalized(mod):
    """After LegalizeOps no Relax operator call is left in ``main`` but call_tir."""
    leg = relax.transform.LegalizeOps()(mod)
    for blk in leg["main"].body.blocks:
        for b in blk.bindings:
            v = b.value
            if isinstance(v, relax.Call) and isinstance(v.op, Op):
                name = v.op.name
                assert name == "relax.call_tir" or name.startswith(
                    ("relax.vm.", "relax.builtin.", "relax.call_pure_packed")), \
                    f"not legalized: {name}"
    return leg


def check_numeric(make, specs, ref, rtol=1e-5, atol=1e-5, sizes=SIZES, seed=0):
    """Build ``make`` once and compare it with ``ref`` (numpy) at each size of ``n``."""
    mod = one_op_module(make, specs)
    assert_legalized(mod)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(seed)
    for nv in sizes:
        args = [gen(rng, sh, dt, nv, *rest) for sh, dt, *rest in specs]
        got = vm["main"](*args)
        exp = ref(*args)
        if isinstance(exp, tuple):
            gots = [g.numpy() for g in got]
        else:
            gots, exp = [got.numpy()], (exp,)
        assert len(gots) == len(exp)
        for g, e in zip(gots, exp):
            e = np.asarray(e)
            assert g.shape == e.shape, (nv, g.shape, e.shape)
            assert g.dtype.kind == e.dtype.kind, (nv, g.dtype, e.dtype)
            np.testing.assert_allclose(g.astype("float64"), e.astype("float64"), rtol=rtol,
                                       atol=atol, err_msg=f"n={nv}")

"""StaticPlanBlockMemory with symbolic sizes and no upper bounds: allocations whose byte
sizes are constant multiples ``k * M`` of one product ``M`` of shape variables share a storage
sized ``max(k) * M``; sizes over other variables, constant sizes, tensors alive at the same time
and the function's outputs never share."""

import re

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax

parser = pytest.importorskip("minitvm.script.parser")
if not hasattr(parser, "from_source"):  # pragma: no cover - depends on the tree
    pytest.skip("the TVMScript parser has no from_source yet", allow_module_level=True)

PRIMS = """
    @T.prim_func(private=True)
    def add1(var_x: T.handle, var_y: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(2)))
        y = T.match_buffer(var_y, (n, T.int64(2)))
        for i, j in T.grid(n, T.int64(2)):
            with T.block("y"):
                vi, vj = T.axis.remap("SS", [i, j])
                y[vi, vj] = x[vi, vj] + T.float32(1.0)

    @T.prim_func(private=True)
    def grow(var_x: T.handle, var_y: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(2)))
        y = T.match_buffer(var_y, (n, T.int64(3)))
        for i, j in T.grid(n, T.int64(3)):
            with T.block("y"):
                vi, vj = T.axis.remap("SS", [i, j])
                y[vi, vj] = x[vi, vj % T.int64(2)] * T.float32(2.0) + T.Cast("float32", vj)

    @T.prim_func(private=True)
    def widen(var_x: T.handle, var_y: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(3)))
        y = T.match_buffer(var_y, (n, T.int64(3)))
        for i, j in T.grid(n, T.int64(3)):
            with T.block("y"):
                vi, vj = T.axis.remap("SS", [i, j])
                y[vi, vj] = x[vi, vj] - T.float32(0.5)

    @T.prim_func(private=True)
    def shrink(var_x: T.handle, var_y: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(3)))
        y = T.match_buffer(var_y, (n, T.int64(2)))
        for i, j in T.grid(n, T.int64(2)):
            with T.block("y"):
                vi, vj = T.axis.remap("SS", [i, j])
                y[vi, vj] = x[vi, vj] + x[vi, T.int64(2)]
"""

# a (2n) and c (3n) share one storage grown to 3n; b (3n, alive with a and c) and d (2n) share
# another; e is returned and keeps its own allocation
BEFORE = """
@I.ir_module
class Module:
""" + PRIMS + """
    @R.function
    def main(x: R.Tensor(("n", 2), dtype="float32")) -> R.Tensor(("n", 2), dtype="float32"):
        n = T.int64()
        cls = Module
        a: R.Tensor((n, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(x, a)
        b: R.Tensor((n, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.grow(a, b)
        c: R.Tensor((n, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.widen(b, c)
        d: R.Tensor((n, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.shrink(c, d)
        e: R.Tensor((n, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(d, e)
        return e
"""

EXPECTED = """
@I.ir_module
class Module:
""" + PRIMS + """
    @R.function
    def main(x: R.Tensor(("n", 2), dtype="float32")) -> R.Tensor(("n", 2), dtype="float32"):
        n = T.int64()
        cls = Module
        s0: R.Object = R.memory.alloc_storage(R.shape([n * 12]), R.prim_value(0), R.str("global"), R.dtype("float32"))
        a: R.Tensor((n, 2), dtype="float32") = R.memory.alloc_tensor(s0, R.prim_value(0), R.shape([n, 2]), R.dtype("float32"))
        cls.add1(x, a)
        s1: R.Object = R.memory.alloc_storage(R.shape([n * 12]), R.prim_value(0), R.str("global"), R.dtype("float32"))
        b: R.Tensor((n, 3), dtype="float32") = R.memory.alloc_tensor(s1, R.prim_value(0), R.shape([n, 3]), R.dtype("float32"))
        cls.grow(a, b)
        c: R.Tensor((n, 3), dtype="float32") = R.memory.alloc_tensor(s0, R.prim_value(0), R.shape([n, 3]), R.dtype("float32"))
        cls.widen(b, c)
        d: R.Tensor((n, 2), dtype="float32") = R.memory.alloc_tensor(s1, R.prim_value(0), R.shape([n, 2]), R.dtype("float32"))
        cls.shrink(c, d)
        e: R.Tensor((n, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(d, e)
        return e
"""

# a (over n) is dead before b (over m), k (constant) and p (n + 1) are allocated; none may take
# its storage, nor q (3 * (n + 1), not a multiple of p's size by a constant times a product)
OTHER_SIZES = """
@I.ir_module
class Module:
""" + PRIMS + """
    @R.function
    def main(x: R.Tensor(("n", 2), dtype="float32"), y: R.Tensor(("m", 2), dtype="float32"),
             z: R.Tensor((4, 2), dtype="float32"), w: R.Tensor(("n + 1", 2), dtype="float32")):
        n = T.int64()
        m = T.int64()
        cls = Module
        a: R.Tensor((n, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(x, a)
        c: R.Tensor((n, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(a, c)
        b: R.Tensor((m, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(y, b)
        d: R.Tensor((m, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([m, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(b, d)
        k: R.Tensor((4, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(z, k)
        f: R.Tensor((4, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([4, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(k, f)
        p: R.Tensor((n + 1, 2), dtype="float32") = R.builtin.alloc_tensor(R.shape([n + 1, 2]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.add1(w, p)
        q: R.Tensor((n + 1, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([n + 1, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.grow(p, q)
        g: R.Tensor((n + 1, 3), dtype="float32") = R.builtin.alloc_tensor(R.shape([n + 1, 3]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        cls.widen(q, g)
        return (c, d, f, g)
"""


def _plan(text):
    return relax.transform.StaticPlanBlockMemory()(parser.from_source(text))


def test_multiples_of_one_variable_share_the_largest():
    tvm.ir.assert_structural_equal(_plan(BEFORE), parser.from_source(EXPECTED))


def test_other_variables_constants_and_sums_do_not_share():
    text = _plan(OTHER_SIZES)["main"].script()
    storages = re.findall(r"R\.memory\.alloc_storage\(R\.shape\(\[([^\]]*)\]\)", text)
    # one storage each for a, b, k, p and q: nothing reused across kinds of size
    assert sorted(storages) == sorted(["n * 8", "m * 8", "32", "n * 8 + 8", "n * 12 + 12"])
    lines = {ln.strip().split(":")[0]: ln for ln in text.splitlines() if ":" in ln}
    for out in ("c", "d", "f", "g"):  # the outputs keep their own allocations
        assert "R.builtin.alloc_tensor(" in lines[out]


def _ref(x):
    a = x + 1
    b = a[:, [0, 1, 0]] * 2 + np.arange(3, dtype="float32")
    c = b - 0.5
    return c[:, :2] + c[:, 2:3] + 1


def test_shared_storage_numerics_at_several_batches():
    planned = _plan(BEFORE)
    vm = relax.VirtualMachine(relax.build(planned, "llvm", pipeline=None), tvm.cpu())
    rng = np.random.default_rng(0)
    for n in (1, 4, 7, 2):
        x = rng.standard_normal((n, 2)).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), _ref(x), rtol=1e-6, atol=1e-6)


def test_shared_storage_numerics_through_the_default_pipeline():
    vm = relax.VirtualMachine(relax.build(parser.from_source(BEFORE), "llvm"), tvm.cpu())
    for n in (3, 1, 5):
        x = np.random.default_rng(n).standard_normal((n, 2)).astype("float32")
        np.testing.assert_allclose(vm["main"](x).numpy(), _ref(x), rtol=1e-6, atol=1e-6)

"""Kernels of one scalar statement evaluated in Python (``relax.vm.scalar_kernel`` at build time,
``runtime.relax_vm.kernel`` at run time): the expression tree of a PrimFunc over 0-d integer /
bool buffers (None for floats, division, a tensor, a long chain), and a program's generated code
computing them bitwise as the native kernels do (the interpreter's calls), fixed-width
wrapping included; wrong arguments still reach the native checks and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.vm.scalar_kernel import MAX_NODES, scalar_expression
from minitvm.runtime.relax_vm.kernel import _scalar_call


def _func(value_of, dtypes=("int64", "int64", "bool"), shape=()):
    bufs = [tir.decl_buffer(shape if k == 0 else (), d, f"b{k}") for k, d in enumerate(dtypes)]
    out = bufs[-1]
    return tir.PrimFunc(bufs, tir.BufferStore(out, value_of(*(b[()] for b in bufs[:-1])), []))


def test_a_compare_and_an_increment_are_expressions():
    less = _func(lambda a, b: a < b)
    assert scalar_expression(less) == {
        "out": 2, "expr": ["<", "bool", ["load", "int64", 0], ["load", "int64", 1]]}
    inc = _func(lambda a, b: a + tir.const(1, "int64"), ("int64", "int64", "int64"))
    assert scalar_expression(inc) == {
        "out": 2, "expr": ["+", "int64", ["load", "int64", 0], ["const", "int64", 1]]}


@pytest.mark.parametrize("case", ["float", "division", "tensor", "deep"])
def test_other_kernels_stay_native(case):
    if case == "float":
        func = _func(lambda a, b: a + b, ("float32", "float32", "float32"))
    elif case == "division":
        func = _func(lambda a, b: tir.FloorDiv(a, b), ("int64", "int64", "int64"))
    elif case == "tensor":
        func = _func(lambda a, b: a < b, shape=(1,))
    else:  # a chain far longer than MAX_NODES: refused without walking it all
        def chain(a, b):
            e = a
            for _ in range(100_000):
                e = tir.Add(e, b)
            return e
        func = _func(chain, ("int64", "int64", "int64"))
    assert scalar_expression(func) is None
    assert MAX_NODES < 100


def _program():
    """main(a, b: int64, c: int32, p: bool) -> a tuple of scalar integer / bool results."""
    i64 = relax.TensorStructInfo([], "int64")
    a, b = relax.Var("a", i64), relax.Var("b", i64)
    c = relax.Var("c", relax.TensorStructInfo([], "int32"))
    p = relax.Var("p", relax.TensorStructInfo([], "bool"))
    op = relax.op
    bb = relax.BlockBuilder()
    with bb.function("main", [a, b, c, p]):
        outs = [bb.emit(e) for e in (
            op.add(a, b), op.subtract(a, b), op.multiply(a, b), op.less(a, b),
            op.not_equal(a, b), op.greater_equal(a, b), op.maximum(a, b), op.minimum(a, b),
            op.logical_and(p, op.less(a, b)), op.logical_not(p), op.astype(a, "int32"),
            op.add(c, c), op.astype(c, "int64"), op.astype(a, "bool"))]
        bb.emit_func_output(bb.emit(relax.Tuple(outs)))
    return bb.get()


_I64 = np.iinfo(np.int64)
_VALUES = [(3, 5, 7, True), (_I64.max, 1, 2 ** 31 - 1, False), (_I64.min, 2, -2 ** 31, True),
           (_I64.max, _I64.max, 12345, True), (-4, -4, 0, False)]


def test_generated_code_computes_them_bitwise_as_the_native_kernels():
    ex = relax.build(_program(), "llvm")
    assert sum("scalar" in spec for _, spec in ex.kernels.values()) >= 10
    vm = relax.VirtualMachine(ex, tvm.cpu())
    vm.native_entry = False  # (the generated code against the interpreter)
    for a, b, c, p in _VALUES:
        args = (np.array(a, "int64"), np.array(b, "int64"), np.array(c, "int32"),
                np.array(p, "bool"))
        vm.straight_line = True
        fast = vm["main"](*args)
        assert callable(vm._straight[id(ex.functions["main"])])
        vm.straight_line = False
        slow = vm["main"](*args)
        for f, s in zip(fast, slow, strict=True):
            assert f.numpy().dtype == s.numpy().dtype
            assert f.numpy().tobytes() == s.numpy().tobytes(), (a, b, c, p)
        with np.errstate(over="ignore"):
            assert fast[0].numpy() == np.int64(a) + np.int64(b)  # (wrapped)
            assert fast[2].numpy() == np.int64(a) * np.int64(b)


def test_wrong_arguments_take_the_native_checks():
    spec = {"params": [["buf", "int64", 0, []], ["buf", "int64", 0, []], ["buf", "bool", 0, []]],
            "scalar": {"out": 2, "expr": ["<", "bool", ["load", "int64", 0],
                                          ["load", "int64", 1]]}}
    seen = []

    def native(*args):
        seen.append(args)
        raise ValueError("native checks")

    call = _scalar_call("less", spec, native)
    out = np.zeros((), "bool")
    call(np.array(1, "int64"), np.array(2, "int64"), out)
    assert out[()] and not seen
    with pytest.raises(ValueError, match="native checks"):
        call(np.array(1.0, "float32"), np.array(2, "int64"), out)
    frozen = np.zeros((), "bool")
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="native checks"):  # (a read-only output)
        call(np.array(1, "int64"), np.array(2, "int64"), frozen)
    with pytest.raises(ValueError, match="native checks"):
        call(np.array(1, "int64"), np.array(2, "int64"))
    assert len(seen) == 3


@pytest.mark.parametrize("expr", [["<", "bool", ["load", "int64", 0], ["load", "int64", 9]],
                                  ["/", "int64", ["load", "int64", 0], ["load", "int64", 1]],
                                  ["load", "int64", "__import__('os')"],
                                  ["const", "int64", "1; x"], "a0"])
def test_a_spec_expression_it_does_not_know_is_not_code(expr):
    spec = {"params": [["buf", "int64", 0, []], ["buf", "int64", 0, []], ["buf", "int64", 0, []]],
            "scalar": {"out": 2, "expr": expr}}
    assert _scalar_call("k", spec, lambda *a: None) is None

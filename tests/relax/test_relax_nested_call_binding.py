"""Nested calls are bound first, innermost first, as TVM's normalizer binds non-leaf arguments:
by the BlockBuilder (``emit``, ``emit_output``, ``match_cast``) and by the TVMScript parser, with
tuples kept inline and their non-leaf fields bound; both give the same program, it prints and
parses back, and it runs as before. A 100,000-deep nest is bound without recursion."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.ir import assert_structural_equal
from minitvm.relax import op as R
from minitvm.script.parser import from_source

SRC = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.add(R.multiply(x, x), x)
            t = (R.exp(y), y)
            gv = R.add(t[0], R.nn.relu(y))
            R.output(gv)
        return gv
'''


def _by_builder():
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(R.add(R.multiply(x, x), x), "y")
            t = bb.emit(relax.Tuple([R.exp(y), y]), "t")
            gv = bb.emit_output(R.add(relax.TupleGetItem(t, 0), R.nn.relu(y)), "gv")
        bb.emit_func_output(gv)
    return bb.get()


def test_builder_binds_nested_calls_innermost_first():
    f = _by_builder()["main"]
    (block,) = f.body.blocks
    ops = [b.value.op.name if isinstance(b.value, relax.Call) else type(b.value).__name__
           for b in block.bindings]
    assert ops == ["relax.multiply", "relax.add", "relax.exp", "Tuple", "TupleGetItem",
                   "relax.nn.relu", "relax.add"]
    for b in block.bindings:  # every operand is a leaf or a tuple of leaves
        if isinstance(b.value, relax.Call):
            assert all(isinstance(a, relax.Var | relax.Constant | relax.ShapeExpr)
                       for a in b.value.args)


def test_parser_binds_like_the_builder_and_round_trips():
    mod = from_source(SRC)
    assert_structural_equal(mod, _by_builder())
    text = mod.script()
    assert "lv: R.Tensor((2, 3), dtype=\"float32\") = R.multiply(x, x)" in text
    assert_structural_equal(from_source(text), mod)


def test_results_unchanged():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    vm = relax.VirtualMachine(relax.build(from_source(SRC), "llvm"), tvm.cpu())
    y = x * x + x
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                               np.exp(y) + np.maximum(y, 0), rtol=1e-5)


def test_deep_nest_is_bound_without_recursion():
    x = relax.Var("x", relax.TensorStructInfo((2,), "float32"))
    e = x
    for _ in range(100_000):
        e = R.negative(e)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        out = bb.emit(e)
        bb.emit_func_output(out)
    (block,) = bb.get()["main"].body.blocks
    assert len(block.bindings) == 100_000

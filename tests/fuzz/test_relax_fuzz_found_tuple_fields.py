"""Relax pass-sequence fuzzer, seed 700515 (minimized): an argmin over the symbolic axis read
only through a field of a tuple literal that nothing reads. RemoveUnusedOutputs (its
CanonicalizeBindings forwards ``t[1]`` to its field, DeadCodeElimination drops the tuple and
the argmin, as TVM's do) makes the VM give a value at n = 0 where the original raises: both
right, an oracle fault. The reference's second reading now reads a tuple literal's field
access as a read of that field only."""

import numpy as np
import pytest

from minitvm.ir.module import IRModule
from minitvm.testing.fuzz.relax_generator import RelaxProgram
from minitvm.testing.fuzz.relax_pass_sequences import check_relax_sequence
from minitvm.testing.fuzz.relax_reference import EmptyReduction, evaluate

SOURCE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor((), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((), dtype="int64") = R.argmin(x, axis=None, keepdims=False)
            s: R.Tensor((), dtype="float32") = R.sum(x, axis=None, keepdims=False)
            R.output(a, s)
        t: R.Tuple(R.Tensor((), dtype="int64"), R.Tensor((), dtype="float32")) = (a, s)
        r: R.Tensor((), dtype="float32") = t[1]
        return r
"""


def _program() -> RelaxProgram:
    from minitvm.script.parser.entry import from_source

    mod = from_source(SOURCE)
    assert isinstance(mod, IRModule)
    return RelaxProgram(mod, 700515, [("x", ["n", 3], "float32")], symbolic=True)


def test_a_field_read_of_a_tuple_literal_reads_only_that_field():
    prog = _program()
    x = np.zeros((0, 3), "float32")
    with pytest.raises(EmptyReduction):
        evaluate(prog.mod, [x])
    (got,) = [evaluate(prog.mod, [x], whole_tuples=False)]
    assert float(got) == 0.0
    y = np.arange(6, dtype="float32").reshape(2, 3)
    assert float(evaluate(prog.mod, [y], whole_tuples=False)) == 15.0


def test_remove_unused_outputs_may_drop_the_unread_argmin():
    prog = _program()
    assert check_relax_sequence(prog, ("RemoveUnusedOutputs",), sizes=[2, 0]) == []
    # without passes the build keeps the tuple, and raises at n = 0 as the reference does
    assert check_relax_sequence(prog, (), sizes=[2, 0]) == []


def test_field_reads_of_100k_bindings():
    """``_field_reads`` is one loop over the bindings (no recursion; a field read's own
    nesting is followed by a loop): 50,000 tuples and 50,000 reads of their fields."""
    from minitvm.relax import Tuple, TupleGetItem, Var, VarBinding
    from minitvm.testing.fuzz.relax_reference import _field_reads

    x, y = Var("x"), Var("y")
    pair = Tuple([x, y])
    order = []
    for i in range(50_000):
        t = Var("t")
        order += [VarBinding(t, pair), VarBinding(Var("r"), TupleGetItem(t, i % 2))]
    uses: dict = {}
    direct = _field_reads(order, uses)
    assert len(direct) == 50_000 and direct[order[-1].var] is y
    assert uses[order[-1].var] == [y] and uses[order[-3].var] == [x]

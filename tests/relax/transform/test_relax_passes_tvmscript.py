"""The Relax passes on TVMScript Before/Expected modules, in the style of TVM's own tests
(skipped when the TVMScript parser is not available)."""

import numpy as np
import pytest
from relax_pass_util import assert_same_results

import minitvm as tvm
from minitvm.relax import transform as rt

parser = pytest.importorskip("minitvm.script.parser")
if not hasattr(parser, "from_source"):  # pragma: no cover - depends on the tree
    pytest.skip("the TVMScript parser has no from_source yet", allow_module_level=True)


def parse(text):
    return parser.from_source(text)


def check(transform, before, expected):
    after = transform(parse(before))
    tvm.ir.assert_structural_equal(after, parse(expected))
    return after


def test_canonicalize_simple_assignments():
    check(rt.CanonicalizeBindings(), """
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor):
        y = x
        z = y
        q = z
        p = q
        o = p
        return o
""", """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor):
        return x
""")


def test_canonicalize_dataflow_output():
    check(rt.CanonicalizeBindings(), """
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            lv = R.add(x, x)
            gv = lv
            R.output(gv)
        return gv
""", """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            gv = R.add(x, x)
            R.output(gv)
        return gv
""")


def test_cse_then_cleanup():
    before = """
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            lv0 = R.add(x, y)
            lv1 = R.add(x, y)
            gv = R.multiply(lv0, lv1)
            R.output(gv)
        return gv
"""
    check(rt.EliminateCommonSubexpr(), before, """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            lv0 = R.add(x, y)
            lv1 = lv0
            gv = R.multiply(lv0, lv0)
            R.output(gv)
        return gv
""")
    seq = tvm.transform.Sequential([rt.EliminateCommonSubexpr(), rt.CanonicalizeBindings(),
                                    rt.DeadCodeElimination()])
    check(seq, before, """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            lv0 = R.add(x, y)
            gv = R.multiply(lv0, lv0)
            R.output(gv)
        return gv
""")


def test_dead_code_elimination_functions_and_bindings():
    check(rt.DeadCodeElimination(), """
@I.ir_module
class Before:
    @R.function(private=True)
    def unused(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.exp(x)
        return y

    @R.function(private=True)
    def used(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.exp(x)
        return y

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Before
        a = cls.used(x)
        b = R.add(a, a)
        c = R.multiply(b, b)
        return a
""", """
@I.ir_module
class Expected:
    @R.function(private=True)
    def used(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.exp(x)
        return y

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Expected
        a = cls.used(x)
        return a
""")


def test_convert_to_dataflow():
    check(rt.ConvertToDataflow(), """
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.add(x, x)
        b = R.exp(a)
        return b
""", """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            a = R.add(x, x)
            b = R.exp(a)
            R.output(b)
        return b
""")


def test_to_non_dataflow():
    check(rt.ToNonDataflow(), """
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            a = R.add(x, x)
            b = R.exp(a)
            R.output(b)
        return b
""", """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.add(x, x)
        b = R.exp(a)
        return b
""")


def test_lambda_lift_basic():
    before = """
@I.ir_module
class Before:
    @R.function
    def main(x1: R.Tensor((10, 5), "float32"), y1: R.Tensor((10, 5), "float32")) -> R.Tensor((10, 5), "float32"):
        @R.function
        def inner(x2: R.Tensor((10, 5), "float32"), y2: R.Tensor((10, 5), "float32")) -> R.Tensor((10, 5), "float32"):
            s: R.Tensor((10, 5), "float32") = R.add(x2, y2)
            return s
        gv1: R.Tensor((10, 5), "float32") = inner(x1, y1)
        return gv1
"""
    after = check(rt.LambdaLift(), before, """
@I.ir_module
class Expected:
    @R.function(private=True)
    def main_inner(x2: R.Tensor((10, 5), "float32"), y2: R.Tensor((10, 5), "float32")) -> R.Tensor((10, 5), "float32"):
        s: R.Tensor((10, 5), "float32") = R.add(x2, y2)
        return s

    @R.function
    def main(x1: R.Tensor((10, 5), "float32"), y1: R.Tensor((10, 5), "float32")) -> R.Tensor((10, 5), "float32"):
        cls = Expected
        gv1: R.Tensor((10, 5), "float32") = cls.main_inner(x1, y1)
        return gv1
""")
    a, b = (np.random.rand(10, 5).astype("float32") for _ in range(2))
    assert_same_results(parse(before), after, "main", a, b)


def test_bind_symbolic_vars():
    check(rt.BindSymbolicVars({"n": 16}), """
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        y = R.exp(x)
        return y
""", """
@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((16, 4), "float32")) -> R.Tensor((16, 4), "float32"):
        y = R.exp(x)
        return y
""")


def test_remove_unused_outputs():
    check(rt.RemoveUnusedOutputs(), """
@I.ir_module
class Before:
    @R.function(private=True)
    def func(a: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
        b = R.exp(a)
        c = R.add(a, a)
        return (b, c)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Before
        t = cls.func(x)
        y = t[1]
        return y
""", """
@I.ir_module
class Expected:
    @R.function(private=True)
    def func(a: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        c = R.add(a, a)
        return c

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Expected
        y = cls.func(x)
        return y
""")

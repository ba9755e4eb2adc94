"""Parsed Relax nodes carry spans (file, line, column of the original source): parameters,
binding variables, bindings and the values a statement made; spans never affect equality."""

import minitvm as tvm

SRC = '''
@I.ir_module
class Mod:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            y = R.add(x, x)
            z: R.Tensor((2, 3), "float32") = R.exp(y)
            R.output(z)
        return z
'''


def test_spans_of_parsed_relax_nodes():
    mod = tvm.script.from_source(SRC)
    f = mod["main"]
    p = f.params[0].span
    assert (p.line, p.column) == (5, 14)
    y, z = f.body.blocks[0].bindings
    assert (y.span.line, y.span.column) == (7, 13)
    assert (y.var.span.line, y.var.span.column) == (7, 13)
    assert (y.value.span.line, y.value.span.column, y.value.span.end_column) == (7, 17, 28)
    assert (z.span.line, z.value.span.line, z.value.span.column) == (8, 8, 46)
    text = mod.script()
    assert tvm.ir.structural_equal(tvm.script.from_source(text), mod)


def test_spans_follow_the_line_offset_of_a_decorated_class():
    from minitvm.script import ir as I  # noqa: F401
    from minitvm.script import relax as R

    @I.ir_module
    class Decorated:
        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            y = R.exp(x)
            return y

    import inspect

    first = inspect.getsourcelines(test_spans_follow_the_line_offset_of_a_decorated_class)[1]
    binding = Decorated["main"].body.blocks[0].bindings[0]
    assert binding.span.line == first + 8  # the line of ``y = R.exp(x)``
    assert binding.span.source_name.endswith("test_relax_parser_spans.py")

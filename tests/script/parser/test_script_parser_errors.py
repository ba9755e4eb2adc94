"""TVMScript the parser cannot read fails with ParserError (a ValueError) that says what is
wrong and where: file, line and column, with the line shown."""

import pathlib

import pytest

from minitvm import relax
from minitvm.script.parser import ParserError, from_source
from minitvm.script.parser import relax as R

HEAD = '''@R.function
def f(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool")):
'''


@pytest.mark.parametrize("body, match, line, col", [
    ("    y = z\n    return y\n", r"name 'z' is not defined", 3, 9),
    ("    y = [a for a in x]\n    return y\n", r"not supported in TVMScript \(Relax\): list comprehensions", 3, 9),
    ('    y = R.str(f"{x}")\n    return y\n', r"not supported in TVMScript \(Relax\): f-strings", 3, 15),
    ("    y = [a for a in (x,)]\n    return y\n", r"not supported in TVMScript \(Relax\): list comprehensions", 3, 9),
    ("    for i in range(3):\n        pass\n    return x\n",
     r"not supported in TVMScript \(Relax\): a `For` statement", 3, 5),
    ("    a, b = x, x\n    return a\n", r"tuple unpacking", 3, 5),
    ("    R.output(x)\n    return x\n", r"R.output is only valid inside `with R.dataflow", 3, 5),
    ("    with R.dataflow():\n        y = x\n        R.output(y)\n        z = y\n    return y\n",
     r"R.output must be the last statement", 5, 9),
    ("    with R.dataflow():\n        y = x\n        R.output(x)\n    return y\n",
     r"R.output lists 'x', which is not bound in this dataflow block", 5, 9),
    ("    with R.dataflow():\n        y = x\n        R.output(w)\n    return y\n",
     r"name 'w' is not defined", 5, 18),
    ('    y: R.Tensor((2, 3), dtype="int32") = x\n    return y\n',
     r"dtype float32 is not int32", 3, 5),
    ('    y: R.Tensor(dtype="float32", ndim=3) = x\n    return y\n', r"rank 2 is not 3", 3, 5),
    ("    y: R.Shape = x\n    return y\n", r"Tensor is not Shape", 3, 5),
    ("    y = x\n", r"function 'f' must end with a return statement", 2, 1),
    ("    return x\n    y = x\n", r"unreachable statement after return", 4, 5),
    ("    if c:\n        return x\n    else:\n        y = x\n    return y\n",
     r"return is not allowed in an if branch", 4, 9),
    ("    with R.dataflow():\n        if c:\n            y = x\n        else:\n            y = x\n"
     "        R.output(y)\n    return y\n", r"control flow \(if\) is not allowed in a dataflow",
     4, 9),
    ("    y = T.int64(3)\n    return y\n", r"cannot bind the PrimExpr T.int64\(3\)", 3, 5),
    ("    y: R.Tensor = 1 + R\n    return y\n", r"TypeError: unsupported operand", 3, 19),
    ("    with open(x):\n        pass\n    return x\n", r"name 'open' is not defined", 3, 10),
])
def test_relax_errors_name_line_and_column(body, match, line, col):
    with pytest.raises(ParserError, match=match) as info:
        from_source(HEAD + body)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.lineno, err.col) == (line, col)
    assert f"<string>:{line}:{col}: error:" in str(err)
    assert f"(line {line}, column {col})" in str(err)


def test_parameter_needs_an_annotation():
    with pytest.raises(ParserError, match=r"parameter 'x' needs a struct info annotation") as e:
        from_source("@R.function\ndef f(x):\n    return x\n")
    assert e.value.lineno == 2


def test_top_level_errors():
    with pytest.raises(ParserError, match=r"invalid Python syntax") as e:
        from_source("@R.function\ndef f(x: R.Tensor((2,), 'float32')):\n    return x +\n")
    assert e.value.lineno == 3
    with pytest.raises(ParserError, match=r"defines nothing to parse"):
        from_source("# just a comment\n")
    two = "@R.function\ndef f(x: R.Object):\n    return x\n" * 2
    with pytest.raises(ParserError, match=r"defines 2 top-level objects"):
        from_source(two)
    with pytest.raises(ParserError, match=r"unsupported decorator 'staticmethod'") as e:
        from_source("@staticmethod\ndef f(x: R.Object):\n    return x\n")
    assert e.value.lineno == 1
    with pytest.raises(ParserError, match=r"'f' has no decorator"):
        from_source("def f(x: R.Object):\n    return x\n")
    with pytest.raises(ParserError, match=r"not supported in TVMScript \(module level\): a top-level `Assign`"):
        from_source("x = 1\n")
    with pytest.raises(TypeError, match=r"from_source takes TVMScript text"):
        from_source(b"bytes")


def test_operator_errors_carry_the_location():
    if getattr(relax.op, "add", None) is None:
        pytest.skip("relax.op.add is not written yet")
    text = HEAD + '    y = R.add(x, R.const([1.0, 2.0], "float32"))\n    return y\n'
    with pytest.raises(ParserError) as e:
        from_source(text)
    assert e.value.lineno == 3 and e.value.col == 9


def test_decorated_function_errors_point_into_this_file():
    with pytest.raises(ParserError, match=r"name 'undefined_in_tvmscript' is not defined") as e:

        @R.function
        def bad(x: R.Tensor((2,), "float32")):
            y = undefined_in_tvmscript  # noqa: F821
            return y

    lines = pathlib.Path(__file__).read_text().splitlines()
    expected = next(k for k, ln in enumerate(lines, 1)
                    if "y = undefined_in_tvmscript" in ln)
    assert e.value.source_name == __file__
    assert e.value.lineno == expected
    assert e.value.col == lines[expected - 1].index("undefined_in_tvmscript") + 1

"""Regression tests for what the damage fuzzer (``minitvm.testing.fuzz.damage``) found: one per
class of finding, each feeding the damaged artefact and checking the clear error (or, for the
build cache, the right executable)."""

import contextlib
import io

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay
from minitvm.ir.fingerprint import fingerprint
from minitvm.relax import op as R
from minitvm.relax.op.base import StructInfoError


def _relax_main(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


def _tensor(name, shape, dtype="float32"):
    return relax.Var(name, relax.TensorStructInfo(list(shape), dtype))


def _relay_infer(fn_of_vars, *specs):
    vs = [relay.var(f"p{k}", shape=s, dtype=d) for k, (s, d) in enumerate(specs)]
    mod = tvm.IRModule.from_expr(relay.Function(vs, fn_of_vars(*vs)))
    return relay.transform.InferType()(mod)


# ------------------------------------------------------------------ build cache key
def test_relax_param_annotations_are_in_the_build_key():
    """add(p0: (2, 3), p1: (2, 2, 3)) and add(p0: (2, 2, 3), p1: (1, 3)) infer the same output
    and differ only in the parameters' annotations (a Relax Var keeps its annotation in the
    cached-type slot the fingerprint skipped): they shared a whole-build key, and relax.build
    of the second returned the first's executable, which refused the second's inputs."""
    def add_of(s0, s1):
        return _relax_main([_tensor("p0", s0), _tensor("p1", s1)], R.add)

    a, b = add_of((2, 3), (2, 2, 3)), add_of((2, 2, 3), (1, 3))
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a) == fingerprint(add_of((2, 3), (2, 2, 3)))  # (still deterministic)


# ------------------------------------------------------------------ text
def test_relay_type_error_in_parsed_text_says_line_and_column():
    text = ('#[version = "0.0.5"]\n'
            'def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4, 3), float32]) {\n'
            '  %0 = add(%x, %y);\n  nn.relu(%0)\n}\n')
    with pytest.raises(TypeError, match=r"^from_string:3:8: type error in `add\(%x, %y\)`"):
        relay.parse(text)


# ------------------------------------------------------------------ ill-typed IR by API
def test_relax_conv_and_pool_windows_must_fit():
    """Relax inferred negative output sizes (a 3x3 kernel over width 1: -1) and took pool
    windows of size 0 or -1; a zero-width input then crashed the conv schedule."""
    x, w = _tensor("x", (1, 3, 6, 1)), _tensor("w", (4, 3, 3, 3))
    with pytest.raises(StructInfoError, match=r"relax.nn.conv2d: the kernel .*does not fit "
                                              r"spatial axis 1 of size 1.*-1 elements"):
        _relax_main([x, w], R.nn.conv2d)
    for pool in [(0, 2), (-1, 2), (5, 5)]:
        with pytest.raises(StructInfoError, match=r"relax.nn.max_pool2d: the pool window"):
            _relax_main([_tensor("x", (1, 2, 4, 4))], lambda v, p=pool: R.nn.max_pool2d(v, p))


def test_relay_conv_refuses_an_empty_kernel():
    """A (4, 3, 0, 3) weight typed (an output of height 7) and crashed the schedule building
    it (ZeroDivisionError)."""
    with pytest.raises(TypeError, match=r"nn.conv2d: the computed kernel height is 0"):
        _relay_infer(relay.nn.conv2d, ((1, 3, 6, 6), "float32"), ((4, 3, 0, 3), "float32"))


def test_take_from_an_empty_axis_reads_nothing_outside():
    """Every index is outside an empty axis: the kernels read outside the tensor (clip's index
    -1, Relay's default; fast's any). Refusing it in the type relation broke programs that take
    from an axis empty at run time where the result is not used (a recurrent loop of length 0
    specialized at its shapes), so the kernel reads nothing: zeros, in both dialects, any mode."""
    x = np.zeros((3, 0), "float32")
    idx = np.array([0, 5], "int32")
    for mode in ("clip", "fast", "wrap"):
        mod = _relay_infer(lambda a, b, m=mode: relay.take(a, b, 1, mode=m), ((3, 0), "float32"),
                           ((2,), "int32"))
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm")
        from minitvm.contrib import graph_executor

        g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        g.set_input("p0", x)
        g.set_input("p1", idx)
        g.run()
        np.testing.assert_array_equal(g.get_output(0).numpy(), np.zeros((3, 2), "float32"))
    a, i = _tensor("x", (3, 0)), _tensor("i", (2,), "int32")
    ex = relax.build(_relax_main([a, i], lambda u, v: R.take(u, v, 1)), target="llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x), tvm.nd.array(idx))
    np.testing.assert_array_equal(out.numpy(), np.zeros((3, 2), "float32"))


def test_relay_squeeze_refuses_a_repeated_axis():
    with pytest.raises(TypeError, match=r"squeeze: axis 1 is listed twice in \[1, 1\]"):
        _relay_infer(lambda a: relay.squeeze(a, [1, 1]), ((2, 1, 3), "float32"))


def test_integer_attributes_refuse_strings_and_fractions():
    """int() turned axis '0' into 0 and a size 2.5 into 2: the program built was not the one
    asked for."""
    a, b = _tensor("a", (2, 3)), _tensor("b", (4, 3))
    with pytest.raises(TypeError, match=r"relax.concat's axis must be an integer, got str '0'"):
        R.concat([a, b], "0")
    with pytest.raises(TypeError, match=r"relax.nn.softmax's axis must be an integer"):
        R.nn.softmax(a, 1.5)
    x = relay.var("x", shape=(2, 3, 4))
    with pytest.raises(TypeError, match=r"reshape: expected integers, got \[2.5, 12\]"):
        relay.reshape(x, [2.5, 12])
    with pytest.raises(TypeError, match=r"reshape: expected integers, got 'ab'"):
        relay.reshape(x, "ab")
    with pytest.raises(TypeError, match=r"concatenate: axis must be an integer, got float"):
        relay.concatenate([x, x], 1.5)
    assert relay.reshape(x, [6.0, 4]).attrs.newshape == (6, 4)  # (an integral float is a size)


def test_relax_astype_names_itself_for_an_unknown_dtype():
    with pytest.raises(ValueError, match=r"relax.astype: unknown data type 'tensor'"):
        R.astype(_tensor("a", (2,)), "tensor")


# ------------------------------------------------------------------ minitvm run
def test_cli_run_refuses_an_input_file_of_another_kind(tmp_path):
    """A float64 file for the int32 input z was truncated, a complex one lost its imaginary
    part and a file of strings was parsed: each ran silently."""
    from minitvm.cli import main

    z = relay.var("z", shape=(2,), dtype="int32")
    lib = relay.build(tvm.IRModule.from_expr(relay.Function([z], relay.add(z, z))),
                      target="llvm")
    path = str(tmp_path / "m.tar")
    lib.export_library(path)
    cases = {"float64": np.array([1.5, 2.5]), "complex64": np.array([1j, 2], "complex64"),
             "<U1": np.array(["1", "2"])}
    for dtype, arr in cases.items():
        f = str(tmp_path / "z.npy")
        np.save(f, arr)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(["run", path, "--input", f"z={f}"]) == 2
        assert f"--input z: {f} holds {dtype} values, the model expects int32" in err.getvalue()
    np.save(f, np.array([1, 2], "int64"))  # (a cast within a kind is still made)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", path, "--input", f"z={f}"]) == 0


def test_relax_split_at_indices_that_go_back():
    """split(x (6, 4), [7, 2]) is x[0:6], x[6:6], x[2:6] (its struct info said so), but the
    legalized kernel cut at the pieces' running sizes (6, 6) and returned an empty last piece."""
    x = np.arange(24, dtype="float32").reshape(6, 4)
    mod = _relax_main([_tensor("x", (6, 4))], lambda v: R.split(v, [7, 2], 0))
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    got = [o.numpy() for o in vm["main"](x)]
    assert [g.shape for g in got] == [(6, 4), (0, 4), (4, 4)]
    np.testing.assert_array_equal(got[2], x[2:])


def test_tvmscript_refuses_an_inline_symbolic_declaration():
    """`n , T.int64()` (a token edit of `n = T.int64()`) parsed into a module binding a tuple
    of prim values, one of them an unnamed symbolic variable nothing defines (ill formed)."""
    from minitvm.script.parser.entry import from_source
    from minitvm.script.parser.error import ParserError

    text = ("from tvm.script import relax as R\nfrom tvm.script import tir as T\n\n"
            "@R.function\ndef main(x: R.Tensor((\"n\",), dtype=\"float32\")):\n"
            "    n = T.int64()\n    n , T.int64()\n    return x\n")
    with pytest.raises(ParserError, match=r"<string>:7:5: error: an unnamed symbolic variable"):
        from_source(text)

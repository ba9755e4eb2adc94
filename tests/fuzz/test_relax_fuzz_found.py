"""Regression tests for the Relax bugs the Relax fuzzer found (issue 15, Relax side): each
with the structure the fix must produce and the values it must compute."""

import os
import zipfile

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax.expr import If, SeqExpr
from minitvm.script.parser.entry import from_source
from minitvm.script.parser.error import ParserError


def _main(params, body):
    """A module whose main binds ``body(*params)`` in one dataflow block and returns it."""
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(bb, *params))
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*args)
    return [o.numpy() for o in out] if isinstance(out, tuple | list) else out.numpy()


# ------------------------------------------------------------------ BlockBuilder: If branches
def test_emitted_if_has_seq_expr_branches():
    """bb.emit(If(c, call, call)) was ill formed ("If branches must be SeqExprs") and its
    TVMScript did not parse back equal; now each branch binds its call in its own scope."""
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))
    c = relax.Var("c", relax.TensorStructInfo([], "bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, c]):
        y = bb.emit(If(c, R.exp(x), R.negative(x)))
        bb.emit_func_output(y)
    mod = bb.get()
    value = mod["main"].body.blocks[0].bindings[0].value
    assert isinstance(value.true_branch, SeqExpr) and isinstance(value.false_branch, SeqExpr)
    t = value.true_branch
    assert len(t.blocks) == 1 and t.body is t.blocks[0].bindings[0].var
    assert t.blocks[0].bindings[0].value.op.name == "relax.exp"
    assert relax.analysis.well_formed(mod)
    tvm.ir.assert_structural_equal(from_source(mod.script(show_meta=True)), mod)
    xv = np.array([-1.0, 0.0, 2.0], "float32")
    np.testing.assert_allclose(_run(mod, xv, np.array(True)), np.exp(xv), rtol=1e-6)
    np.testing.assert_allclose(_run(mod, xv, np.array(False)), -xv)


# ------------------------------------------------------------------ legalization: out shapes
def test_repeat_without_axis_builds():
    """repeat(axis=None) legalized to a call_tir whose out shape was ``(2 * 3) * 2``
    unsimplified; VMShapeLower then took it for a symbolic size nobody defined."""
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    mod = _main([x], lambda bb, x: bb.emit(R.repeat(x, 2, axis=None)))
    lowered = relax.transform.LegalizeOps()(mod)
    call = lowered["main"].body.blocks[0].bindings[0].value
    (dim,) = call.sinfo_args[0].shape.values
    assert isinstance(dim, tir.IntImm) and dim.value == 12
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(_run(mod, xv), np.repeat(xv, 2))


def test_zero_size_reshape_and_repeat():
    """reshape to a shape with a 0 was refused, so repeat/flatten of an empty tensor failed to
    build; an ambiguous -1 (other dimensions multiply to 0) is the error now."""
    x = relax.Var("x", relax.TensorStructInfo([0, 3], "float32"))
    xv = np.zeros((0, 3), "float32")
    assert _run(_main([x], lambda bb, x: bb.emit(R.repeat(x, 1, axis=0))), xv).shape == (0, 3)
    assert _run(_main([x], lambda bb, x: bb.emit(R.reshape(x, (3, 0)))), xv).shape == (3, 0)
    assert _run(_main([x], lambda bb, x: bb.emit(R.flatten(x))), xv).shape == (0,)
    with pytest.raises(ValueError, match="ambiguous"):
        R.reshape(x, (0, -1))
    with pytest.raises(ValueError, match="positive"):
        R.reshape(x, (-2, 3))
    y = relax.Var("y", relax.TensorStructInfo([2, 3], "float32"))
    with pytest.raises(ValueError, match="0 only for an empty tensor"):
        R.reshape(y, (0, 6))


# ------------------------------------------------------------------ FoldConstant: rank 0
def test_fold_constant_keeps_scalar_rank():
    """FoldConstant folded abs(const scalar) into a rank-1 constant of shape (1,) while the
    binding said rank 0 (np.ascontiguousarray makes 0-d arrays 1-d)."""
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    before = _main([x], lambda bb, x: bb.emit(R.add(x, bb.emit(R.abs(relax.const(-1.5,
                                                                                "float32"))))))
    after = relax.transform.FoldConstant()(before)
    expected = _main([x], lambda bb, x: bb.emit(R.add(x, relax.const(1.5, "float32"))))
    tvm.ir.assert_structural_equal(after, expected)
    xv = np.array([1.0, -2.0], "float32")
    for mod in (before, after):
        out = _run(mod, xv)
        assert out.shape == (2,)
        np.testing.assert_allclose(out, xv + 1.5)


# ------------------------------------------------------------------ argmax/argmin with NaN
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_pick_the_first_nan(name):
    """argmax/argmin of a row holding NaN returned the axis length (an out-of-range index);
    now the first NaN, as numpy (the row's max/min is NaN)."""
    x = relax.Var("x", relax.TensorStructInfo([3, 4], "float32"))
    mod = _main([x], lambda bb, x: bb.emit(getattr(R, name)(x, axis=1)))
    xv = np.array([[1, np.nan, -5, np.nan], [3, 2, 1, 0], [np.nan, 0, 0, 0]], "float32")
    got = _run(mod, xv)
    np.testing.assert_array_equal(got, getattr(np, name)(xv, axis=1))
    assert (got < 4).all()


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_reduction_without_identity_over_empty_axis_is_refused(name):
    """argmax/argmin over a static zero-size axis returned garbage indices; like Relay's type
    relation and numpy, they now refuse it."""
    x = relax.Var("x", relax.TensorStructInfo([2, 0], "float32"))
    bb = relax.BlockBuilder()
    fn = getattr(R, name)
    with pytest.raises(ValueError, match=f"relax.{name}: cannot reduce over axis 1 of size 0"):
        bb.normalize(fn(x, axis=1))
    out = bb.normalize(fn(x, axis=0))
    assert [int(d) for d in out.struct_info.shape.values] == [0]  # nothing to pick: fine


@pytest.mark.parametrize(("name", "identity"), [("max", -np.inf), ("min", np.inf)])
def test_max_min_over_static_empty_axis_is_their_identity(name, identity):
    """max/min over a static zero-size axis give their identity, as over an axis empty only at
    run time (the struct info refused the static case: the Relax sizes generator's seed 400220,
    min over axis 1 of a (2, 0, 2, 1) tensor, failed to generate) and as Relay's do."""
    x = relax.Var("x", relax.TensorStructInfo([2, 0, 3], "float32"))
    mod = _main([x], lambda bb, x: bb.emit(getattr(R, name)(x, axis=[1])))
    assert [int(d) for d in mod["main"].ret_struct_info.shape.values] == [2, 3]
    np.testing.assert_array_equal(_run(mod, np.zeros((2, 0, 3), "float32")),
                                  np.full((2, 3), identity, "float32"))


# ------------------------------------------------------------------ TVMScript parser errors
_GOOD = '''metadata = tvm.ir.load_json("""{"relax.expr.Constant": [{"dtype": "float32", "shape": [2], "data": [1.0, 2.0]}]}""")
from tvm.script import relax as R

@R.function
def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    y: R.Tensor((2,), dtype="float32") = R.add(x, metadata["relax.expr.Constant"][0])
    return y
'''


@pytest.mark.parametrize("old, new, match", [
    ('"float32", "shape"', '"float7", "shape"', "bad metadata entry"),
    ('"shape": [2]', '"shape": [3]', "bad metadata entry"),
    ('"shape": [2]', '"shape": [2.5]', "shape of non-negative integers"),
    ('{"relax.expr.Constant": [', '{"relax.expr.Constant": 5, "x": [', "JSON object of lists"),
    ('"data": [1.0, 2.0]', '"data": ' + "[" * 5000 + "]" * 5000, "nested too deeply"),
])
def test_damaged_metadata_is_a_parser_error_with_position(old, new, match):
    """A damaged metadata section raised TypeError/ValueError/RecursionError from numpy or
    json; now a ParserError at the metadata line."""
    assert from_source(_GOOD) is not None
    with pytest.raises(ParserError, match=match) as info:
        from_source(_GOOD.replace(old, new, 1))
    assert info.value.lineno == 1 and info.value.col == 1


def test_deep_nesting_and_empty_text_are_parser_errors_with_position():
    """Python's own parser gave MemoryError on deep nesting, and a text defining nothing
    raised a ParserError without a position."""
    deep = _GOOD.replace("R.add(x, ", "R.add(" + "(" * 3000 + "x" + ")" * 3000 + ", ")
    with pytest.raises(ParserError, match="nested too deeply|too many nested") as info:
        from_source(deep)
    assert info.value.lineno == 6 and info.value.col
    with pytest.raises(ParserError, match="defines nothing") as info:
        from_source("import numpy\n")
    assert info.value.lineno == 1 and info.value.col == 1


# ------------------------------------------------------------------ executable files
def _exported(tmp_path):
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    mod = _main([x], lambda bb, x: bb.emit(R.nn.relu(R.matmul(x, relax.const(
        np.ones((3, 4), "float32"))))))
    path = str(tmp_path / "exe.so")
    relax.build(mod, target="llvm").export_library(path)
    return path


def _rewrite(path, out, edit):
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    edit(members)
    with zipfile.ZipFile(out, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def test_executable_round_trip_and_digests(tmp_path):
    """A damaged or edited executable (one JSON integer, a kernel's IR, garbage constants)
    was run with mismatched registers/specs (IndexError, TypeError, wrong outputs); every
    member now carries a SHA-256 and loading refuses a change naming the file and member."""
    path = _exported(tmp_path)
    vm = relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_allclose(vm["main"](xv).numpy(), np.maximum(xv @ np.ones((3, 4)), 0))
    bad = str(tmp_path / "bad.so")

    def edit_json(m):
        m["minitvm_relax_vm.json"] = m["minitvm_relax_vm.json"].replace(b'"num_regs": ',
                                                                        b'"num_regs": 1', 1)

    def edit_kernel(m):
        name = next(n for n in m if n.startswith("kernels/"))
        m[name] = m[name].replace(b"define", b"define ", 1)

    def edit_consts(m):
        m["constants.npz"] = b"garbage"

    for edit, member in ((edit_json, "minitvm_relax_vm.json"), (edit_kernel, "kernels/"),
                         (edit_consts, "constants.npz")):
        _rewrite(path, bad, edit)
        with pytest.raises(ValueError, match=f"bad.so.*{member}"):
            tvm.runtime.load_module(bad)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_malformed_instruction_is_refused():
    """The loader checks every instruction against the function (registers, table indices,
    jump targets) — a last line of defence behind the digests."""
    from minitvm.runtime.relax_vm.executable import CALL, RET, VMFunction, _check_code

    f = VMFunction("main", ["x"], 2, [[CALL, 1, 0, [[0, 0]]], [RET, 1]])
    _check_code(f, 1, 0, "here")
    for code in ([[RET, 2]], [[CALL, 1, 5, []]], [[CALL, 1, 0, [[1, 3]]]], [[3, 9]], [[9]]):
        with pytest.raises(ValueError, match="here: function 'main' instruction 0"):
            _check_code(VMFunction("main", ["x"], 2, code), 1, 0, "here")


def test_sign_of_nan_is_nan():
    """Relax's sign (topi.math) gave sign(nan) = 0; IEEE and numpy (and Relay's) give nan."""
    x = relax.Var("x", relax.TensorStructInfo([5], "float32"))
    mod = _main([x], lambda bb, x: bb.emit(R.sign(x)))
    lowered = relax.transform.LegalizeOps()(mod)
    assert "T.isnan" in lowered.script()
    xv = np.array([np.nan, -2.0, 0.0, 3.0, -np.inf], "float32")
    np.testing.assert_array_equal(_run(mod, xv), np.sign(xv))


@pytest.mark.parametrize("name", ["layer_norm", "rms_norm", "group_norm"])
def test_float16_normalizations_build(name):
    """layer_norm/rms_norm/group_norm of float16 failed to build ("Operands must be the same
    type, got (float, half)"): the sum of squares is float32; the statistics now are too."""
    x = relax.Var("x", relax.TensorStructInfo([2, 4, 3], "float16"))
    g = relax.const(np.linspace(0.5, 1.5, 3 if name != "group_norm" else 4).astype("float16"))
    b = relax.const(np.linspace(-1, 1, 3 if name != "group_norm" else 4).astype("float16"))
    build = {"layer_norm": lambda x: R.nn.layer_norm(x, g, b, axes=[-1]),
             "rms_norm": lambda x: R.nn.rms_norm(x, g, axes=[-1]),
             "group_norm": lambda x: R.nn.group_norm(x, g, b, num_groups=2, channel_axis=1,
                                                     axes=[2])}[name]
    mod = _main([x], lambda bb, x: bb.emit(build(x)))
    xv = np.random.default_rng(0).uniform(-2, 2, (2, 4, 3)).astype("float16")
    xf, gf, bf = xv.astype("float32"), g.data.numpy().astype("float32"), \
        b.data.numpy().astype("float32")
    if name == "layer_norm":
        m, v = xf.mean(-1, keepdims=True), xf.var(-1, keepdims=True)
        want = (xf - m) / np.sqrt(v + 1e-5) * gf + bf
    elif name == "rms_norm":
        want = xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + 1e-5) * gf
    else:
        xg = xf.reshape(2, 2, 2, 3)
        m, v = xg.mean((2, 3), keepdims=True), xg.var((2, 3), keepdims=True)
        want = ((xg - m) / np.sqrt(v + 1e-5)).reshape(2, 4, 3) * gf[:, None] + bf[:, None]
    got = _run(mod, xv)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype("float32"), want, rtol=2e-2, atol=2e-2)


def test_decorator_called_on_a_value_is_a_positioned_parser_error():
    """A mutated text calling ``R.function(x)`` raised a ParserError without line/column
    ("cannot read the source of x"); helpers' position-less errors now get the call's."""
    text = ('from tvm.script import relax as R\n\n@R.function\n'
            'def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):\n'
            '    y: R.Tensor((2,), dtype="float32") = R.function(x)\n    return y\n')
    with pytest.raises(ParserError, match="cannot read the source of x") as info:
        from_source(text)
    assert (info.value.lineno, info.value.col) == (5, 42)


def test_unnamed_symbolic_variable_in_prim_value_is_a_parser_error():
    """``R.prim_value(T.float64())`` (a mutated ``T.float64(1.0)``) parsed into an ill-formed
    module using an unnamed, undefined symbolic variable; it is a ParserError now."""
    text = ('from tvm.script import relax as R\nfrom tvm.script import tir as T\n\n@R.function\n'
            'def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):\n'
            '    y: R.Tensor((2,), dtype="float32") = R.clip(x, R.prim_value(T.float64(-1.5)),'
            ' R.prim_value(T.float64()))\n    return y\n')
    assert from_source(text.replace("T.float64())", "T.float64(1.0))")) is not None
    with pytest.raises(ParserError, match="unnamed variable") as info:
        from_source(text)
    assert info.value.lineno == 6 and info.value.col

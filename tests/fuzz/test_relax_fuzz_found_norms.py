"""Relax sizes-fuzzer findings in layer_norm / group_norm (seeds 50086, 50221: float16;
50903, 51081, 51239, 51284, 51961, 52091: two close values) and the checker's verdict on a
float -> int cast of a value rounded across an integer (seed 51664)."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.testing.fuzz.boundaries import relax_near_boundary


def _main(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.emit_output(body(*params))
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, *args):
    return relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())["main"](*args).numpy()


def _layer_norm64(x, g, b, eps=1e-5):
    x = x.astype("float64")
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g.astype("float64") + b.astype("float64")


def _ln_mod(shape, dtype):
    x = relax.Var("x", relax.TensorStructInfo(shape, dtype))
    g = relax.Var("g", relax.TensorStructInfo([shape[-1]], dtype))
    b = relax.Var("b", relax.TensorStructInfo([shape[-1]], dtype))
    return _main([x, g, b], lambda x, g, b: R.nn.layer_norm(x, g, b, axes=[-1]))


def test_float16_layer_norm_sums_in_float32():
    """Seed 50086: the plain sum was accumulated in float16 (the sum of squares already was in
    float32), and its rounding cancelled in ``E[x^2] - mean^2``: 1.499 for 1.535."""
    x = np.array([2.380859375, 1.93310546875, 1.58251953125, 1.62353515625], "float16")
    g = np.array([1.486328125, 0.61669921875, 1.0048828125, 0.69775390625], "float16")
    b = np.array([-0.79443359375, 0.970703125, 0.61865234375, 1.0654296875], "float16")
    got = _run(_ln_mod([4], "float16"), x, g, b)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype("float64"), _layer_norm64(x, g, b), atol=4e-3)


def test_layer_norm_of_close_values_does_not_cancel():
    """Seeds 50903...: over two elements one ulp apart near 1 (erf of large values), the
    variance ``E[x^2] - mean^2`` lost everything to cancellation, comparable with eps: the
    result was off by 1-2 %. The statistics are now of values shifted by the group's first."""
    x = np.array([[0.99999994, 1.0], [0.9999, 0.99995], [1000.0, 1000.0625],
                  [-3.0, 5.0]], "float32")
    g = np.array([1.25, 0.5], "float32")
    b = np.array([0.1, -0.2], "float32")
    got = _run(_ln_mod([4, 2], "float32"), x, g, b)
    np.testing.assert_allclose(got, _layer_norm64(x, g, b), rtol=1e-5, atol=1e-6)


def test_group_norm_of_close_values():
    shape = (1, 4, 2, 1)
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    g = relax.Var("g", relax.TensorStructInfo([4], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([4], "float32"))
    mod = _main([x, g, b], lambda x, g, b: R.nn.group_norm(x, g, b, num_groups=2,
                                                           channel_axis=1, axes=[2, 3]))
    xv = (1.0 + np.arange(8, dtype="float32") * 1e-4).reshape(shape)
    gv, bv = np.ones(4, "float32"), np.zeros(4, "float32")
    x64 = xv.astype("float64").reshape(1, 2, 4)
    m = x64.mean(-1, keepdims=True)
    want = ((x64 - m) / np.sqrt(((x64 - m) ** 2).mean(-1, keepdims=True) + 1e-5)).reshape(shape)
    np.testing.assert_allclose(_run(mod, xv, gv, bv), want, rtol=1e-4, atol=1e-5)


def test_layer_norm_over_an_empty_batch():
    """The shift reads a group's first element inside the reduction only: n = 0 is legal."""
    n = relax.Var("x", relax.TensorStructInfo([tvm.tir.Var("n", "int64"), 2], "float32"))
    g = relax.Var("g", relax.TensorStructInfo([2], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([2], "float32"))
    mod = _main([n, g, b], lambda x, g, b: R.nn.layer_norm(x, g, b, axes=[-1]))
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    ones = np.ones(2, "float32")
    assert vm["main"](np.zeros((0, 2), "float32"), ones, ones).numpy().shape == (0, 2)
    xv = np.array([[1.0, 3.0]], "float32")
    np.testing.assert_allclose(vm["main"](xv, ones, ones).numpy(),
                               _layer_norm64(xv, ones, ones), rtol=1e-5, atol=1e-6)


def test_cast_near_an_integer_is_a_boundary():
    """Seed 51664: astype(int32) of 2 * a float16 matmul: the VM rounded the matmul to 6.5,
    numpy to 6.496, so trunc gave 13 and 12 -- both within float16's rounding. The checker
    calls that "boundary-dependent" where the cast feeds the differing output; a value far
    from every integer, or a cast that feeds another output, is not excused."""
    x = relax.Var("x", relax.TensorStructInfo([3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(R.multiply(x, relax.const(2.0, "float32")))
            c = bb.emit_output(R.astype(y, "int32"))
            z = bb.emit_output(R.negative(x))
        bb.emit_func_output(relax.Tuple([c, z]))
    mod = bb.get()
    near = relax_near_boundary(mod, [np.array([6.49999, 0.25, 1.0], "float32")], 2e-4, [0])
    assert near and "astype" in near
    assert relax_near_boundary(mod, [np.array([6.25, 0.25, 1.25], "float32")], 2e-4, [0]) \
        is None
    assert relax_near_boundary(mod, [np.array([6.49999, 0.25, 1.0], "float32")], 2e-4, [1]) \
        is None


def test_relax_vm_raises_on_an_axis_empty_at_run_time():
    """argmax / argmin over a symbolic axis: legalization routes the argument through
    vm.builtin.check_nonempty, so at n = 0 the VM raises (as numpy and the reference) instead
    of returning -1; max gives its identity, -inf (ONNX's ReduceMax, TVM's kernel), and the
    reference agrees; other sizes are unchanged."""
    import pytest

    n = tvm.tir.Var("n", "int64")
    for name in ("max", "argmin"):
        x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
        op, axis = getattr(R, name), 0 if name.startswith("arg") else [0]
        mod = _main([x], lambda x, op=op, axis=axis: op(R.exp(x), axis=axis))
        vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
        xv = np.array([[0.0, 2.0, -1.0], [1.0, 0.0, -2.0]], "float32")
        want = np.exp(xv).max(0) if name == "max" else np.exp(xv).argmin(0)
        np.testing.assert_allclose(vm["main"](xv).numpy(), want, rtol=1e-6)
        if name == "max":
            assert vm["main"](np.zeros((0, 3), "float32")).numpy().tolist() == [-np.inf] * 3
        else:
            with pytest.raises(ValueError, match=rf"{name}: cannot reduce over axis 0"):
                vm["main"](np.zeros((0, 3), "float32"))
        np.testing.assert_allclose(vm["main"](xv).numpy(), want, rtol=1e-6)


def test_reference_skips_dead_bindings():
    """Seed 70038: an argmax of an empty (n, 3) that no result reads is dropped by the build,
    so the reference does not evaluate it either (it raised EmptyReduction for the program)."""
    from minitvm.testing.fuzz.relax_reference import evaluate

    n = tvm.tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            bb.emit(R.argmax(x, axis=0))
            y = bb.emit_output(R.negative(x))
        bb.emit_func_output(y)
    assert evaluate(bb.get(), [np.zeros((0, 3), "float32")]).shape == (0, 3)

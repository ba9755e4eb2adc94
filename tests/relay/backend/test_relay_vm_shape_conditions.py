"""A symbolic kernel checks, at each new shape, what its shape rules assumed of the sizes
(``topi.shape_conditions``): a split into equal sections, a reshape's ``-1`` or a fixed target
at a size that does not fit raises the shape's type error, where the kernel ran before and read
or wrote the wrong number of elements. The conditions travel with the kernel's record into an
exported executable."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm import saved, symbolic
from minitvm.runtime.module import load_module
from minitvm.runtime.vm import Executable, VirtualMachine

_X = relay.var("x", shape=(relay.Any(), 3), dtype="float32")


def _vm(body):
    mod = tvm.IRModule.from_expr(relay.Function([_X], body))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    return exe, VirtualMachine(exe, tvm.cpu())


def _run(vm, rows: int) -> list:
    out = vm.run(np.arange(rows * 3, dtype="float32").reshape(rows, 3))
    return [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]


def _kernels(exe) -> list:
    return [k.run for k in exe.kernels if isinstance(k.run, symbolic.SymbolicKernel)]


def test_split_into_equal_sections_checks_the_size():
    _, vm = _vm(relay.split(_X, 2, axis=0).astuple())
    a = np.arange(12, dtype="float32").reshape(4, 3)
    for got, want in zip(_run(vm, 4), np.split(a, 2), strict=True):
        np.testing.assert_array_equal(got, want)
    for rows in (3, 1):  # (the kernel gave 1 + 1 and 0 + 0 rows)
        with pytest.raises(ValueError, match=f"size {rows}.*cannot be split into 2 equal"):
            _run(vm, rows)
    assert [o.shape for o in _run(vm, 0)] == [(0, 3), (0, 3)]


def test_reshape_minus_one_checks_the_division():
    exe, vm = _vm(relay.reshape(_X * relay.const(2.0), (-1, 2)))
    np.testing.assert_array_equal(_run(vm, 4)[0], (np.arange(12) * 2.0).reshape(6, 2))
    with pytest.raises(ValueError, match=r"cannot reshape \(3, 3\) into \[-1, 2\]"):
        _run(vm, 3)  # (the kernel wrote 8 of the 9 elements)
    assert any(kind == "divisible" for k in _kernels(exe) for kind, _, _ in k.conditions)


def test_a_condition_inside_the_kernel_is_checked_too():
    """The reshape's division no longer shows in the output shape (a sum follows)."""
    _, vm = _vm(relay.sum(relay.reshape(_X + relay.const(1.0), (-1, 2)), axis=0))
    np.testing.assert_allclose(_run(vm, 6)[0], (np.arange(18.0) + 1).reshape(9, 2).sum(0))
    with pytest.raises(ValueError, match="not divisible by 2"):
        _run(vm, 3)


def test_fixed_target_checks_the_element_count():
    _, vm = _vm(relay.reshape(_X, (6, 2)))
    np.testing.assert_array_equal(_run(vm, 4)[0], np.arange(12.0).reshape(6, 2))
    for rows in (3, 6):  # (the kernel read past the 9 elements, or dropped 6 of 18)
        with pytest.raises((ValueError, RuntimeError), match="cannot reshape"):
            _run(vm, rows)


def test_exported_kernel_keeps_its_conditions(tmp_path):
    exe, _ = _vm(relay.reshape(_X * relay.const(3.0), (-1, 2)))
    code, lib = exe.save()
    lib.export_library(str(tmp_path / "kernels.so"))
    loaded = Executable.load_exec(code, load_module(str(tmp_path / "kernels.so")))
    assert any(k.conditions for k in _kernels(loaded))
    vm = VirtualMachine(loaded, tvm.cpu())
    np.testing.assert_array_equal(_run(vm, 2)[0], (np.arange(6) * 3.0).reshape(3, 2))
    with pytest.raises(ValueError, match="not divisible by 2"):
        _run(vm, 1)


def test_record_round_trip_and_a_bad_condition_kind():
    exe, _ = _vm(relay.reshape(_X * relay.const(3.0), (-1, 2)))
    run = _kernels(exe)[0]
    record = saved.kernel_record(run.kernel, run.variables, run.in_shapes, run.out_shapes,
                                 run._kvars, run.conditions)
    conditions = saved.restore(record)[5]
    assert [(k, str(a), str(b)) for k, a, b in conditions] == \
        [(k, str(a), str(b)) for k, a, b in run.conditions]
    record["conds"] = [["sometimes", 1, ["var", 0]]]
    with pytest.raises(ValueError, match="unknown shape condition 'sometimes'"):
        saved.restore(record)


def _vm2(x, y, body):
    mod = tvm.IRModule.from_expr(relay.Function([x, y], body))
    with tvm.transform.PassContext(opt_level=3):
        return VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


def test_reduction_dims_of_a_product_are_checked():
    """Dense of two all-dynamic operands: the kernel took the reduction dims equal (and read a
    (2, 2) weight as (2, 3) before)."""
    x = relay.var("x", shape=(relay.Any(), relay.Any()), dtype="float32")
    w = relay.var("w", shape=(relay.Any(), relay.Any()), dtype="float32")
    vm = _vm2(x, w, relay.nn.dense(x, w))
    a, b = np.ones((4, 3), "float32"), np.full((5, 3), 2.0, "float32")
    np.testing.assert_array_equal(vm.run(a, b).numpy(), a @ b.T)
    with pytest.raises(ValueError, match=r"reduction dim of the data \(4, 3\) \(3\) does not "
                                         r"match the weight \(2, 2\)"):
        vm.run(a, np.ones((2, 2), "float32"))


def test_conv_channels_and_window_are_checked():
    x = relay.var("x", shape=[relay.Any()] * 4, dtype="float32")
    w = relay.var("w", shape=[relay.Any()] * 4, dtype="float32")
    vm = _vm2(x, w, relay.nn.conv2d(x, w))
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((1, 3, 5, 5)).astype("float32")
    assert vm.run(xv, rng.standard_normal((4, 3, 3, 3)).astype("float32")).shape == (1, 4, 3, 3)
    with pytest.raises(ValueError, match="input channels 3 .* do not match weight in-channels 2"):
        vm.run(xv, np.ones((4, 2, 3, 3), "float32"))
    with pytest.raises(ValueError, match="output height is 0, which is not positive"):
        vm.run(xv, np.ones((1, 3, 6, 6), "float32"))  # (an empty result before)


def _any_var(name, rank, dtype="float32"):
    return relay.var(name, shape=[relay.Any()] * rank, dtype=dtype)


def test_squeeze_checks_the_dim_is_one():
    """The kernel dropped a symbolic dim of any size (a (4, 3) input gave 4 values)."""
    x = _any_var("x", 2)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.squeeze(x, axis=[1])))
    with tvm.transform.PassContext(opt_level=3):
        vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    np.testing.assert_array_equal(vm.run(np.arange(4.0, dtype="float32")[:, None]).numpy(),
                                  np.arange(4.0))
    with pytest.raises(ValueError, match="cannot squeeze axis 1 of shape \\(4, 3\\)"):
        vm.run(np.ones((4, 3), "float32"))


def test_slice_like_checks_the_slice_fits():
    """A like-shape longer than the data was typed as the output (the kernel read past it);
    the static rule now refuses it too."""
    x, y = _any_var("x", 2), _any_var("y", 2)
    vm = _vm2(x, y, relay.slice_like(x, y))
    a = np.arange(12.0, dtype="float32").reshape(4, 3)
    np.testing.assert_array_equal(vm.run(a, np.ones((2, 2), "float32")).numpy(), a[:2, :2])
    with pytest.raises(ValueError, match="slice_like: axis 1 .* is longer than the data"):
        vm.run(a, np.ones((3, 4), "float32"))


def test_gather_checks_the_index_extent():
    """Indices with more rows than the data read past it (rows of indices beyond the axis
    compare with the data's; fewer read its first rows, as the reference now does too)."""
    x, i = _any_var("x", 2), _any_var("i", 2, "int32")
    vm = _vm2(x, i, relay.gather(x, 1, i))
    a = np.arange(12.0, dtype="float32").reshape(4, 3)
    idx = np.array([[2, 0], [1, 1]], "int32")
    np.testing.assert_array_equal(vm.run(a, idx).numpy(), np.take_along_axis(a[:2], idx, 1))
    with pytest.raises(ValueError, match="gather: dim 0 of the indices .* exceeds the data"):
        vm.run(a, np.zeros((5, 2), "int32"))


def test_sequence_lengths_match_the_batch():
    x, n = _any_var("x", 2), _any_var("n", 1, "int32")
    mask = _vm2(x, n, relay.sequence_mask(x, n))  # (time, batch): one length per column
    a = np.ones((4, 3), "float32")
    got = mask.run(a, np.array([1, 4, 0], "int32")).numpy()
    np.testing.assert_array_equal(got, (np.arange(4)[:, None] < [1, 4, 0]).astype("float32"))
    with pytest.raises(ValueError, match="valid_length .* one length per batch entry"):
        mask.run(a, np.array([1], "int32"))  # (the kernel read lengths[1], lengths[2])
    rev = _vm2(x, n, relay.reverse_sequence(x, n, seq_axis=1, batch_axis=0))
    b = np.arange(12.0, dtype="float32").reshape(4, 3)
    np.testing.assert_array_equal(rev.run(b, np.array([3, 1, 2, 0], "int32")).numpy(),
                                  [[2, 1, 0], [3, 4, 5], [7, 6, 8], [9, 10, 11]])
    with pytest.raises(ValueError, match="seq_lengths .* one length per batch entry"):
        rev.run(b, np.array([3], "int32"))


def test_matrix_set_diag_checks_the_diagonal_length():
    x, d = _any_var("x", 2), _any_var("d", 1)
    vm = _vm2(x, d, relay.matrix_set_diag(x, d))
    a = np.zeros((4, 3), "float32")
    want = a.copy()
    want[range(3), range(3)] = [1, 2, 3]
    np.testing.assert_array_equal(vm.run(a, np.array([1, 2, 3], "float32")).numpy(), want)
    with pytest.raises(ValueError, match="matrix_set_diag: the diagonals .* do not fit"):
        vm.run(a, np.ones(1, "float32"))  # (the kernel read 3 values of 1)


def test_bias_add_of_symbolic_channels_checks_the_bias_length():
    """CanonicalizeOps keeps a bias_add whose channel count is symbolic (a broadcast add took a
    bias of length 1 for any channel count); its rule states the length."""
    x, b = _any_var("x", 2), _any_var("b", 1)
    vm = _vm2(x, b, relay.nn.bias_add(x, b))
    a = np.ones((4, 3), "float32")
    np.testing.assert_array_equal(vm.run(a, np.arange(3.0, dtype="float32")).numpy(),
                                  a + np.arange(3.0))
    with pytest.raises(ValueError, match="bias_add"):
        vm.run(a, np.ones(1, "float32"))


def test_dense_units_attribute_is_checked():
    x, w = relay.var("x", shape=(relay.Any(), 3)), _any_var("w", 2)
    vm = _vm2(x, w, relay.nn.dense(x, w, units=4))
    a, b = np.ones((2, 3), "float32"), np.ones((4, 3), "float32")
    np.testing.assert_array_equal(vm.run(a, b).numpy(), a @ b.T)
    with pytest.raises(ValueError, match="units=4 does not match the weight's 5"):
        vm.run(a, np.ones((5, 3), "float32"))  # (a (2, 5) result before)


def test_take_batch_dims_must_match():
    """Indices of 2 rows for data of 4 (batch_dims=1) left two output rows unwritten; the rule
    now refuses them (take with batch_dims has no native kernel yet: the interpreter shows it)."""
    x, i = _any_var("x", 2), _any_var("i", 2, "int32")
    mod = tvm.IRModule.from_expr(relay.Function([x, i], relay.take(x, i, axis=1, batch_dims=1)))
    run = relay.create_executor("debug", mod=mod).evaluate()
    a = np.arange(12.0, dtype="float32").reshape(4, 3)
    idx = np.array([[0, 2], [1, 1], [2, 0], [0, 0]], "int32")
    np.testing.assert_array_equal(run(a, idx).numpy(), np.take_along_axis(a, idx, 1))
    with pytest.raises(Exception, match="take: the batch dims of the indices"):
        run(a, idx[:2])


def test_layout_transform_split_checks_the_factor():
    """NCHW -> NCHW4c of 6 channels gave one block and dropped two channels."""
    x = _any_var("x", 4)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.layout_transform(x, "NCHW", "NCHW4c")))
    with tvm.transform.PassContext(opt_level=3):
        vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    a = np.arange(16.0, dtype="float32").reshape(1, 8, 1, 2)
    np.testing.assert_array_equal(vm.run(a).numpy(),
                                  a.reshape(1, 2, 4, 1, 2).transpose(0, 1, 3, 4, 2))
    with pytest.raises(ValueError, match="dimension 6 is not divisible by the factor 4"):
        vm.run(np.ones((2, 6, 2, 2), "float32"))


def test_grid_sample_batch_must_match():
    x, g = _any_var("x", 4), _any_var("g", 4)
    vm = _vm2(x, g, relay.image.grid_sample(x, g))
    grid = np.zeros((2, 2, 3, 3), "float32")
    assert vm.run(np.ones((2, 3, 4, 4), "float32"), grid).shape == (2, 3, 3, 3)
    with pytest.raises(ValueError, match="grid .* and the data .* differ in batch"):
        vm.run(np.ones((2, 3, 4, 4), "float32"), grid[:1])  # (read past the grid before)


def test_losses_of_dynamic_operands_compile_and_check_their_shapes():
    """cross_entropy / nll_loss of two operands with their own Anys were refused at build (the
    rule compared the Anys); they now state the equality, and the interpreter re-types a call
    with a static result (a loss) of dynamic operands too (it broadcast (4, 3) with (1, 3))."""
    x, y = _any_var("x", 2), _any_var("y", 2)
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.nn.cross_entropy(x, y)))
    with tvm.transform.PassContext(opt_level=3):
        vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    run = relay.create_executor("debug", mod=mod).evaluate()
    p = np.full((4, 3), 0.5, "float32")
    t = np.eye(4, 3, dtype="float32")
    want = -np.sum(t * np.log(p)) / 4
    np.testing.assert_allclose(vm.run(p, t).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(run(p, t).numpy(), want, rtol=1e-5)
    for bad in (t[:1], t[:, :1]):
        with pytest.raises(Exception, match="predictions and targets must have one shape"):
            run(p, bad)
        with pytest.raises((ValueError, RuntimeError),
                           match="predictions and targets must have one shape"):
            vm.run(p, bad)


def test_scatter_elements_checks_the_index_extent():
    """Indices of 5 rows scattered along axis 1 of 4-row data wrote a row past its end."""
    x, i, u = _any_var("x", 2), _any_var("i", 2, "int32"), _any_var("u", 2)
    vm = VirtualMachine(_exe3(x, i, u, relay.scatter_elements(x, i, u, axis=1,
                                                              reduction="add")), tvm.cpu())
    a = np.zeros((4, 3), "float32")
    idx = np.array([[0, 2], [1, 1]], "int32")
    want = a.copy()
    np.add.at(want, (np.array([[0, 0], [1, 1]]), idx), 1.0)
    np.testing.assert_array_equal(vm.run(a, idx, np.ones((2, 2), "float32")).numpy(), want)
    with pytest.raises(ValueError, match="scatter_elements: dim 0 of the indices .* exceeds"):
        vm.run(a, np.zeros((5, 2), "int32"), np.ones((5, 2), "float32"))


def _exe3(a, b, c, body):
    mod = tvm.IRModule.from_expr(relay.Function([a, b, c], body))
    with tvm.transform.PassContext(opt_level=3):
        return relay.vm.compile(mod, target="llvm")

"""The ``dyn.*`` ops the ONNX importer builds for sizes computed at run time (``dyn.one_hot``,
``dyn.nn.pad``, ``dyn.full``, ``dyn.image.resize2d``), their size arguments computed from
``shape_of`` of an input with a ``relay.Any()`` batch: typed with ``Any`` output sizes, compiled
once for the Relay VM (strict-native) and run at several batches against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.op import dyn
from minitvm.runtime.vm import VirtualMachine


def _vm(params, body):
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    with tvm.transform.PassContext(opt_level=3, config={"relay.backend.strict_native": True}):
        exe = relay.vm.compile(mod, target="llvm")
    return VirtualMachine(exe, tvm.cpu()), relay.transform.InferType()(mod)


def _batch(x):
    """x's run-time batch, an int64 scalar."""
    return relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"))


def _x(b, *rest):
    return np.random.default_rng(b).standard_normal((b, *rest)).astype("float32")


def test_one_hot_of_a_run_time_depth():
    x = relay.var("x", shape=(relay.Any(), 2))
    ids = relay.var("ids", shape=(3,), dtype="int64")
    vm, mod = _vm([x, ids], dyn.one_hot(ids, relay.const(4.0), relay.const(-1.0), _batch(x),
                                        axis=0, dtype="float32"))
    assert isinstance(mod["main"].checked_type.ret_type.shape[0], relay.Any)
    idx = np.array([0, 2, 5], "int64")
    for b in (1, 3, 6):
        want = np.where(np.arange(b)[:, None] == idx[None, :], 4.0, -1.0).astype("float32")
        np.testing.assert_array_equal(vm.run(_x(b, 2), idx).numpy(), want)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_by_run_time_widths(mode):
    """Rows padded by (batch - 1, 1), columns by (0, 1)."""
    x = relay.var("x", shape=(relay.Any(), 3))
    one = relay.const(1, "int64")
    rows = relay.stack([relay.subtract(_batch(x), one), one], 0)
    width = relay.stack([rows, relay.const(np.array([0, 1]), "int64")], 0)
    vm, _ = _vm([x], dyn.nn.pad(x, width, 0.5, pad_mode=mode))
    for b in (2, 4):
        xs = _x(b, 3)
        kw = {"constant_values": 0.5} if mode == "constant" else {}
        want = np.pad(xs, [(b - 1, 1), (0, 1)], mode=mode, **kw)
        np.testing.assert_array_equal(vm.run(xs).numpy(), want)


def test_full_of_a_run_time_shape():
    x = relay.var("x", shape=(relay.Any(), 2))
    b = _batch(x)
    vm, _ = _vm([x], dyn.full(relay.const(1.5), relay.stack([b, relay.add(b, b)], 0),
                              "float32"))
    for n in (1, 3):
        np.testing.assert_array_equal(vm.run(_x(n, 2)).numpy(), np.full((n, 2 * n), 1.5,
                                                                          "float32"))


def test_resize2d_to_a_run_time_size():
    """Nearest (asymmetric, floor) to (2 * H, 3): every output row i reads row i // 2."""
    x = relay.var("x", shape=(1, 2, relay.Any(), 3))
    h = relay.take(relay.shape_of(x, "int64"), relay.const(2, "int64"))
    size = relay.stack([relay.multiply(h, relay.const(2, "int64")), relay.const(3, "int64")], 0)
    vm, _ = _vm([x], dyn.image.resize2d(x, size, method="nearest_neighbor",
                                        coordinate_transformation_mode="asymmetric",
                                        rounding_method="floor"))
    for n in (1, 4):
        xs = np.random.default_rng(n).standard_normal((1, 2, n, 3)).astype("float32")
        np.testing.assert_array_equal(vm.run(xs).numpy(), np.repeat(xs, 2, axis=2))


def test_resize2d_of_a_run_time_size_binds_its_roi_and_runs_natively():
    """The roi (a float constant the VM passes in) is bound with the size: each
    specialization is a static, native image.resize2d, not the numpy reference."""
    from minitvm.relay.backend.vm.kernels import ShapeSpecializer

    x = relay.var("x", shape=(1, 1, relay.Any(), relay.Any()))
    s = relay.var("s", shape=(2,), dtype="int64")
    vm, _ = _vm([x, s], dyn.image.resize2d(x, s, roi=(0.0, 0.0, 1.0, 1.0),
                                           method="nearest_neighbor",
                                           coordinate_transformation_mode="asymmetric",
                                           rounding_method="floor"))
    xs = np.arange(6, dtype="float32").reshape(1, 1, 2, 3)
    np.testing.assert_array_equal(vm.run(xs, np.array([4, 3])).numpy(),
                                  np.repeat(xs, 2, axis=2))
    specs = [k.run for k in vm.exe.kernels if isinstance(k.run, ShapeSpecializer)]
    assert specs and all(kernel is not None and kernel.kind == "native"
                         for spec in specs for kernel, _ in spec.cache.values())

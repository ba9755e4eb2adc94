"""A model with a symbolic batch on the Relax VM: per-shape native plans (least recently used
dropped first), the interpreter's symbolic-kernel calls and builtin call sites, and profiles of
the path that actually runs."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.runtime.relax_vm import native_entry
from minitvm.runtime.relax_vm.builtins import BUILTINS, ShapeTuple, Storage, specialize
from minitvm.runtime.relax_vm.native_entry import MISS, RECORD


def _cnn_module():
    """main(x: (batch, 3, 8, 8)) = mean(relu(conv3x3(x) + b), hw) @ w + c, flattened logits."""
    rng = np.random.default_rng(0)
    w = {
        "k": rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.3,
        "b": rng.standard_normal((1, 8, 1, 1)).astype("float32"),
        "w": rng.standard_normal((8, 5)).astype("float32"),
        "c": rng.standard_normal(5).astype("float32"),
    }
    batch = tir.Var("batch", "int64")
    x = relax.Var("x", relax.TensorStructInfo([batch, 3, 8, 8], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.conv2d(x, relax.const(w["k"]), padding=(1, 1)))
            h = bb.emit(relax.op.nn.relu(relax.op.add(h, relax.const(w["b"]))))
            m = bb.emit(relax.op.mean(h, axis=[2, 3]))
            y = bb.emit(relax.op.add(relax.op.matmul(m, relax.const(w["w"])), relax.const(w["c"])))
            gv = bb.emit_output(bb.emit(relax.op.reshape(y, relax.ShapeExpr([batch * 5]))))
        bb.emit_func_output(gv)
    return bb.get(), w


def _ref(w, x):
    n = x.shape[0]
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    h = np.zeros((n, 8, 8, 8), "float64")
    for i in range(3):
        for j in range(3):
            h += np.einsum("nchw,oc->nohw", pad[:, :, i : i + 8, j : j + 8], w["k"][:, :, i, j])
    h = np.maximum(h + w["b"], 0)
    return (h.mean(axis=(2, 3)) @ w["w"] + w["c"]).reshape(-1)


@pytest.fixture(scope="module")
def cnn():
    mod, w = _cnn_module()
    return relax.build(mod, "llvm"), w


def _vm(ex, native=True):
    vm = relax.VirtualMachine(ex, tvm.cpu())
    vm.native_entry = native
    return vm


def _x(batch, seed=0):
    return np.random.default_rng(seed).standard_normal((batch, 3, 8, 8)).astype("float32")


def test_alternating_batches_match_numpy_native_and_interpreted(cnn):
    ex, w = cnn
    vm, interp = _vm(ex), _vm(ex, native=False)
    assert "main" in vm._native
    for k, batch in enumerate((1, 4, 1, 2, 4, 1)):
        x = _x(batch, k)
        got = vm["main"](x).numpy()
        np.testing.assert_allclose(got, _ref(w, x), rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got, interp["main"](x).numpy())
        fast = vm._native["main"].try_call((x,))  # a seen shape replays natively
        assert fast is not MISS and fast is not RECORD
        np.testing.assert_array_equal(fast.numpy(), got)
    assert len(vm._native["main"].plans) == 3


@pytest.mark.parametrize("native", [True, False])
def test_an_output_stays_valid_after_later_calls(cnn, native):
    ex, w = cnn
    vm = _vm(ex, native)
    xs = [_x(b, 10 + k) for k, b in enumerate((2, 2, 3, 2, 1, 2))]
    outs = [vm["main"](x) for x in xs]  # every output held while the later calls run
    for x, out in zip(xs, outs, strict=True):
        np.testing.assert_allclose(out.numpy(), _ref(w, x), rtol=1e-4, atol=1e-4)
    assert len({id(o.numpy()) for o in outs}) == len(outs)


@pytest.mark.parametrize(
    "arg, match",
    [
        (np.zeros((2, 4, 8, 8), "float32"), r"param=x.*dimension 1 must be 3, got 4"),
        (np.zeros((2, 3, 8), "float32"), r"param=x.*expected a tensor of rank 4, got rank 3"),
        (np.zeros((2, 3, 8, 8), "float64"), r"param=x.*expected dtype float32, got float64"),
        (ShapeTuple([2, 3, 8, 8]), r"param=x.*expected a tensor, got a shape"),
    ],
)
def test_a_wrong_argument_raises_after_plans_exist(cnn, arg, match):
    ex, w = cnn
    vm = _vm(ex)
    for batch in (1, 2, 1):
        vm["main"](_x(batch))
    with pytest.raises((ValueError, TypeError), match=match):
        vm["main"](arg)
    x = _x(2, 3)
    np.testing.assert_allclose(vm["main"](x).numpy(), _ref(w, x), rtol=1e-4, atol=1e-4)


def test_plans_drop_the_least_recently_used_shape(cnn, monkeypatch):
    ex, w = cnn
    monkeypatch.setattr(native_entry, "MAX_PLANS", 2)
    vm = _vm(ex)
    nf = vm._native["main"]
    for batch in (1, 2, 1, 3):  # 1 was used after 2: 2 goes when 3 arrives
        x = _x(batch)
        np.testing.assert_allclose(vm["main"](x).numpy(), _ref(w, x), rtol=1e-4, atol=1e-4)
    assert sorted(k[0][0] for k in nf.plans) == [1, 3]
    assert nf.try_call((_x(1),)) is not RECORD
    assert nf.try_call((_x(2),)) is RECORD


def test_profile_times_the_native_plan_kernel_by_kernel(cnn):
    ex, _ = cnn
    vm = _vm(ex)
    x = _x(3)
    report = vm.profile("main", x)  # a new shape: recorded first, then profiled natively
    assert report.native and report.total > 0
    kernels = [name for name in report.rows if not name.startswith("vm.")]
    assert kernels and all(name in ex.kernels for name in kernels)
    assert not [name for name in report.rows if name.startswith("vm.builtin")]
    assert "vm.native_entry.check_args" in report.rows
    assert "native entry" in report.table()
    calls = sum(report.rows[k][0] for k in kernels)
    assert calls == len(vm._native["main"].plans[((3, 3, 8, 8),)].names)
    vm.native_entry = False
    interpreted = vm.profile("main", x)
    assert not interpreted.native
    assert interpreted.rows["vm.builtin.make_shape"][0] > 0
    assert set(kernels) <= set(interpreted.rows)


def _kernel_args(kernel, batch, rng):
    """Arguments for ``kernel`` from its spec, every symbolic dimension ``batch``."""
    return [
        rng.standard_normal([batch if d == -1 else d for d in p[3]]).astype(p[1])
        for p in kernel.spec["params"]
    ]


def test_symbolic_kernel_calls_equal_the_checked_call(cnn):
    ex, _ = cnn
    rng = np.random.default_rng(5)
    symbolic = [
        ex.native_kernel(k)
        for k in ex.kernels
        if any(-1 in p[3] for p in ex.kernels[k][1]["params"] if p[0] == "buf")
    ]
    assert symbolic
    for kernel in symbolic:
        assert kernel._sym is not None  # all-buffer kernels get the generated fast path
        args = _kernel_args(kernel, 3, rng)
        out = kernel.spec["written"][-1]
        kernel(*args)
        fast = args[out].copy()
        args[out][...] = 0
        kernel._call_checked(args)
        np.testing.assert_array_equal(fast, args[out])
        nd = [tvm.nd.array(a) for a in args]  # NDArrays take the checked path
        kernel(*nd)
        np.testing.assert_array_equal(nd[out].numpy(), fast)


def test_symbolic_kernel_errors_name_the_argument(cnn):
    ex, _ = cnn
    name = next(k for k in ex.kernels if k.startswith("fused_matmul"))
    kernel = ex.native_kernel(name)
    args = _kernel_args(kernel, 3, np.random.default_rng(6))
    out = kernel.spec["written"][-1]
    bad = list(args)
    bad[out] = np.empty((4, *args[out].shape[1:]), args[out].dtype)
    with pytest.raises(ValueError, match=rf"argument {out} dimension 0 must be .* = 3 .*got 4"):
        kernel(*bad)
    bad = list(args)
    bad[0] = args[0].astype("float64")
    with pytest.raises(ValueError, match=r"argument 0 must be a 2-d float32 tensor"):
        kernel(*bad)
    bad[0] = np.asfortranarray(np.random.rand(3, 8).astype("float32"))
    with pytest.raises(ValueError, match=r"argument 0 must be C-contiguous"):
        kernel(*bad)


@pytest.mark.parametrize("codes", [(0, 7, 0, 3), (1, 0, 0, 16, 1, 2), (1, 1), (0, 5)])
def test_make_shape_call_sites_equal_the_builtin(codes):
    heap = np.array([4, 9, 11], np.int64)
    ndim = len(codes) // 2
    site = specialize("vm.builtin.make_shape", [None, ndim, *codes], [(0, 2)])
    assert site.builtin is BUILTINS["vm.builtin.make_shape"][0]
    got, want = site(heap), BUILTINS["vm.builtin.make_shape"][0](heap, ndim, *codes)
    assert type(got) is ShapeTuple and got == want
    assert all(type(d) is int for d in got)


def test_alloc_tensor_call_sites_equal_the_builtin():
    buf = np.zeros(256, np.uint8)
    storage = Storage(buf, 256)
    site = specialize(
        "vm.builtin.alloc_tensor_from_storage", [None, 64, None, "float32"], [(0, 3), (2, 4)]
    )
    got = site(storage, ShapeTuple([2, 4]))
    want = BUILTINS["vm.builtin.alloc_tensor_from_storage"][0](storage, 64, (2, 4), "float32")
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.ctypes.data == want.ctypes.data == buf.ctypes.data + 64
    # a register where a fixed argument is expected: the generic builtin stays
    assert (
        specialize(
            "vm.builtin.alloc_tensor_from_storage",
            [None, None, None, "float32"],
            [(0, 3), (1, 5), (2, 4)],
        )
        is None
    )
    assert specialize("vm.builtin.make_shape", [None, None, 1, 0], [(0, 2), (1, 3)]) is None

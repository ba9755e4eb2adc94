"""The ONNX importer's view of a dynamic (relay.Any()) dimension: ``DynamicDim`` (equal only to a
dim of the same size identity) and the reshapes it allows (no ``onnx`` package needed)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.frontend.common import Folder, ImportError_
from minitvm.relay.frontend.onnx.dynamic_dim import DynamicDim, has_dynamic, relay_dims
from minitvm.relay.frontend.onnx.dynamic_reshape import merge_leading, reshape_to
from minitvm.relay.frontend.onnx.ops_tensor import dynamic_reshape_target
from minitvm.relay.frontend.onnx.registry import Context
from minitvm.runtime import vm as runtime_vm


def test_dynamic_dims_are_equal_only_when_they_share_a_size():
    batch, seq = relay.Any(), relay.Any()
    d = DynamicDim(0, batch, name="batch")
    shape = (d, 3, 4)
    assert has_dynamic(shape) and not has_dynamic(shape[1:])
    assert 0 not in shape and shape[0] != 1 and shape == (DynamicDim(0, batch), 3, 4)
    assert d != DynamicDim(0, seq) and d != DynamicDim(0) and hash(d) == hash(DynamicDim(2, batch))
    assert repr(shape) == "(batch, 3, 4)" and relay_dims(shape)[0] is batch
    for bad in (lambda: int(d), lambda: d * 2, lambda: np.prod(shape), lambda: d < 3):
        with pytest.raises(ImportError_, match=r"static size of axis 0 \(batch\).*relay.Any"):
            bad()


def test_dynamic_reshape_target_copies_or_infers_the_dynamic_axis():
    shape = (DynamicDim(0), 2, 6)
    assert dynamic_reshape_target(shape, [0, 12]) == [0, 12]
    assert dynamic_reshape_target(shape, [-1, 4, 3]) == [-1, 4, 3]
    with pytest.raises(ValueError, match=r"dynamic axes \[0\] are neither copied"):
        dynamic_reshape_target(shape, [3, 4, 2])


def _ctx():
    return Context(17, Folder())


def test_reshape_to_keeps_each_size_it_can():
    """(batch*seq, 16) -> (batch, seq, 16) reads both sizes from ``x`` (reshape_like); one
    unknown size is inferred (-1); sizes of two unrelated tensors go through dyn.reshape."""
    ctx = _ctx()
    b, s = relay.Any(), relay.Any()
    x = relay.var("x", shape=(b, s, 16))
    rows = relay.var("rows", shape=(relay.Any(), 16))
    back = reshape_to(ctx.shape, rows, ctx.shape(rows), ctx.shape(x))
    assert back.op.name == "reshape_like"
    out = ctx.shape(back)
    assert out == ctx.shape(x) and out[0].symbol is b and out[1].symbol is s

    split = reshape_to(ctx.shape, x, ctx.shape(x), ctx.shape(x)[:2] + (2, 8))
    assert split.op.name == "reshape" and list(split.attrs.newshape) == [0, 0, 2, 8]
    assert ctx.shape(split)[:2] == ctx.shape(x)[:2]

    one = reshape_to(ctx.shape, rows, ctx.shape(rows), (ctx.shape(x)[0], 4, 4))
    assert list(one.attrs.newshape) == [-1, 4, 4]

    y = relay.var("y", shape=(relay.Any(), 3))
    mixed = reshape_to(ctx.shape, rows, ctx.shape(rows), (ctx.shape(x)[0], ctx.shape(y)[0], 16))
    assert mixed.op.name == "dyn.reshape"

    with pytest.raises(ImportError_, match=r"axes \[0\] of the input are neither copied"):
        reshape_to(ctx.shape, rows, ctx.shape(rows), (4, 4, 4))


def test_reshapes_of_two_dynamic_sizes_run_at_two_sizes():
    ctx = _ctx()
    x = relay.var("x", shape=(relay.Any(), relay.Any(), 16))
    merged = merge_leading(x, 2)  # (batch*seq, 16)
    assert str(ctx.shape(merged)) == "(?, 16)"
    split = reshape_to(ctx.shape, x, ctx.shape(x), ctx.shape(x)[:2] + (2, 8))
    back = reshape_to(ctx.shape, merged, ctx.shape(merged), ctx.shape(x))
    y = relay.var("y", shape=(relay.Any(), 16))
    other = reshape_to(ctx.shape, y, ctx.shape(y), ctx.shape(x))  # (read at run time)
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.Tuple([split, back, other])))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(0)
    for n, t in ((2, 3), (1, 5)):
        xv = rng.standard_normal((n, t, 16)).astype("float32")
        out = vm.run(xv, xv.reshape(n * t, 16))
        np.testing.assert_array_equal(out[0].numpy(), xv.reshape(n, t, 2, 8))
        np.testing.assert_array_equal(out[1].numpy(), xv)
        np.testing.assert_array_equal(out[2].numpy(), xv)


def _batch_times(x, k: int):
    """``[shape(x)[0] * k]`` as a PyTorch export computes it (Shape, Gather, Mul, Unsqueeze)."""
    n = relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"), axis=0)
    return relay.reshape(relay.multiply(n, relay.const(k, "int64")), [1])


def test_a_size_computed_as_the_batch_times_a_constant_keeps_the_other_sizes_static():
    """ONNX Reshape of (batch, 2, 4, 5) to Concat([batch * 2], [4], [-1]) (Conv-TasNet's
    decoder input): the computed size is noted as ``batch * 2``, so the -1 is the static 5 and
    the reshape a static one (it was a ``dyn.reshape`` whose type knew no sizes, leaving the
    transposed conv after it unlegalized); run at two batch sizes."""
    from minitvm.relay.frontend.onnx.registry import CONVERTERS
    from minitvm.relay.frontend.onnx.shape_values import evaluate

    ctx = _ctx()
    x = relay.var("x", shape=(relay.Any(), 2, 4, 5))
    target = relay.concatenate([_batch_times(x, 2), relay.const(np.array([4], "int64")),
                                relay.const(np.array([-1], "int64"))], axis=0)
    size = evaluate(target)[0]
    assert size.tensor is None and size.factors[1] == 2 and len(size.factors[0]) == 1
    y = CONVERTERS["Reshape"](ctx, [x, target], {})
    assert y.op.name == "reshape" and list(y.attrs.newshape) == [-1, 4, 5]
    assert str(ctx.shape(y)[1:]) == "(4, 5)"
    vm = runtime_vm.VirtualMachine(relay.vm.compile(
        tvm.IRModule.from_expr(relay.Function([x], y)), "llvm"), tvm.cpu())
    for n in (1, 3):
        xv = np.arange(n * 40, dtype="float32").reshape(n, 2, 4, 5)
        np.testing.assert_array_equal(vm.run(xv).numpy(), xv.reshape(n * 2, 4, 5))


def test_a_size_of_other_arithmetic_still_reshapes_at_run_time():
    """A computed size with no known product (the batch minus one) has no factors: the
    reshape stays a ``dyn.reshape`` by the run-time shape, as before."""
    from minitvm.relay.frontend.onnx.registry import CONVERTERS
    from minitvm.relay.frontend.onnx.shape_values import evaluate

    x = relay.var("x", shape=(relay.Any(), 2, 4, 5))
    n = relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"), axis=0)
    less = relay.reshape(relay.subtract(n, relay.const(1, "int64")), [1])
    target = relay.concatenate([less, relay.const(np.array([4], "int64")),
                                relay.const(np.array([-1], "int64"))], axis=0)
    assert evaluate(target)[0].factors is None
    assert CONVERTERS["Reshape"](_ctx(), [x, target], {}).op.name == "dyn.reshape"


def test_gather_counts_negative_indices_from_a_dynamic_axis_end_at_run_time():
    """ONNX Gather / GatherElements along a dynamic (batch) axis: negative indices, constant
    or computed, are counted from the run-time size (``shape_of``); they needed its static size
    (an ImportError_ for DGCNN's and ColBERT's exports); constant non-negative ones stay."""
    from minitvm.relay.frontend.onnx.registry import CONVERTERS

    ctx = _ctx()
    x = relay.var("x", shape=(relay.Any(), 3))
    i = relay.var("i", shape=(2,), dtype="int64")
    e = relay.var("e", shape=(2, 3), dtype="int64")
    last = CONVERTERS["Gather"](ctx, [x, relay.const(np.array([-1, 0], "int64"))], {})
    first = CONVERTERS["Gather"](ctx, [x, relay.const(np.array([0, 1], "int64"))], {})
    assert first.args[1].__class__.__name__ == "Constant"  # (no run-time size needed)
    picked = CONVERTERS["Gather"](ctx, [x, i], {"axis": 0})
    elems = CONVERTERS["GatherElements"](ctx, [x, e], {"axis": 0})
    mod = tvm.IRModule.from_expr(relay.Function([x, i, e], relay.Tuple([last, picked, elems])))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu())
    for n in (2, 5):
        xv = np.arange(n * 3, dtype="float32").reshape(n, 3)
        iv = np.array([-2, 1], "int64")
        ev = np.array([[-1, 0, -2], [1, -1, 0]], "int64")
        out = vm.run(xv, iv, ev)
        np.testing.assert_array_equal(out[0].numpy(), xv[[-1, 0]])
        np.testing.assert_array_equal(out[1].numpy(), xv[iv])
        np.testing.assert_array_equal(out[2].numpy(), np.take_along_axis(xv, ev % n, 0))


def test_eye_like_of_a_dynamic_batch_is_computed_at_run_time():
    """ONNX EyeLike of SigLIP's (batch, batch) logits: the identity of the run-time size
    (each element's row and column counted by a cumsum), for k = 0 and 1; it needed the
    static size (an ImportError_)."""
    from minitvm.relay.frontend.onnx.registry import CONVERTERS

    ctx = _ctx()
    b = relay.Any()
    x = relay.var("x", shape=(b, b))
    outs = [CONVERTERS["EyeLike"](ctx, [x], {"k": k}) for k in (0, 1)]
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Tuple(outs)))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, "llvm"), tvm.cpu())
    for n in (1, 3):
        got = vm.run(np.zeros((n, n), "float32"))
        np.testing.assert_array_equal(got[0].numpy(), np.eye(n, dtype="float32"))
        np.testing.assert_array_equal(got[1].numpy(), np.eye(n, k=1, dtype="float32"))


def test_col2im_of_a_dynamic_batch_folds_at_each_batch_size():
    """ONNX Col2Im (FuseFormer's soft composition) of a (batch, C*2*2, 4) input into 3x3
    images, overlapping 2x2 blocks at stride 1: the reshapes copy the batch (it needed its
    static size: an ImportError_); each batch matches a numpy fold."""
    from minitvm.relay.frontend.onnx.registry import CONVERTERS

    ctx = _ctx()
    x = relay.var("x", shape=(relay.Any(), 8, 4))
    y = CONVERTERS["Col2Im"](ctx, [x, relay.const(np.array([3, 3], "int64")),
                                   relay.const(np.array([2, 2], "int64"))], {})
    assert str(ctx.shape(y)[1:]) == "(2, 3, 3)"
    vm = runtime_vm.VirtualMachine(relay.vm.compile(
        tvm.IRModule.from_expr(relay.Function([x], y)), "llvm"), tvm.cpu())
    for n in (1, 3):
        xv = np.random.default_rng(n).standard_normal((n, 8, 4)).astype("float32")
        cols = xv.reshape(n, 2, 2, 2, 2, 2)  # (n, c, di, dj, i, j)
        want = np.zeros((n, 2, 3, 3), "float32")
        for di in range(2):
            for dj in range(2):
                want[:, :, di:di + 2, dj:dj + 2] += cols[:, :, di, dj]
        np.testing.assert_allclose(vm.run(xv).numpy(), want, rtol=1e-6, atol=1e-6)

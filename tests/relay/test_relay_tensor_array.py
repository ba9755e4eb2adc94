"""Tensor arrays of the Prelude (TVM's TensorArrayOps / StaticTensorArrayOps), run on the
interpreter and the Relay VM and checked against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude, StaticTensorArrayOps, get_tensor_array_shape

EXECUTORS = ("debug", "vm")
_NIL_TAG = 1  # the tag of List's Nil (std prelude: Cons is 0); tensor_nil is tag 0 of its ADT


def _flatten(value) -> list:
    """The tensors a tensor-array result holds, in list order (``tensor_nil`` gives 0)."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if hasattr(v, "numpy"):
            out.append(v.numpy())
        elif isinstance(v, np.ndarray):
            out.append(v)
        else:
            fields = list(getattr(v, "fields", []))
            ctor = getattr(v, "constructor", None)
            if ctor is not None:
                if ctor.name_hint.startswith("tensor_nil"):
                    out.append(0)
            elif not fields and v.tag != _NIL_TAG:  # a VM ADT: only List's Nil has tag 1
                out.append(0)
            stack.extend(reversed(fields))
    return out


def _check(mod, expected, *args):
    for kind in EXECUTORS:
        got = _flatten(relay.create_executor(kind, mod=mod, target="llvm").evaluate()(*args))
        assert len(got) == len(expected), (kind, got)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6, err_msg=kind)


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).uniform(0, 10, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_write_three_then_stack(dtype):
    mod = tvm.IRModule()
    p = Prelude(mod)
    tensor_array = p.get_global_var("tensor_array", dtype)
    write = p.get_global_var("tensor_array_write", dtype)
    stack = p.get_global_var("tensor_array_stack", dtype)
    tensor1 = p.get_tensor_ctor("tensor1", dtype)
    v = relay.var("v")
    ta = tensor_array(relay.const(3))
    for i in range(3):
        ta = write(ta, relay.const(i), tensor1(v))
    mod["main"] = relay.Function([v], stack(ta), p.get_type("tensor_t", dtype)())
    t = _rand((2,), dtype)
    _check(mod, [np.stack([t, t, t])], t)


def test_names_follow_tvm():
    p = Prelude(tvm.IRModule())
    assert (p.nil.tag, p.get_tensor_ctor("tensor_nil", "int8").tag) == (_NIL_TAG, 0)
    assert p.get_type("tensor_t", "int8").name_hint == "tensor_int8_t"
    assert p.get_tensor_ctor("tensor_nil", "int8").name_hint == "tensor_nil_int8"
    assert p.get_tensor_ctor("tensor3", "int8").name_hint == "tensor3_int8"
    assert p.get_global_var("tensor_array_gather", "int8").name_hint == "tensor_array_gather_int8"
    with pytest.raises(ValueError, match="tensor_array_bogus_int8"):
        p.get_global_var("tensor_array_bogus", "int8")


def test_constructor_read_write_expand_take_concat():
    dtype = "float32"
    mod = tvm.IRModule()
    p = Prelude(mod)
    g = lambda n: p.get_global_var(n, dtype)  # noqa: E731
    tensor2 = p.get_tensor_ctor("tensor2", dtype)
    x, y = relay.var("x"), relay.var("y")
    # a fresh array holds tensor_nil values
    mod["main"] = relay.Function([], g("tensor_array")(relay.const(2)))
    _check(mod, [0, 0])
    # write then read back element 1
    ta = g("tensor_array_write")(g("tensor_array")(relay.const(3)), relay.const(1), tensor2(x))
    mod["main"] = relay.Function([x], g("tensor_array_read")(ta, relay.const(1)))
    a = _rand((2, 3), dtype, 1)
    _check(mod, [a], a)
    # take rows 1..3, expand dims, concatenate
    mod["main"] = relay.Function([x], g("tensor_take")(tensor2(x), relay.const(1),
                                                       relay.const(3)))
    b = _rand((4, 3), dtype, 2)
    _check(mod, [b[1:3]], b)
    mod["main"] = relay.Function([x], g("tensor_expand_dims")(tensor2(x)))
    _check(mod, [b[None]], b)
    mod["main"] = relay.Function([x, y], g("tensor_concatenate")(tensor2(x), tensor2(y)))
    _check(mod, [np.concatenate([b, a[:, :3]])], b, a)


def test_unstack_concat_scatter_split_gather():
    dtype = "float32"
    mod = tvm.IRModule()
    p = Prelude(mod)
    g = lambda n: p.get_global_var(n, dtype)  # noqa: E731
    tensor2 = p.get_tensor_ctor("tensor2", dtype)
    x = relay.var("x")
    a = _rand((4, 3), dtype, 3)
    mod["main"] = relay.Function([x], g("tensor_array_unstack_tensor2")(x))
    _check(mod, list(a), a)
    # unstack then concat the rows back: one tensor of shape (4*1... ) rows joined on axis 0
    mod["main"] = relay.Function([x], g("tensor_array_concat")(
        g("tensor_array_unstack_tensor3")(x)))
    c = _rand((3, 2, 2), dtype, 4)
    _check(mod, [np.concatenate(list(c))], c)
    # scatter rows 0 and 1 of values into slots 2 and 0
    idx, vals = relay.var("idx"), relay.var("vals")
    ta = g("tensor_array")(relay.const(3))
    mod["main"] = relay.Function([idx, vals], g("tensor_array_scatter")(
        ta, idx, g("tensor_array_unstack_tensor2")(vals)))
    v = _rand((2, 3), dtype, 5)
    _check(mod, [v[1], 0, v[0]], np.array([2, 0], "int32"), v)
    # split 5 rows into pieces of 2 and 3
    lengths = relay.var("lengths")
    mod["main"] = relay.Function([x, lengths], g("tensor_array_split")(
        g("tensor_array")(relay.const(2)), tensor2(x), lengths))
    s = _rand((5, 2), dtype, 6)
    _check(mod, [s[:2], s[2:]], s, np.array([2, 3], "int32"))
    # gather elements 2, 0 of the unstacked rows, stacked again
    mod["main"] = relay.Function([x, idx], g("tensor_array_gather")(
        g("tensor_array_unstack_tensor2")(x), idx))
    _check(mod, [a[[2, 0]]], a, np.array([2, 0], "int32"))


@pytest.mark.parametrize("dtype,shape", [("float32", (2,)), ("int32", (2, 3))])
def test_static_write_stack_gather_get_data(dtype, shape):
    mod = tvm.IRModule()
    p = Prelude(mod)
    StaticTensorArrayOps(p, dtype, shape).register()
    g = lambda n: p.get_global_var_static(n, dtype, shape)  # noqa: E731
    ctor = p.get_tensor_ctor_static("tensor_constructor", dtype, shape)
    assert p.get_type_static("tensor_t", dtype, shape).name_hint == (
        f"static_tensor_{dtype}_{'_'.join(map(str, shape))}_t")
    v, idx = relay.var("v", shape=shape, dtype=dtype), relay.var("idx")
    ta = g("tensor_array")(relay.const(3))
    for i in range(3):
        ta = g("tensor_array_write")(ta, relay.const(i), ctor(v * relay.const(i + 1, dtype)))
    t = _rand(shape, dtype, 7)
    mod["main"] = relay.Function([v], g("tensor_array_stack")(ta))
    _check(mod, [np.stack([t, 2 * t, 3 * t])], t)
    mod["main"] = relay.Function([v, idx], g("tensor_array_gather")(ta, idx))
    _check(mod, [np.stack([3 * t, t])], t, np.array([2, 0], "int32"))
    mod["main"] = relay.Function([v], g("tensor_get_data")(g("tensor_array_read")(
        ta, relay.const(1))))
    _check(mod, [2 * t], t)
    assert tuple(get_tensor_array_shape(ta, dtype, p)) == shape


def test_static_unstack_split_concat_scatter():
    dtype, shape = "float32", (4, 2)
    mod = tvm.IRModule()
    p = Prelude(mod)
    ops = StaticTensorArrayOps(p, dtype, shape)
    ops.register()
    g = lambda n: p.get_global_var_static(n, dtype, shape)  # noqa: E731
    x, lengths = relay.var("x"), relay.var("lengths")
    a = _rand(shape, dtype, 8)
    mod["main"] = relay.Function([x], g("tensor_array_unstack")(x))
    _check(mod, list(a), a)
    # split into pieces of 1 and 3 rows; concat joins them again
    out = StaticTensorArrayOps(p, dtype, (relay.Any(), 2))
    out.register()
    ctor = p.get_tensor_ctor_static("tensor_constructor", dtype, shape)
    pieces = g("tensor_array_split")(out.get_global_var("tensor_array")(relay.const(2)),
                                     ctor(x), lengths)
    mod["main"] = relay.Function([x, lengths], pieces)
    _check(mod, [a[:1], a[1:]], a, np.array([1, 3], "int32"))
    mod["main"] = relay.Function([x, lengths], g("tensor_array_concat")(pieces))
    _check(mod, [a], a, np.array([1, 3], "int32"))
    # scatter with a static indices shape: defined under its own name
    row = StaticTensorArrayOps(p, dtype, (2,))
    row.register()
    row.define_tensor_array_scatter((2,), True)
    scatter = p.mod.get_global_var("tensor_array_scatter_float32_2_indices_2")
    idx, vals = relay.var("idx"), relay.var("vals")
    StaticTensorArrayOps(p, dtype, (2, 2)).register()
    rows = p.get_global_var_static("tensor_array_unstack", dtype, (2, 2))
    mod["main"] = relay.Function([idx, vals], scatter(
        row.get_global_var("tensor_array")(relay.const(3)), idx, rows(vals)))
    v = _rand((2, 2), dtype, 9)
    _check(mod, [0, v[1], v[0]], np.array([2, 1], "int32"), v)


def test_dynamic_tensor_array_type_checks():
    """The registered functions have the types TVM gives them."""
    mod = tvm.IRModule()
    p = Prelude(mod)
    gv = p.get_global_var("tensor_array_stack", "float32")
    mod = relay.transform.InferType()(mod)
    tt = p.get_type("tensor_t", "float32")
    assert mod[gv].checked_type == relay.FuncType([p.l(tt())], tt())

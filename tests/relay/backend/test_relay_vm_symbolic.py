"""Relay VM kernels over symbolic sizes (``relay.backend.vm.symbolic``): a program with a
``relay.Any()`` batch, compiled once, runs at every batch size without compiling a kernel again;
what cannot be lowered so (a value-dependent shape, an op not converted) still runs through the
per-shape specialization."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.codegen.build import cache_info
from minitvm.ir.attrs import DictAttrs
from minitvm.relay.backend.vm.codegen import FunctionCompiler
from minitvm.relay.backend.vm.kernels import KernelTable, ShapeSpecializer, dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel, symbolic_function
from minitvm.runtime.vm import Executable, VirtualMachine
from minitvm.schedule import LoweringOptions
from minitvm.tir import expr as E
from minitvm.topi.transform import reshape_index


def _compiles() -> int:
    info = cache_info()
    return info["hits"] + info["misses"]


def _conv_dense_softmax(batch):
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(batch, 3, 10, 10), dtype="float32")
    w = relay.const(rng.standard_normal((8, 3, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal((8,)).astype("float32"))
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.max_pool2d(relay.nn.relu(relay.nn.bias_add(y, b)), (2, 2), (2, 2))
    wd = relay.const(rng.standard_normal((10, 8 * 5 * 5)).astype("float32"))
    p = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(y), wd))
    return tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([p, y])))


def _attention_block(batch, seq=6, dim=8):
    """Projections, scores, softmax, weighted sum, residual and layer norm, an MLP on the rows
    (a reshape to ``(-1, dim)`` and back: the program's typing gives the batch a fresh Any
    there, matched with the first one by the residual's broadcast) and the result flattened
    per example: a transformer-ish block."""
    rng = np.random.default_rng(1)

    def weight(*shape):
        return relay.const((rng.standard_normal(shape) * 0.3).astype("float32"))

    x = relay.var("x", shape=(batch, seq, dim), dtype="float32")
    q, k, v = (relay.nn.dense(x, weight(dim, dim)) for _ in range(3))
    scores = relay.nn.batch_matmul(q, k) * relay.const(dim ** -0.5)
    ctx = relay.nn.batch_matmul(relay.nn.softmax(scores), relay.transpose(v, (0, 2, 1)))
    h = relay.nn.layer_norm(x + ctx, weight(dim), weight(dim))
    rows = relay.nn.relu(relay.nn.dense(relay.reshape(h, (-1, dim)), weight(dim, dim)))
    out = relay.reshape(rows, (-1, seq, dim)) + h
    return tvm.IRModule.from_expr(relay.Function([x], relay.reshape(out, (-1, seq * dim))))


def _outputs(v):
    return [o.numpy() for o in v] if isinstance(v, tvm.runtime.container.ADT) else [v.numpy()]


@pytest.mark.parametrize("make,shape", [(_conv_dense_softmax, (3, 10, 10)),
                                        (_attention_block, (6, 8))])
def test_one_compile_serves_batches_1_3_5_with_no_new_kernel(make, shape):
    exe = relay.vm.compile(make(relay.Any()), target="llvm")
    counts = dynamic_kernel_counts(exe.kernels)
    assert counts["symbolic"] >= 2 and counts["specialized"] == 0
    vm = VirtualMachine(exe, tvm.cpu())
    compiled = _compiles()
    for batch in (1, 3, 5, 3):
        x = np.random.default_rng(batch).standard_normal((batch, *shape)).astype("float32")
        ref = relay.create_executor("debug", mod=make(batch)).evaluate()(x)
        for got, want in zip(_outputs(vm.run(x)), _outputs(ref), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert _compiles() == compiled  # no kernel compiled (nor looked up) after the build


def test_symbolic_typing_gives_each_any_its_own_variable():
    a, b = relay.Any(), relay.Any()
    x = relay.var("x", shape=(a, b, 4))
    func = relay.Function([x], relay.reshape(relay.nn.relu(x), (-1, 4)))
    func = relay.transform.InferType()(tvm.IRModule.from_expr(func))["main"]
    typed, variables, _ = symbolic_function(func)
    assert len(variables) == 2 and all(isinstance(v, E.Var) for v in variables)
    assert list(typed.params[0].checked_type.shape[:2]) == variables
    rows = typed.body.checked_type.shape[0]
    assert isinstance(rows, E.PrimExpr) and not isinstance(rows, E.IntImm)


def test_two_dynamic_axes_and_a_size_broadcast_at_one():
    """Batch and sequence both dynamic, and a second input whose batch is another Any: the
    kernel takes the two batches equal (as the add matches them), checks it at each call, and
    a call where the second one is 1 (broadcast) runs that shape's specialization."""
    x = relay.var("x", shape=(relay.Any(), relay.Any(), 4), dtype="float32")
    y = relay.var("y", shape=(relay.Any(), 1, 4), dtype="float32")
    z = relay.nn.softmax(relay.exp(x) * relay.const(0.5))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.nn.relu(z + y)))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels)["specialized"] == 0
    runs = [k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel)]
    vm = VirtualMachine(exe, tvm.cpu())
    rng = np.random.default_rng(2)
    for n, s, m in ((2, 3, 2), (1, 5, 1), (4, 2, 1)):
        assert all(r._fallback is None for r in runs)  # (until the batches differ)
        xv = rng.standard_normal((n, s, 4)).astype("float32")
        yv = rng.standard_normal((m, 1, 4)).astype("float32")
        e = np.exp(xv) * 0.5
        sm = np.exp(e - e.max(-1, keepdims=True))
        want = np.maximum(sm / sm.sum(-1, keepdims=True) + yv, 0)
        np.testing.assert_allclose(vm.run(xv, yv).numpy(), want, rtol=1e-5, atol=1e-6)
    assert any(r._fallback is not None and len(r._fallback.cache) == 1 for r in runs)


def test_value_dependent_shape_still_specializes():
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    y = relay.argwhere(relay.greater(relay.exp(x), relay.const(1.0)))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    exe = relay.vm.compile(mod, target="llvm")
    dyn = [k.run for k in exe.kernels if k.kind == "fallback"]
    assert any(isinstance(r, ShapeSpecializer) for r in dyn)
    vm = VirtualMachine(exe, tvm.cpu())
    for n in (2, 4):
        xv = np.random.default_rng(n).standard_normal((n, 3)).astype("float32")
        np.testing.assert_array_equal(vm.run(xv).numpy(), np.argwhere(np.exp(xv) > 1.0))


def test_op_not_converted_still_specializes_natively():
    # (an op with no symbolic compute: multiclass NMS over a run-time class count; resize2d,
    # grid sampling of run-time image sizes, then Darknet's reorg (sympool62) were this test's
    # op until each became one symbolic kernel)
    x = relay.var("x", shape=(1, 6, relay.Any()), dtype="float32")
    boxes = np.sort(np.random.default_rng(0).random((1, 6, 4)), axis=-1).astype("float32")
    y = relay.vision.multiclass_nms(relay.const(boxes), relay.sigmoid(x), 5, 3, 0.5, 0.1)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    spec = [k.run for k in exe.kernels if isinstance(k.run, ShapeSpecializer)]
    assert spec
    vm = VirtualMachine(exe, tvm.cpu())
    for n in (1, 3):
        xv = np.random.default_rng(n).standard_normal((1, 6, n)).astype("float32")
        mod = tvm.IRModule.from_expr(relay.Function([x], y))
        want = relay.create_executor("debug", mod=mod).evaluate()(xv).numpy()
        np.testing.assert_allclose(vm.run(xv).numpy(), want, rtol=1e-6)
    assert all(entry[0].kind == "native" for r in spec for entry in r.cache.values())


@pytest.mark.parametrize("reduction", ["add", "update"])
def test_scatter_into_a_dynamic_size_is_one_symbolic_kernel(reduction):
    """A one-pass scatter's stage is emitted by a lowering rule (its te body, compiled as
    written, copies the data and drops every update: a bincount into a data-dependent length
    came out all zeros), so its symbolic kernel is lowered through that rule, which takes
    symbolic extents: one kernel scatters at every size, none specialized."""
    d = relay.var("d", shape=(relay.Any(),), dtype="int64")
    i = relay.var("i", shape=(8,), dtype="int64")
    u = relay.var("u", shape=(8,), dtype="int64")
    f = relay.Function([d, i, u], relay.scatter_elements(d, i, u, reduction=reduction))
    exe = relay.vm.compile(tvm.IRModule.from_expr(f), target="llvm")
    runs = [k.run for k in exe.kernels]
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    iv = np.array([0, 1, 1, 3, 5, 5, 5, 2], "int64")
    uv = np.arange(1, 9, dtype="int64")
    for n in (6, 9):
        dv = np.full(n, 10, "int64")
        want = dv.copy()
        if reduction == "add":
            np.add.at(want, iv, uv)
        else:
            want[iv] = uv
        np.testing.assert_array_equal(vm.run(dv, iv, uv).numpy(), want)
        interp = relay.create_executor("debug", mod=tvm.IRModule.from_expr(f)).evaluate()
        np.testing.assert_array_equal(interp(dv, iv, uv).numpy(), want)
    assert all(r._fallback is None for r in runs if isinstance(r, SymbolicKernel))


def _scatter_all_dynamic(kind):
    """A scatter whose data, indices and updates all have dynamic extents."""
    n, k = relay.Any(), relay.Any()
    if kind == "elements":
        d = relay.var("d", shape=(n, relay.Any()), dtype="float32")
        i = relay.var("i", shape=(n, k), dtype="int64")
        u = relay.var("u", shape=(n, k), dtype="float32")
        out = relay.scatter_elements(relay.exp(d), i, u, axis=1, reduction="add")
    else:
        d = relay.var("d", shape=(relay.Any(), 4), dtype="float32")
        i = relay.var("i", shape=(1, k), dtype="int64")
        u = relay.var("u", shape=(k, 4), dtype="float32")
        out = relay.scatter_nd(relay.exp(d), i, u, mode="add")
    return tvm.IRModule.from_expr(relay.Function([d, i, u], out))


@pytest.mark.parametrize("kind", ["elements", "nd"])
def test_scatter_with_every_extent_dynamic_matches_the_interpreter(kind):
    mod = _scatter_all_dynamic(kind)
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels)["specialized"] == 0
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    rng = np.random.default_rng(3)
    for n, m, k in ((3, 5, 2), (4, 7, 6)):
        if kind == "elements":
            args = (rng.standard_normal((n, m)), rng.integers(-m, m, (n, k)),
                    rng.standard_normal((n, k)))
        else:
            args = (rng.standard_normal((m, 4)), rng.integers(-m, m, (1, k)),
                    rng.standard_normal((k, 4)))
        args = [a.astype("int64" if a.dtype.kind == "i" else "float32") for a in args]
        np.testing.assert_allclose(vm.run(*args).numpy(), interp(*args).numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("kind", ["elements", "nd"])
def test_scatter_operands_of_distinct_any_sizes_are_checked_at_each_call(kind):
    """Indices and updates typed with distinct ``relay.Any()`` sizes (as an importer makes
    them): the symbolic typing makes the updates' size the indices' (one kernel for every
    size, none specialized), so a call whose updates do not match is caught by the kernel's
    size check and rejected by the static typing, where the kernel read past the updates
    (garbage in the result, no error)."""
    if kind == "elements":
        d = relay.var("d", shape=(relay.Any(), 4), dtype="float32")
        i = relay.var("i", shape=(relay.Any(), 4), dtype="int64")
        u = relay.var("u", shape=(relay.Any(), 4), dtype="float32")
        out = relay.scatter_elements(d, i, u, axis=0, reduction="add")
    else:
        d = relay.var("d", shape=(relay.Any(), 4), dtype="float32")
        i = relay.var("i", shape=(1, relay.Any()), dtype="int64")
        u = relay.var("u", shape=(relay.Any(), 4), dtype="float32")
        out = relay.scatter_nd(d, i, u, mode="add")
    mod = tvm.IRModule.from_expr(relay.Function([d, i, u], out))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    rng = np.random.default_rng(5)
    for n, k in ((5, 6), (3, 2)):
        iv = rng.integers(0, n, (k, 4) if kind == "elements" else (1, k)).astype("int64")
        args = [np.zeros((n, 4), "float32"), iv, rng.standard_normal((k, 4)).astype("float32")]
        np.testing.assert_allclose(vm.run(*args).numpy(), interp(*args).numpy(), rtol=1e-6)
    args[2] = np.ones((k + 3, 4), "float32")  # (updates of another size than the indices)
    with pytest.raises(Exception, match="scatter.*do not fit the function's types"):
        vm.run(*args)


def _typed(e, t):
    e._checked_type = t
    return e


def test_100k_chain_of_symbolic_kernels():
    n = 100_000
    t = relay.TensorType((relay.Any(),), "float32")
    one = _typed(relay.const(1.0), relay.TensorType((), "float32"))
    x = _typed(relay.var("x", t), t)
    vs = [_typed(relay.var(f"v{k}", t), t) for k in range(n)]
    body = vs[-1]
    p = _typed(relay.var("p0", t), t)
    fused = relay.Function([p], _typed(relay.add(p, one), t), t, attrs=DictAttrs({"Primitive": 1}))
    fused = _typed(fused, relay.FuncType([t], t))  # (one function called 100,000 times: the
    for k in reversed(range(n)):  # distinct equal ones are test_relay_vm_deep's)
        call = _typed(relay.Call(fused, [x if k == 0 else vs[k - 1]]), t)
        body = _typed(relay.Let(vs[k], call, body), t)
    main = _typed(relay.Function([x], body, t), relay.FuncType([t], t))
    kernels, constants = KernelTable(LoweringOptions()), []
    vmf = FunctionCompiler(tvm.IRModule(), {"main": 0}, kernels, constants).compile("main", main)
    assert len(kernels.kernels) == 1 and isinstance(kernels.kernels[0].run, SymbolicKernel)
    vm = VirtualMachine(Executable([vmf], constants, kernels.kernels), tvm.cpu())
    for size in (2,):
        np.testing.assert_array_equal(vm.run(np.zeros(size, "float32")).numpy(),
                                      np.full(size, n, "float32"))


def test_sequence_first_reshapes_keep_the_symbolic_axis():
    """``(seq, n, 3 * d) -> (seq, n, 3, d)``: the kept leading axes index the input as they are
    (no division by the symbolic size); the static reshape of the same sizes is unchanged."""
    n = E.Var("n", "int64")
    i = [E.Var(f"i{k}", "int64") for k in range(4)]
    got = reshape_index([5, n, 12], [5, n, 3, 4], i)
    assert got[0] is i[0] and got[1] is i[1]
    static = reshape_index([5, 2, 12], [5, 2, 3, 4], i)  # (flattened, as it always was)
    assert len(static) == 3 and static[0] is not i[0]
    x = relay.var("x", shape=(5, relay.Any(), 12), dtype="float32")
    y = relay.transpose(relay.reshape(relay.exp(x), (5, 0, 3, 4)), (1, 2, 0, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels)["specialized"] == 0
    vm = VirtualMachine(exe, tvm.cpu())
    for b in (1, 3):
        xv = np.random.default_rng(b).standard_normal((5, b, 12)).astype("float32")
        want = np.exp(xv).reshape(5, b, 3, 4).transpose(1, 2, 0, 3)
        np.testing.assert_allclose(vm.run(xv).numpy(), want, rtol=1e-6)


def test_reshape_runs_of_equal_size():
    """``(5, n, 3, 4) -> (5 * n, 12)``: the runs ``[5, n] | [3, 4]`` map on their own (no flat
    index divided by ``n``); numerics at two sizes."""
    n = E.Var("n", "int64")
    i = [E.Var(f"i{k}", "int64") for k in range(2)]
    got = reshape_index([5, n, 3, 4], [5 * n, 12], i)
    assert len(got) == 4 and all(i[0] not in _vars(g) for g in got[2:])  # (run [3, 4]: i1)
    x = relay.var("x", shape=(5, relay.Any(), 12), dtype="float32")
    y = relay.reshape(relay.reshape(relay.exp(x), (5, 0, 3, 4)), (-1, 12))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    for b in (2, 3):
        xv = np.random.default_rng(b).standard_normal((5, b, 12)).astype("float32")
        np.testing.assert_allclose(vm.run(xv).numpy(), np.exp(xv).reshape(-1, 12), rtol=1e-6)


def _vars(e) -> list:
    from minitvm.tir.stmt_functor import post_order

    return [v for v in post_order(e) if isinstance(v, E.Var)]


def test_reshape_splits_a_multiple_innermost_dim():
    """``(5, n, 12) -> (5, 3 * n, 4)`` and back: the inner index maps as ``j % 3 * 4 + c`` and
    ``c % 4`` (contiguous in ``c``: vector loads), never ``(j * 4 + c) // 12`` per element
    (vit_tiny's sequence-first q/k/v split 0.29 -> 0.03 ms); numerics at two sizes."""
    n = E.Var("n", "int64")
    j, c = E.Var("j", "int64"), E.Var("c", "int64")
    down = reshape_index([n, 12], [3 * n, 4], [j, c])
    assert isinstance(down[1], E.Add) and down[1].b is c and c not in _vars(down[0])
    up = reshape_index([3 * n, 4], [n, 12], [j, c])
    assert isinstance(up[1], E.FloorMod) and up[1].a is c
    x = relay.var("x", shape=(5, relay.Any(), 12), dtype="float32")
    y = relay.transpose(relay.reshape(relay.exp(x), (5, -1, 4)), (1, 0, 2))
    z = relay.reshape(relay.transpose(y, (1, 0, 2)), (5, -1, 12))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function([x], relay.Tuple([y, z]))),
                           target="llvm")
    assert dynamic_kernel_counts(exe.kernels)["specialized"] == 0
    vm = VirtualMachine(exe, tvm.cpu())
    for b in (1, 3):
        xv = np.random.default_rng(b).standard_normal((5, b, 12)).astype("float32")
        got = _outputs(vm.run(xv))
        want = np.exp(xv).reshape(5, -1, 4).transpose(1, 0, 2)
        np.testing.assert_allclose(got[0], want, rtol=1e-6)
        np.testing.assert_allclose(got[1], np.exp(xv), rtol=1e-6)

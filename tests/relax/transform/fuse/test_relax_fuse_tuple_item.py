"""FuseOps with a tuple-get-item: one field of an elementwise tuple (batch_norm's) is elementwise,
so a conv's epilogue runs on through the norm into a residual add (ConvMixer's blocks); a field
of an injective tuple (split's) stays injective. And batch_norm with constant statistics is
legalized to one multiply-add an element."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import transform as rt
from minitvm.relax.expr import Call, Constant, Function, TupleGetItem

C, HW = 8, 6


def _stats(rng):
    return {"w": rng.standard_normal((C, 1, 3, 3)).astype("float32") * 0.5,
            "gamma": rng.standard_normal(C).astype("float32"),
            "beta": rng.standard_normal(C).astype("float32"),
            "mean": rng.standard_normal(C).astype("float32"),
            "var": rng.uniform(0.5, 2.0, C).astype("float32")}


def _block(batch, p, constant_stats=True):
    """main(x) = x + batch_norm(relu(depthwise_conv3x3(x)))[0] (statistics as constants, or as
    parameters of main)."""
    x = relax.Var("x", relax.TensorStructInfo([batch, C, HW, HW], "float32"))
    names = ("gamma", "beta", "mean", "var")
    params = [x] if constant_stats else \
        [x, *(relax.Var(n, relax.TensorStructInfo([C], "float32")) for n in names)]
    stats = [relax.const(p[n]) for n in names] if constant_stats else params[1:]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.conv2d(x, relax.const(p["w"]), padding=(1, 1), groups=C))
            h = bb.emit(relax.op.nn.relu(h))
            bn = bb.emit(relax.op.nn.batch_norm(h, *stats, axis=1, epsilon=1e-3))
            gv = bb.emit_output(bb.emit(relax.op.add(bb.emit(TupleGetItem(bn, 0)), x)))
        bb.emit_func_output(gv)
    return bb.get()


def _ref(p, x):
    n = x.shape[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    h = np.zeros((n, C, HW, HW))
    for ky in range(3):
        for kx in range(3):
            h += xp[:, :, ky:ky + HW, kx:kx + HW] * p["w"][None, :, 0, ky, kx, None, None]
    h = np.maximum(h, 0)

    def c(v):
        return v.astype("float64")[None, :, None, None]

    return x + (h - c(p["mean"])) / np.sqrt(c(p["var"]) + 1e-3) * c(p["gamma"]) + c(p["beta"])


def _fused(mod):
    return rt.FuseOps()(rt.AnnotateTIROpPattern()(rt.LegalizeOps()(mod)))


def _primitive_names(mod) -> list[list[str]]:
    """The callee PrimFunc names of each fused Primitive function."""
    out = []
    for f in mod.functions.values():
        if isinstance(f, Function) and f.attrs and f.attrs.get("Primitive"):
            out.append([b.value.args[0].name_hint for blk in f.body.blocks
                        for b in blk.bindings if isinstance(b.value, Call)])
    return out


@pytest.mark.parametrize("batch", [2, tir.Var("batch", "int64")], ids=["static", "symbolic"])
def test_residual_add_fuses_through_the_norms_tuple_item(batch):
    mod = _fused(_block(batch, _stats(np.random.default_rng(0))))
    groups = _primitive_names(mod)
    assert len(groups) == 1, groups
    assert [n.rstrip("0123456789") for n in groups[0]] == \
        ["conv2d", "relu", "batch_norm", "add"], groups
    # main calls the one fused function and uses its single result: no tuple left outside
    main = mod["main"]
    values = [b.value for blk in main.body.blocks for b in blk.bindings]
    assert not any(isinstance(v, TupleGetItem) for v in values), main
    assert isinstance(main.ret_struct_info, relax.TensorStructInfo)


def test_a_split_field_stays_injective():
    """conv -> split -> add: split is injective, so its field does not join the conv's group."""
    rng = np.random.default_rng(1)
    x = relax.Var("x", relax.TensorStructInfo([1, C, HW, HW], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.conv2d(x, relax.const(
                rng.standard_normal((C, C, 1, 1)).astype("float32"))))
            parts = bb.emit(relax.op.split(h, 2, axis=1))
            a = bb.emit(TupleGetItem(parts, 0))
            gv = bb.emit_output(bb.emit(relax.op.add(a, relax.const(np.float32(1)))))
        bb.emit_func_output(gv)
    groups = _primitive_names(_fused(bb.get()))
    conv = [g for g in groups if any(n.startswith("conv2d") for n in g)]
    assert all(not any(n.startswith(("split", "add")) for n in g) for g in conv), groups


def test_constant_statistics_fold_into_scale_and_shift():
    p = _stats(np.random.default_rng(2))
    mod = rt.LegalizeOps()(_block(2, p))
    calls = [b.value for blk in mod["main"].body.blocks for b in blk.bindings
             if isinstance(b.value, Call) and b.value.args and
             getattr(b.value.args[0], "name_hint", "").startswith("batch_norm")]
    assert len(calls) == 1
    ins = calls[0].args[1].fields
    # x, scale, shift, mean, var: the scale and shift are new constants of one value a channel
    assert len(ins) == 5 and all(isinstance(c, Constant) for c in ins[1:])
    scale, shift = ins[1].data.numpy(), ins[2].data.numpy()
    want = p["gamma"] / np.sqrt(p["var"].astype("float64") + 1e-3)
    np.testing.assert_allclose(scale, want, rtol=1e-6)
    np.testing.assert_allclose(shift, p["beta"] - p["mean"] * want, rtol=1e-5, atol=1e-6)
    # statistics passed as parameters keep the general form (they are read at run time)
    mod = rt.LegalizeOps()(_block(2, p, constant_stats=False))
    names = {gv.name_hint for gv in mod.functions}
    assert any(n.startswith("batch_norm") for n in names)


@pytest.mark.parametrize("constant_stats", [True, False])
@pytest.mark.parametrize("n", [1, 3])
def test_block_matches_numpy_at_any_batch(n, constant_stats):
    p = _stats(np.random.default_rng(3))
    mod = _block(tir.Var("batch", "int64"), p, constant_stats)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = np.random.default_rng(n).standard_normal((n, C, HW, HW)).astype("float32")
    args = [x] if constant_stats else [x, *(p[k] for k in ("gamma", "beta", "mean", "var"))]
    want = _ref(p, x.astype("float64"))
    for _ in range(2):  # the interpreted call, then the native plan
        got = vm["main"](*(tvm.nd.array(a) for a in args)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_passed_through_statistic_stays_injective():
    """batch_norm's mean field (shape (C,), not the result's) is no epilogue of the conv."""
    p = _stats(np.random.default_rng(4))
    x = relax.Var("x", relax.TensorStructInfo([1, C, HW, HW], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.conv2d(x, relax.const(p["w"]), padding=(1, 1), groups=C))
            bn = bb.emit(relax.op.nn.batch_norm(
                h, *(relax.const(p[n]) for n in ("gamma", "beta", "mean", "var")), axis=1))
            m = bb.emit(TupleGetItem(bn, 1))
            gv = bb.emit_output(bb.emit(relax.op.add(m, relax.const(np.float32(1)))))
        bb.emit_func_output(gv)
    groups = _primitive_names(_fused(bb.get()))
    conv = [g for g in groups if any(n.startswith("conv2d") for n in g)]
    assert all(not any(n.startswith("add") for n in g) for g in conv), groups

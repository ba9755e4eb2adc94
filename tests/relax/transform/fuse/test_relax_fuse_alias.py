"""FuseOps inlines dataflow aliases (``y = x``) before grouping, so an alias is no fusion
barrier: UNet's up-path (a 2x2 stride-2 conv2d_transpose legalized as four convs interleaved by
stack and reshape, whose legalization leaves ``lv = interleaved`` behind, then the bias add and
the skip concatenation) groups as Relay's FuseOps groups it, interleave, add and concatenate
in one function."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.relax import transform as rt
from minitvm.relax.expr import Function, Var
from minitvm.relax.transform.inline_dataflow_aliases import inline_dataflow_aliases


def _primitive(mod) -> list:
    return [(gv.name_hint, f) for gv, f in mod.functions.items()
            if isinstance(f, Function) and (f.attrs or {}).get("Primitive")]


def _aliases(func) -> list:
    return [b for blk in func.body.blocks for b in blk.bindings if isinstance(b.value, Var)]


def _fused(mod, **options):
    return rt.FuseOps(**options)(rt.AnnotateTIROpPattern()(rt.LegalizeOps()(mod)))


def _chain(alias_sinfo=None):
    """main(x) = exp(x) + exp(x) with ``y = exp(x)`` read through an alias (of struct info
    ``alias_sinfo`` when given)."""
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.exp(x))
            b = bb.emit(a) if alias_sinfo is None else bb.match_cast(a, alias_sinfo)
            c = bb.emit(relax.op.add(b, b))
            out = bb.emit_output(c)
        bb.emit_func_output(out)
    return bb.get()


def test_an_alias_is_no_barrier():
    before = _chain()
    assert len(_aliases(before["main"])) == 2  # lv1 = lv, and the output gv = lv2
    after = _fused(before)
    (name, group), = _primitive(after)
    assert name == "fused_exp_add"
    ops = [b.value.args[0].name_hint for b in group.body.blocks[0].bindings]
    assert ops == ["exp", "add"]
    kept = _aliases(after["main"])  # the block output keeps its name
    assert [b.var.name_hint for b in kept] == ["gv"]


def test_inlining_keeps_outputs_and_refinements_and_is_identity_without_aliases():
    func = _chain()["main"]
    out, n = inline_dataflow_aliases(func)
    assert n == 1
    assert [b.var.name_hint for b in _aliases(out)] == ["gv"]
    again, n = inline_dataflow_aliases(out)
    assert n == 0 and again is out
    # a match_cast is not an alias: it stays, and so does the barrier it is
    cast = _chain(relax.TensorStructInfo((4, 8), "float32"))
    _, n = inline_dataflow_aliases(cast["main"])
    assert n == 0


def _unet_up(batch=2, cin=8, cout=4, h=4):
    """concat(conv2d_transpose(x, w, stride 2) + bias, skip) on the channel axis."""
    x = relax.Var("x", relax.TensorStructInfo((batch, cin, h, h), "float32"))
    skip = relax.Var("skip", relax.TensorStructInfo((batch, cout, 2 * h, 2 * h), "float32"))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((cin, cout, 2, 2)).astype("float32")
    bias = rng.standard_normal((1, cout, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, skip]):
        with bb.dataflow():
            up = bb.emit(relax.op.nn.conv2d_transpose(x, relax.const(w), strides=(2, 2)))
            biased = bb.emit(relax.op.add(up, relax.const(bias)))
            out = bb.emit_output(relax.op.concat([biased, skip], axis=1))
        bb.emit_func_output(out)
    return bb.get(), w, bias


def _reference(x, skip, w, bias):
    n, _, h, _ = x.shape
    up = np.zeros((n, w.shape[1], 2 * h, 2 * h), "float32")
    for i in range(2):
        for j in range(2):
            up[:, :, i::2, j::2] = np.einsum("nchw,co->nohw", x, w[:, :, i, j])
    return np.concatenate([up + bias, skip], axis=1)


def test_unet_up_path_groups_interleave_add_and_concat():
    mod, w, bias = _unet_up()
    legal = rt.LegalizeOps()(mod)
    assert _aliases(legal["main"])[0].var.name_hint != "gv"  # the legalization's alias
    fused = _fused(mod)
    names = [n for n, _ in _primitive(fused)]
    concat = [n for n in names if "concatenate" in n]
    assert len(concat) == 1, names
    assert "stack" in concat[0] and "reshape" in concat[0] and "add" in concat[0]
    assert not _aliases(fused["main"])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8, 4, 4)).astype("float32")
    skip = rng.standard_normal((2, 4, 8, 8)).astype("float32")
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x), tvm.nd.array(skip)).numpy()
    np.testing.assert_allclose(got, _reference(x, skip, w, bias), rtol=1e-5, atol=1e-5)


def test_an_output_alias_of_a_value_the_block_reads_binds_that_value():
    """``gv = c`` where the block reads ``c`` again: ``c``'s binding defines ``gv``, its reads
    read ``gv``; an output alias of a value read nowhere else stays (``gv1 = d``)."""
    x = relax.Var("x", relax.TensorStructInfo((4, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(relax.op.exp(x))
            d = bb.emit(relax.op.add(c, x))
            gv = bb.emit_output(c)
            gv1 = bb.emit_output(d)
        bb.emit_func_output(relax.Tuple([gv, gv1]))
    func = bb.get()["main"]
    out, n = inline_dataflow_aliases(func, output_aliases=True)
    assert n == 1
    bindings = out.body.blocks[0].bindings
    assert [b.var.name_hint for b in bindings] == ["gv", "lv1", "gv1"]
    assert bindings[1].value.args[0] is bindings[0].var  # add reads gv
    assert [b.var.name_hint for b in _aliases(out)] == ["gv1"]
    fused = _fused(bb.get(), fuse_read_outputs=True)
    (name, _), = _primitive(fused)
    assert name == "fused_exp_add"
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((4, 8)).astype("float32")
    want = [np.exp(xv), np.exp(xv) + xv]
    for mod in (bb.get(), fused):
        got = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())["main"](tvm.nd.array(xv))
        for g, w in zip(got, want, strict=True):
            # (exp(x) + x cancels where x is near -0.57: a last-bit difference in exp's float32
            # result, ~6e-8 there, is a relative 3e-6 of the sum; atol is a few such ulps)
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=5e-7)


def test_output_aliases_in_a_100k_binding_block_at_the_default_recursion_limit():
    import sys

    limit = sys.getrecursionlimit()
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v, outs = x, []
            for k in range(100_000):
                v = bb.emit(relax.op.exp(v))
                if k % 10_000 == 0:
                    outs.append(bb.emit_output(v))  # (read by the next exp)
            outs.append(bb.emit_output(v))
        bb.emit_func_output(relax.Tuple(outs))
    out, n = inline_dataflow_aliases(bb.get()["main"], output_aliases=True)
    assert n == 10 and sys.getrecursionlimit() == limit
    assert len(out.body.blocks[0].bindings) == 100_001


def test_reads_of_calls_of_tuples_agree_with_free_vars():
    """The reads of a call of leaves and tuples of leaves (call_tir's operands, a tir_vars
    shape, a closure call) are free_vars' without its walk; a nested call or function still
    takes the walk."""
    from minitvm import tir
    from minitvm.ir.expr import GlobalVar
    from minitvm.relax.analysis import free_vars
    from minitvm.relax.transform.inline_dataflow_aliases import _reads

    t4 = relax.TensorStructInfo([4], "float32")
    x, y = Var("x", t4), relax.DataflowVar("y", t4)
    f = Var("f", relax.FuncStructInfo([t4], t4))
    c = relax.const(np.ones(4, "float32"))
    n = tir.Var("n", "int64")
    k = GlobalVar("k")
    values = [
        relax.op.call_tir(k, relax.Tuple([x, y, c]), t4),
        relax.op.call_tir(k, relax.Tuple([x, y]), t4, tir_vars=relax.ShapeExpr([n])),
        relax.Call(f, [x, relax.Tuple([y, c]), relax.PrimValue(n), relax.StringImm("s")]),
        relax.Call(f, [relax.Tuple([relax.Tuple([y])])]),
        relax.Call(Function([x], x), [relax.Tuple([y])]),
        relax.Tuple([x, relax.Tuple([y, x])]),
        relax.op.add(x, relax.TupleGetItem(relax.Tuple([y]), 0)),
    ]
    for v in values:
        assert {id(e) for e in _reads(v)} == {id(e) for e in free_vars(v)}, v

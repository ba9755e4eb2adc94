"""TVM's Relax "Dataflow Pattern Language (DPL)" deep dive and "Operator Fusion" architecture
page with ``import minitvm as tvm``: building patterns (calls, variadic calls, ``is_call_tir``,
tuple indexing, constraints, ``|`` / ``&`` / ``~``, ``^`` / ``>>`` sequences,
``make_fused_bias_activation_pattern``), matching with ``extract_matched_expr`` and
``get_var2val``, ``rewrite_call`` (reshape of a reshape), ``rewrite_bindings`` with a
``PatternContext`` (three matmuls sharing an input merged into one), ``@R.rewriter`` and
composing rewriters with ``|``, and ``FuseOpsByPattern`` with a ``check`` over a
``PatternCheckContext``; each rewritten program is also run and compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.analysis import get_var2val
from minitvm.relax.dpl import (
    PatternContext,
    PatternSeq,
    is_call_tir,
    is_const,
    is_op,
    is_tuple,
    make_fused_bias_activation_pattern,
    match_dfb,
    rewrite_bindings,
    rewrite_call,
    wildcard,
)
from minitvm.relax.transform import FuseOpsByPattern, FusionPattern
from minitvm.script import ir as I
from minitvm.script import relax as R


def run(mod: tvm.IRModule, *args):
    ex = relax.build(mod, "llvm")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](*[tvm.nd.array(a) for a in args])
    return out.numpy()


@I.ir_module
class Linear:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 4), "float32"),
             b: R.Tensor((4,), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w)
            lv1 = R.add(lv0, b)
            lv2 = R.reshape(lv1, (8,))
            lv3 = R.reshape(lv2, (4, 2))
            R.output(lv3)
        return lv3


def test_building_patterns():
    x, w = wildcard(), wildcard()
    matmul = is_op("relax.matmul")(x, w)
    add = is_op("relax.add")(matmul, wildcard())
    assert isinstance(matmul >> add, PatternSeq) and isinstance(matmul ^ add, PatternSeq)
    assert len(matmul ^ add ^ is_op("relax.nn.relu")(add)) == 3

    a, b = wildcard(), wildcard()
    tup = is_tuple([a, b])
    assert tup[0].index == 0 and tup[-1].index == 1 and tup[None].index == -1
    with pytest.raises(IndexError):
        tup[2]

    p, q, r = (relax.Var(n, relax.TensorStructInfo((2, 3), "float16")) for n in "pqr")
    concat = is_op("relax.concat")(wildcard(), varg_default_wildcard=True)
    assert concat.match(relax.op.concat(relax.Tuple([p, q, r])))
    fp16 = is_op("relax.add")(wildcard(), wildcard()).has_dtype("float16")
    assert fp16.match(relax.BlockBuilder().normalize(relax.op.add(p, q)))  # (struct info)
    act = is_op("relax.nn.relu")(wildcard()) | is_op("relax.nn.gelu")(wildcard())
    assert act.match(relax.op.nn.gelu(p)) and not act.match(relax.op.nn.silu(p))
    assert (~act).match(relax.op.nn.silu(p))
    assert (act & is_op("relax.nn.relu")(wildcard())).match(relax.op.nn.relu(p))

    bias_relu = make_fused_bias_activation_pattern("relax.nn.conv2d", with_bias=True,
                                                   activation="relax.nn.relu")
    data = relax.Var("d", relax.TensorStructInfo((1, 3, 8, 8), "float32"))
    weight = relax.Var("k", relax.TensorStructInfo((4, 3, 3, 3), "float32"))
    bias = relax.Var("c", relax.TensorStructInfo((1, 4, 1, 1), "float32"))
    conv = relax.op.nn.conv2d(data, weight)
    assert bias_relu.match(relax.op.nn.relu(relax.op.add(conv, bias)))
    assert not bias_relu.match(relax.op.nn.relu(conv))

    decode = is_call_tir("decode", args=[wildcard(), wildcard()])
    assert isinstance(decode, type(matmul)) and not decode.match(relax.op.add(p, q))


def test_match_and_extract_through_bindings():
    func = Linear["main"]
    add_expr = func.body.blocks[0].bindings[1].value
    lhs, rhs = wildcard(), wildcard()
    add_pat = is_op("relax.add")(lhs, rhs)
    assert add_pat.match(add_expr)
    got = add_pat.extract_matched_expr(add_expr)
    assert got[lhs].name_hint == "lv0" and got[rhs].name_hint == "b"

    # across bindings: the add's operand lv0 is looked up to its matmul
    linear = is_op("relax.add")(is_op("relax.matmul")(wildcard(), is_const()), wildcard())
    linear_any = is_op("relax.add")(is_op("relax.matmul")(wildcard(), wildcard()), wildcard())
    var2val = get_var2val(func)
    assert not linear_any.match(add_expr)  # without var2val lv0 is just a variable
    assert linear_any.match(add_expr, var2val=var2val)
    assert not linear.match(add_expr, var2val=var2val)  # w is a parameter, not a constant


def test_rewrite_call_merges_reshapes():
    inp, shape1, shape2 = wildcard(), wildcard(), wildcard()
    inner = is_op("relax.reshape")(inp, shape1)
    outer = is_op("relax.reshape")(inner, shape2)

    def rewriter(expr, matchings):
        return relax.op.reshape(matchings[inp], matchings[outer].args[1])

    new_func = rewrite_call(outer, rewriter, Linear["main"])
    last = new_func.body.blocks[0].bindings[-1]
    assert last.value.args[0].name_hint == "lv1"  # reshaped straight from the add
    mod = tvm.IRModule({"main": new_func})
    args = [np.random.rand(*s).astype("float32") for s in ((2, 4), (4, 4), (4,))]
    np.testing.assert_allclose(run(mod, *args), (args[0] @ args[1] + args[2]).reshape(4, 2),
                               rtol=1e-5)


@I.ir_module
class ThreeMatmuls:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), w1: R.Tensor((4, 5), "float32"),
             w2: R.Tensor((4, 5), "float32"), w3: R.Tensor((4, 5), "float32")):
        with R.dataflow():
            lv0 = R.matmul(x, w1)
            lv1 = R.matmul(x, w2)
            lv2 = R.matmul(x, w3)
            out = R.concat((lv0, R.nn.relu(lv1), lv2), axis=2)
            R.output(out)
        return out


def test_rewrite_bindings_merges_parallel_matmuls():
    with PatternContext() as ctx:
        inp_pat = wildcard()
        w1, w2, w3 = wildcard(), wildcard(), wildcard()
        matmul1 = is_op("relax.matmul")(inp_pat, w1)
        matmul2 = is_op("relax.matmul")(inp_pat, w2)
        matmul3 = is_op("relax.matmul")(inp_pat, w3)

        def rewriter(matchings, bindings):
            inp, W1, W2, W3 = (matchings[p] for p in (inp_pat, w1, w2, w3))
            width = W1.struct_info.shape[1]
            merged = R.matmul(inp, R.concat([W1, W2, W3], axis=1))
            return {
                matchings[matmul1]: R.strided_slice(merged, axes=[2], begin=[0], end=[width]),
                matchings[matmul2]: R.strided_slice(merged, axes=[2], begin=[width],
                                                    end=[width * 2]),
                matchings[matmul3]: R.strided_slice(merged, axes=[2], begin=[width * 2],
                                                    end=[width * 3]),
            }

        block = ThreeMatmuls["main"].body.blocks[0]
        found = match_dfb(ctx, block)
        assert [found[m].name_hint for m in (matmul1, matmul2, matmul3)] == ["lv0", "lv1", "lv2"]
        new_func = rewrite_bindings(ctx, rewriter, ThreeMatmuls["main"])

    text = new_func.script()
    assert text.count("R.matmul(") == 1 and text.count("R.concat(") == 2  # merged once
    assert "end=[10]" in text and "end=[15]" in text  # widths folded as TVM folds IntImms
    args = [np.random.rand(2, 3, 4).astype("float32")] + \
        [np.random.rand(4, 5).astype("float32") for _ in range(3)]
    x, a, b, c = args
    want = np.concatenate([x @ a, np.maximum(x @ b, 0), x @ c], axis=2)
    np.testing.assert_allclose(run(tvm.IRModule({"main": new_func}), *args), want, rtol=1e-5)

    # only two matmuls share the input: no match, the function comes back unchanged
    assert match_dfb(ctx, Linear["main"].body.blocks[0]) is None
    assert rewrite_bindings(ctx, rewriter, Linear["main"]) is Linear["main"]


def test_used_by_constraints_in_a_context():
    with PatternContext() as ctx:
        mm = is_op("relax.matmul")(wildcard(), wildcard())
        add = is_op("relax.add")(wildcard(), wildcard())
        mm >> add  # the matmul's result feeds the add, and nothing else
    block = Linear["main"].body.blocks[0]
    got = match_dfb(ctx, block)
    assert got[mm].name_hint == "lv0" and got[add].name_hint == "lv1"

    @I.ir_module
    class Shared:
        @R.function
        def main(x: R.Tensor((2, 2), "float32"), w: R.Tensor((2, 2), "float32")):
            with R.dataflow():
                lv0 = R.matmul(x, w)
                lv1 = R.add(lv0, x)
                lv2 = R.multiply(lv0, lv1)
                R.output(lv2)
            return lv2

    assert match_dfb(ctx, Shared["main"].body.blocks[0]) is None  # lv0 also feeds the multiply
    with PatternContext() as loose:
        mm = is_op("relax.matmul")(wildcard(), wildcard())
        add = is_op("relax.add")(wildcard(), wildcard())
        mm ^ add
    assert loose.match_dfb(Shared["main"].body.blocks[0]) is not None


@R.rewriter
class RewriteAddToPackedCall:
    @R.function
    def pattern(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
        C = R.add(A, B)
        return C

    @R.function
    def replacement(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
        C = R.call_pure_packed("my_fast_add", A, B, sinfo_args=R.Tensor([16], "float32"))
        return C


@R.rewriter
class MultiplyToSubtract:
    @R.function
    def pattern(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
        return R.multiply(A, B)

    @R.function
    def replacement(A: R.Tensor([16], "float32"), B: R.Tensor([16], "float32")):
        return R.subtract(A, B)


@I.ir_module
class AddMul:
    @R.function
    def main(a: R.Tensor([16], "float32"), b: R.Tensor([16], "float32"),
             c: R.Tensor([8], "float32")):
        d = R.add(a, b)
        e = R.multiply(d, b)
        f = R.add(c, c)  # a shape the pattern's parameters do not accept
        return (e, f)


def test_declarative_rewriters_and_their_composition():
    once = RewriteAddToPackedCall(AddMul)
    text = once.script()
    assert text.count('R.call_pure_packed("my_fast_add", a, b') == 1
    assert "R.add(c, c)" in text and "R.multiply(d, b)" in text
    both = (RewriteAddToPackedCall | MultiplyToSubtract)(AddMul)
    assert "R.subtract(d, b)" in both.script() and "my_fast_add" in both.script()
    func = MultiplyToSubtract(AddMul["main"])  # a single function
    assert isinstance(func, relax.Function) and "R.subtract" in func.script()
    assert AddMul.script().count("R.add(") == 2  # the input module is left as it was


@I.ir_module
class TransposeMatmul:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            wt = R.permute_dims(w)
            o = R.matmul(x, wt)
            R.output(o)
        return o


def test_fuse_ops_by_pattern_with_check():
    w, x = wildcard(), wildcard()
    wT = is_op("relax.permute_dims")(w)
    o = is_op("relax.matmul")(x, wT)
    annotations = {"o": o, "w": w, "x": x, "wT": wT}
    seen = []

    def check(ctx) -> bool:
        transpose_call = ctx.annotated_expr["wT"]
        seen.append(sorted(ctx.annotated_expr))
        ndim = transpose_call.args[0].struct_info.ndim
        if ndim == 2 and transpose_call.attrs.axes is None:
            return True
        axes = list(range(ndim))
        axes[-1], axes[-2] = axes[-2], axes[-1]
        return list(transpose_call.attrs.axes) == axes

    mod = FuseOpsByPattern([("transpose_matmul_fuse", o, annotations, check)],
                           bind_constants=False)(TransposeMatmul)
    assert seen == [["o", "w", "wT", "x"]]
    fused = mod["fused_relax_permute_dims_relax_matmul"]
    assert fused.attrs["Composite"] == "transpose_matmul_fuse"
    args = [np.random.rand(2, 4).astype("float32"), np.random.rand(3, 4).astype("float32")]
    np.testing.assert_allclose(run(mod, *args), args[0] @ args[1].T, rtol=1e-5)

    # a FusionPattern whose check refuses (float16 only) fuses nothing
    mm = is_op("relax.matmul")(x, wT)
    refuse = FusionPattern(name="my_backend.matmul", pattern=mm,
                           annotation_patterns={"matmul": mm},
                           check=lambda ctx: ctx.annotated_expr["matmul"].struct_info.dtype
                           == "float16")
    assert [gv.name_hint for gv in FuseOpsByPattern([refuse])(TransposeMatmul).functions] == \
        ["main"]

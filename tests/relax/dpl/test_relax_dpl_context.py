"""Graph-level Relax patterns: ``PatternContext`` / ``match_dfb`` / ``rewrite_bindings`` and
``PatternMatchingRewriter`` beyond the tutorial's cases: search order on a 100,000-binding
block, errors, extern-function call patterns."""

from __future__ import annotations

import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax.dpl import (
    PatternContext,
    PatternMatchingRewriter,
    is_call_packed,
    is_op,
    match_dfb,
    rewrite_bindings,
    wildcard,
)
from minitvm.script import ir as I
from minitvm.script import relax as R


def _relu_chain(n: int):
    """``main(x)``: ``n`` relus in a row, then ``add(last, x)``, in one dataflow block (bound
    directly: the builder's checks would be most of a 100,000-binding test's time)."""
    sinfo = relax.TensorStructInfo((2, 2), "float32")
    x = relax.Var("x", sinfo)
    relu, add = tvm.ir.Op.get("relax.nn.relu"), tvm.ir.Op.get("relax.add")
    bindings, v = [], x
    for i in range(n):
        call = relax.Call(relu, [v])
        call._checked_type = sinfo
        v2 = relax.DataflowVar(f"lv{i}", sinfo)
        bindings.append(relax.VarBinding(v2, call))
        v = v2
    last = relax.Call(add, [v, x])
    last._checked_type = sinfo
    gv = relax.Var("gv", sinfo)
    bindings.append(relax.VarBinding(gv, last))
    return relax.Function([x], relax.SeqExpr([relax.DataflowBlock(bindings)], gv), sinfo)


def test_deep_block_matches_and_rewrites_in_linear_time():
    func = _relu_chain(100_000)
    with PatternContext() as ctx:
        relu = is_op("relax.nn.relu")(wildcard())
        add = is_op("relax.add")(relu, wildcard())
        relu >> add

    got = match_dfb(ctx, func.body.blocks[0])
    assert got[relu] is func.body.blocks[0].bindings[-2].var
    new = rewrite_bindings(ctx, lambda m, b: {m[add]: relax.op.multiply(m[relu], m[relu])},
                           func)
    last = new.body.blocks[0].bindings[-1]
    assert last.value.op.name == "relax.multiply" and len(new.body.blocks[0].bindings) == 100_001
    assert new.body.blocks[0].bindings[0] is func.body.blocks[0].bindings[0]


def test_rewriter_errors_and_no_change():
    func = _relu_chain(2)
    with PatternContext() as ctx:
        add = is_op("relax.add")(wildcard(), wildcard())
    stranger = relax.Var("y", relax.TensorStructInfo((2, 2), "float32"))
    with pytest.raises(ValueError, match="not bound in the matched block"):
        rewrite_bindings(ctx, lambda m, b: {stranger: m[add]}, func)
    assert rewrite_bindings(ctx, lambda m, b: {}, func) is func
    with pytest.raises(RuntimeError, match="no fixed point"):  # an add rebuilt as an add
        rewrite_bindings(ctx, lambda m, b: {m[add]: relax.op.add(*b[m[add]].args)}, func)


def test_rewriter_module_needs_both_functions_and_equal_arity():
    @I.ir_module
    class OnlyPattern:
        @R.function
        def pattern(a: R.Tensor((2,), "float32")):
            return R.nn.relu(a)

    with pytest.raises(ValueError, match="replacement missing"):
        PatternMatchingRewriter.from_module(OnlyPattern)

    @I.ir_module
    class Mismatch:
        @R.function
        def pattern(a: R.Tensor((2,), "float32")):
            return R.nn.relu(a)

        @R.function
        def replacement(a: R.Tensor((2,), "float32"), b: R.Tensor((2,), "float32")):
            return R.add(a, b)

    with pytest.raises(ValueError, match="different parameters"):
        PatternMatchingRewriter.from_module(Mismatch)
    with pytest.raises(TypeError, match="IRModule or a relax.Function"):
        _Sum(3)


@R.rewriter
class _Sum:
    """sum over axis 1 (attributes must be equal) becomes a mean times the width."""

    @R.function
    def pattern(a: R.Tensor((2, 4), "float32")):
        return R.sum(a, axis=[1])

    @R.function
    def replacement(a: R.Tensor((2, 4), "float32")):
        m = R.mean(a, axis=[1])
        return R.multiply(m, R.const(4.0, "float32"))


def test_call_attributes_must_match_and_bindings_inline():
    @I.ir_module
    class Sums:
        @R.function
        def main(x: R.Tensor((2, 4), "float32")):
            a = R.sum(x, axis=[1])
            b = R.sum(x, axis=[0])
            return (a, b)

    text = _Sum(Sums).script()
    assert "R.mean(x, axis=[1]" in text and "R.sum(x, axis=[0]" in text
    assert "R.sum(x, axis=[1]" not in text


def test_extern_call_patterns():
    a = relax.Var("a", relax.TensorStructInfo((2,), "float32"))
    call = relax.Call(relax.ExternFunc("my_fast_add"), [a, a])
    pure = R.call_pure_packed("my_fast_add", a, a, sinfo_args=R.Tensor((2,), "float32"))
    assert is_call_packed("my_fast_add", [wildcard(), wildcard()]).match(call)
    assert is_call_packed("my_fast_add").match(pure)
    assert not is_call_packed("other").match(call)

"""What torch.export records about sizes: the Python size arithmetic and comparisons
(``operator.add`` ... ``operator.eq``) on symbolic dims, ``sym_size``, and its runtime assertions
(``_assert_scalar`` checked when it folds to a constant; ``_assert_async`` and
``_assert_tensor_metadata`` compute nothing)."""

from __future__ import annotations

from .context import AtenContext, register

# python size arithmetic torch.export records as call_function nodes
register("operator.add")(lambda ctx, a: ctx.simplify(a[0] + a[1]))
register("operator.sub")(lambda ctx, a: ctx.simplify(a[0] - a[1]))
register("operator.mul")(lambda ctx, a: ctx.simplify(a[0] * a[1]))
register("operator.floordiv")(lambda ctx, a: ctx.simplify(a[0] // a[1]))
register("operator.mod")(lambda ctx, a: ctx.simplify(a[0] % a[1]))


@register("sym_size.int")
def _sym_size(ctx: AtenContext, args):
    return ctx.shape(args[0])[int(args[1])]


@register("_assert_tensor_metadata.default")
def _assert_metadata(ctx: AtenContext, args):
    return None  # a runtime check torch.export records; the program's types already say it


# size comparisons torch.export records for its runtime assertions on data-dependent sizes
register("operator.ge")(lambda ctx, a: ctx.simplify(a[0] >= a[1]))
register("operator.le")(lambda ctx, a: ctx.simplify(a[0] <= a[1]))
register("operator.gt")(lambda ctx, a: ctx.simplify(a[0] > a[1]))
register("operator.lt")(lambda ctx, a: ctx.simplify(a[0] < a[1]))
register("operator.eq")(lambda ctx, a: ctx.simplify(a[0] == a[1]))


@register("_assert_async.msg", "_assert_async.default", "_functional_assert_async.msg")
def _assert_async(ctx: AtenContext, args):
    """A check of a tensor's values torch.export records (``F.one_hot``'s indices in range):
    it computes nothing the program uses, and the compiled program does not check it."""
    return None


@register("_assert_scalar.default")
def _assert_scalar(ctx: AtenContext, args):
    """A size assertion: checked now when it folds to a constant, else left to torch.export."""
    cond = args[0]
    if isinstance(cond, bool | int) and not cond:
        raise ctx.fail(f"the exported program's assertion fails for these shapes: {args[1]}")
    return None

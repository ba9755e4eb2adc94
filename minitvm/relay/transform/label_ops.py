"""LabelOps: give every function a ``hash`` attribute (16 hex digits of its structural hash) and
the layout attributes of the calls in its body, as relay.build does before lowering."""

from __future__ import annotations

from ...ir.structural import structural_hash
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call
from ..expr_functor import ExprMutator, post_order_visit
from .function_pass import function_pass


def _layout_attrs(body) -> dict:
    found = {}

    def visit(e):
        if isinstance(e, Call) and e.attrs is not None and hasattr(e.attrs, "keys"):
            for k in e.attrs.keys():
                if "layout" in k and e.attrs[k]:
                    found.setdefault(k, e.attrs[k])

    post_order_visit(body, visit)
    return found


class _Labeler(ExprMutator):
    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_function(self, fn):
        new = super().visit_function(fn)
        if new.get_attr("hash") is not None:
            return new
        self.count += 1
        attrs = {"hash": f"{structural_hash(new):016x}"}
        attrs.update({k: v for k, v in _layout_attrs(new.body).items() if new.get_attr(k) is None})
        return new.with_attrs(attrs)


@register_pass("LabelOps")
def LabelOps():
    """Label functions with their structural hash and layouts (function pass, opt_level 1)."""

    def transform(func, mod, ctx):
        m = _Labeler()
        out = m.visit(func)
        record_stat("labelled functions", m.count)
        return out

    return function_pass(transform, opt_level=1, name="LabelOps")



"""LabelOps: give every function a ``hash`` attribute (16 hex digits of its structural hash) and
the layout attributes of the calls in its body, as relay.build does before lowering.

As TVM's LabelOpsMutator: every attribute whose name contains "layout" is copied, empty ones too
(a conv2d's ``out_layout=""``), and where calls disagree the last one in post order wins. Two
deliberate differences: a function already labelled keeps its label (TVM hashes it again, with
the old label inside, so labels change on every run), and an enclosing function gets the layouts
of all its calls (TVM's shared record is reset by a nested function, dropping the calls visited
before it).

A nested function counts in its enclosing function's hash through its own label (it is hashed
as a global named after that label), so labelling closures nested N deep costs time linear in
the program, not N times its size; the layouts of a nested function's calls are inherited from
its record in the same post order as a full walk would meet them.
"""

from __future__ import annotations

import os

from ...ir.expr import GlobalVar
from ...ir.structural import hash_contents, structural_hash
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..analysis.canonical_key import canonical_key
from ..expr import Function
from ..expr_functor import ExprMutator, ExprVisitor
from .function_pass import function_pass


class _Calls(ExprVisitor):
    """Collects the layout attributes of the calls it visits (``found``); a nested function
    contributes its recorded layouts (``nested``) without being walked again."""

    def __init__(self, nested: dict):
        super().__init__()
        self.nested = nested
        self.found: dict = {}
        self.arrays: list = []  # the constants' arrays, hashed before the function is
        self.functions: list = []  # the nested functions the walk met (not entered)

    def visit_function(self, fn):
        self.functions.append(fn)
        self.found.update(self.nested.get(fn, {}))

    def visit_constant(self, c):
        self.arrays.append(c.data)

    def visit_call(self, e):
        super().visit_call(e)
        attrs = e.attrs
        if attrs is not None and hasattr(attrs, "keys"):
            for k in attrs.keys():
                if "layout" in k and attrs[k] is not None:
                    self.found[k] = attrs[k]


def _own_layouts(body, nested: dict) -> tuple[dict, list]:
    """Layout attributes of the calls in ``body``, the last in post order winning; a nested
    function contributes its recorded layouts (``nested``) where the walk meets it, without
    being walked again. The constants met on the way are hashed (on two threads where there
    are several: ``main``'s weights) for the function's label. Also the nested functions
    ``body`` holds (outside other nested functions)."""
    calls = _Calls(nested)
    calls.visit(body)
    hash_contents(calls.arrays, 2 if (os.cpu_count() or 1) > 1 else 1)
    return calls.found, calls.functions


def _label_hash(fn, nested_functions: list) -> int:
    """The structural hash of ``fn`` with each nested function standing for a global named
    after its label. The stand-ins are given to the hash, not built into a copy of the body:
    rebuilding ``main`` around 100,000 stubs cost a third of its label."""
    if not nested_functions:  # a fused primitive function: nothing stands in
        return structural_hash(fn)
    stand_ins = {f: GlobalVar(f"labelled_{f.get_attr('hash') or structural_hash(f):}")
                 for f in nested_functions}
    # (a fresh Function, as the copy with stubs was: its virtual device is not hashed)
    return structural_hash(Function(fn.params, fn.body, fn.ret_type, fn.type_params,
                                    fn.attrs), stand_ins=stand_ins)


class _Labeler(ExprMutator):
    #: the function hook only acts after the children are rewritten: the worklist may visit
    #: them first, so nested closures cost no Python stack
    _expand_scopes = True

    def __init__(self):
        super().__init__()
        self.count = 0
        self.layouts: dict = {}
        # canonical key -> (label, layouts) of a function labelled before: a fused function
        # repeated 100,000 times (a ladder's adds) is hashed and walked once
        self.by_key: dict = {}

    def visit_function(self, fn):
        new = super().visit_function(fn)
        labelled = new.get_attr("hash") is not None
        key = None if labelled else canonical_key(new)
        if key is not None:
            hit = self.by_key.get(key)
            if hit is not None:  # equal keys: structurally equal, the same hash and layouts
                return self._labelled(new, *hit)
        layouts, nested_functions = _own_layouts(new.body, self.layouts)
        if labelled:
            self.layouts[new] = layouts
            return new
        label = f"{_label_hash(new, nested_functions):016x}"
        if key is not None:
            self.by_key[key] = (label, layouts)
        return self._labelled(new, label, layouts)

    def _labelled(self, fn, label: str, layouts: dict):
        self.count += 1
        attrs = {"hash": label}
        attrs.update(layouts)  # as TVM's WithAttr: the calls' values replace older ones
        out = fn.with_attrs(attrs)
        self.layouts[out] = layouts
        return out


def _carry_types(rewritten: dict) -> None:
    """Give each rebuilt expression the type of the one it replaces (``rewritten``: the
    mutator's old -> new map). Labels are attributes, which no type depends on, so the
    InferType run after this function pass finds the module typed and skips re-checking
    every expression of ``main``."""
    for old, new in rewritten.items():
        if new is not old and getattr(new, "_checked_type", False) is None:
            t = getattr(old, "_checked_type", None)
            if t is not None:
                new._checked_type = t


@register_pass("LabelOps")
def LabelOps():
    """Label functions with their structural hash and layouts (function pass, opt_level 1)."""

    def transform(func, mod, ctx):
        m = _Labeler()
        out = m.visit(func)
        record_stat("labelled functions", m.count)
        _carry_types(m.memo_map)
        return out

    return function_pass(transform, opt_level=1, name="LabelOps")



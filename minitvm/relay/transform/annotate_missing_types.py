"""After type inference, give functions without a return type and vars without an annotation the
types that were inferred for them, as TVM's InferType does (so expected programs built without
annotations compare equal to pass outputs). Both walks are iterative at any nesting depth."""

from __future__ import annotations

from ...ir.type import IncompleteType
from ..adt import pattern_vars
from ..expr import Function, Var
from ..expr_functor import ExprMutator, ExprVisitor


def unannotated(v) -> bool:
    """No annotation, or an IncompleteType one (``relay.Var("a", relay.IncompleteType())``):
    either way InferType writes the inferred type in, so TVM's expected programs built with
    placeholder vars compare equal to pass outputs."""
    return v.type_annotation is None or isinstance(v.type_annotation, IncompleteType)


class _NeedsAnnotation(ExprVisitor):
    _expand_scopes = True  # the hooks only raise a flag: any visiting order (no recursion)

    def __init__(self):
        super().__init__()
        self.found = False

    def visit_function(self, fn):
        if fn.ret_type is None or any(unannotated(p) for p in fn.params):
            self.found = True
        super().visit_function(fn)

    def visit_let(self, let):
        # only the lets this hook covers: the worklist visits every let of a chain on its own,
        # so walking the whole chain from each one would be quadratic
        for node in self._let_chain(let):
            if unannotated(node.var):
                self.found = True
        super().visit_let(let)

    def visit_match(self, m):
        for c in m.clauses:
            if any(unannotated(v) for v in pattern_vars(c.lhs)):
                self.found = True
        super().visit_match(m)


def _copy_type(new, old):
    if new is not old and new._checked_type is None:
        new._checked_type = old._checked_type
    return new


class _Annotator(ExprMutator):
    _expand_scopes = True  # each hook depends on its own node only: no recursion on nesting

    def visit_var(self, v):
        if not unannotated(v) or v._checked_type is None:
            return v
        new = Var(v.name_hint, v._checked_type, v.span)
        new._checked_type = v._checked_type
        new._virtual_device = getattr(v, "_virtual_device", None)
        return new

    def visit_function(self, fn):
        new = super().visit_function(fn)
        if new.ret_type is None and fn._checked_type is not None:
            new = new.with_fields(ret_type=fn._checked_type.ret_type)
        return _copy_type(new, fn)


def annotate_missing_types(fn: Function, known_missing: bool = False) -> Function:
    """Return ``fn`` with inferred return types and var annotations filled in where missing.
    ``known_missing``: the caller knows something is missing (InferType's checker lists
    them), so the walk that looks for one is skipped."""
    if not known_missing:
        finder = _NeedsAnnotation()
        finder.visit(fn)
        if not finder.found:
            return fn
    annotator = _Annotator()
    out = annotator.visit(fn)
    # every rebuilt node keeps its original's type: one sweep over the memo (old -> new) once
    # the walk is done, rather than a wrapper around each of the walk's million visit calls
    for old, new in annotator.memo_map.items():
        if new is not old and new._checked_type is None:
            new._checked_type = old._checked_type
    return _copy_type(out, fn)

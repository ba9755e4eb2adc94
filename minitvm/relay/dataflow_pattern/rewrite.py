"""``rewrite(callbacks, expr)``: replace matches of patterns by what callbacks return.

Each round runs every callback in order: its pattern's non-overlapping matches are found (from
the outputs towards the inputs), then the expression is rebuilt bottom-up and each match root is
replaced by ``callback(pre, post, node_map)``. Rounds repeat until the expression stops changing
(at most 100 rounds, then an error), or once when the last callback has ``rewrite_once``.
"""

from __future__ import annotations

from ...ir.gc_pause import gc_paused
from ...ir.structural import structural_equal
from ..expr_functor import ExprMutator, _method_name, dataflow_worklist
from .grouping import PatternGrouper
from .patterns import DFPattern

__all__ = ["DFPatternCallback", "rewrite"]

MAX_ROUNDS = 100


class DFPatternCallback:
    """A pattern (``self.pattern``, set by subclasses) and the rewrite of its matches.

    Parameters
    ----------
    require_type : bool
        Infer types of the expression before matching (for has_type / has_shape patterns and
        callbacks that read ``checked_type``).
    rewrite_once : bool
        Apply the callback once instead of until the expression stops changing.
    """

    def __init__(self, require_type: bool = False, rewrite_once: bool = False):
        self.require_type = require_type
        self.rewrite_once = rewrite_once
        self.pattern: DFPattern | None = None

    def rewrite(self, expr):
        """Rewrite ``expr`` with this callback."""
        return rewrite(self, expr)

    def callback(self, pre, post, node_map):
        """Return the replacement of a match: ``pre`` (original root), ``post`` (root with its
        inputs rewritten), ``node_map`` (pattern -> matched expressions)."""
        raise NotImplementedError(f"{type(self).__name__} must define callback(pre, post, "
                                  "node_map)")


class _Rewriter(ExprMutator):
    def __init__(self, callback: DFPatternCallback, groups):
        super().__init__()
        self.cb = callback
        self.roots = {id(g.root): g for g in groups}

    def _visit_dataflow(self, root):
        def finish(node):
            return self._apply(node, getattr(self, _method_name(type(node)))(node))

        dataflow_worklist(self.memo_map, root, finish)

    def _apply(self, pre, post):
        g = self.roots.get(id(pre))
        if g is None:
            return post
        out = self.cb.callback(pre, post, g.node_map)
        return post if out is None else out

    # leaves (vars, constants) and binding nodes can be match roots too
    def visit_var(self, v):
        return self._apply(v, v)

    def visit_constant(self, c):
        return self._apply(c, c)

    def visit_function(self, fn):
        return self._apply(fn, super().visit_function(fn))

    def visit_let(self, let):
        return self._apply(let, super().visit_let(let))


def _infer(expr, mod):
    from ..transform.infer_type import InferTypeLocal

    InferTypeLocal(expr, mod)
    return expr


@gc_paused
def rewrite(callbacks, expr, mod=None):
    """Rewrite ``expr`` with one callback or a list of ``DFPatternCallback``.

    Parameters
    ----------
    callbacks : DFPatternCallback or list of DFPatternCallback
        The rewrites to apply, in order.
    expr : relay.Expr
        The expression to rewrite.
    mod : IRModule, optional
        Module used to type global functions when a callback requires types.
    """
    if isinstance(callbacks, DFPatternCallback):
        callbacks = [callbacks]
    callbacks = list(callbacks)
    for cb in callbacks:
        if not isinstance(cb, DFPatternCallback):
            raise TypeError(f"rewrite expects DFPatternCallback objects, got "
                            f"{type(cb).__name__}")
        if not isinstance(cb.pattern, DFPattern):
            raise ValueError(f"{type(cb).__name__}.pattern is not set to a DFPattern "
                             f"(got {cb.pattern!r})")
    if not callbacks:
        return expr
    post = expr
    rounds = 0
    while True:
        last = post
        for cb in callbacks:
            if cb.require_type:
                _infer(post, mod)
            groups = PatternGrouper(cb.pattern, build_functions=False).group(post)
            if groups:
                post = _Rewriter(cb, groups).visit(post)
            rounds += 1
        if post is last or callbacks[-1].rewrite_once or structural_equal(last, post):
            return post
        if rounds >= MAX_ROUNDS:
            raise RuntimeError(f"rewrite: the expression still changes after {MAX_ROUNDS} "
                               "rounds; the callbacks may undo each other")

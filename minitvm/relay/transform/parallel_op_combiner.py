"""Shared machinery of the CombineParallel* passes, with TVM's rules: calls of one op that read
the same input and can be combined form a group; each call starts a branch that extends through
its chain of single-consumer elementwise/broadcast ops; one combined call replaces the roots,
the following ops are combined level by level while every branch has the same op, attributes and
compatible arguments there, and each branch takes its part of the result at the last combined
level."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.structural import structural_equal
from ...ir.type import TensorType
from ..expr import Call
from ..expr_functor import ExprMutator, dataflow_children, dataflow_post_order


class ParallelOpCombiner:
    """Subclasses say which calls qualify and how to combine roots, following ops and outputs."""

    op_name = ""

    def __init__(self, min_num_branches: int):
        self.min_num_branches = min_num_branches
        self.combined = 0

    # ------------------------------------------------------------------ subclass hooks
    def is_supported(self, call) -> bool:
        return True

    def key(self, call):
        """Calls with equal keys (and the same first argument) can be combined."""
        raise NotImplementedError

    def combine_root(self, calls, visit):
        """The one call replacing the group's root calls."""
        raise NotImplementedError

    def is_arg_compatible(self, a, b, index: int) -> bool:
        """Whether argument ``index`` of following ops ``a`` and ``b`` can be combined."""
        raise NotImplementedError

    def combine_following(self, data, branches, depth: int, parent_index: int, visit):
        """The combined following op at ``depth`` whose ``parent_index`` argument is ``data``."""
        raise NotImplementedError

    def split(self, data, branches, depth: int) -> list:
        """One expression per branch: its part of ``data``, the combined value at ``depth``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ grouping
    def groups(self, expr) -> list[list[Call]]:
        op = Op.get(self.op_name)
        found: dict = {}
        for e in dataflow_post_order(expr, _children):
            if isinstance(e, Call) and e.op is op and all(
                    isinstance(a._checked_type, TensorType) for a in e.args) \
                    and self.is_supported(e):
                found.setdefault((e.args[0], self.key(e)), []).append(e)
        return [g for g in found.values() if len(g) >= self.min_num_branches]

    @staticmethod
    def _consumers(expr) -> dict[int, list]:
        users: dict[int, list] = {}
        for e in dataflow_post_order(expr, _children):
            for c in _children(e):
                users.setdefault(id(c), []).append(e)
        return users

    @staticmethod
    def _branch(root, users) -> list:
        branch = [root]
        while True:
            nxt = users.get(id(branch[-1]), [])
            if len(nxt) != 1:
                return branch
            call = nxt[0]
            if not (isinstance(call, Call) and isinstance(call.op, Op)
                    and call._checked_type is not None):
                return branch
            pattern = call.op.get_attr("TOpPattern")
            if pattern is None or pattern > OpPattern.BROADCAST:
                return branch
            branch.append(call)

    def _check_level(self, branches, depth: int, parent_index: int) -> bool:
        first = branches[0][depth]
        for br in branches:
            call = br[depth]
            if call.op is not first.op or len(call.args) != len(first.args):
                return False
            if call.args[parent_index] is not br[depth - 1]:
                return False
            if not structural_equal(call.attrs, first.attrs):
                return False
            for i in range(len(call.args)):
                if i != parent_index and not self.is_arg_compatible(first, call, i):
                    return False
        return True

    # ------------------------------------------------------------------ rewrite
    def run(self, expr):
        from ..expr import Function

        body = expr.body if isinstance(expr, Function) else expr
        users = self._consumers(body)
        replacement: dict = {}
        pending: dict = {}
        done: set[int] = set()
        for g in self.groups(body):
            for c in g:
                pending[c] = g
        combiner = self

        class _Rewrite(ExprMutator):
            def visit_call(self, call):
                if call in replacement:
                    return replacement[call]
                group = pending.get(call)
                if group is None:
                    return super().visit_call(call)
                if id(group) not in done:
                    done.add(id(group))
                    combiner._combine_group(group, users, replacement, self.visit)
                return replacement[call] if call in replacement else super().visit_call(call)

        return _Rewrite().visit(expr)

    def _combine_group(self, group, users, replacement, visit) -> None:
        branches = [self._branch(root, users) for root in group]
        data = self.combine_root(group, visit)
        depth = min(len(b) for b in branches)
        level = 1
        while level < depth:
            call = branches[0][level]
            parent_index = next(i for i, a in enumerate(call.args)
                                if a is branches[0][level - 1])
            if not self._check_level(branches, level, parent_index):
                break
            data = self.combine_following(data, branches, level, parent_index, visit)
            level += 1
        outs = self.split(data, branches, level - 1)
        for br, out in zip(branches, outs, strict=True):
            replacement[br[level - 1]] = out
        self.combined += 1


def _children(e) -> tuple:
    if isinstance(e, Call):
        return tuple(a for a in e.args)
    return tuple(c for c in dataflow_children(e))


def dims_eq(x, y) -> bool:
    return structural_equal(x, y) if not isinstance(x, int) else x == y


def same_shape(a, b, skip: int | None = None) -> bool:
    """Whether two tensor types have equal dtypes, ranks and dims (dim ``skip`` excepted)."""
    ta, tb = a._checked_type, b._checked_type
    if not (isinstance(ta, TensorType) and isinstance(tb, TensorType)):
        return False
    if ta.dtype != tb.dtype or len(ta.shape) != len(tb.shape):
        return False
    return all(i == skip or dims_eq(x, y) for i, (x, y) in enumerate(zip(ta.shape, tb.shape)))

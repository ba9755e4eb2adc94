"""FuseOps: group operators into ``Primitive=1`` functions by TVM's post-dominator algorithm.

1. A forward dataflow graph of the function is built in post-DFS order; every edge carries the
   consumer's op pattern (a broadcast edge whose shapes match counts as elementwise).
2. Each node's immediate post-dominator is the lowest common ancestor of its consumers.
3. Three phases fuse each node into its post-dominator when every node on the paths between
   them satisfies the phase's pattern rule (anchor ops absorb elementwise epilogues first, then
   injective ops fuse, then injective ops join tuples already fused into injective consumers).
4. Each group becomes a function whose params (``p0``, ``p1``, ...) are its outside inputs in the
   order a left-to-right depth-first walk from the group's root meets them.
Everything is iterative; a group never holds more than ``relay.FuseOps.max_depth`` nodes.
"""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from ..expr_functor import ExprMutator, ExprVisitor
from .function_pass import function_pass

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE,
                                         OpPattern.TUPLE, OpPattern.OPAQUE)
_SCALAR_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})
DEFAULT_MAX_DEPTH = 256


class _Node:
    __slots__ = ("ref", "index", "pattern", "outputs", "extern_ref")

    def __init__(self, ref):
        self.ref = ref
        self.index = -1
        self.pattern = OPAQUE
        self.outputs: list[tuple[_Node, int]] = []
        self.extern_ref = False


class _GraphBuilder(ExprVisitor):
    """Builds the indexed forward graph: nodes in post-DFS order with pattern-labelled edges."""

    def __init__(self):
        super().__init__()
        self.nodes: dict = {}
        self.order: list[_Node] = []

    def _node(self, e) -> _Node:
        n = self.nodes.get(e)
        if n is None:
            n = self.nodes[e] = _Node(e)
        return n

    def _edge(self, e, parent, pattern):
        if isinstance(e, Op):
            return
        n = self._node(e)
        if parent is None:
            n.extern_ref = True
        else:
            n.outputs.append((parent, pattern))

    def _add(self, e, pattern=None):
        n = self._node(e)
        if pattern is not None:
            n.pattern = pattern
        n.index = len(self.order)
        self.order.append(n)

    def visit_function(self, fn):
        if fn.get_attr("Primitive", 0) or fn.get_attr("Compiler"):
            self._add(fn)
            return
        for p in fn.params:
            self._edge(p, None, OPAQUE)
        self._edge(fn.body, None, OPAQUE)
        super().visit_function(fn)
        self._add(fn)

    def visit_constant(self, c):
        scalar = c.data.ndim == 0 and c.data.dtype in _SCALAR_DTYPES
        self._add(c, ELEMWISE if scalar else OPAQUE)

    def visit_call(self, call):
        node = self._node(call)
        pattern = OPAQUE
        if isinstance(call.op, Op):
            p = call.op.get_attr("TOpPattern")
            pattern = OPAQUE if p is None else int(p)
        else:
            self._edge(call.op, None, OPAQUE)
        rtype = call._checked_type
        for a in call.args:
            edge = pattern
            at = a._checked_type
            if (pattern == BROADCAST and isinstance(at, TensorType)
                    and isinstance(rtype, TensorType) and at.shape == rtype.shape):
                edge = ELEMWISE
            self._edge(a, node, edge)
        super().visit_call(call)
        self._add(call, pattern)

    def visit_tuple(self, tup):
        node = self._node(tup)
        for f in tup.fields:
            if isinstance(f._checked_type, TensorType):
                self._edge(f, node, INJECTIVE)
            else:
                self._edge(f, None, OPAQUE)
        super().visit_tuple(tup)
        self._add(tup, TUPLE)

    def visit_tuple_getitem(self, op):
        tt = op.tuple_value._checked_type
        non_tensor = not isinstance(tt, TupleType) or any(
            not isinstance(f, TensorType) for f in tt.fields)
        if non_tensor:
            self._edge(op.tuple_value, None, OPAQUE)
            super().visit_tuple_getitem(op)
            self._add(op)
        else:
            self._edge(op.tuple_value, self._node(op), INJECTIVE)
            super().visit_tuple_getitem(op)
            self._add(op, INJECTIVE)

    def visit_var(self, v):
        self._add(v)

    def visit_global_var(self, g):
        self._add(g)

    def visit_constructor(self, c):
        self._add(c)

    def visit_let(self, let):
        chain, node = [], let
        while isinstance(node, Let) and node not in self.memo_map:
            chain.append(node)
            self._edge(node.var, None, OPAQUE)
            self._edge(node.value, None, OPAQUE)
            node = node.body
        self._edge(node, None, OPAQUE)
        super().visit_let(let)
        for n in reversed(chain):
            self._add(n)

    def _extern_children(self, e, children):
        for c in children:
            self._edge(c, None, OPAQUE)
        self._add(e)

    def visit_if(self, ite):
        super().visit_if(ite)
        self._extern_children(ite, (ite.cond, ite.true_branch, ite.false_branch))

    def visit_ref_create(self, r):
        super().visit_ref_create(r)
        self._extern_children(r, (r.value,))

    def visit_ref_read(self, r):
        super().visit_ref_read(r)
        self._extern_children(r, (r.ref,))

    def visit_ref_write(self, r):
        super().visit_ref_write(r)
        self._extern_children(r, (r.ref, r.value))

    def visit_match(self, m):
        super().visit_match(m)
        self._extern_children(m, [m.data] + [c.rhs for c in m.clauses])


class _DomNode:
    __slots__ = ("gnode", "parent", "depth", "pattern")

    def __init__(self, gnode):
        self.gnode = gnode
        self.parent = None
        self.depth = 0
        self.pattern = OPAQUE


def _post_dominators(order: list[_Node]) -> list[_DomNode]:
    dom = [_DomNode(n) for n in order]
    for i in range(len(order) - 1, -1, -1):
        n, d = order[i], dom[i]
        if n.extern_ref or not n.outputs:
            d.parent, d.depth, d.pattern = None, 1, OPAQUE
            continue
        pattern = ELEMWISE
        first, epat = n.outputs[0]
        parent = dom[first.index]
        pattern = max(pattern, epat)
        for out, epat in n.outputs[1:]:
            parent, pattern = _lca(parent, dom[out.index], pattern)
            pattern = max(pattern, epat)
        d.parent = parent
        d.depth = parent.depth + 1 if parent is not None else 1
        d.pattern = pattern
    return dom


def _lca(lhs, rhs, pattern):
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern = max(pattern, rhs.pattern)
            rhs = rhs.parent
        elif rhs.depth < lhs.depth:
            pattern = max(pattern, lhs.pattern)
            lhs = lhs.parent
        else:
            pattern = max(pattern, lhs.pattern, rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern


class _Group:
    __slots__ = ("parent", "pattern", "root_ref", "anchor_ref", "num_nodes")

    def __init__(self, pattern, ref):
        self.parent = None
        self.pattern = pattern
        self.root_ref = ref
        self.anchor_ref = ref if pattern == OUT_EWISE else None
        self.num_nodes = 1

    def find_root(self):
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node.parent is not None and node.parent is not root:  # path compression
            node.parent, node = root, node.parent
        return root


class _Partitioner:
    def __init__(self, order, max_depth):
        self.order = order
        self.max_depth = max_depth
        self.groups = [_Group(n.pattern, n.ref) for n in order]

    def _paths(self, src, sink):
        """Nodes on all paths from src's consumers up to and including sink (iterative DFS)."""
        seen, stack, out = set(), [o for o, _ in src.outputs], []
        while stack:
            n = stack.pop()
            if n.index in seen:
                continue
            seen.add(n.index)
            out.append(n)
            if n is not sink:
                stack.extend(o for o, _ in n.outputs)
        return out

    def _check_path(self, src, sink, fcond) -> bool:
        for n in self._paths(src, sink):
            if not fcond(self.groups[n.index].find_root().pattern, n is sink):
                return False
        return True

    def _commit(self, src, sink):
        target = self.groups[sink.index]
        self._merge(self.groups[src.index], target)
        for n in self._paths(src, sink):
            if n is not sink:
                self._merge(self.groups[n.index], target)

    @staticmethod
    def _merge(child, parent):
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor_ref is not None:
            parent.anchor_ref = child.anchor_ref
            parent.pattern = max(child.pattern, parent.pattern)

    def _count_with(self, src, sink) -> int:
        total = self.groups[sink.index].find_root().num_nodes + self.groups[src.index].num_nodes
        for n in self._paths(src, sink):
            if n is not sink:
                total += self.groups[n.index].num_nodes
        return total

    def run(self, dom, phase):
        groups = self.groups
        for nid, gnode in enumerate(self.order):
            dnode, group = dom[nid], groups[nid]
            if group.pattern == OPAQUE or dnode.parent is None:
                continue
            sink = dnode.parent.gnode
            if self._count_with(gnode, sink) > self.max_depth:
                continue
            parent_group = groups[sink.index]
            if phase == 2:
                if group.pattern > INJECTIVE:
                    continue
                root = parent_group.find_root()
                if root.pattern == TUPLE:
                    continue
                if parent_group.pattern == TUPLE and root.pattern <= INJECTIVE:
                    if self._check_path(gnode, sink, lambda k, s: k <= INJECTIVE):
                        self._commit(gnode, sink)
                continue
            if group.find_root() is parent_group.find_root():
                continue
            if parent_group.pattern == TUPLE:
                continue
            if group.pattern == OUT_EWISE:
                if phase == 0 and dnode.pattern == ELEMWISE and self._check_path(
                        gnode, sink, lambda k, s: k <= BROADCAST):
                    self._commit(gnode, sink)
            elif group.pattern <= BROADCAST:
                if dnode.pattern <= INJECTIVE or dnode.pattern == COMM_REDUCE:
                    def fcond(k, is_sink):
                        if not is_sink:
                            return k <= INJECTIVE
                        return k <= OUT_EWISE
                    if self._check_path(gnode, sink, fcond):
                        self._commit(gnode, sink)
            elif group.pattern in (INJECTIVE, TUPLE):
                if phase == 1 and self._check_path(gnode, sink, lambda k, s: k <= INJECTIVE):
                    self._commit(gnode, sink)


def partition(expr, fuse_opt_level: int, max_depth: int = DEFAULT_MAX_DEPTH) -> dict:
    """Map each fusable expression to the root Group it belongs to."""
    builder = _GraphBuilder()
    builder.visit(expr)
    order = builder.order
    parts = _Partitioner(order, max_depth)
    if fuse_opt_level != 0:
        dom = _post_dominators(order)
        for phase in range(3):
            parts.run(dom, phase)
    return {n.ref: parts.groups[n.index].find_root() for n in order}


class _Fuser(ExprMutator):
    """Rewrites each group rooted at a call (or tuple-get-item) into a call of a new function."""

    def __init__(self, gmap):
        super().__init__()
        self.gmap = gmap
        self.num_groups = 0

    def _member(self, e, group) -> bool:
        return self.gmap.get(e) is group and not isinstance(e, Var)

    def visit_function(self, fn):
        if fn.get_attr("Primitive", 0):
            return fn
        return super().visit_function(fn)

    def visit_call(self, call):
        if isinstance(call.op, Op):
            if call.op.name == "annotation.stop_fusion":
                return self.visit(call.args[0])
            group = self.gmap.get(call)
            if group is not None:
                if group.root_ref is call:
                    return self._build(call, group)
                return None  # built when its group's root is reached
        return super().visit_call(call)

    def visit_tuple_getitem(self, op):
        group = self.gmap.get(op)
        if group is not None and group.root_ref is op and self.gmap.get(op.tuple_value) is group:
            return self._build(op, group)
        if group is not None and group.root_ref is not op:
            return None
        return super().visit_tuple_getitem(op)

    def visit_tuple(self, tup):
        group = self.gmap.get(tup)
        if group is not None and group.root_ref is not tup:
            return None
        return super().visit_tuple(tup)

    def _build(self, root, group):
        params: dict = {}
        args: list = []
        built: dict = {}

        def operand(a):
            if a in built:
                return built[a]
            if isinstance(a, Constant) and self._member(a, group):
                return a
            outer = self.visit(a)
            p = params.get(outer)
            if p is None:
                ty = a._checked_type
                p = params[outer] = Var(f"p{len(params)}", ty)
                args.append(outer)
            return p

        def operands(e):
            if isinstance(e, Call):
                return e.args
            if isinstance(e, Tuple):
                return e.fields
            return (e.tuple_value,)

        # emulate a left-to-right recursive walk so params are numbered in TVM's order
        stack = [(root, 0)]
        while stack:
            node, i = stack.pop()
            ops = operands(node)
            while i < len(ops):
                a = ops[i]
                if isinstance(a, Call) and isinstance(a.op, Op) and \
                        a.op.name == "annotation.stop_fusion":
                    i += 1
                    operand(a)
                    continue
                if a not in built and self._member(a, group) and not isinstance(a, Constant):
                    stack.append((node, i))
                    stack.append((a, 0))
                    break
                operand(a)
                i += 1
            else:
                new_ops = [operand(a) for a in ops]
                if isinstance(node, Call):
                    built[node] = Call(node.op, new_ops, node.attrs, node.type_args, node.span)
                elif isinstance(node, Tuple):
                    built[node] = Tuple(new_ops, node.span)
                else:
                    built[node] = TupleGetItem(new_ops[0], node.index, node.span)
        body = built[root]
        has_call = any(isinstance(k, Call) for k in built)
        fn = Function(list(params.values()), body, root._checked_type, None,
                      {"Primitive": 1 if has_call else 0})
        self.num_groups += 1
        return Call(fn, args, None, None, root.span)


def fuse_ops(func, fuse_opt_level: int = 2, max_depth: int = DEFAULT_MAX_DEPTH):
    """Fuse one (type-checked) function; returns the new function and the number of groups."""
    gmap = partition(func, fuse_opt_level, max_depth)
    fuser = _Fuser(gmap)
    return fuser.visit(func), fuser.num_groups


@register_pass("FuseOps")
def FuseOps(fuse_opt_level: int = -1):
    """Fuse operators into Primitive functions (function pass, opt_level 0, requires InferType).

    Parameters
    ----------
    fuse_opt_level : int
        0 puts every op in its own function; any other level fuses. -1 (the default) uses the
        PassContext's opt_level. The config ``relay.FuseOps.max_depth`` caps a group's size.
    """

    def transform(func, mod, ctx):
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        max_depth = int(ctx.config.get("relay.FuseOps.max_depth", DEFAULT_MAX_DEPTH))
        out, groups = fuse_ops(func, level, max_depth)
        record_stat("fused groups", groups)
        return out

    return function_pass(transform, opt_level=0, name="FuseOps", required=["InferType"],
                         needs=["typed"], establishes=["fused"])

"""FuseOps: group operators into ``Primitive=1`` functions by TVM's post-dominator algorithm.

1. A forward dataflow graph of the function is built in post-DFS order; every edge carries the
   consumer's op pattern (a broadcast edge whose shapes match counts as elementwise).
2. Each node's immediate post-dominator is the lowest common ancestor of its consumers.
3. Three phases fuse each node into its post-dominator when every node on the paths between
   them satisfies the phase's pattern rule (anchor ops absorb elementwise epilogues first, then
   injective ops fuse, then injective ops join tuples already fused into injective consumers).
4. Each group becomes a function whose params (``p0``, ``p1``, ...) are its outside inputs in the
   order a left-to-right depth-first walk from the group's root meets them.
Steps 2-3 are the shared partitioner (minitvm.transform.graph_partitioner, also Relax's).
Everything is iterative; a group never holds more than ``relay.FuseOps.max_depth`` nodes
nor inlines to more than ``graph_partitioner.MAX_INLINED`` op copies.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ...transform.graph_partitioner import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    TUPLE,
    GraphNode,
    partition_graph,
)
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from ..scoped_functor import ScopedMutator, ScopedVisitor
from .function_pass import function_pass

_SCALAR_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})
DEFAULT_MAX_DEPTH = 256


def _numel(t) -> int | None:
    n = 1
    for d in t.shape:
        if not isinstance(d, int):
            try:
                d = int(d)
            except (TypeError, ValueError):
                return None
        n *= d
    return n


def _replicating_take(call, data_type, out_type) -> bool:
    """Whether ``call`` is a ``take`` reading each element of its data several times over
    (overlapping windows: ``Tensor.unfold`` with size > step, a dynamic-conv LM's K taps):
    fusing the data's producer into it would recompute that producer once per copy (a GLU's
    sigmoid 15 times for 15 taps), so its data edge is opaque and the producer runs once; the
    take still fuses into its consumers, and cheap copies of at most twice the data fuse as
    before."""
    if not (isinstance(call.op, Op) and call.op.name == "take"):
        return False
    if not (isinstance(data_type, TensorType) and isinstance(out_type, TensorType)):
        return False
    n_in, n_out = _numel(data_type), _numel(out_type)
    return n_in is not None and n_out is not None and n_out > 2 * n_in


# ops reading their data argument at positions computed from another argument, several taps an
# output element (grid_sample: 4 corners in 2-D, 8 in 3-D, per channel): fused into them, the
# data's producer would run once per tap, and a chain of them (VoxelMorph's scaling and squaring,
# v + grid_sample(v, id + v) four times over) would nest 8^k copies of the first producer into
# one kernel. Their data edge is opaque: the producer runs once; the grid still fuses (the 2-D
# importers materialize the data rows the same way, by stop_fusion)
_TAPPED_DATA_OPS = frozenset({"image.grid_sample"})

# elementwise ops computed by a polynomial or series (tens of instructions an element, far above
# a load): recomputing them once per copy of a broadcast costs more than writing their smaller
# result once. sqrt / rsqrt are single instructions, as cheap as the divide they feed (a norm's
# scale broadcast over its rows stays fused, as before)
_COSTLY_ELEMWISE = frozenset({
    "exp", "log", "log1p", "expm1", "log2", "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "asin", "acos", "atan", "asinh", "acosh", "atanh", "atan2", "sigmoid", "erf", "power",
    "fast_exp", "fast_tanh", "fast_erf"})
_COSTLY_LOOKBACK = 8  # producers looked at behind a broadcast argument (a constant, not per graph)


def _replicated_costly(arg, arg_type, out_type) -> bool:
    """Whether a broadcast consumer copies ``arg`` more than twice over (a RotatE relation's
    rotation (b, 1, d) against (b, k, d) candidates) and ``arg`` is computed by a short
    elementwise chain holding a transcendental (``cos`` / ``sin``, ``exp``, ...): fused, that
    chain would run once per copy (k times, for every reader), so the edge is opaque and the
    chain runs once at its own size. A cheap chain (adds, multiplies) or an argument copied at
    most twice still fuses. Looks at most ``_COSTLY_LOOKBACK`` producers back."""
    if not (isinstance(arg_type, TensorType) and isinstance(out_type, TensorType)):
        return False
    n_in, n_out = _numel(arg_type), _numel(out_type)
    if n_in is None or n_out is None or n_out <= 2 * n_in:
        return False
    frontier, looked = [arg], 0
    while frontier and looked < _COSTLY_LOOKBACK:
        e = frontier.pop()
        looked += 1
        if not (isinstance(e, Call) and isinstance(e.op, Op)):
            continue
        if e.op.name in _COSTLY_ELEMWISE:
            return True
        p = e.op.get_attr("TOpPattern")
        if p is not None and int(p) <= BROADCAST:
            frontier.extend(e.args)
    return False


class _GraphBuilder(ScopedVisitor):
    """Builds the indexed forward graph: nodes in post-DFS order with pattern-labelled edges."""

    def __init__(self):
        super().__init__()
        self.nodes: dict = {}
        self.order: list[GraphNode] = []
        self.patterns: dict = {}  # op -> its TOpPattern (asked per call)

    def _node(self, e) -> GraphNode:
        n = self.nodes.get(e)
        if n is None:
            n = self.nodes[e] = GraphNode(e)
        return n

    def _edge(self, e, parent, pattern):
        if type(e) is Op:
            return
        n = self.nodes.get(e)
        if n is None:
            n = self.nodes[e] = GraphNode(e)
        if parent is None:
            n.extern_ref = True
        else:
            n.outputs.append((parent, pattern))

    def _add(self, e, pattern=None):
        n = self.nodes.get(e)
        if n is None:
            n = self.nodes[e] = GraphNode(e)
        if pattern is not None:
            n.pattern = pattern
        order = self.order
        n.index = len(order)
        order.append(n)

    def build(self, expr) -> list | None:
        """Build the graph of ``expr``; returns the expressions in the order the visitor met
        them when ``expr`` is a function of op calls, tuples, field reads, variables and
        constants only (the nodes are then recorded in one loop over that order, with the
        hooks' own edge rules, instead of through the visitor's driver), else None."""
        order = _flat_order(expr)
        if order is None:
            self.visit(expr)
            return None
        edge, add = self._edge, self._add
        for p in expr.params:  # (gen_function's prologue)
            edge(p, None, OPAQUE)
        edge(expr.body, None, OPAQUE)
        for e in order:
            t = type(e)
            if t is Call:
                add(e, self._call_edges(e))
            elif t is Tuple:
                self._tuple_edges(e)
                add(e, TUPLE)
            elif t is TupleGetItem:
                add(e, self._getitem_edges(e))
            elif t is Constant:
                self.visit_constant(e)
            else:  # a variable
                add(e)
        add(expr)
        order.append(expr)
        return order

    def gen_function(self, fn):
        if fn.get_attr("Primitive", 0) or fn.get_attr("Compiler"):
            self._add(fn)
            return
        for p in fn.params:
            self._edge(p, None, OPAQUE)
        self._edge(fn.body, None, OPAQUE)
        yield from self.base_gen_function(fn)
        self._add(fn)

    def visit_constant(self, c):
        scalar = c.data.ndim == 0 and c.data.dtype in _SCALAR_DTYPES
        self._add(c, ELEMWISE if scalar else OPAQUE)

    def _call_edges(self, call) -> int:
        """The call's pattern, after its operands' edges (labelled by it) are recorded."""
        nodes = self.nodes
        node = nodes.get(call)
        if node is None:
            node = nodes[call] = GraphNode(call)
        op = call.op
        if isinstance(op, Op):
            pattern = self.patterns.get(op)
            if pattern is None:
                pattern = self.patterns[op] = _op_pattern(op)
        else:
            pattern = OPAQUE
            self._edge(op, None, OPAQUE)
        rtype = call._checked_type
        take = isinstance(op, Op) and op.name == "take"  # (_replicating_take's first test)
        tapped = isinstance(op, Op) and op.name in _TAPPED_DATA_OPS
        broadcast = pattern == BROADCAST
        for i, a in enumerate(call.args):
            edge = pattern
            if i == 0 and tapped:
                edge = OPAQUE
            elif broadcast or take:
                at = a._checked_type
                if (broadcast and isinstance(at, TensorType)
                        and isinstance(rtype, TensorType) and at.shape == rtype.shape):
                    edge = ELEMWISE
                elif i == 0 and take and _replicating_take(call, at, rtype):
                    edge = OPAQUE
                elif broadcast and _replicated_costly(a, at, rtype):
                    edge = OPAQUE
            if type(a) is not Op:  # (``_edge`` with a consumer)
                n = nodes.get(a)
                if n is None:
                    n = nodes[a] = GraphNode(a)
                n.outputs.append((node, edge))
        return pattern

    def visit_call(self, call):
        pattern = self._call_edges(call)
        super().visit_call(call)
        self._add(call, pattern)

    def _tuple_edges(self, tup) -> None:
        node = self._node(tup)
        for f in tup.fields:
            if isinstance(f._checked_type, TensorType):
                self._edge(f, node, INJECTIVE)
            else:
                self._edge(f, None, OPAQUE)

    def visit_tuple(self, tup):
        self._tuple_edges(tup)
        super().visit_tuple(tup)
        self._add(tup, TUPLE)

    def _getitem_edges(self, op) -> int | None:
        """The field read's pattern (None: opaque, its tuple is not all tensors), after its
        edge is recorded."""
        tt = op.tuple_value._checked_type
        non_tensor = not isinstance(tt, TupleType) or any(
            not isinstance(f, TensorType) for f in tt.fields)
        if non_tensor:
            self._edge(op.tuple_value, None, OPAQUE)
            return None
        self._edge(op.tuple_value, self._node(op), INJECTIVE)
        return INJECTIVE

    def visit_tuple_getitem(self, op):
        pattern = self._getitem_edges(op)
        super().visit_tuple_getitem(op)
        self._add(op, pattern)

    def visit_var(self, v):
        self._add(v)

    def visit_global_var(self, g):
        self._add(g)

    def visit_constructor(self, c):
        self._add(c)

    def gen_let(self, let):
        chain, node = [], let
        while isinstance(node, Let) and node not in self.memo_map:
            chain.append(node)
            self._edge(node.var, None, OPAQUE)
            self._edge(node.value, None, OPAQUE)
            node = node.body
        self._edge(node, None, OPAQUE)
        yield from self.base_gen_let(let)
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

    def gen_match(self, m):
        yield from self.base_gen_match(m)
        self._extern_children(m, [m.data] + [c.rhs for c in m.clauses])


_FLAT_KINDS = frozenset({Call, Tuple, TupleGetItem, Var, Constant})


def _op_pattern(op) -> int:
    p = op.get_attr("TOpPattern")
    return OPAQUE if p is None else int(p)


def _flat_order(fn) -> list | None:
    """The nodes of a function of op calls, tuples, field reads, variables and constants in
    the order the scoped visitors' driver visits them (its parameters, then a left-to-right
    depth-first post-order of its body, each node once; the function itself left out), or None
    for any other expression or a function holding anything else."""
    if type(fn) is not Function or fn.get_attr("Primitive", 0) or fn.get_attr("Compiler"):
        return None
    order: list = []
    seen: set = set()
    for p in fn.params:
        if p not in seen:
            seen.add(p)
            order.append(p)
    kinds = _FLAT_KINDS
    stack = [fn.body]
    while stack:
        node = stack[-1]
        if node in seen:
            stack.pop()
            continue
        t = type(node)
        if t is Call:
            if type(node.op) is not Op:
                return None
            kids = node.args
        elif t is Tuple:
            kids = node.fields
        elif t is TupleGetItem:
            kids = (node.tuple_value,)
        elif t in kinds:
            kids = ()
        else:
            return None
        pending = [c for c in kids if c not in seen]
        if pending:
            for c in pending:
                if type(c) is Op:  # (an op as an operand: the visitors' own path)
                    return None
            pending.reverse()
            stack.extend(pending)
            continue
        seen.add(node)
        order.append(node)
        stack.pop()
    return order


def _partition(expr, fuse_opt_level: int, max_depth: int) -> tuple[dict, list | None]:
    """``partition``'s map and, for a flat function, its nodes in visiting order."""
    builder = _GraphBuilder()
    flat = builder.build(expr)
    order = builder.order
    groups = partition_graph(order, fuse_opt_level, max_depth)
    return {n.ref: groups[n.index].find_root() for n in order}, flat


def partition(expr, fuse_opt_level: int, max_depth: int = DEFAULT_MAX_DEPTH) -> dict:
    """Map each fusable expression to the root Group it belongs to."""
    return _partition(expr, fuse_opt_level, max_depth)[0]


class _Fuser(ScopedMutator):
    """Rewrites each group rooted at a call (or tuple-get-item) into a call of a new function."""

    def __init__(self, gmap):
        super().__init__()
        self.gmap = gmap
        self.num_groups = 0
        self._noncomputational: dict = {}  # op -> its TNonComputational flag (one pass run)

    def visit_in_order(self, order: list) -> None:
        """Visit a flat function's nodes (``_flat_order``: every operand before its users, as
        the driver meets them) by calling each node's hook in turn, without the driver's
        per-node operand lists; the function itself is left to ``visit``."""
        memo = self.memo_map
        hooks = {Call: self.visit_call, Tuple: self.visit_tuple,
                 TupleGetItem: self.visit_tuple_getitem, Var: self.visit_var,
                 Constant: self.visit_constant}
        for e in order[:-1]:
            memo[e] = hooks[type(e)](e)

    def _member(self, e, group) -> bool:
        return self.gmap.get(e) is group and not isinstance(e, Var)

    def gen_function(self, fn):
        if fn.get_attr("Primitive", 0):
            return fn
        return (yield from self.base_gen_function(fn))

    def visit_call(self, call):
        if isinstance(call.op, Op):
            if call.op.name == "annotation.stop_fusion":
                return self.visit(call.args[0])
            noncomp = self._noncomputational.get(call.op)
            if noncomp is None:
                noncomp = self._noncomputational[call.op] = bool(
                    call.op.get_attr("TNonComputational"))
            if noncomp:  # on_device: stays a plain call (TVM)
                return super().visit_call(call)
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
        gmap, visit = self.gmap, self.visit

        def outside(a):
            outer = visit(a)
            p = params.get(outer)
            if p is None:
                p = params[outer] = Var(f"p{len(params)}", a._checked_type)
                args.append(outer)
            return p

        # emulate a left-to-right recursive walk so params are numbered in TVM's order; each
        # frame keeps the node's new operands as the walk meets them (each operand is looked
        # at once: a member is built before its user resumes)
        has_call = False
        stack = [(root, _operands(root), 0, [])]
        while stack:
            node, ops, i, vals = stack.pop()
            n = len(ops)
            while i < n:
                a = ops[i]
                got = built.get(a)
                if got is None:
                    t = type(a)
                    if t is Call and type(a.op) is Op and a.op.name == "annotation.stop_fusion":
                        got = outside(a)
                    elif t is not Var and gmap.get(a) is group:
                        if t is not Constant:
                            stack.append((node, ops, i, vals))
                            stack.append((a, _operands(a), 0, []))
                            break
                        got = a
                    else:
                        got = outside(a)
                vals.append(got)
                i += 1
            else:
                t = type(node)
                if t is Call:
                    has_call = True
                    built[node] = Call(node.op, vals, node.attrs, node.type_args, node.span)
                elif t is Tuple:
                    built[node] = Tuple(vals, node.span)
                else:
                    built[node] = TupleGetItem(vals[0], node.index, node.span)
        body = built[root]
        if not has_call:
            # a group of tuples and field reads only (``(a, b, c).0`` at opt_level 1, before any
            # pass folded it): nothing to compile, so no function -- the reads stay inline. A
            # Primitive=0 function here was a call the graph executor cannot run ("cannot run
            # Function expressions"; build-matrix fuzzer, seed 600086)
            return _inline(body, dict(zip(params.values(), args, strict=True)))
        fn = Function(list(params.values()), body, root._checked_type, None, {"Primitive": 1})
        self.num_groups += 1
        return Call(fn, args, None, None, root.span)


def _operands(e) -> tuple:
    """The operands of a group member (a call, a tuple or a field read)."""
    t = type(e)
    if t is Call:
        return e.args
    if t is Tuple:
        return e.fields
    return (e.tuple_value,)


def _inline(body, values: dict):
    """``body`` (tuples, field reads, parameters and constants: a call-free group) with each
    parameter replaced by its value in ``values``; a worklist, not recursion."""
    done: dict = {}
    stack = [body]
    while stack:
        node = stack[-1]
        if node in done:
            stack.pop()
            continue
        if isinstance(node, Var):
            done[node] = values.get(node, node)
            stack.pop()
            continue
        kids = list(node.fields) if isinstance(node, Tuple) else \
            [node.tuple_value] if isinstance(node, TupleGetItem) else []
        todo = [k for k in kids if k not in done]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        if isinstance(node, Tuple):
            done[node] = Tuple([done[k] for k in kids], node.span)
        elif isinstance(node, TupleGetItem):
            done[node] = TupleGetItem(done[kids[0]], node.index, node.span)
        else:  # a constant
            done[node] = node
    return done[body]


def fuse_ops(func, fuse_opt_level: int = 2, max_depth: int = DEFAULT_MAX_DEPTH):
    """Fuse one (type-checked) function; returns the new function and the number of groups."""
    gmap, flat = _partition(func, fuse_opt_level, max_depth)
    fuser = _Fuser(gmap)
    if flat is not None:
        fuser.visit_in_order(flat)
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

"""The operator-fusion partitioner shared by Relay's and Relax's FuseOps (TVM's GraphPartitioner).

A dialect builds an indexed forward graph (``GraphNode``s in post-DFS order, each edge labelled
with the consumer's op pattern) and calls :func:`partition_graph`:

1. each node's immediate post-dominator is the lowest common ancestor of its consumers;
2. three phases fuse a node into its post-dominator when every node on the paths between them
   satisfies the phase's rule (anchor ops absorb elementwise epilogues, then injective ops
   fuse, then injective ops join tuples already fused into injective consumers);
3. the result is one union-find ``Group`` per node (``find_root()`` gives the group).

Everything is iterative; no group grows past ``max_depth`` nodes, nor past ``max_inlined`` op
copies once its kernel inlines every fused producer as a copy per use (see ``MAX_INLINED``:
minitvm's addition, TVM has no such bound).
"""

from __future__ import annotations

from ..ir.op import OpPattern

__all__ = ["GraphNode", "Group", "partition_graph", "post_dominators",
           "ELEMWISE", "BROADCAST", "INJECTIVE", "COMM_REDUCE", "OUT_EWISE", "TUPLE", "OPAQUE",
           "MAX_INLINED"]

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_EWISE, TUPLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE,
                                         OpPattern.TUPLE, OpPattern.OPAQUE)

# A fused kernel inlines each producer as a copy per use, so a group's expression can grow
# exponentially in its depth (an unrolled binary search: 132,898 op copies from 70 ops); the
# biggest group of the benchmark models inlines 142.
MAX_INLINED = 256


class GraphNode:
    """A node of the forward graph: the IR object it stands for, its position in post-DFS
    order, its op pattern, its consumers as ``(node, edge_pattern)`` and whether something
    outside the graph refers to it (then it is never fused into a consumer)."""

    __slots__ = ("ref", "index", "pattern", "outputs", "extern_ref")

    def __init__(self, ref):
        self.ref = ref
        self.index = -1
        self.pattern = OPAQUE
        self.outputs: list[tuple[GraphNode, int]] = []
        self.extern_ref = False


class _DomNode:
    __slots__ = ("gnode", "parent", "depth", "pattern")

    def __init__(self, gnode):
        self.gnode = gnode
        self.parent = None
        self.depth = 0
        self.pattern = OPAQUE


def post_dominators(order: list[GraphNode]) -> list[_DomNode]:
    """The post-dominator tree: for each node its immediate post-dominator and the strongest
    pattern on the paths to it."""
    dom = [_DomNode(n) for n in order]
    for i in range(len(order) - 1, -1, -1):
        n, d = order[i], dom[i]
        if n.extern_ref or not n.outputs:
            d.parent, d.depth, d.pattern = None, 1, OPAQUE
            continue
        outs = n.outputs
        first, epat = outs[0]
        parent = dom[first.index]
        pattern = epat if epat > ELEMWISE else ELEMWISE
        if len(outs) > 1:
            for out, epat in outs[1:]:
                parent, pattern = _lca(parent, dom[out.index], pattern)
                if epat > pattern:
                    pattern = epat
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


class Group:
    """A union-find set of fused nodes; the root holds the group's pattern, its root node
    (``root_ref``, the post-dominating sink), its anchor and its size."""

    __slots__ = ("parent", "pattern", "root_ref", "anchor_ref", "num_nodes", "attrs")

    def __init__(self, pattern, ref):
        self.parent = None
        self.pattern = pattern
        self.root_ref = ref
        self.anchor_ref = ref if pattern == OUT_EWISE else None
        self.num_nodes = 1
        self.attrs: dict = {}

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node.parent is not None and node.parent is not root:  # path compression
            node.parent, node = root, node.parent
        return root


class _Partitioner:
    """The three fusion phases over one graph. What is cached, and why each cache is exact:

    * ``reach[i]``, a lower bound on the nodes strictly between node i and its post-dominator
      (the longest path between them): a node whose group would count more than ``max_depth``
      without any merge is skipped without a walk. A ladder (each node feeding the next two)
      has the program's last node as every node's post-dominator: walking 256 nodes per node
      and phase was its whole partitioning time.
    * ``too_big[i]``: the count fusing node i into its post-dominator would give only grows
      (group sizes only grow), so once past ``max_depth`` it stays past; later phases skip it.
    * ``inlined[i]``: each node's inlined size within its group, updated for exactly the
      nodes whose in-group operands change when a fusion commits."""

    def __init__(self, order, max_depth, max_inlined):
        self.order = order
        self.max_depth = max_depth
        self.max_inlined = max_inlined
        self.groups = [Group(n.pattern, n.ref) for n in order]
        self.inputs: list[list[GraphNode]] = [[] for _ in order]  # one entry per use
        for n in order:
            for o, _ in n.outputs:
                if o.index >= 0:
                    self.inputs[o.index].append(n)
        self.inlined = [1] * len(order)  # each node's inlined size within its group
        self.too_big = [False] * len(order)
        self.reach: list[int] = []

    def _lower_bounds(self, dom) -> list[int]:
        """``reach[i]``: the longest path from node i to its post-dominator in nodes, the
        post-dominator excluded. The nodes on paths from a consumer o of i to o's own
        post-dominator all lie between i and i's (which post-dominates o as well), and o does
        not lie between o and its post-dominator, so reach[i] >= 1 + reach[o]."""
        order, n_nodes = self.order, len(self.order)
        reach = [0] * n_nodes
        for i in range(n_nodes - 1, -1, -1):
            parent = dom[i].parent
            if parent is None:
                continue
            sink, best = parent.gnode, 0
            for o, _ in order[i].outputs:
                if o is not sink:
                    j = o.index
                    if j <= i:  # (not a post-DFS order: no bound)
                        best = 0
                        break
                    if reach[j] >= best:
                        best = reach[j] + 1
            reach[i] = best
        return reach

    @staticmethod
    def _paths(src, sink):
        """Nodes on all paths from src's consumers up to and including sink (iterative DFS, a
        generator: the checks below stop at the first node that decides them, so a node whose
        post-dominator is far away, e.g. a recurrent state read by every later step, costs
        O(max_depth) and not the length of the program)."""
        seen, stack = set(), [o for o, _ in src.outputs]
        while stack:
            n = stack.pop()
            if n.index in seen:
                continue
            seen.add(n.index)
            yield n
            if n is not sink:
                stack.extend(o for o, _ in n.outputs)

    def _check_path(self, src, sink, fcond) -> bool:
        groups = self.groups
        for n in self._paths(src, sink):
            if not fcond(groups[n.index].find_root().pattern, n is sink):
                return False
        return True

    def _within_depth(self, src, sink) -> bool:
        """Whether the group fusing src into sink makes holds at most ``max_depth`` nodes:
        the sink's group, src's and each node's own group between them (TVM's count; the
        walk stops once the count is past the bound, all the caller asks)."""
        i = src.index
        if self.too_big[i]:
            return False
        groups, limit = self.groups, self.max_depth
        total = groups[sink.index].find_root().num_nodes + groups[i].num_nodes
        if total + self.reach[i] <= limit:
            outs = src.outputs
            if len(outs) == 1 and outs[0][0] is sink:
                return True  # (a single consumer: nothing between them)
            seen, stack = set(), [o for o, _ in outs]
            while stack:
                n = stack.pop()
                if n.index in seen:
                    continue
                seen.add(n.index)
                if n is not sink:
                    total += groups[n.index].num_nodes
                    if total > limit:
                        break
                    stack.extend(o for o, _ in n.outputs)
            else:
                return True
        self.too_big[i] = True
        return False

    def _inlined_with(self, src, sink) -> dict | None:
        """``index -> inlined size`` of the nodes whose size fusing src into sink changes (the
        nodes between them, the sink and its group's nodes above it), or None when one would
        pass ``max_inlined``. A node's inlined size is 1 plus its in-group operands' sizes, one
        per use: the expression a kernel gets when every fused producer is inlined as a copy,
        which doubles with each level of a chain whose ops read their producers twice."""
        groups = self.groups
        sink_root = groups[sink.index].find_root()
        roots = {groups[src.index].find_root(), sink_root}  # (the groups that merge)
        affected = {}
        for n in self._paths(src, sink):
            affected[n.index] = n
            roots.add(groups[n.index].find_root())
        stack = [sink]
        while stack:  # (the sink's group members above it: their operands' sizes change)
            for o, _ in stack.pop().outputs:
                if o.index not in affected and groups[o.index].find_root() is sink_root:
                    affected[o.index] = o
                    stack.append(o)
        sizes: dict[int, int] = {}
        inlined, limit, inputs = self.inlined, self.max_inlined, self.inputs
        for i in sorted(affected):
            total = 1
            for a in inputs[i]:
                j = a.index
                if groups[j].find_root() in roots:
                    total += sizes.get(j, inlined[j])
            if total > limit:
                return None
            sizes[i] = total
        return sizes

    def _try_commit(self, src, sink):
        """Fuse src into sink unless the group's inlined expression would pass the limit."""
        sizes = self._inlined_with(src, sink)
        if sizes is None:
            return
        self._commit(src, sink)
        inlined = self.inlined
        for i, v in sizes.items():
            inlined[i] = v

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

    def run(self, dom, phase):
        """One phase. The cheap tests on patterns come first and the size bound last; each
        test is free of side effects, so their order does not change what fuses."""
        groups, order = self.groups, self.order
        for nid in range(len(order)):
            group = groups[nid]
            pattern = group.pattern
            if pattern == OPAQUE:
                continue
            dnode = dom[nid]
            if dnode.parent is None:
                continue
            sink = dnode.parent.gnode
            parent_group = groups[sink.index]
            if phase == 2:
                if pattern > INJECTIVE or parent_group.pattern != TUPLE:
                    continue
                if _root(parent_group).pattern > INJECTIVE:  # (a tuple root included)
                    continue
                # an opaque edge on the way (a replicating take's data, a costly broadcast
                # argument) keeps the node out, as in phase 1: the path check sees only the
                # groups' patterns, not the edges'
                if dnode.pattern == OPAQUE:
                    continue
                cond = _injective_cond
            else:
                if parent_group.pattern == TUPLE:
                    continue
                if _root(group) is _root(parent_group):
                    continue
                if pattern == OUT_EWISE:
                    if phase != 0 or dnode.pattern != ELEMWISE:
                        continue
                    cond = _elemwise_sink_cond
                elif pattern <= BROADCAST:
                    if dnode.pattern > INJECTIVE and dnode.pattern != COMM_REDUCE:
                        continue
                    cond = _broadcast_cond
                elif pattern == INJECTIVE or pattern == TUPLE:
                    # (an opaque path pattern: some edge on the way is opaque, as a replicating
                    # take's data edge is; before such edges existed the path check refused
                    # every such case anyway, at an opaque node)
                    if phase != 1 or dnode.pattern == OPAQUE:
                        continue
                    cond = _injective_cond
                else:
                    continue
            gnode = order[nid]
            outs = gnode.outputs
            if len(outs) == 1 and outs[0][0] is sink:
                self._fuse_into_consumer(gnode, sink, cond)
            elif self._within_depth(gnode, sink) and self._check_path(gnode, sink, cond):
                self._try_commit(gnode, sink)

    def _fuse_into_consumer(self, src, sink, cond):
        """The common case, a node whose one use is its post-dominator: nothing lies between
        them, so the walks reduce to the two groups (the same decisions as the general path)."""
        groups = self.groups
        i, j = src.index, sink.index
        sink_root = _root(groups[j])
        if sink_root.num_nodes + groups[i].num_nodes > self.max_depth:
            self.too_big[i] = True
            return
        if not cond(sink_root.pattern, True):
            return
        if sink_root.num_nodes == 1:  # (the sink alone: only its own size changes)
            src_root = _root(groups[i])
            inlined, total = self.inlined, 1
            for a in self.inputs[j]:
                r = _root(groups[a.index])
                if r is src_root or r is sink_root:
                    total += inlined[a.index]
            if total > self.max_inlined:
                return
            self._merge(groups[i], sink_root)
            inlined[j] = total
        else:
            self._try_commit(src, sink)


def _root(group: Group) -> Group:
    """``group.find_root()``, without the call for a root (most groups asked about)."""
    return group if group.parent is None else group.find_root()


def _injective_cond(kind, is_sink) -> bool:
    return kind <= INJECTIVE


def _elemwise_sink_cond(kind, is_sink) -> bool:
    return kind <= BROADCAST


def _broadcast_cond(kind, is_sink) -> bool:
    # injective ops on parallel branches may join an elementwise/broadcast source; the sink
    # may already be fused into an out-elementwise-fusable (or reduction) group
    return kind <= INJECTIVE if not is_sink else kind <= OUT_EWISE


def partition_graph(order: list[GraphNode], fuse_opt_level: int, max_depth: int,
                    max_inlined: int = MAX_INLINED) -> list[Group]:
    """Fuse the graph ``order`` (nodes in post-DFS order, ``index`` set); one Group per node.

    ``fuse_opt_level`` 0 fuses nothing (every node its own group); no group holds more than
    ``max_depth`` nodes nor inlines to more than ``max_inlined`` op copies."""
    parts = _Partitioner(order, max_depth, max_inlined)
    if fuse_opt_level != 0:
        dom = post_dominators(order)
        parts.reach = parts._lower_bounds(dom)
        for phase in range(3):
            parts.run(dom, phase)
    return parts.groups

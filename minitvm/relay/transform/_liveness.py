"""Control-flow graph, use/def and liveness of a function in A-normal form (TVM v0.19's
liveness_analysis for AnnotateUsedMemory and ManifestLifetimes).

Each let binding is a CFG node, and so is the expression ending a block. A binding whose value
is an ``if`` (or ``match``) ends its block: the branches (clauses) start blocks of their own,
which join into a new block holding the rest of the chain. A binding uses the variables its value
names directly (through calls, tuples and projections; an ``if`` uses its condition, a ``match``
its data; function bodies are not looked into) and defines its variable. Liveness is the usual
backward fixpoint: ``in = use | (out - def)``, ``out`` = union of the successors' ``in``.
Everything is iterative: nested branches and long chains never recurse.
"""

from __future__ import annotations

from collections import deque

from ..adt import Match
from ..expr import Call, Function, If, Let, Tuple, TupleGetItem, Var

__all__ = ["ControlFlowGraph", "liveness", "strip_on_device", "var_uses"]


def strip_on_device(e):
    """``e`` without the ``on_device`` annotations wrapping it."""
    while type(e) is Call and getattr(e.op, "name", None) == "on_device":
        e = e.args[0]
    return e


def var_uses(e) -> list:
    """The variables ``e`` uses directly (TVM's VarUseCollector), each once, in first-use order."""
    found: dict = {}
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is Var:
            found.setdefault(x, None)
        elif t is Call:
            stack.extend(reversed((x.op, *x.args)))
        elif t is Tuple:
            stack.extend(reversed(x.fields))
        elif t is TupleGetItem:
            stack.append(x.tuple_value)
        elif t is If:
            stack.append(x.cond)
        elif t is Match:
            stack.append(x.data)
    return list(found)


class _Block:
    __slots__ = ("nodes", "succ", "pred")

    def __init__(self):
        self.nodes: list = []
        self.succ: list = []
        self.pred: list = []


class CFGNode:
    """One binding (a Let) or block-ending expression, with its position in its block."""

    __slots__ = ("expr", "block", "index")

    def __init__(self, expr, block: _Block):
        self.expr = expr
        self.block = block
        self.index = len(block.nodes)
        block.nodes.append(self)

    def succ(self) -> list:
        if self.index + 1 < len(self.block.nodes):
            return [self.block.nodes[self.index + 1]]
        return [b.nodes[0] for b in self.block.succ if b.nodes]

    def pred(self) -> list:
        if self.index > 0:
            return [self.block.nodes[self.index - 1]]
        return [b.nodes[-1] for b in self.block.pred if b.nodes]


class ControlFlowGraph:
    """The CFG of a function body: ``nodes`` in creation order, ``let_map`` Let -> node."""

    def __init__(self, func: Function, what: str):
        body = func.body
        if func.attrs and func.attrs.get("Closure") is not None and type(body) is Function:
            body = body.body  # a closure's inner function, as TVM unwraps it
        self.nodes: list = []
        self.let_map: dict = {}
        self._what = what
        self._build(body)

    def _link(self, a: _Block, b: _Block) -> None:
        a.succ.append(b)
        b.pred.append(a)

    def _build(self, body) -> None:
        work = [(body, _Block())]
        while work:
            expr, block = work.pop()
            pending = []  # branch work to run before the rest of this chain
            while type(expr) is Let:
                node = CFGNode(expr, block)
                self.nodes.append(node)
                self.let_map[expr] = node
                value = strip_on_device(expr.value)
                if type(value) in (If, Match):
                    arms = [value.true_branch, value.false_branch] if type(value) is If \
                        else [c.rhs for c in value.clauses]
                    join = _Block()
                    for arm in arms:
                        arm_block = _Block()
                        self._link(block, arm_block)
                        self._link(arm_block, join)
                        pending.append((arm, arm_block))
                    # the rest of the chain continues in the join block, after the arms
                    work.append((expr.body, join))
                    work.extend(reversed(pending))
                    pending = []
                    break
                expr = expr.body
            else:
                if type(expr) is Function:
                    raise ValueError(f"{self._what}: nested functions are not supported by "
                                     "the control-flow analysis")
                if type(expr) in (If, Match):
                    raise ValueError(f"{self._what}: if and match expressions must be bound to "
                                     "variables (run ToANormalForm first)")
                self.nodes.append(CFGNode(expr, block))


def liveness(cfg: ControlFlowGraph) -> tuple[dict, dict, dict]:
    """``(use, live_in, live_out)`` per CFG node (sets of Vars)."""
    use, define = {}, {}
    for n in cfg.nodes:
        if type(n.expr) is Let:
            use[n] = set(var_uses(n.expr.value))
            define[n] = n.expr.var
        else:
            use[n] = set(var_uses(n.expr))
            define[n] = None
    live_in = {n: set() for n in cfg.nodes}
    live_out = {n: set() for n in cfg.nodes}
    work = deque(reversed(cfg.nodes))
    while work:
        n = work.popleft()
        new_out = set()
        for s in n.succ():
            new_out |= live_in[s]
        new_in = use[n] | {v for v in new_out if v is not define[n]}
        if new_in != live_in[n] or new_out != live_out[n]:
            live_in[n], live_out[n] = new_in, new_out
            work.extend(n.pred())
    return use, live_in, live_out

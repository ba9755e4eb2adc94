"""Iterative traversal helpers for TIR: children, post-order walks, substitution.

Nothing here recurses in Python: expressions and statements are walked with explicit stacks,
so a 100,000-statement SeqStmt or a very deep expression is fine at the default recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from . import expr as E
from . import stmt as S

_EXPR_FIELDS: dict[type, tuple[str, ...]] = {
    E.Cast: ("value",), E.Not: ("a",), E.Select: ("condition", "true_value", "false_value"),
    E.Let: ("value", "body"), E.Ramp: ("base", "stride"), E.Broadcast: ("value",),
}
_LEAVES = (E.IntImm, E.FloatImm, E.StringImm, E.Var, E.Any)


def _no_children(e) -> tuple:
    return ()


def _binary_children(e) -> tuple:
    return (e.a, e.b)


def _indices(e) -> tuple:
    return e.indices


def _call_args(e) -> tuple:
    return e.args


def _reduce_children(e) -> tuple:
    return (*e.source, e.condition, *e.init)


def _children_getter(t: type) -> Callable:
    """How to read the sub-expressions of a node of type ``t`` (the cases of ``expr_children``,
    decided once per type: the walks below ask for every node of every kernel)."""
    if issubclass(t, E.BinaryOp):
        get = _binary_children
    elif issubclass(t, _LEAVES):
        get = _no_children
    elif issubclass(t, (E.BufferLoad, E.ProducerLoad)):
        get = _indices
    elif issubclass(t, E.Call):
        get = _call_args
    elif issubclass(t, E.Reduce):
        get = _reduce_children
    else:
        fields = _EXPR_FIELDS.get(t)
        if fields is None:
            get = _no_children
        elif len(fields) == 1:
            name = fields[0]

            def get(e, _name=name) -> tuple:
                return (getattr(e, _name),)
        else:
            def get(e, _fields=fields) -> tuple:
                return tuple(getattr(e, f) for f in _fields)
    _GETTERS[t] = get
    return get


_GETTERS: dict[type, Callable] = {}


def expr_children(e) -> tuple:
    """The direct sub-expressions of ``e``."""
    get = _GETTERS.get(type(e))
    if get is None:
        get = _children_getter(type(e))
    return get(e)


_SLOTS: dict[type, tuple[str, ...]] = {}
_UNSET = object()


def _slots_of(t: type) -> tuple[str, ...]:
    """Every data slot of ``t`` and its bases (read once per type: ``_copy`` runs for each
    rebuilt node of every kernel)."""
    names = _SLOTS.get(t)
    if names is None:
        names = _SLOTS[t] = tuple(slot for klass in t.__mro__
                                  for slot in getattr(klass, "__slots__", ())
                                  if slot != "__weakref__")
    return names


def _copy(node, **changes):
    new = object.__new__(type(node))
    for slot in _slots_of(type(node)):
        if slot in changes:
            setattr(new, slot, changes[slot])
        else:
            value = getattr(node, slot, _UNSET)
            if value is not _UNSET:
                setattr(new, slot, value)
    return new


def with_children(e, kids) -> E.PrimExpr:
    """``e`` rebuilt with new sub-expressions (``e`` itself when nothing changed)."""
    if all(a is b for a, b in zip(expr_children(e), kids)):
        return e
    return _rebuilt(e, kids)


def _rebuilt(e, kids) -> E.PrimExpr:
    """A copy of ``e`` with sub-expressions ``kids`` (in ``expr_children`` order)."""
    rebuild = _REBUILDERS.get(type(e)) or _rebuilder(type(e))
    return rebuild(e, kids)


def _rebuilder(t: type) -> Callable:
    """How to copy a node of type ``t`` with new sub-expressions (decided once per type)."""
    if issubclass(t, E.BinaryOp):
        rest = tuple(s for s in _slots_of(t) if s not in ("a", "b", "dtype"))

        def rebuild(e, kids, _rest=rest):
            # the hot case (every arithmetic node of a rewritten kernel): slots set directly
            new = object.__new__(type(e))
            new.a = kids[0]
            new.b = kids[1]
            new.dtype = e.dtype
            for slot in _rest:
                value = getattr(e, slot, _UNSET)
                if value is not _UNSET:
                    setattr(new, slot, value)
            return new
    elif issubclass(t, (E.BufferLoad, E.ProducerLoad)):
        def rebuild(e, kids):
            return _copy(e, indices=tuple(kids))
    elif issubclass(t, E.Call):
        def rebuild(e, kids):
            return _copy(e, args=tuple(kids))
    elif issubclass(t, E.Reduce):
        def rebuild(e, kids):
            n = len(e.source)
            return _copy(e, source=list(kids[:n]), condition=kids[n], init=list(kids[n + 1:]))
    else:
        fields = _EXPR_FIELDS[t]

        def rebuild(e, kids, _fields=fields):
            return _copy(e, **dict(zip(_fields, kids)))
    _REBUILDERS[t] = rebuild
    return rebuild


_REBUILDERS: dict[type, Callable] = {}


def post_order(root, seen: set[int] | None = None) -> Iterator:
    """Yield every distinct sub-expression of ``root``, children before parents (left to
    right; a node shared by several parents once, where the walk first reaches it).

    ``seen`` (ids of nodes already visited, e.g. by an earlier walk over another expression
    of the same program) is skipped, not walked into, and the nodes yielded are added to it.
    """
    getters = _GETTERS
    if seen is not None:
        if id(root) in seen:
            return
        seen.add(id(root))
    get = getters.get(type(root)) or _children_getter(type(root))
    if get is _no_children:  # a leaf: most loop bounds, indices and operands
        yield root
        return
    if seen is None:
        seen = {id(root)}
    mark = seen.add
    stack = [(root, iter(get(root)))]
    push, pop = stack.append, stack.pop
    while stack:
        node, kids = stack[-1]
        for c in kids:
            if id(c) in seen:
                continue
            mark(id(c))
            get = getters.get(type(c)) or _children_getter(type(c))
            if get is _no_children:
                yield c
                continue
            push((c, iter(get(c))))
            break
        else:
            pop()
            yield node


def transform_expr(root, fpost: Callable, memo: dict | None = None):
    """Rebuild ``root`` bottom-up; ``fpost(node)`` may return a replacement or None.

    ``memo`` maps ``id(old node)`` to its result; a node already there is taken as is (not
    walked into), so one memo shared by many calls rebuilds each shared sub-expression once.
    The walk is inlined here (no generator; the memo is the visited set): every rewrite of a
    kernel runs it over each node.
    """
    memo = {} if memo is None else memo
    rid = id(root)
    if rid in memo:
        return memo[rid]
    getters, lookup, rebuilders = _GETTERS, memo.get, _REBUILDERS
    kids = (getters.get(type(root)) or _children_getter(type(root)))(root)
    if not kids:
        rep = fpost(root)
        new = memo[rid] = root if rep is None else rep
        return new
    # a node is memoized when it is finished; in a DAG nothing on the stack is reached again
    # before then, so the memo doubles as the visited set
    stack = [(root, kids, iter(kids))]
    push, pop = stack.append, stack.pop
    while stack:
        node, kids, it = stack[-1]
        for c in it:
            cid = id(c)
            if cid in memo:
                continue
            ckids = (getters.get(type(c)) or _children_getter(type(c)))(c)
            if not ckids:
                rep = fpost(c)
                memo[cid] = c if rep is None else rep
                continue
            push((c, ckids, iter(ckids)))
            break
        else:
            pop()
            new = node
            new_kids = [lookup(id(k), k) for k in kids]
            for old, kid in zip(kids, new_kids):
                if old is not kid:
                    new = (rebuilders.get(type(node)) or _rebuilder(type(node)))(node, new_kids)
                    break
            rep = fpost(new)
            memo[id(node)] = new if rep is None else rep
    return memo[rid]


# --------------------------------------------------------------------------- statements
def stmt_children(s) -> tuple:
    """The direct sub-statements of ``s``."""
    if isinstance(s, S.SeqStmt):
        return s.seq
    if isinstance(s, S.IfThenElse):
        return (s.then_case,) if s.else_case is None else (s.then_case, s.else_case)
    if isinstance(s, S.BlockRealize):
        return (s.block,)
    if isinstance(s, S.Block):
        return (s.body,) if s.init is None else (s.init, s.body)
    body = getattr(s, "body", None)
    return () if body is None else (body,)


def _region_exprs(regions) -> list:
    out = []
    for br in regions:
        for r in br.region:
            out.extend((r.min, r.extent))
    return out


def stmt_exprs(s) -> tuple:
    """The expressions held directly by statement ``s``."""
    if isinstance(s, S.BufferStore):
        return (s.value, *s.indices)
    if isinstance(s, S.For):
        return (s.min, s.extent)
    if isinstance(s, (S.LetStmt,)):
        return (s.value,)
    if isinstance(s, (S.IfThenElse, S.AssertStmt)):
        return (s.condition,)
    if isinstance(s, (S.Evaluate, S.AttrStmt)):
        return (s.value,)
    if isinstance(s, S.Allocate):
        return (*s.extents, s.condition)
    if isinstance(s, S.BlockRealize):
        return (*s.iter_values, s.predicate)
    if isinstance(s, S.Block):
        doms = [x for iv in s.iter_vars for x in (iv.dom.min, iv.dom.extent)]
        return (*doms, *_region_exprs(s.reads), *_region_exprs(s.writes))
    return ()


def walk_stmts(root) -> Iterator:
    """Yield every statement under ``root`` in pre-order."""
    stack = [root]
    while stack:
        s = stack.pop()
        if s is None:
            continue
        yield s
        stack.extend(reversed(stmt_children(s)))


def post_order_visit(node, fvisit: Callable) -> None:
    """Call ``fvisit`` on every statement and expression under ``node``, children first."""
    if isinstance(node, E.PrimExpr):
        for e in post_order(node):
            fvisit(e)
        return
    seen: set[int] = set()
    stack = [(node, False)]
    while stack:
        s, ready = stack.pop()
        if ready:
            fvisit(s)
            continue
        stack.append((s, True))
        for c in reversed(stmt_children(s)):
            stack.append((c, False))
        for e in stmt_exprs(s):
            for sub in post_order(e, seen):  # what an earlier expression shared is skipped
                fvisit(sub)


def _rebuild_stmt(s, fe: Callable, kids: list):
    """``s`` with its expressions mapped by ``fe`` and sub-statements replaced by ``kids``."""
    if isinstance(s, S.SeqStmt):
        return s if all(a is b for a, b in zip(s.seq, kids)) else S.SeqStmt(kids)
    ch = {}
    if isinstance(s, S.BufferStore):
        ch = {"value": fe(s.value), "indices": tuple(fe(i) for i in s.indices)}
    elif isinstance(s, S.For):
        ch = {"min": fe(s.min), "extent": fe(s.extent), "body": kids[0]}
    elif isinstance(s, S.LetStmt):
        ch = {"value": fe(s.value), "body": kids[0]}
    elif isinstance(s, S.IfThenElse):
        ch = {"condition": fe(s.condition), "then_case": kids[0],
              "else_case": kids[1] if len(kids) > 1 else None}
    elif isinstance(s, (S.Evaluate,)):
        ch = {"value": fe(s.value)}
    elif isinstance(s, (S.AttrStmt,)):
        ch = {"value": fe(s.value), "body": kids[0]}
    elif isinstance(s, S.AssertStmt):
        ch = {"condition": fe(s.condition), "body": kids[0]}
    elif isinstance(s, S.Allocate):
        ch = {"extents": tuple(fe(e) for e in s.extents), "condition": fe(s.condition),
              "body": kids[0]}
    elif isinstance(s, S.DeclBuffer):
        ch = {"body": kids[0]}
    elif isinstance(s, S.BlockRealize):
        ch = {"iter_values": tuple(fe(v) for v in s.iter_values), "predicate": fe(s.predicate),
              "block": kids[0]}
    elif isinstance(s, S.Block):
        def region(rs):
            return tuple(S.BufferRegion(r.buffer, [E.Range.from_min_extent(fe(x.min),
                                                                           fe(x.extent))
                                                   for x in r.region]) for r in rs)
        ivs = tuple(E.IterVar(E.Range.from_min_extent(fe(iv.dom.min), fe(iv.dom.extent)),
                              iv.var, iv.iter_type, iv.thread_tag) for iv in s.iter_vars)
        ch = {"iter_vars": ivs, "reads": region(s.reads), "writes": region(s.writes),
              "init": kids[0] if s.init is not None else None, "body": kids[-1]}
    else:
        return s
    return _copy(s, **ch)


def transform_stmt(root, fexpr: Callable | None = None, fstmt: Callable | None = None):
    """Rebuild a statement tree bottom-up, iteratively.

    ``fexpr(expr)`` maps each expression field; ``fstmt(stmt)`` may replace a rebuilt statement.
    """
    fe = fexpr or (lambda e: e)
    done: dict[int, object] = {}
    stack = [(root, False)]
    while stack:
        s, ready = stack.pop()
        if not ready:
            stack.append((s, True))
            stack.extend((c, False) for c in stmt_children(s) if id(c) not in done)
            continue
        if id(s) in done:
            continue
        new = _rebuild_stmt(s, fe, [done[id(c)] for c in stmt_children(s)])
        if fstmt is not None:
            rep = fstmt(new)
            new = new if rep is None else rep
        done[id(s)] = new
    return done[id(root)]


def substitute(node, vmap: dict):
    """Replace Vars (keys of ``vmap``) by expressions in an expression or statement."""
    vmap = {k: E._to_expr(v) for k, v in vmap.items()}
    if not vmap:
        return node

    def fpost(e):
        return vmap.get(e) if isinstance(e, E.Var) else None

    if isinstance(node, E.PrimExpr):
        return transform_expr(node, fpost)
    memo: dict = {}
    return transform_stmt(node, lambda e: transform_expr(e, fpost, memo))

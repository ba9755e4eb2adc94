"""The Relay text printer: graph-normal-form expressions, functions and modules.

Rules (those of TVM's printer of the tutorial era, which the seeds show):
* Var, Constant, Op, GlobalVar and Constructor print inline; any other expression is bound to a
  temp ``%N = ...;`` unless it is the last expression of its scope (or a let value) and has a
  single user. Temps and var names are numbered across the whole print.
* ``/* ty=... */`` follows Constants and Calls whose type is known; a constant printed as a
  meta ref carries it twice (TVM printed the ref through its expression printer twice).
* Operands print before their user, arguments before the callee.

Everything runs on an explicit stack: the operand DAG of a scope is walked in post-order by a
loop, let chains by a loop, and nested scopes through ``trampoline.run``.
"""

from __future__ import annotations

import re

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ..adt import Constructor, Match, PatternConstructor, PatternTuple, PatternVar
from ..expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from . import trampoline
from .formatting import TypeAndAttrPrinter, scalar_to_str
from .meta import MetaContext

_ATOMIC = (Var, Constant, Op, GlobalVar, Constructor)
_DATAFLOW = (Call, Tuple, TupleGetItem, RefCreate, RefRead, RefWrite)
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.]")


def _operands(e) -> tuple:
    """Operands printed in the same scope as ``e``, in printing order (args before callee)."""
    if isinstance(e, Call):
        return (*e.args, e.op)
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    if isinstance(e, RefCreate):
        return (e.value,)
    if isinstance(e, RefRead):
        return (e.ref,)
    if isinstance(e, RefWrite):
        return (e.ref, e.value)
    return ()


def _all_children(e) -> tuple:
    """Every expression ``e`` refers to, once per reference (for use counting)."""
    if isinstance(e, _DATAFLOW):
        return _operands(e)
    if isinstance(e, If):
        return (e.cond, e.true_branch, e.false_branch)
    if isinstance(e, Let):
        return (e.value, e.body)
    if isinstance(e, Function):
        return (e.body,)
    if isinstance(e, Match):
        return (e.data, *(c.rhs for c in e.clauses))
    return ()


class RelayTextPrinter:
    """Prints Relay expressions, types and modules; one instance per printed text."""

    def __init__(self, show_meta_data: bool = False, annotate=None):
        self.meta = MetaContext()
        self.leaf = TypeAndAttrPrinter(self.meta, show_meta_data)
        self.show_meta_data = show_meta_data
        self.annotate = annotate
        self.memo: _ScopedMemo = _ScopedMemo()
        self.uses: dict = {}
        self._names: dict[str, int] = {}
        self._temps = 0
        self._lines: list[list[str]] = [[]]
        self._indent = ""

    # ------------------------------------------------------------------ entry points
    def print_final(self, node) -> str:
        """The text of an expression, type or module (no header, no metadata section)."""
        from ...ir.module import IRModule
        from ...ir.type import Type

        if isinstance(node, IRModule):
            return self.print_module(node)
        if isinstance(node, Type):
            return self.leaf.type(node)
        self._count_uses(node)
        final = trampoline.run(self._scope_final(node))
        lines = self._lines.pop()
        lines.append(final)
        return _flatten(_join(lines))

    def print_module(self, mod) -> str:
        parts = []
        for gtv in sorted(mod.type_definitions, key=lambda g: g.name_hint):
            parts.append(self.leaf.type_data(mod.type_definitions[gtv]) + "\n")
        for gv in sorted(mod.functions, key=lambda g: g.name_hint):
            func = mod.functions[gv]
            if isinstance(func, Function):
                self._count_uses(func)
                # a value shared by two global functions (LambdaLift's output) is printed in
                # each: a %N of one function is out of scope in the next
                mark = self.memo.mark()
                text = _flatten(trampoline.run(self._function(func, f"def @{gv.name_hint}")))
                self.memo.forget_since(mark)
            else:
                text = _print_other_function(func, gv.name_hint)
            parts.append(text + "\n")
        return "\n".join(parts)

    # ------------------------------------------------------------------ bookkeeping
    def _count_uses(self, root) -> None:
        uses = self.uses
        stack = [root]
        seen = {root}
        while stack:
            e = stack.pop()
            for c in _all_children(e):
                uses[c] = uses.get(c, 0) + 1
                if c not in seen:
                    seen.add(c)
                    stack.append(c)

    def _unique(self, e) -> bool:
        return self.uses.get(e, 0) <= 1

    def _unique_name(self, prefix: str) -> str:
        names = self._names
        name = prefix
        if prefix in names:
            while True:
                names[prefix] += 1
                name = f"{prefix}{names[prefix]}"
                if name not in names:
                    break
        names[name] = 0
        return name

    def _emit(self, *parts) -> None:
        """Append a line to the current scope; parts may be nested docs (lists of parts)."""
        self._lines[-1].append([self._indent, *parts])

    def alloc_var(self, v) -> str:
        """Name a variable at its binding site; returns ``%name[: type]``."""
        name = _BAD_NAME_CHARS.sub("_", v.name_hint or "")
        if not name or not name[0].isalpha():
            name = "v" + name
        name = self._unique_name("%" + name)
        self.memo[v] = name
        vd = getattr(v, "_virtual_device", None)
        decl = name
        if vd is not None and not vd.is_fully_unconstrained():
            decl += f" {{virtual_device={self.leaf.attr_value(vd)}}}"
        if v.type_annotation is not None:
            return f"{decl}: {self.leaf.type(v.type_annotation)}"
        return decl

    def _info(self, e) -> str:
        if self.annotate is not None:
            return self.annotate(e) or ""
        t = e._checked_type
        if t is not None and isinstance(e, Call | Constant):
            return f" /* ty={self.leaf.type(t)} */"
        return ""

    # ------------------------------------------------------------------ scopes
    def _block(self, expr, open_: str, close: str, let_root: bool = False):
        """``{`` + the scope of ``expr`` indented one level + ``}``."""
        outer = self._indent
        self._indent = outer + "  "
        self._lines.append([])
        final = yield self._scope_final(expr, let_root)
        lines = self._lines.pop()
        lines.append([self._indent, final])
        self._indent = outer
        return [open_, "\n", _join(lines), "\n", outer, close]

    def _scope_final(self, e, let_root: bool = False):
        """Print the last expression of a scope: its let chain flat, then the body inline.
        ``let_root``: ``e`` is a Let printed as its own ``(...)`` block, even when shared (a
        shared Let would otherwise be sent back to ``_expr``, which sends it here again)."""
        while isinstance(e, Let) and e not in self.memo and (let_root or self._unique(e)):
            let_root = False
            name = self.alloc_var(e.var)
            value = yield self._expr(e.value, True)
            self._emit("let ", name, " = ", value, ";")
            e = e.body
        return (yield self._expr(e, True))

    # ------------------------------------------------------------------ expressions
    def _expr(self, e, try_inline: bool = False):
        """Print ``e`` (after its same-scope operands, walked in post-order by a loop)."""
        memo = self.memo
        text = memo.get(e)
        if text is not None:
            return text
        if isinstance(e, _DATAFLOW):
            for node in self._operand_order(e):
                if node in memo:
                    continue
                if isinstance(node, _ATOMIC):
                    self._atomic(node)
                else:
                    yield self._node(node, False)
        elif isinstance(e, _ATOMIC):
            return self._atomic(e)
        return (yield self._node(e, try_inline))

    def _operand_order(self, root) -> list:
        """Not-yet-printed operands of ``root`` (transitively), children first, root excluded."""
        memo = self.memo
        order, seen = [], set()
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node in seen or node in memo:
                continue
            seen.add(node)
            stack.append((node, True))
            if isinstance(node, _DATAFLOW):
                for c in reversed(_operands(node)):
                    if c not in seen and c not in memo:
                        stack.append((c, False))
        order.pop()  # the root itself
        return order

    def _atomic(self, e) -> str:
        if isinstance(e, Var):
            decl = self.alloc_var(e)
            self._emit(f"free_var {decl};")
            return self.memo[e]
        if isinstance(e, Constant):
            data = e.data.numpy()
            literal = scalar_to_str(data[()], e.data.dtype) if data.ndim == 0 else None
            if literal is not None:
                text = literal + self._info(e)
            else:  # printed through the meta path and again by the caller, hence twice
                text = self.meta.ref(e, "relay.Constant") + self._info(e) + self._info(e)
        elif isinstance(e, Op):
            text = e.name + (self._info(e) if self.annotate else "")
        elif isinstance(e, GlobalVar):
            text = "@" + e.name_hint + (self._info(e) if self.annotate else "")
        else:
            text = e.name_hint
        self.memo[e] = text
        return text

    def _node(self, e, try_inline: bool):
        """Print one non-atomic node whose operands are printed; bind it to a temp if needed."""
        inline = try_inline and self._unique(e)
        if isinstance(e, _DATAFLOW):
            text = self._dataflow(e)
        elif isinstance(e, Let):
            text = yield self._block(e, "(", ")", let_root=True)
        elif isinstance(e, Function):
            text = yield self._function(e, "fn ")
        elif isinstance(e, If):
            text = yield self._if(e)
        elif isinstance(e, Match):
            text = yield self._match(e)
        else:
            raise TypeError(f"the Relay printer cannot print a {type(e).__name__}")
        info = self._info(e)
        if info:
            text = [text, info]
        if inline:  # used once: never looked up again, so not memoized (saves quadratic memory)
            return text
        temp = f"%{self._temps}"
        self._temps += 1
        self._emit(temp, " = ", text, ";")
        self.memo[e] = temp
        return temp

    def _dataflow(self, e) -> str:
        memo = self.memo
        if isinstance(e, Call):
            args = [memo[a] for a in e.args]
            args.extend(self._call_attrs(e))
            if isinstance(e.op, Constructor):
                if not e.op.inputs:
                    return e.op.name_hint
                return f"{e.op.name_hint}({', '.join(args)})"
            return f"{memo[e.op]}({', '.join(args)})"
        if isinstance(e, Tuple):
            fields = [memo[f] for f in e.fields]
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if isinstance(e, TupleGetItem):
            return f"{memo[e.tuple_value]}.{e.index}"
        if isinstance(e, RefCreate):
            return f"ref({memo[e.value]})"
        if isinstance(e, RefRead):
            return f"ref_read({memo[e.ref]})"
        return f"ref_write({memo[e.ref]}, {memo[e.value]})"

    def _call_attrs(self, call) -> list[str]:
        attrs = call.attrs
        if attrs is None:
            return []
        op = call.op
        if isinstance(op, Op):
            if op.attrs_type is not None and type(attrs) is not op.attrs_type and (
                    self.show_meta_data):
                return [self.meta.ref(attrs)]
            return self.leaf.attr_items(attrs)
        items = self.leaf.attr_items(attrs)
        key = getattr(attrs, "type_key", None)
        if key and key != "DictAttrs":
            items.append(f'attrs_type_key="{key}"')
        return items

    def _function(self, fn, prefix: str):
        head = prefix
        if fn.type_params:
            head += "[" + ", ".join(tp.name_hint for tp in fn.type_params) + "]"
        params = [self.alloc_var(p) for p in fn.params]
        if fn.attrs:
            params.extend(f"{k}={self.leaf.attr_value(v)}" for k, v in fn.attrs.items())
        vd = getattr(fn, "_virtual_device", None)
        if vd is not None and not vd.is_fully_unconstrained():
            params.append(f"virtual_device={self.leaf.attr_value(vd)}")
        head += "(" + ", ".join(params) + ") "
        if fn.ret_type is not None:
            head += f"-> {self.leaf.type(fn.ret_type)} "
        body = yield self._block(fn.body, "{", "}")
        return [head, body]

    def _if(self, e):
        cond = yield self._expr(e.cond, False)
        then = yield self._block(e.true_branch, "{", "}")
        other = yield self._block(e.false_branch, "{", "}")
        return ["if (", cond, ") ", then, " else ", other]

    def _match(self, m):
        data = yield self._expr(m.data, False)
        head = f"match{'' if m.complete else '?'} ({data}) {{"
        outer = self._indent
        self._indent = outer + "  "
        clauses = []
        for clause in m.clauses:
            pattern = self._pattern(clause.lhs)
            rhs = yield self._block(clause.rhs, "{", "}")
            clauses.append([self._indent, pattern, " => ", rhs, ","])
        self._indent = outer
        return [head, "\n", _join(clauses), "\n", outer, "}"]

    def _pattern(self, p) -> str:
        if isinstance(p, PatternVar):
            return self.alloc_var(p.var)
        if isinstance(p, PatternConstructor):
            if not p.patterns:
                return p.constructor.name_hint
            inner = ", ".join(self._pattern(q) for q in p.patterns)
            return f"{p.constructor.name_hint}({inner})"
        if isinstance(p, PatternTuple):
            return "(" + ", ".join(self._pattern(q) for q in p.patterns) + ")"
        return "_"


class _ScopedMemo(dict):
    """The printed text of each node, with a journal of insertions so a scope can forget
    what it added (amortized O(1) per node)."""

    __slots__ = ("journal",)

    def __init__(self):
        super().__init__()
        self.journal: list = []

    def __setitem__(self, key, value):
        if key not in self:
            self.journal.append(key)
        dict.__setitem__(self, key, value)

    def mark(self) -> int:
        return len(self.journal)

    def forget_since(self, mark: int) -> None:
        journal = self.journal
        for key in journal[mark:]:
            self.pop(key, None)
        del journal[mark:]


def _join(lines: list) -> list:
    """Lines separated by newlines, as one doc."""
    out = []
    for line in lines:
        out.append(line)
        out.append("\n")
    if out:
        out.pop()
    return out


def _flatten(doc) -> str:
    """The text of a doc: a str or a (nested) list of docs, flattened without recursion."""
    if type(doc) is str:
        return doc
    out, stack = [], [doc]
    while stack:
        d = stack.pop()
        if type(d) is str:
            out.append(d)
        else:
            stack.extend(reversed(d))
    return "".join(out)


def _print_other_function(func, name: str) -> str:
    try:
        from ...tir.printer import script

        return script(func, name, in_module=True)
    except Exception:  # a function kind without a text form
        return f"@{name} = {func!r}"

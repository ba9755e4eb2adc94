"""The parser's machinery shared by the dialects: scopes of names and an iterative evaluator of
Python expressions (``ast``).

TVMScript is Python syntax read with ``ast``: statements are interpreted by the dialect parsers
(``relax_parser``, ``tir_parser``), expressions are evaluated here with Python's meaning applied
to IR values (``a + b`` on ``tir.PrimExpr`` builds ``tir.Add``; ``R.add(x, y)`` calls the Relax
operator's constructor). Evaluation walks an explicit stack, so a long ``a + b + c + ...``
chain costs no Python recursion; statement lists are loops in the dialect parsers.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import threading

from ...ir.prim_expr import PrimExpr
from .error import ParserError, Source

__all__ = ["VarTable", "ExprEvaluator", "ModuleProxy", "current_parser"]

_MISSING = object()
_NONE_NODE = ast.Constant(None)

_state = threading.local()


def current_parser():
    """The dialect parser evaluating an expression in this thread, or None (namespace helpers
    such as ``R.Tensor(("n", 4))`` ask it for the function's symbolic variables)."""
    st = getattr(_state, "stack", None)
    return st[-1] if st else None


class _Active:
    """``with _Active(parser):`` makes ``parser`` the current one for namespace helpers."""

    __slots__ = ("parser",)

    def __init__(self, parser):
        self.parser = parser

    def __enter__(self):
        st = getattr(_state, "stack", None)
        if st is None:
            st = _state.stack = []
        st.append(self.parser)

    def __exit__(self, *exc):
        _state.stack.pop()
        return False


class _ScriptLambda:
    """A ``lambda`` in parsed text: calling it evaluates its body with the parameters bound
    (in a scope of their own), as Python would."""

    def __init__(self, parser, node: ast.Lambda):
        self.parser, self.node = parser, node
        self.params = [a.arg for a in node.args.args]
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in self.params])

    def __call__(self, *args):
        if len(args) != len(self.params):
            raise TypeError(f"lambda takes {len(self.params)} arguments, got {len(args)}")
        table = self.parser.var_table
        table.push()
        try:
            for name, value in zip(self.params, args, strict=True):
                table.add(name, value)
            return self.parser.eval_expr(self.node.body)
        finally:
            table.pop()


class VarTable:
    """Names in nested scopes (function, block, loop): ``add`` in the innermost frame, ``get``
    the innermost binding; popping a frame restores what its names shadowed. O(1) lookups."""

    __slots__ = ("_stacks", "_frames")

    def __init__(self):
        self._stacks: dict[str, list] = {}
        self._frames: list[list[str]] = [[]]

    def push(self) -> None:
        self._frames.append([])

    def pop(self) -> None:
        stacks = self._stacks
        for name in reversed(self._frames.pop()):
            st = stacks[name]
            st.pop()
            if not st:
                del stacks[name]

    def add(self, name: str, value) -> None:
        self._stacks.setdefault(name, []).append(value)
        self._frames[-1].append(name)

    def get(self, name: str, default=None):
        st = self._stacks.get(name)
        return st[-1] if st else default

    def __contains__(self, name: str) -> bool:
        return name in self._stacks


class ModuleProxy:
    """The ``@I.ir_module`` class (and its alias ``cls``) while its functions are parsed:
    ``cls.f`` is the GlobalVar of function ``f``, so calls may refer forward."""

    __slots__ = ("name", "gvars")

    def __init__(self, name: str, gvars: dict):
        self.name = name
        self.gvars = gvars

    def __getattr__(self, attr):
        gvars = object.__getattribute__(self, "gvars")
        if attr in gvars:
            return gvars[attr]
        raise AttributeError(f"module {object.__getattribute__(self, 'name')!r} has no function "
                             f"{attr!r}; it defines {sorted(gvars)}")

    def __repr__(self):
        return f"<ir_module {self.name}>"


_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
}
_CMPOPS = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_SYNTAX_NAMES = {
    ast.Lambda: "lambda expressions", ast.ListComp: "list comprehensions",
    ast.SetComp: "set comprehensions", ast.DictComp: "dict comprehensions",
    ast.GeneratorExp: "generator expressions", ast.JoinedStr: "f-strings",
    ast.NamedExpr: "assignment expressions (:=)", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield from", ast.Starred: "starred expressions here",
}


# Python builtins a script may use; ``min``/``max``/``abs``/``sum`` are left out on purpose
# (on PrimExprs they would compare nodes by truth value: use T.min / T.max), and nothing that
# reaches files, imports or code evaluation is reachable from parsed text
_BUILTINS = {n: getattr(builtins, n) for n in (
    "range", "len", "int", "float", "bool", "str", "tuple", "list", "dict", "set",
    "enumerate", "zip", "reversed", "isinstance", "slice")}


def _is_prim(x) -> bool:
    return isinstance(x, PrimExpr)


class ExprEvaluator:
    """Evaluates ``ast`` expressions with an explicit stack. Subclasses give ``source``,
    ``env`` and ``var_table``, and may refine ``call``/``subscript``/``lookup_missing``."""

    source: Source
    env: dict
    var_table: VarTable

    # ------------------------------------------------------------------ errors
    def error(self, node, message: str) -> ParserError:
        return self.source.error(node, message)

    def unsupported(self, node, what: str | None = None) -> ParserError:
        what = what or _SYNTAX_NAMES.get(type(node)) or f"`{type(node).__name__}` syntax"
        return self.error(node, f"not supported in TVMScript ({self.dialect}): {what}")

    dialect = "TVMScript"

    # ------------------------------------------------------------------ names
    def lookup(self, node: ast.Name):
        name = node.id
        st = self.var_table._stacks.get(name)
        if st:
            return st[-1]
        v = self.env.get(name, _MISSING)
        if v is not _MISSING:
            return v
        v = _BUILTINS.get(name, _MISSING)
        if v is not _MISSING:
            return v
        v = self.lookup_missing(name, node)
        if v is not _MISSING:
            return v
        raise self.error(node, f"name {name!r} is not defined")

    def lookup_missing(self, name: str, node):
        return _MISSING

    # ------------------------------------------------------------------ evaluation
    def eval_expr(self, root):
        """The value of expression ``root`` (iterative post-order over its operands)."""
        t = type(root)
        if t is ast.Name:
            return self.lookup(root)
        if t is ast.Constant:
            return root.value
        vals: list = []
        stack = [(root, 0)]
        kids_of = self._kids
        while stack:
            node, state = stack.pop()
            if state == 0:
                t = type(node)
                if t is ast.Name:
                    vals.append(self.lookup(node))
                    continue
                if t is ast.Constant:
                    vals.append(node.value)
                    continue
                kids = kids_of(node)
                # operands that need no stack (names, constants, ``R.add``) are read here
                quick = []
                for k in kids:
                    tk = type(k)
                    if tk is ast.Name:
                        quick.append(self.lookup(k))
                    elif tk is ast.Constant:
                        quick.append(k.value)
                    elif tk is ast.Attribute and type(k.value) is ast.Name:
                        quick.append(self.get_attr(self.lookup(k.value), k.attr, k))
                    else:
                        break
                else:
                    vals.append(self._apply(node, quick))
                    continue
                stack.append((node, len(kids) + 1))
                for k in reversed(kids):
                    stack.append((k, 0))
            else:
                n = state - 1
                if n:
                    args = vals[-n:]
                    del vals[-n:]
                else:
                    args = []
                vals.append(self._apply(node, args))
        return vals[0]

    def _apply(self, node, args):
        try:
            return self._combine(node, args)
        except ParserError as e:
            if e.lineno is None:  # raised by a helper that does not know where: here
                raise self.error(node, e.message) from None
            raise
        except Exception as e:  # an IR constructor or helper rejected its operands
            raise self.error(node, _describe(e)) from e

    def _kids(self, node) -> list:
        t = type(node)
        if t is ast.Attribute:
            return [node.value]
        if t is ast.Call:
            out = [node.func]
            for a in node.args:
                out.append(a.value if type(a) is ast.Starred else a)
            for kw in node.keywords:
                out.append(kw.value)
            return out
        if t is ast.BinOp:
            return [node.left, node.right]
        if t is ast.Tuple or t is ast.List or t is ast.Set:
            for e in node.elts:
                if type(e) is ast.Starred:
                    raise self.unsupported(e, "starred elements in a tuple or list")
            return list(node.elts)
        if t is ast.Subscript:
            return [node.value, node.slice]
        if t is ast.Slice:
            return [node.lower or _NONE_NODE, node.upper or _NONE_NODE, node.step or _NONE_NODE]
        if t is ast.UnaryOp:
            return [node.operand]
        if t is ast.Compare:
            return [node.left, *node.comparators]
        if t is ast.BoolOp:
            return list(node.values)
        if t is ast.Dict:
            for k in node.keys:
                if k is None:
                    raise self.unsupported(node, "`**` unpacking in a dict")
            return [*node.keys, *node.values]
        if t is ast.IfExp:
            return [node.test, node.body, node.orelse]
        if t is ast.Lambda:  # its body is evaluated when it is called (``T.index_map``)
            a = node.args
            if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
                raise self.unsupported(node, "lambda parameters other than plain names")
            return []
        raise self.unsupported(node)

    def _combine(self, node, args: list):
        t = type(node)
        if t is ast.Lambda:
            return _ScriptLambda(self, node)
        if t is ast.Attribute:
            return self.get_attr(args[0], node.attr, node)
        if t is ast.Call:
            func = args[0]
            pos, k = [], 1
            for a in node.args:
                v = args[k]
                k += 1
                if type(a) is ast.Starred:
                    pos.extend(v)
                else:
                    pos.append(v)
            kwargs = {}
            for kw in node.keywords:
                v = args[k]
                k += 1
                if kw.arg is None:
                    kwargs.update(v)
                else:
                    kwargs[kw.arg] = v
            return self.call(func, pos, kwargs, node)
        if t is ast.BinOp:
            a, b = args
            return _BINOPS[type(node.op)](a, b)
        if t is ast.Tuple:
            return tuple(args)
        if t is ast.List:
            return list(args)
        if t is ast.Subscript:
            return self.subscript(args[0], args[1], node)
        if t is ast.Slice:
            return slice(*args)
        if t is ast.UnaryOp:
            return self.unary(node.op, args[0])
        if t is ast.Compare:
            return self.compare(node, args)
        if t is ast.BoolOp:
            return self.boolop(node.op, args)
        if t is ast.Dict:
            n = len(node.keys)
            return dict(zip(args[:n], args[n:]))
        if t is ast.Set:
            return set(args)
        if t is ast.IfExp:
            test, body, orelse = args
            if _is_prim(test):
                from ...tir.expr import Select

                return Select(test, body, orelse)
            return body if test else orelse
        raise self.unsupported(node)

    # ------------------------------------------------------------------ operators
    def get_attr(self, obj, attr: str, node):
        try:
            return getattr(obj, attr)
        except AttributeError as e:
            raise self.error(node, str(e) or f"{obj!r} has no attribute {attr!r}") from e

    def call(self, func, args: list, kwargs: dict, node):
        if not callable(func):
            raise self.error(node, f"{_short(func)} is not callable")
        return func(*args, **kwargs)

    def subscript(self, obj, index, node):
        return obj[index]

    def unary(self, op, a):
        t = type(op)
        if t is ast.USub:
            return -a
        if t is ast.UAdd:
            return +a
        if t is ast.Not:
            if _is_prim(a):
                from ...tir.expr import Not

                return Not(a)
            return not a
        return ~a

    def compare(self, node, args):
        out = None
        for k, op in enumerate(node.ops):
            a, b = args[k], args[k + 1]
            t = type(op)
            if t is ast.Eq or t is ast.NotEq:
                if _is_prim(a) or _is_prim(b):
                    from ...tir import expr as te

                    r = (te.EQ if t is ast.Eq else te.NE)(a, b)
                else:
                    r = a == b if t is ast.Eq else a != b
            else:
                r = _CMPOPS[t](a, b)
            out = r if out is None else self.boolop(ast.And(), [out, r])
        return out

    def boolop(self, op, values):
        if any(_is_prim(v) for v in values):
            from ...tir import expr as te

            cls = te.And if isinstance(op, ast.And) else te.Or
            out = values[0]
            for v in values[1:]:
                out = cls(out, v)
            return out
        if isinstance(op, ast.And):
            for v in values:
                if not v:
                    return v
            return values[-1]
        for v in values:
            if v:
                return v
        return values[-1]


def _short(x) -> str:
    s = repr(x)
    return s if len(s) < 80 else s[:77] + "..."


def _describe(e: Exception) -> str:
    msg = str(e)
    if isinstance(e, ValueError | TypeError | AttributeError | KeyError | IndexError) and msg:
        return msg if isinstance(e, ValueError) else f"{type(e).__name__}: {msg}"
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__

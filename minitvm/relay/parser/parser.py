"""Recursive-descent parser of the Relay text format, run on an explicit stack.

Expression rules are generators (``sub = yield self._expr()``) driven by
``printer.trampoline.run``, so nesting depth costs heap, not Python stack; ``%N = ...;`` graph
bindings and ``let`` chains are loops. Types and attribute values are small and parse directly.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import DictAttrs, get_attrs_type
from ...ir.expr import GlobalVar, RelayExpr
from ...ir.node import SourceName, Span
from ...ir.op import Op
from ...ir.type import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from ...runtime.ndarray import NDArray
from ...tir.expr import Any, FloatImm, IntImm
from ..adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    TypeData,
)
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
from ..printer import trampoline
from .tokenizer import EOF, GLOBAL, IDENT, LOCAL, METADATA, NUMBER, PUNCT, STRING, VERSION

_BINARY = {"*": (3, "multiply"), "/": (3, "divide"), "+": (2, "add"), "-": (2, "subtract"),
           "<": (1, "less"), ">": (1, "greater"), "<=": (1, "less_equal"),
           ">=": (1, "greater_equal"), "==": (1, "equal"), "!=": (1, "not_equal")}
_STMT_STARTS = ("let", "free_var")
# attributes whose numbers are integers whatever their default (often None) says
_INT_ATTRS = frozenset((
    "axis", "axes", "shape", "newshape", "begin", "end", "strides", "pad_width", "padding",
    "dilation", "groups", "channels", "kernel_size", "pool_size", "units", "output_size",
    "indices_or_sections", "k", "depth", "repeats", "reps", "batch_dims", "num_newaxis",
    "num_outputs", "seq_axis", "batch_axis", "block_size", "output_padding", "stride"))
_DTYPE_ATTRS = frozenset(("dtype", "out_dtype"))  # not ret_type: topk's is "both"/"values"/...
_ARG_END = (",", ")")
# identifiers that _primary reads as more than a name (the others name an op or constructor)
_KEYWORD_ATOMS = frozenset(("fn", "if", "match", "ref", "ref_read", "ref_write", "True",
                            "False", "meta"))
# the largest finite value of each float dtype: a literal within it needs no overflow check
_FLOAT_MAX = {d: float(np.finfo(d).max) for d in ("float16", "float32", "float64")}
_INT_RANGE: dict[str, tuple[int, int]] = {}  # integer dtype -> (min, max), made when first met
MAX_ATTR_DEPTH = 64  # attribute values are small (lists of ints, maybe of lists)


_DTYPE_BITS = {"int": (1, 8, 16, 32, 64), "uint": (1, 8, 16, 32, 64), "float": (16, 32, 64),
               "bfloat": (16,)}


def _is_dtype(name: str) -> bool:
    """``bool``, ``handle``, ``void`` or a known width of int/uint/float/bfloat, with optional
    ``xLANES`` (``float32x4``); ``custom...`` types are passed through."""
    if name in ("bool", "handle", "void"):
        return True
    if name.startswith("custom"):
        return True
    for p, widths in _DTYPE_BITS.items():
        if name.startswith(p) and name[len(p):len(p) + 1].isdigit():
            bits, _, lanes = name[len(p):].partition("x")
            return bits.isdigit() and len(bits) <= 3 and int(bits) in widths and (
                not lanes or (lanes.isdigit() and len(lanes) <= 5))
    return False


class Parser:
    """Parses one text into a module or an expression."""

    def __init__(self, src, tokens, meta_table=None, global_vars=None, type_vars=None,
                 constructors=None):
        self.src = src
        self.n = len(tokens)
        self.toks = tokens + [tokens[-1]] * 4  # peeking past the end sees EOF
        self.i = 0
        self.meta = meta_table if meta_table is not None else {}
        self.globals: dict[str, GlobalVar] = dict(global_vars or {})
        self.global_types: dict[str, GlobalTypeVar] = dict(type_vars or {})
        self.ctors: dict[str, Constructor] = dict(constructors or {})
        self.env: dict[str, list] = {}
        self.type_env: dict[str, list] = {}
        self.scope_log: list[list] = [[]]
        self.temps: dict[str, RelayExpr] = {}
        self.free_vars: dict[str, Var] = {}
        self._source_name = SourceName(src.name)

    def span(self, tok) -> Span:
        """Where ``tok`` starts (and its line's extent of the token): the node's ``span``."""
        line, col = self.src.line_col(tok[2])
        value = tok[1]
        width = len(value) if isinstance(value, str) else 1
        # (positional: source_name, line, end_line, column, end_column)
        return Span(self._source_name, line, line, col, col + width)

    # ------------------------------------------------------------------ token helpers
    def peek(self, k: int = 0) -> tuple:
        return self.toks[self.i + k]

    def at(self, value, k: int = 0) -> bool:
        t = self.toks[self.i + k]
        return t[1] == value and (t[0] is PUNCT or t[0] is IDENT)

    def next(self) -> tuple:
        t = self.toks[self.i]
        if t[0] != EOF:
            self.i += 1
        return t

    def error(self, message: str, tok=None, hint: str = ""):
        tok = tok or self.peek()
        return self.src.error(tok[2], message, hint)

    def expect(self, value: str) -> tuple:
        t = self.peek()
        if t[1] != value or t[0] not in (PUNCT, IDENT):
            raise self.error(f"expected '{value}', found {_describe(t)}")
        return self.next()

    def accept(self, value: str) -> bool:
        if self.at(value):
            self.i += 1
            return True
        return False

    def expect_kind(self, kind: str) -> tuple:
        t = self.peek()
        if t[0] != kind:
            raise self.error(f"expected a {kind}, found {_describe(t)}")
        return self.next()

    # ------------------------------------------------------------------ scopes
    def push_scope(self) -> None:
        self.scope_log.append([])

    def pop_scope(self) -> None:
        for env, name in reversed(self.scope_log.pop()):
            stack = env[name]
            stack.pop()
            if not stack:
                del env[name]

    def bind(self, name: str, value, env=None) -> None:
        env = self.env if env is None else env
        env.setdefault(name, []).append(value)
        self.scope_log[-1].append((env, name))

    def lookup_local(self, tok) -> RelayExpr:
        name = tok[1]
        stack = self.env.get(name)
        if stack:
            return stack[-1]
        value = self.temps.get(name)
        if value is None:
            value = self.free_vars.get(name)
        if value is None:
            raise self.error(f"unbound variable %{name}", tok,
                             "declare free variables with `free_var %name: type;`")
        return value

    # ------------------------------------------------------------------ module level
    def prescan(self) -> list[tuple[str, int]]:
        """Top-level items (kind, token index); declares global and type names up front."""
        items, depth = [], 0
        for idx, (kind, value, _pos) in enumerate(self.toks[: self.n]):
            if kind == PUNCT:
                if value in "([{":
                    depth += 1
                elif value in ")]}":
                    depth -= 1
            elif depth == 0 and kind == IDENT and value == "extern":
                # ``extern type Name``: an opaque type without constructors (core.rly's Storage)
                _, tv, _ = self.toks[idx + 1]
                nk, nv, _ = self.toks[idx + 2]
                if tv == "type" and nk == IDENT:
                    self.global_types.setdefault(nv, GlobalTypeVar(nv))
                    items.append(("extern", idx))
            elif depth == 0 and kind == IDENT and value in ("def", "type"):
                nk, nv, _ = self.toks[idx + 1]
                if value == "def" and nk == GLOBAL:
                    self.globals.setdefault(nv, GlobalVar(nv))
                    items.append(("def", idx))
                elif value == "type" and nk == IDENT:
                    self.global_types.setdefault(nv, GlobalTypeVar(nv))
                    items.append(("type", idx))
        return items

    def parse_version(self, required: bool) -> None:
        t = self.peek()
        if t[0] == VERSION:
            if t[1] != "0.0.5":
                raise self.error(f"invalid semantic version {t[1]!r}", t,
                                 'this parser reads #[version = "0.0.5"]')
            self.next()
        elif required:
            raise self.error("expected text format semantic version", t,
                             'start the text with #[version = "0.0.5"]')

    def parse_metadata(self) -> None:
        """Read a trailing ``#[metadata]`` section; its entries come before init_meta_table's."""
        t = self.peek()
        if t[0] != METADATA:
            return
        from ..printer.meta import decode_meta_section

        self.next()
        try:
            table = decode_meta_section(t[1])
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError,
                RecursionError) as e:  # deep JSON nesting is a RecursionError in json.loads
            what = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:200]
            raise self.error(f"invalid metadata section: {type(e).__name__}: {what}",
                             t) from None
        for key, nodes in self.meta.items():
            table.setdefault(key, []).extend(nodes)
        self.meta = table

    def parse_module(self):
        """``(functions, type_definitions)`` of a module text."""
        self.parse_version(required=True)
        end = self._find_metadata()
        saved = self.i
        self.i = end
        self.parse_metadata()
        self.i = saved
        items = self.prescan()
        type_defs, funcs = {}, {}
        for kind, idx in items:  # ADTs first: functions may use their constructors
            if kind == "type":
                self.i = idx
                td = self.parse_type_def()
                type_defs[td.header] = td
            elif kind == "extern":
                gtv = self.global_types[self.toks[idx + 2][1]]
                type_defs[gtv] = TypeData(gtv, [], [])
        self.i = saved
        while True:
            t = self.peek()
            if t[0] in (EOF, METADATA):
                break
            if t[0] == IDENT and t[1] == "type":
                self.skip_type_def()
            elif t[0] == IDENT and t[1] == "extern":
                self.next()
                self.expect("type")
                self.expect_kind(IDENT)
            elif t[0] == IDENT and t[1] == "def":
                self.next()
                gv = self.globals[self.expect_kind(GLOBAL)[1]]
                funcs[gv] = trampoline.run(self._function_rest(prefix_tok=t))
            else:  # a bare expression becomes @main (a convenience beyond TVM)
                expr = trampoline.run(self._seq())
                gv = self.globals.setdefault("main", GlobalVar("main"))
                if not isinstance(expr, Function):
                    from ..analysis.free_vars import free_vars

                    expr = Function(free_vars(expr), expr)
                funcs[gv] = expr
        return funcs, type_defs

    def parse_expression(self):
        self.parse_version(required=False)
        end = self._find_metadata()
        saved = self.i
        self.i = end
        self.parse_metadata()
        self.i = saved
        for kind, idx in self.prescan():
            if kind == "type":
                self.i = idx
                self.parse_type_def()
        self.i = saved
        while self.at("type"):
            self.skip_type_def()
        expr = trampoline.run(self._seq())
        if self.peek()[0] not in (EOF, METADATA):
            raise self.error(f"unexpected {_describe(self.peek())} after the expression")
        return expr

    def _find_metadata(self) -> int:
        last = self.n - 2
        if last >= 0 and self.toks[last][0] == METADATA:
            return last
        return self.n - 1

    # ------------------------------------------------------------------ ADT definitions
    def parse_type_def(self) -> TypeData:
        self.expect("type")
        gtv = self.global_types[self.expect_kind(IDENT)[1]]
        self.push_scope()
        tvars = self.parse_type_params()
        ctors = []
        if self.accept("{"):
            while not self.at("}"):
                name_tok = self.expect_kind(IDENT)
                inputs = []
                if self.accept("("):
                    while not self.at(")"):
                        inputs.append(self.parse_type())
                        if not self.accept(","):
                            break
                    self.expect(")")
                ctor = Constructor(name_tok[1], inputs, gtv)
                self.ctors[name_tok[1]] = ctor
                ctors.append(ctor)
                if not self.accept(","):
                    break
            self.expect("}")
        self.pop_scope()
        return TypeData(gtv, tvars, ctors)

    def skip_type_def(self) -> None:
        self.expect("type")
        depth = 0
        while True:
            kind, value, _ = self.next()
            if kind == EOF:
                return
            if kind == PUNCT and value in "([{":
                depth += 1
            elif kind == PUNCT and value in ")]}":
                depth -= 1
                if depth == 0 and value == "}":
                    return

    def parse_type_params(self) -> list:
        tvars = []
        if self.accept("["):
            while not self.at("]"):
                tv = TypeVar(self.expect_kind(IDENT)[1])
                self.bind(tv.name_hint, tv, self.type_env)
                tvars.append(tv)
                if not self.accept(","):
                    break
            self.expect("]")
        return tvars

    # ------------------------------------------------------------------ types
    def parse_type(self):
        """One type; nesting (tuples of tuples, fn types) runs on the explicit stack."""
        return trampoline.run(self._type())

    def _type(self):
        t = self.peek()
        kind, value = t[0], t[1]
        if kind == PUNCT:
            if value == "(":
                self.next()
                fields, trailing = [], False
                while not self.at(")"):
                    fields.append((yield self._type()))
                    trailing = self.accept(",")
                    if not trailing:
                        break
                self.expect(")")
                if len(fields) == 1 and not trailing:
                    return fields[0]
                return TupleType(fields)
            if value == "?":
                self.next()
                return IncompleteType()
        elif kind == IDENT:
            if value == "meta":
                return self.parse_meta_ref()
            self.next()
            if value == "Tensor":
                return self._tensor_type()
            if value == "fn":
                self.push_scope()
                tparams = self.parse_type_params()
                self.expect("(")
                args = []
                while not self.at(")"):
                    args.append((yield self._type()))
                    if not self.accept(","):
                        break
                self.expect(")")
                self.expect("->")
                ret = (yield self._type())
                self.pop_scope()
                return FuncType(args, ret, tparams)
            if value == "ref" and self.at("("):
                self.next()
                inner = (yield self._type())
                self.expect(")")
                return RelayRefType(inner)
            stack = self.type_env.get(value)
            if stack:
                return stack[-1]
            gtv = self.global_types.get(value)
            if gtv is not None:
                if self.accept("["):
                    args = []
                    while not self.at("]"):
                        args.append((yield self._type()))
                        if not self.accept(","):
                            break
                    self.expect("]")
                    return TypeCall(gtv, args)
                return TypeCall(gtv, [])  # as TVM: a bare ADT name is its call with no arguments
            if _is_dtype(value):
                return self._make_tensor_type((), t)
            raise self.error(f"unknown type {value!r}", t)
        raise self.error(f"expected a type, found {_describe(t)}")

    def _tensor_type(self) -> TensorType:
        self.expect("[")
        self.expect("(")
        dims = []
        while not self.at(")"):
            t = self.peek()
            if t[0] == NUMBER:
                self.next()
                dims.append(self._index_value(t, "a dimension"))
            elif self.accept("?"):
                dims.append(Any())
            elif self.at("meta"):
                dims.append(self.parse_meta_ref())
            else:
                raise self.error(f"expected a dimension, found {_describe(t)}")
            if not self.accept(","):
                break
        self.expect(")")
        self.expect(",")
        dtype_tok = self.expect_kind(IDENT)
        if not _is_dtype(dtype_tok[1]):
            raise self.error(f"unknown dtype {dtype_tok[1]!r}", dtype_tok)
        self.expect("]")
        return self._make_tensor_type(dims, dtype_tok)

    def _make_tensor_type(self, dims, dtype_tok) -> TensorType:
        try:
            return TensorType(dims, dtype_tok[1])
        except (ValueError, TypeError) as err:
            raise self.error(f"invalid tensor type: {err}", dtype_tok) from None

    def _index_value(self, tok, what: str) -> int:
        """An integer literal used as a dimension or index: an integer, 0 <= value < 2**63."""
        value, dtype = tok[1]
        if not dtype.startswith(("int", "uint")) or not isinstance(value, int):
            raise self.error(f"{what} must be an integer, found {_describe(tok)}", tok)
        if value >= 1 << 63:
            raise self.error(f"{what} {value} does not fit in int64", tok)
        return value

    def literal(self, value, dtype: str, tok) -> Constant:
        """A scalar constant; a value outside ``dtype``'s range is a ParseError."""
        if dtype.startswith(("int", "uint")):
            lo_hi = _INT_RANGE.get(dtype)
            if lo_hi is None:  # (np.iinfo per literal was a tenth of parsing a 100k chain)
                info = np.iinfo(dtype)
                lo_hi = _INT_RANGE[dtype] = (int(info.min), int(info.max))
            lo, hi = lo_hi
            if not lo <= value <= hi:
                raise self.error(f"literal {value} is out of range for {dtype} [{lo}, {hi}]",
                                 tok)
            # (a fresh array: the NDArray is made directly, without array()'s second copy)
            return Constant(NDArray(np.array(value, dtype=dtype)), self.span(tok))
        limit = _FLOAT_MAX.get(dtype)
        if limit is not None and -limit <= value <= limit:  # cannot overflow (nor is NaN)
            return Constant(NDArray(np.array(value, dtype=dtype)), self.span(tok))
        with np.errstate(over="ignore"):
            cast = np.array(value, dtype=dtype)
        if np.isinf(cast) and np.isfinite(value) or np.isinf(value):
            raise self.error(f"literal {value!r} is out of range for {dtype}", tok)
        return Constant(cast, self.span(tok))

    # ------------------------------------------------------------------ attribute values
    def parse_attr_value(self):
        """One attribute value; nested lists/dicts run on the explicit stack."""
        return trampoline.run(self._attr_value())

    def parse_function_attr_value(self):
        """A function attribute: numbers with a width suffix (``48u64``, also inside lists) stay
        IntImm/FloatImm of that dtype, since function attributes have no schema to restore it."""
        self._typed_numbers = True
        try:
            return self.parse_attr_value()
        finally:
            self._typed_numbers = False

    def _attr_value(self, depth: int = 0):
        t = self.next()
        kind, value = t[0], t[1]
        if depth > MAX_ATTR_DEPTH:
            raise self.error(f"attribute value nested more than {MAX_ATTR_DEPTH} levels deep",
                             t)
        if kind == NUMBER:
            number, dtype = value
            if getattr(self, "_typed_numbers", False) and dtype not in ("int32", "float32"):
                return FloatImm(dtype, number) if dtype.startswith("float") else \
                    IntImm(dtype, number)
            return number
        if kind == STRING:
            return value
        if kind == PUNCT:
            if value == "-":
                num = self.expect_kind(NUMBER)
                return -num[1][0]
            if value == "[":
                items = []
                while not self.at("]"):
                    items.append((yield self._attr_value(depth + 1)))
                    if not self.accept(","):
                        break
                self.expect("]")
                return tuple(items)
            if value == "?":
                return Any()
            if value == "{":
                items = {}
                while not self.at("}"):
                    key = self.next()[1] if self.peek()[0] == IDENT else \
                        (yield self._attr_value(depth + 1))
                    self.expect("=")
                    items[key] = (yield self._attr_value(depth + 1))
                    if not self.accept(","):
                        break
                self.expect("}")
                return items
        if kind == IDENT:
            if value in ("True", "False"):
                return value == "True"
            if value == "None":
                return None
            if value == "meta":
                self.i -= 1
                return self.parse_meta_ref()
            return value
        raise self.error(f"expected an attribute value, found {_describe(t)}", t)

    def parse_meta_ref(self):
        start = self.expect("meta")
        self.expect("[")
        key = self.expect_kind(IDENT)[1]
        self.expect("]")
        self.expect("[")
        idx_tok = self.expect_kind(NUMBER)
        self.expect("]")
        entries = self.meta.get(key)
        index = self._index_value(idx_tok, "a metadata index")
        if entries is None or index >= len(entries):
            raise self.error(f"meta[{key}][{index}] is not in the metadata section", start,
                             "print with astext(show_meta_data=True) or pass init_meta_table")
        node = entries[index]
        if key == "relay.Constant" and not isinstance(node, Constant):
            node = entries[index] = Constant(np.asarray(getattr(node, "numpy", lambda: node)()))
        return node

    # ------------------------------------------------------------------ expressions
    def _seq(self):
        """Statements (``%N = e;``, ``let``, ``free_var``) then the final expression."""
        lets = []
        while True:
            t = self.peek()
            if t[0] == LOCAL and self.at("=", 1):
                self.i += 2
                value = yield self._expr()
                self.expect(";")
                self.temps[t[1]] = value
            elif t[0] == IDENT and t[1] in _STMT_STARTS:
                self.next()
                var = self.parse_binding_var()
                if t[1] == "free_var":
                    self.free_vars[var.name_hint] = var
                    self.expect(";")
                    continue
                self.expect("=")
                value = yield self._expr()
                self.expect(";")
                lets.append((var, value, t))
            else:
                value = yield self._expr()
                if not self.at(";"):
                    body = value
                    break
                # ``e1; e2``: e1 runs for its effect (TVM's sequencing, a let of ``%_``)
                tok = self.next()
                lets.append((Var("_", None, self.span(tok)), value, tok))
        for var, value, tok in reversed(lets):
            body = Let(var, value, body, self.span(tok))
        return body

    def parse_binding_var(self) -> Var:
        tok = self.expect_kind(LOCAL)
        ann = self.parse_type() if self.accept(":") else None
        var = Var(tok[1], ann, self.span(tok))
        self.bind(tok[1], var)
        return var

    def _expr(self):
        """Operands joined by binary operators (precedence climbing with explicit stacks)."""
        operands = [(yield self._postfix())]
        ops: list[tuple[int, str, tuple]] = []
        while True:
            t = self.peek()
            info = _BINARY.get(t[1]) if t[0] == PUNCT else None
            if info is None:
                break
            self.next()
            while ops and ops[-1][0] >= info[0]:
                self._reduce(operands, ops)
            ops.append((info[0], info[1], t))
            operands.append((yield self._postfix()))
        while ops:
            self._reduce(operands, ops)
        return operands[0]

    def _reduce(self, operands, ops) -> None:
        _, name, _tok = ops.pop()
        rhs = operands.pop()
        lhs = operands.pop()
        operands.append(self.make_call(Op.get(name), [lhs, rhs], {}, None, _tok))

    def _postfix(self):
        t = start = self.toks[self.i]
        if t[0] is LOCAL:  # fast paths for the most common operands: no sub-step
            self.i += 1
            expr = self.lookup_local(t)
        elif t[0] is NUMBER:
            self.i += 1
            expr = self.literal(t[1][0], t[1][1], t)
        elif t[0] is IDENT and t[1] not in _KEYWORD_ATOMS and self.at("(", 1):
            expr = self._named_callee(t)
        else:
            expr = yield self._primary()
        toks = self.toks
        while True:
            tok = toks[self.i]
            if tok[1] == "(" and tok[0] is PUNCT:
                self.i += 1
                args, kwargs, attrs = [], {}, None
                while True:
                    t = toks[self.i]
                    kind = t[0]
                    if t[1] == ")" and kind is PUNCT:
                        break
                    if kind is LOCAL and toks[self.i + 1][1] in _ARG_END:
                        self.i += 1
                        args.append(self.lookup_local(t))
                    elif kind is NUMBER and toks[self.i + 1][1] in _ARG_END:
                        self.i += 1
                        args.append(self.literal(t[1][0], t[1][1], t))
                    elif kind is IDENT and self.at("=", 1):
                        key = self.next()[1]
                        self.next()
                        kwargs[key] = self.parse_attr_value()
                    else:
                        arg = yield self._expr()
                        if isinstance(arg, RelayExpr):
                            args.append(arg)
                        else:
                            attrs = arg
                    if not self.accept(","):
                        break
                self.expect(")")
                expr = self.make_call(expr, args, kwargs, attrs, tok, start)
            elif self.at(".") and self.peek(1)[0] == NUMBER:
                dot = self.next()
                expr = TupleGetItem(expr, self._index_value(self.next(), "a tuple index"),
                                    self.span(dot))
            else:
                return expr

    def check_attr_values(self, callee, kwargs: dict, tok) -> None:
        """Integer attributes (``axis=1.5``, ``shape=[2.5]``) and dtype names are checked here,
        with the call's position, instead of being truncated or failing later."""
        defaults = dict(getattr(callee.attrs_type, "_fields", ()) or ())
        for key, value in kwargs.items():
            default = defaults.get(key)
            if key in _DTYPE_ATTRS and isinstance(value, str) and value and \
                    not _is_dtype(value):
                raise self.error(f"attribute {key}={value!r} is not a known dtype", tok)
            is_int = key in _INT_ATTRS or (isinstance(default, int) and
                                           not isinstance(default, bool))
            if not is_int:
                continue
            stack = [value]
            while stack:
                v = stack.pop()
                if isinstance(v, tuple | list):
                    stack.extend(v)
                elif isinstance(v, float):
                    raise self.error(f"attribute {key} must hold integers, got {v!r}", tok)
                elif isinstance(v, int) and not -(1 << 63) <= v < (1 << 63):
                    raise self.error(f"attribute {key} value {v} does not fit in int64", tok)

    def _named_callee(self, t):
        """The operator or constructor named by identifier ``t`` (consumed): no sub-step."""
        self.next()
        value = t[1]
        ctor = self.ctors.get(value)
        if ctor is not None:
            if not ctor.inputs:
                if self.at("(") and self.at(")", 1):
                    self.i += 2
                return Call(ctor, [])
            return ctor
        try:
            return Op.get(value)
        except ValueError:
            raise self.error(f"unknown operator or constructor {value!r}", t) from None

    def make_call(self, callee, args, kwargs, attrs, tok, start=None) -> Call:
        if isinstance(callee, Op) and kwargs:
            self.check_attr_values(callee, kwargs, tok)
        try:
            if isinstance(callee, Op):
                if attrs is None and callee.attrs_type is not None:
                    attrs = callee.attrs_type(**kwargs)
                elif kwargs:
                    raise TypeError(f"operator {callee.name} takes no attributes, "
                                    f"got {sorted(kwargs)}")
            elif kwargs:
                key = kwargs.pop("attrs_type_key", None)
                attrs = get_attrs_type(key)(**kwargs) if key else DictAttrs(kwargs)
        except (TypeError, ValueError, AttributeError) as e:
            raise self.error(f"invalid attributes: {e}", tok) from None
        return Call(callee, args, attrs, None, self.span(start or tok))

    def _primary(self):
        t = self.peek()
        kind, value = t[0], t[1]
        if kind == LOCAL:
            self.next()
            return self.lookup_local(t)
        if kind == GLOBAL:
            self.next()
            gv = self.globals.get(value)
            if gv is None:
                raise self.error(f"undefined global function @{value}", t)
            return gv
        if kind == NUMBER:
            self.next()
            return self.literal(value[0], value[1], t)
        if kind == PUNCT:
            if value == "(":
                return (yield self._paren())
            if value == "-":
                self.next()
                if self.peek()[0] == NUMBER:
                    num = self.next()[1]
                    return self.literal(-num[0], num[1], t)
                operand = yield self._postfix()
                return self.make_call(Op.get("negative"), [operand], {}, None, t)
        elif kind == IDENT:
            if value == "fn":
                self.next()
                return (yield self._function_rest())
            if value == "if":
                return (yield self._if())
            if value == "match":
                return (yield self._match())
            if value in ("ref", "ref_read", "ref_write") and self.at("(", 1):
                return (yield self._ref(value))
            if value in ("True", "False"):
                self.next()
                return Constant(np.array(value == "True"), self.span(t))
            if value == "meta":
                return self.parse_meta_ref()
            return self._named_callee(t)
        raise self.error(f"expected an expression, found {_describe(t)}", t)

    def _paren(self):
        self.expect("(")
        if self.accept(")"):
            return Tuple([])
        t = self.peek()
        if (t[0] == IDENT and t[1] in _STMT_STARTS) or (t[0] == LOCAL and self.at("=", 1)):
            self.push_scope()
            expr = yield self._seq()
            self.pop_scope()
            self.expect(")")
            return expr
        first = yield self._expr()
        if self.accept(")"):
            return first
        fields = [first]
        while self.accept(","):
            if self.at(")"):
                break
            fields.append((yield self._expr()))
        self.expect(")")
        return Tuple(fields)

    def _block(self):
        self.expect("{")
        self.push_scope()
        expr = yield self._seq()
        self.pop_scope()
        self.expect("}")
        return expr

    def _function_rest(self, prefix_tok=None):
        """After ``fn`` (or ``def @name``): ``[T](params) -> ret { body }``."""
        start = prefix_tok or self.toks[self.i - 1]
        self.push_scope()
        tparams = self.parse_type_params()
        self.expect("(")
        params, attrs = [], {}
        while not self.at(")"):
            if self.peek()[0] == IDENT and self.at("=", 1):
                key = self.next()[1]
                self.next()
                attrs[key] = self.parse_function_attr_value()
            else:
                params.append(self.parse_param_var())
            if not self.accept(","):
                break
        self.expect(")")
        vd = attrs.pop("virtual_device", None)  # TVM's printer lists it with the attributes
        ret = self.parse_type() if self.accept("->") else None
        body = yield self._block()
        self.pop_scope()
        fn = Function(params, body, ret, tparams, DictAttrs(attrs) if attrs else None,
                      self.span(start))
        if vd is not None:
            fn.virtual_device_ = self._virtual_device(vd, start)
        return fn

    def parse_param_var(self) -> Var:
        """A function parameter: ``%x``, ``%x: T`` or ``%x {virtual_device=...}: T``."""
        tok = self.expect_kind(LOCAL)
        vd = None
        if self.at("{"):
            fake = self.parse_attr_value()
            if set(fake) != {"virtual_device"}:
                raise self.error(f"a parameter takes only {{virtual_device=...}}, got keys "
                                 f"{sorted(map(str, fake))}", tok)
            vd = self._virtual_device(fake["virtual_device"], tok)
        ann = self.parse_type() if self.accept(":") else None
        var = Var(tok[1], ann, self.span(tok))
        if vd is not None:
            var.virtual_device_ = vd
        self.bind(tok[1], var)
        return var

    def _virtual_device(self, value, tok):
        from ...ir.virtual_device import VirtualDevice

        if not isinstance(value, VirtualDevice):
            raise self.error(f"virtual_device must be a meta[VirtualDevice][i] reference, got "
                             f"{value!r}", tok)
        return value

    def _if(self):
        start = self.expect("if")
        self.expect("(")
        cond = yield self._expr()
        self.expect(")")
        then = yield self._block()
        self.expect("else")
        other = yield self._block()
        return If(cond, then, other, self.span(start))

    def _ref(self, which: str):
        self.next()
        self.expect("(")
        first = yield self._expr()
        if which == "ref_write":
            self.expect(",")
            second = yield self._expr()
            self.expect(")")
            return RefWrite(first, second)
        self.expect(")")
        return RefCreate(first) if which == "ref" else RefRead(first)

    def _match(self):
        self.expect("match")
        complete = not self.accept("?")
        self.expect("(")
        data = yield self._expr()
        self.expect(")")
        self.expect("{")
        clauses = []
        while not self.at("}"):
            self.push_scope()
            pattern = self.parse_pattern()
            self.expect("=>")
            # TVM reads a clause's right side as a full expression, so `%0 = ...;` and `let`
            # bindings may precede its value without braces
            rhs = yield (self._block() if self.at("{") else self._seq())
            self.pop_scope()
            clauses.append(Clause(pattern, rhs))
            if not self.accept(","):
                break
        self.expect("}")
        return Match(data, clauses, complete)

    def parse_pattern(self):
        """One match pattern; nested patterns run on the explicit stack."""
        return trampoline.run(self._pattern())

    def _pattern(self):
        t = self.peek()
        if t[0] == LOCAL:
            return PatternVar(self.parse_binding_var())
        if self.accept("_"):
            return PatternWildcard()
        if self.accept("("):
            pats = []
            while not self.at(")"):
                pats.append((yield self._pattern()))
                if not self.accept(","):
                    break
            self.expect(")")
            return PatternTuple(pats)
        if t[0] == IDENT and t[1] in self.ctors:
            self.next()
            pats = []
            if self.accept("("):
                while not self.at(")"):
                    pats.append((yield self._pattern()))
                    if not self.accept(","):
                        break
                self.expect(")")
            return PatternConstructor(self.ctors[t[1]], pats)
        raise self.error(f"expected a pattern, found {_describe(t)}", t)


def _describe(tok) -> str:
    kind, value = tok[0], tok[1]
    if kind == EOF:
        return "end of input"
    if kind == LOCAL:
        return f"'%{value}'"
    if kind == GLOBAL:
        return f"'@{value}'"
    if kind == NUMBER:
        return f"number {value[0]}"
    if kind in (METADATA, VERSION):
        return kind
    return f"'{value}'"

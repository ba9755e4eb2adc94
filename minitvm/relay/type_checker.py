"""The Relay type checker: one iterative walk that assigns every expression a type.

Types of operator calls come from the op's ``FTypeRelation`` once its argument types are known;
everything else (let, if, calls of functions, tuples, constructors, match, references) is solved by
unification (``TypeSolver``). The walk uses an explicit stack of ``(action, node)`` pairs, so no
Python recursion grows with the program. Types are kept in a side table and written to
``expr._checked_type`` only when the whole program type-checks, so a failed check leaves every
node as it was.
"""

from __future__ import annotations

from ..ir.diagnostics import RelayTypeError, describe_expr, format_type, render_program
from ..ir.expr import GlobalVar
from ..ir.node import Span
from ..ir.op import Op
from ..ir.type import (
    FuncType,
    IncompleteType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
)
from .adt import Constructor, Match, PatternConstructor, PatternTuple, PatternVar
from .expr import (
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
from .type_solver import TypeSolver, UnifyError, is_ground, is_ground_memo

__all__ = ["TypeChecker", "relation_cache_clear"]

_BOOL_SCALAR = TensorType((), "bool")
_UNIT = TupleType(())
_REL_CACHE: dict = {}
_REL_CACHE_MAX = 100_000


def relation_cache_clear() -> None:
    """Forget cached op type relation results."""
    _REL_CACHE.clear()


def _attrs_key(attrs):
    if attrs is None:
        return None
    values = getattr(attrs, "_values", None)
    if values is None:
        return attrs  # identity
    return (type(attrs), tuple(values.items()))


_MAX_CASES_SHOWN = 10  # a type error lists at most this many unmatched cases


def _pattern_text(pat) -> str:
    """``Cons(_, Nil)``, ``(_, _)``, ``_``: a pattern as Relay text (an explicit-stack walk)."""
    out: list[str] = []
    stack: list = [pat]
    while stack:
        p = stack.pop()
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, PatternVar):
            out.append("%" + p.var.name_hint)
        elif isinstance(p, PatternConstructor | PatternTuple):
            is_ctor = isinstance(p, PatternConstructor)
            head = p.constructor.name_hint if is_ctor else ""
            if is_ctor and not p.patterns:
                out.append(head)
                continue
            items: list = [head + "("]
            for i, q in enumerate(p.patterns):
                items += [", "] * (i > 0) + [q]
            items.append(",)" if not is_ctor and len(p.patterns) == 1 else ")")
            stack.extend(reversed(items))
        else:
            out.append("_")
    return "".join(out)


class _Pending:
    """A deferred rule: an op relation or a tuple projection waiting for its input types."""

    __slots__ = ("node", "root", "out")

    def __init__(self, node, root, out):
        self.node, self.root, self.out = node, root, out


class TypeChecker:
    """Type-checks expressions and functions of one module; ``finish()`` writes the types.

    ``local=True`` (InferTypeLocal) accepts free variables (typed by their annotation or an
    existing checked_type) and reuses the types of already-typed sub-expressions.
    """

    def __init__(self, mod=None, local: bool = False):
        self.mod = mod
        self.local = local
        self.solver = TypeSolver()
        self.types: dict = {}
        self.var_types: dict = {}
        self.global_types: dict = {}
        self.pending: list[_Pending] = []
        self.in_scope: dict = {}  # var -> number of enclosing binders
        self.ever_bound: set = set()
        self.deps: set = set()
        self.root = None
        self.bound_order: list = []  # (var, root) for every variable binding, in order
        self.functions_seen: list = []  # (function, root) for every function checked
        self._ctor_types: dict = {}
        self._rel_fast: dict = {}
        self._op_rules: dict = {}
        # (shape, dtype) -> the one TensorType of the constants of that type: types are
        # values, and sharing them lets ``_relate``'s identity cache answer calls on constants
        self._const_types: dict = {}
        self._dispatch = {
            Var: self._visit_var, Constant: self._visit_constant, GlobalVar: self._visit_global,
            Op: self._visit_op, Constructor: self._visit_constructor, Call: self._visit_call,
            Tuple: self._visit_children, TupleGetItem: self._visit_children,
            RefCreate: self._visit_children, RefRead: self._visit_children,
            RefWrite: self._visit_children, If: self._visit_children, Let: self._visit_let,
            Function: self._visit_function, Match: self._visit_match,
        }
        self._post = {
            Tuple: self._post_tuple, TupleGetItem: self._post_tuple_getitem,
            RefCreate: self._post_ref_create, RefRead: self._post_ref_read,
            RefWrite: self._post_ref_write, If: self._post_if,
        }
        self._children = {
            Tuple: lambda e: e.fields, TupleGetItem: lambda e: (e.tuple_value,),
            RefCreate: lambda e: (e.value,), RefRead: lambda e: (e.ref,),
            RefWrite: lambda e: (e.ref, e.value), If: lambda e: (e.cond, e.true_branch,
                                                                 e.false_branch),
        }

    # ------------------------------------------------------------------ errors
    def error(self, node, detail: str, root=None):
        root = root if root is not None else self.root
        what = describe_expr(node)
        text = render_program(root, node, detail) if root is not None else f"  in: {what}"
        span = getattr(node, "span", None)  # (parsed text: where in it, TVM's file:line:col)
        where = f"{span}: " if isinstance(span, Span) and span.line > 0 else ""
        raise RelayTypeError(f"{where}type error in `{what}`: {detail}\n{text}", node, root,
                             detail)

    def unify(self, a, b, node, context: str):
        try:
            return self.solver.unify(a, b)
        except UnifyError as e:
            msg = f"{context}: {e}"
        self.error(node, msg)

    # ------------------------------------------------------------------ globals
    def declare_global(self, gv: GlobalVar, fn) -> None:
        """Give ``gv`` a type before any body is checked (so recursion sees it)."""
        if fn._checked_type is not None and not isinstance(fn, Function):
            self.global_types[gv] = fn._checked_type
            return
        args = [p.type_annotation if p.type_annotation is not None else IncompleteType()
                for p in fn.params]
        ret = fn.ret_type if fn.ret_type is not None else IncompleteType()
        self.global_types[gv] = FuncType(args, ret, fn.type_params)

    def set_global_type(self, gv: GlobalVar, t) -> None:
        self.global_types[gv] = t

    # ------------------------------------------------------------------ driver
    def check(self, root, gv: GlobalVar | None = None):
        """Walk ``root``; returns its (unresolved) type. Pending relations are solved in finish."""
        self.root = root
        self.deps = set()
        self.in_scope = {}
        if gv is not None and isinstance(root, Function):
            placeholder = self.global_types.get(gv)
            if placeholder is not None:
                for p, t in zip(root.params, placeholder.arg_types):
                    self.var_types.setdefault(p, t)
        stack = [(self._visit, root)]
        pop = stack.pop
        self._stack = stack
        while stack:
            action, node = pop()
            action(node)
        t = self.types[root]
        if gv is not None:
            placeholder = self.global_types.get(gv)
            if placeholder is not None and placeholder is not t:
                self.unify(placeholder, t, root, f"the type of @{gv.name_hint}")
        return t

    def _visit(self, node):
        if node in self.types and type(node) is not Var:
            return
        if self.local and node._checked_type is not None and type(node) is not Var:
            self.types[node] = node._checked_type
            return
        fn = self._dispatch.get(type(node))
        if fn is None:
            for cls, f in self._dispatch.items():
                if isinstance(node, cls):
                    fn = f
                    break
            else:
                self.error(node, f"{type(node).__name__} is not a Relay expression")
        fn(node)

    def _bind(self, var: Var, t=None):
        if t is None:
            t = self.var_types.get(var)
        if t is None:
            ann = var.type_annotation
            t = ann if ann is not None else IncompleteType()
        self.var_types[var] = t
        self.types[var] = t
        self.in_scope[var] = self.in_scope.get(var, 0) + 1
        self.ever_bound.add(var)
        self.bound_order.append((var, self.root))

    def _unbind(self, var: Var):
        n = self.in_scope.get(var, 0) - 1
        if n > 0:
            self.in_scope[var] = n
        else:
            self.in_scope.pop(var, None)

    # ------------------------------------------------------------------ leaves
    def _visit_var(self, var: Var):
        if var in self.in_scope:
            return
        if var in self.ever_bound:
            self.error(var, f"variable %{var.name_hint} is used outside the scope that binds it")
        if not self.local:
            self.error(var, f"unbound variable %{var.name_hint}: it is not a parameter of the "
                            "function nor bound by an enclosing let or match")
        t = self.types.get(var)
        if t is None:
            t = var._checked_type or var.type_annotation or IncompleteType()
            self.types[var] = t
            self.var_types[var] = t
            self.bound_order.append((var, self.root))

    def _visit_constant(self, c: Constant):
        data = c.data
        key = (data.shape, data.dtype)
        t = self._const_types.get(key)
        if t is None:
            t = self._const_types[key] = TensorType(data.shape, data.dtype)
        self.types[c] = t

    def _visit_global(self, gv: GlobalVar):
        t = self.global_types.get(gv)
        if t is None:
            fn = None
            if self.mod is not None and gv in self.mod.functions:
                fn = self.mod.functions[gv]
            if fn is None:
                where = "the module" if self.mod is not None else "a module (none was given)"
                self.error(gv, f"global function @{gv.name_hint} is not defined in {where}")
            t = fn._checked_type
            if t is None and not isinstance(fn, Function):  # a PrimFunc: its Relay type is
                t = gv._checked_type or gv.type_annotation  # the GlobalVar's, as in TVM
            if t is None:
                self.error(gv, f"@{gv.name_hint} refers to a {type(fn).__name__} that has no type")
            self.global_types[gv] = t
        self.deps.add(gv)
        self.types[gv] = t

    def _visit_op(self, op: Op):
        self.error(op, f"operator {op.name} must be called; it cannot be used as a value")

    def _visit_constructor(self, c: Constructor):
        self.types[c] = self.constructor_type(c, c)

    def constructor_type(self, c: Constructor, node) -> FuncType:
        t = self._ctor_types.get(c)
        if t is not None:
            return t
        data = None
        if self.mod is not None:
            data = self.mod.type_definitions.get(c.belong_to)
        if data is None:
            self.error(node, f"constructor {c.name_hint} belongs to {c.belong_to.name_hint}, "
                             "which is not defined in the module")
        t = FuncType(c.inputs, TypeCall(data.header, data.type_vars), data.type_vars)
        self._ctor_types[c] = t
        return t

    # ------------------------------------------------------------------ dataflow
    def _visit_children(self, node):
        push = self._stack.append
        push((self._post[type(node)], node))
        for child in reversed(self._children[type(node)](node)):
            push((self._visit, child))

    def _visit_call(self, call: Call):
        push = self._stack.append
        if type(call.op) is Op:
            push((self._post_op_call, call))
        else:
            push((self._post_call, call))
        for a in reversed(call.args):
            push((self._visit, a))
        if type(call.op) is not Op:
            push((self._visit, call.op))

    def _op_rule(self, op: Op):
        """``(num_inputs, FTypeRelation)`` of ``op``, looked up once per check."""
        rule = self._op_rules.get(op)
        if rule is None:
            rule = self._op_rules[op] = (op.num_inputs, op.get_attr("FTypeRelation"))
        return rule

    def _post_op_call(self, call: Call):
        op = call.op
        args = call.args
        n, rel = self._op_rule(op)
        if n is not None and n >= 0 and n != len(args):
            self.error(call, f"operator {op.name} expects {n} argument(s) but is given "
                             f"{len(args)}")
        if rel is None:
            self.error(call, f"operator {op.name} has no type relation (FTypeRelation)")
        types = self.types
        arg_types = [types[a] for a in args]
        ground = True
        for i, t in enumerate(arg_types):
            if type(t) is not TensorType:  # a tensor type is resolved and ground as it is
                t = arg_types[i] = self.solver.resolve(t)
                if ground and not is_ground(t):
                    ground = False
        if ground:
            types[call] = self._relate(call, rel, arg_types, self.root)
        else:
            out = IncompleteType()
            types[call] = out
            self.pending.append(_Pending(call, self.root, out))

    def _relate(self, call: Call, rel, arg_types, root):
        # first by the attrs' values and the argument types' identities: a program's calls
        # share a few type objects, and value-equal attrs (every ``relay.reshape(x, (1, 2))``
        # builds its own) need no structural hash of the types
        attrs = call.attrs
        fast_key = None
        if attrs is not None:
            try:
                fast_key = (rel, _attrs_key(attrs), *map(id, arg_types))
                hit = self._rel_fast.get(fast_key)
            except TypeError:  # unhashable attrs values: by the attrs' identity
                fast_key = None
        if fast_key is None:
            fast_key = (rel, id(attrs), *map(id, arg_types))
            hit = self._rel_fast.get(fast_key)
        if hit is not None:
            return hit[0]
        key = None
        try:
            key = (rel, _attrs_key(attrs), tuple(arg_types))
            hit = _REL_CACHE.get(key)
        except (TypeError, RecursionError):  # unhashable attrs values; a type nested
            key, hit = None, None  # thousands deep (Type.__hash__ recurses): skip the cache
        if hit is not None:
            self._rel_fast[fast_key] = (hit, attrs, arg_types)  # keeps the id()s alive
            return hit
        msg, cause = None, None
        try:
            out = rel(arg_types, call.attrs)
        except (TypeError, ValueError, IndexError, KeyError, AssertionError) as e:
            msg = str(e) if str(e).startswith(call.op.name) else f"{call.op.name}: {e}"
        except Exception as e:  # a bug in the relation itself: keep its traceback as the cause
            msg = f"internal error in the type relation of {call.op.name}: {type(e).__name__}: {e}"
            cause = e
        if msg is not None:
            args = ", ".join(format_type(t) for t in arg_types)
            try:
                self.error(call, f"{msg} (argument types: {args})", root)
            except RelayTypeError as err:
                raise err from cause
        if out is None or not hasattr(out, "_key"):
            self.error(call, f"the type relation of {call.op.name} returned {out!r}, not a type",
                       root)
        if key is not None:
            if len(_REL_CACHE) >= _REL_CACHE_MAX:
                _REL_CACHE.clear()
            _REL_CACHE[key] = out
        self._rel_fast[fast_key] = (out, attrs, arg_types)  # keeps the id()s alive
        return out

    def _post_call(self, call: Call):
        types = self.types
        solver = self.solver
        ftype = solver.find(types[call.op])
        if type(ftype) is FuncType:  # (the callee is described only for an error)
            if ftype.type_params:
                msg = None
                try:
                    ftype = solver.instantiate(ftype, call.type_args)
                except UnifyError as e:
                    msg = f"call of {describe_expr(call.op)}: {e.detail}"
                if msg is not None:
                    self.error(call, msg)
            if len(ftype.arg_types) != len(call.args):
                self.error(call, f"{describe_expr(call.op)} expects {len(ftype.arg_types)} "
                                 f"argument(s) but is given {len(call.args)}")
            for i, (p, a) in enumerate(zip(ftype.arg_types, call.args)):
                msg = None
                try:
                    solver.unify(p, types[a])
                except UnifyError as e:
                    msg = f"argument {i} of {describe_expr(call.op)}: {e}"
                if msg is not None:
                    self.error(call, msg)
            types[call] = ftype.ret_type
            return
        what = describe_expr(call.op)
        if type(ftype) is IncompleteType:
            ret = IncompleteType()
            self.unify(ftype, FuncType([types[a] for a in call.args], ret), call,
                       f"calling {what}")
            types[call] = ret
        else:
            self.error(call, f"{what} has type {format_type(self.solver.resolve(ftype))}, "
                             "which is not a function")

    def _post_tuple(self, tup: Tuple):
        types = self.types
        self.types[tup] = TupleType([types[f] for f in tup.fields])

    def _post_tuple_getitem(self, node: TupleGetItem):
        tt = self.solver.find(self.types[node.tuple_value])
        if type(tt) is IncompleteType:
            out = IncompleteType()
            self.types[node] = out
            self.pending.append(_Pending(node, self.root, out))
            return
        self.types[node] = self._project(node, tt, self.root)

    def _project(self, node: TupleGetItem, tt, root):
        if type(tt) is not TupleType:
            self.error(node, f"cannot take field {node.index} of a value of type "
                             f"{format_type(self.solver.resolve(tt))}, which is not a tuple", root)
        if not 0 <= node.index < len(tt.fields):
            self.error(node, f"tuple index {node.index} is out of range for "
                             f"{format_type(self.solver.resolve(tt))}", root)
        return tt.fields[node.index]

    def _post_ref_create(self, node: RefCreate):
        self.types[node] = RelayRefType(self.types[node.value])

    def _post_ref_read(self, node: RefRead):
        out = IncompleteType()
        self.unify(self.types[node.ref], RelayRefType(out), node, "reading a reference")
        self.types[node] = out

    def _post_ref_write(self, node: RefWrite):
        self.unify(self.types[node.ref], RelayRefType(self.types[node.value]), node,
                   "writing a reference")
        self.types[node] = _UNIT

    def _post_if(self, node: If):
        types = self.types
        self.unify(types[node.cond], _BOOL_SCALAR, node.cond,
                   "the condition of an if must be a bool scalar (Tensor[(), bool])")
        types[node] = self.unify(types[node.true_branch], types[node.false_branch], node,
                                 "the branches of the if have different types")

    # ------------------------------------------------------------------ binders
    def _visit_let(self, let: Let):
        var = let.var
        # Only a function value may refer to its own let variable (recursion); otherwise the
        # variable simply takes its value's type, bound after the value is checked.
        if var.type_annotation is not None or type(let.value) is Function:
            self._bind(var)
        push = self._stack.append
        push((self._post_let, let))
        push((self._visit, let.body))
        push((self._let_bind, let))
        push((self._visit, let.value))

    def _let_bind(self, let: Let):
        var = let.var
        if var not in self.in_scope:
            self._bind(var, self.types[let.value])
            return
        self.unify(self.var_types[var], self.types[let.value], let,
                   f"the value bound to %{var.name_hint} does not match its type")

    def _post_let(self, let: Let):
        self.types[let] = self.types[let.body]
        self._unbind(let.var)

    def _visit_function(self, fn: Function):
        for p in fn.params:
            self._bind(p)
        push = self._stack.append
        push((self._post_function, fn))
        push((self._visit, fn.body))

    def _post_function(self, fn: Function):
        self.functions_seen.append((fn, self.root))
        body_t = self.types[fn.body]
        ret = body_t
        if fn.ret_type is not None:
            ret = fn.ret_type
            self.unify(ret, body_t, fn, "the function body's type does not match its "
                                        "annotated return type")
        for p in fn.params:
            self._unbind(p)
        self.types[fn] = FuncType([self.var_types[p] for p in fn.params], ret, fn.type_params)

    def _visit_match(self, m: Match):
        push = self._stack.append
        push((self._post_match, m))
        for clause in reversed(m.clauses):
            push((self._exit_clause, clause))
            push((self._visit, clause.rhs))
            push((self._bind_clause, (m, clause)))
        push((self._visit, m.data))

    def _bind_clause(self, item):
        m, clause = item
        work = [(clause.lhs, self.types[m.data])]
        while work:
            pat, expected = work.pop()
            if isinstance(pat, PatternVar):
                self._bind(pat.var)
                self.unify(self.var_types[pat.var], expected, m,
                           f"pattern variable %{pat.var.name_hint}")
            elif isinstance(pat, PatternConstructor):
                ctor = pat.constructor
                ft = self.solver.instantiate(self.constructor_type(ctor, m))
                if len(ft.arg_types) != len(pat.patterns):
                    self.error(m, f"pattern {ctor.name_hint} has {len(pat.patterns)} field(s) "
                                  f"but the constructor takes {len(ft.arg_types)}")
                self.unify(expected, ft.ret_type, m, f"pattern {ctor.name_hint}")
                work.extend(zip(pat.patterns, ft.arg_types))
            elif isinstance(pat, PatternTuple):
                fields = [IncompleteType() for _ in pat.patterns]
                self.unify(expected, TupleType(fields), m, "tuple pattern")
                work.extend(zip(pat.patterns, fields))

    def _exit_clause(self, clause):
        stack = [clause.lhs]
        while stack:
            p = stack.pop()
            if isinstance(p, PatternVar):
                self._unbind(p.var)
            elif isinstance(p, PatternConstructor | PatternTuple):
                stack.extend(p.patterns)

    def _post_match(self, m: Match):
        if not m.clauses:
            self.error(m, "a match needs at least one clause")
        t = self.types[m.clauses[0].rhs]
        for i, c in enumerate(m.clauses[1:], 1):
            t = self.unify(t, self.types[c.rhs], c.rhs, f"clause {i} of the match has a "
                                                        "different type than clause 0")
        self.types[m] = t
        if m.complete and self.mod is not None:
            self._check_exhaustive(m)

    def _check_exhaustive(self, m: Match):
        """A ``match`` (not ``match?``) must cover every value, as TVM's type checker demands."""
        from .analysis.match_exhaustion import unmatched_cases

        try:
            missing = unmatched_cases(m, self.mod)
        except ValueError as e:
            self.error(m, str(e))
        if missing:
            shown = ", ".join(_pattern_text(p) for p in missing[:_MAX_CASES_SHOWN])
            if len(missing) > _MAX_CASES_SHOWN:
                shown += f", ... ({len(missing) - _MAX_CASES_SHOWN} more)"
            self.error(m, "match expression does not handle the following cases: " + shown
                          + " (add clauses for them, or write `match?` for a partial match)")

    # ------------------------------------------------------------------ solving
    def solve(self) -> None:
        """Run deferred relations until none makes progress (at most one sweep per rule)."""
        resolve = self.solver.resolve
        while self.pending:
            rest = []
            for p in self.pending:
                node = p.node
                if type(node) is TupleGetItem:
                    tt = self.solver.find(self.types[node.tuple_value])
                    if type(tt) is IncompleteType:
                        rest.append(p)
                        continue
                    out = self._project(node, tt, p.root)
                else:
                    arg_types = [resolve(self.types[a]) for a in node.args]
                    if not all(is_ground(t) for t in arg_types):
                        if self._hint_arg_types(node, arg_types):
                            arg_types = [resolve(self.types[a]) for a in node.args]
                    if not all(is_ground(t) for t in arg_types):
                        rest.append(p)
                        continue
                    out = self._relate(node, node.op.get_attr("FTypeRelation"), arg_types,
                                       p.root)
                self.unify(p.out, out, node, f"the result of {describe_expr(node)}")
            if len(rest) == len(self.pending):
                break
            self.pending = rest

    def _hint_arg_types(self, call, arg_types) -> bool:
        """Type the unknown arguments of ``call`` that its op's ``FInferArgTypes`` hint
        determines (a conv2d weight from ``channels``/``kernel_size``, ...); True if any."""
        hint = call.op.get_attr("FInferArgTypes") if type(call.op) is Op else None
        if hint is None:
            return False
        known = [t if is_ground(t) else None for t in arg_types]
        try:
            proposed = hint(known, call.attrs)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            return False
        progress = False
        for arg, t, new in zip(call.args, known, proposed):
            if t is None and new is not None:
                self.unify(self.types[arg], new, arg, f"the argument of {call.op.name}")
                progress = True
        return progress

    def finish(self) -> dict:
        """Check that every type is known, then write ``_checked_type``; returns node->type."""
        self.solve()
        resolve = self.solver.resolve
        # nothing is unified from here on: resolutions and ground checks are shared by all
        # nodes (a chain of nested tuples has types nested as deep: linear, not quadratic)
        done: dict = {}
        ground: dict = {}
        for var, root in self.bound_order:
            if not is_ground_memo(resolve(self.var_types[var], done), ground):
                self.error(var, f"cannot infer the type of %{var.name_hint}; "
                                "add a type annotation", root)
        for p in self.pending:
            self.error(p.node, "cannot infer the types of this expression's operands", p.root)
        resolved = {}
        for node, t in self.types.items():
            if type(t) is TensorType:  # resolved and ground as it is
                resolved[node] = t
                continue
            r = resolve(t, done)
            if not is_ground_memo(r, ground):
                self.error(node, f"cannot infer the type of this expression (got "
                                 f"{format_type(r)})")
            resolved[node] = r
        for node, r in resolved.items():
            node._checked_type = r
        return resolved

    def missing_annotations(self) -> dict:
        """root -> (vars bound without annotation, functions without ret_type) under it."""
        out: dict = {}
        for var, root in self.bound_order:
            if var.type_annotation is None or isinstance(var.type_annotation, IncompleteType):
                out.setdefault(root, ([], []))[0].append(var)
        for fn, root in self.functions_seen:
            if fn.ret_type is None:
                out.setdefault(root, ([], []))[1].append(fn)
        return out

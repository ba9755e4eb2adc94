"""``verify_well_formed``: every variable defined before use, buffers declared, ranks match."""

from __future__ import annotations

from .. import expr as E
from .. import stmt as S
from ..stmt_functor import post_order

_CONST_LEAVES = frozenset({E.IntImm, E.FloatImm, E.StringImm})


class _Checker:
    def __init__(self):
        self.defined: dict[int, int] = {}  # id(var) -> nesting count
        self.buffers: dict[int, int] = {}
        self.ever: set[int] = set()
        self.errors: list[str] = []
        self.keep: list = []

    def define(self, v, where: str) -> None:
        if id(v) in self.ever and self.defined.get(id(v)):
            self.errors.append(f"variable {v.name!r} is defined twice ({where})")
        self.ever.add(id(v))
        self.keep.append(v)
        self.defined[id(v)] = self.defined.get(id(v), 0) + 1

    def undefine(self, v) -> None:
        self.defined[id(v)] -= 1

    def add_buffer(self, b, delta: int) -> None:
        self.buffers[id(b)] = self.buffers.get(id(b), 0) + delta
        self.keep.append(b)

    def check_expr(self, e, where: str) -> None:
        if type(e) in _CONST_LEAVES:  # most loop bounds and many indices: nothing to check
            return
        nodes = list(post_order(e))  # one walk, read twice
        lets = {id(n.var) for n in nodes if isinstance(n, E.Let)}
        for n in nodes:
            if isinstance(n, E.Var):
                if not self.defined.get(id(n)) and id(n) not in lets:
                    self.errors.append(
                        f"variable {n.name!r} is used but not defined ({where})")
            elif isinstance(n, E.BufferLoad):
                self.check_access(n.buffer, n.indices, f"load in {where}")

    def check_access(self, buf, indices, where: str) -> None:
        if not self.buffers.get(id(buf)):
            self.errors.append(f"buffer {buf.name!r} is used but not declared ({where})")
        if len(indices) != len(buf.shape):
            self.errors.append(
                f"buffer {buf.name!r} has rank {len(buf.shape)} but is accessed with "
                f"{len(indices)} indices ({where})")

    def check_buffer_shape(self, b, where: str) -> None:
        for d in (*b.shape, *b.strides, b.elem_offset):
            self.check_expr(d, f"shape of buffer {b.name!r} in {where}")

    def run(self, func) -> None:
        for p in func.params:
            self.define(p, "parameter")
        for b in func.buffer_map.values():
            self.add_buffer(b, 1)
            # the parameter binds its buffer's data pointer too (the code generator maps both
            # to the argument): a call passing ``b.data`` (an extern GEMM's operand) reads it
            if not self.defined.get(id(b.data)):
                self.define(b.data, f"data of {b.name!r}")
            for d in (*b.shape, *b.strides, b.elem_offset):
                for n in post_order(d):
                    if isinstance(n, E.Var) and not self.defined.get(id(n)):
                        self.define(n, f"shape of {b.name!r}")
        stack: list = [("stmt", func.body, "body")]
        while stack:
            kind, s, where = stack.pop()
            if kind == "undef":
                self.undefine(s)
                continue
            if kind == "unbuf":
                self.add_buffer(s, -1)
                continue
            if kind == "realize_check":
                continue
            self.visit(s, where, stack)

    def visit(self, s, where: str, stack: list) -> None:
        push = stack.append
        if isinstance(s, S.SeqStmt):
            stack.extend(("stmt", c, where) for c in reversed(s.seq))
        elif isinstance(s, S.BufferStore):
            w = f"store to {s.buffer.name!r} in {where}"
            self.check_access(s.buffer, s.indices, w)
            self.check_expr(s.value, w)
            for i in s.indices:
                self.check_expr(i, w)
        elif isinstance(s, S.For):
            w = f"loop {s.loop_var.name!r}"
            self.check_expr(s.min, w)
            self.check_expr(s.extent, w)
            self.define(s.loop_var, w)
            push(("undef", s.loop_var, where))
            push(("stmt", s.body, where))
        elif isinstance(s, S.LetStmt):
            self.check_expr(s.value, f"let {s.var.name!r}")
            self.define(s.var, f"let {s.var.name!r}")
            push(("undef", s.var, where))
            push(("stmt", s.body, where))
        elif isinstance(s, S.IfThenElse):
            self.check_expr(s.condition, f"if condition in {where}")
            if s.else_case is not None:
                push(("stmt", s.else_case, where))
            push(("stmt", s.then_case, where))
        elif isinstance(s, (S.Evaluate, S.AttrStmt, S.AssertStmt)):
            self.check_expr(s.value if not isinstance(s, S.AssertStmt) else s.condition, where)
            if not isinstance(s, S.Evaluate):
                push(("stmt", s.body, where))
        elif isinstance(s, S.Allocate):
            for e in s.extents:
                self.check_expr(e, f"allocate {s.buffer_var.name!r}")
            self.define(s.buffer_var, "allocate")
            push(("undef", s.buffer_var, where))
            push(("stmt", s.body, where))
        elif isinstance(s, S.DeclBuffer):
            self.check_buffer_shape(s.buffer, where)
            self.add_buffer(s.buffer, 1)
            push(("unbuf", s.buffer, where))
            push(("stmt", s.body, where))
        elif isinstance(s, S.BlockRealize):
            b = s.block
            w = f"block {b.name_hint!r}"
            for v in s.iter_values:
                self.check_expr(v, w)
            if len(s.iter_values) != len(b.iter_vars):
                self.errors.append(f"{w} binds {len(s.iter_values)} values to "
                                   f"{len(b.iter_vars)} iter vars")
            for iv in b.iter_vars:
                self.check_expr(iv.dom.extent, w)
                self.define(iv.var, w)
                push(("undef", iv.var, where))
            self.check_expr(s.predicate, w)
            for buf in b.alloc_buffers:
                self.check_buffer_shape(buf, w)
                self.add_buffer(buf, 1)
                push(("unbuf", buf, where))
            for reg in (*b.reads, *b.writes):
                self.check_access(reg.buffer, reg.region, f"region of {w}")
                for r in reg.region:
                    self.check_expr(r.min, w)
                    self.check_expr(r.extent, w)
            push(("stmt", b.body, w))
            if b.init is not None:
                push(("stmt", b.init, f"init of {w}"))
        elif isinstance(s, S.Block):
            visit_realize = S.BlockRealize([iv.var for iv in s.iter_vars], True, s)
            for iv in s.iter_vars:
                self.define(iv.var, "opaque block")
            self.visit(visit_realize, where, stack)
        elif s is not None:
            self.errors.append(f"unknown statement {type(s).__name__} in {where}")


def verify_well_formed(obj, assert_mode: bool = True) -> bool:
    """Check a PrimFunc (or every PrimFunc of an IRModule); raise ValueError if ill-formed."""
    funcs = []
    if hasattr(obj, "functions"):
        funcs = [(getattr(gv, "name_hint", str(gv)), f) for gv, f in obj.functions.items()
                 if hasattr(f, "buffer_map")]
    else:
        funcs = [(obj.attrs.get("global_symbol", "main") if obj.attrs else "main", obj)]
    errors = []
    for name, f in funcs:
        c = _Checker()
        c.run(f)
        errors += [f"{name}: {e}" for e in dict.fromkeys(c.errors)]
    if errors and assert_mode:
        raise ValueError("TIR is not well-formed:\n  " + "\n  ".join(errors))
    return not errors


def undefined_vars(node, defs=()) -> list:
    """Vars used in an expression or statement that are not in ``defs`` nor bound inside."""
    from ..stmt_functor import post_order_visit

    bound = {id(v) for v in defs}
    used: list = []
    seen: set[int] = set()

    def f(n):
        if isinstance(n, S.For):
            bound.add(id(n.loop_var))
        elif isinstance(n, (S.LetStmt, E.Let)):
            bound.add(id(n.var))
        elif isinstance(n, S.Block):
            bound.update(id(iv.var) for iv in n.iter_vars)
        elif isinstance(n, S.Allocate):
            bound.add(id(n.buffer_var))
        elif isinstance(n, E.Var) and id(n) not in seen:
            seen.add(id(n))
            used.append(n)

    post_order_visit(node, f)
    return [v for v in used if id(v) not in bound]

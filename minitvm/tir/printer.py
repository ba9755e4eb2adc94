"""TVMScript printer for TIR: ``@T.prim_func`` text as TVM prints it.

Expressions are printed bottom-up from an explicit post-order; statements recurse only on loop
and block nesting, never on the length of a SeqStmt.
"""

from __future__ import annotations

import math

from . import expr as E
from . import stmt as S
from .stmt_functor import expr_children, post_order

_PREC = {
    E.Or: 1, E.And: 2, E.Not: 3, E.EQ: 4, E.NE: 4, E.LT: 4, E.LE: 4, E.GT: 4, E.GE: 4,
    E.Add: 6, E.Sub: 6, E.Mul: 7, E.FloorDiv: 7, E.FloorMod: 7,
}
_ATOM = 10
_AXIS = {E.IterVar.DataPar: ("S", "spatial"), E.IterVar.CommReduce: ("R", "reduce"),
         E.IterVar.Ordered: ("O", "scan")}
_KIND = {S.ForKind.PARALLEL: "parallel", S.ForKind.VECTORIZED: "vectorized",
         S.ForKind.UNROLLED: "unroll", S.ForKind.SERIAL: "serial",
         S.ForKind.THREAD_BINDING: "thread_binding"}


def _float_text(dtype: str, v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        return f'T.{dtype}("{"-" if v < 0 else ""}{"inf" if math.isinf(v) else "nan"}")'
    t = f"{v:.17g}"
    if "e" not in t and "." not in t:
        t += ".0"
    return f"T.{dtype}({t})"


class NameTable:
    """Unique printable names for Vars and Buffers (``i``, ``i_1``, ...)."""

    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.keep: list = []  # keep objects alive so ids stay unique

    def get(self, obj, hint: str | None = None) -> str:
        key = id(obj)
        name = self.names.get(key)
        if name is None:
            base = hint or getattr(obj, "name", None) or "v"
            base = base.replace(".", "_") or "v"
            name, k = base, 0
            while name in self.used:
                k += 1
                name = f"{base}_{k}"
            self.used.add(name)
            self.names[key] = name
            self.keep.append(obj)
        return name

    def has(self, obj) -> bool:
        return id(obj) in self.names

    def release(self, obj) -> None:
        """End ``obj``'s scope: its name may be reused by a later, unrelated object."""
        name = self.names.get(id(obj))
        if name is not None:
            self.used.discard(name)


class _ExprPrinter:
    def __init__(self, names: NameTable):
        self.names = names
        self.let_vars: list = []  # variables bound by T.Let, for the statement printer to declare

    def __call__(self, root) -> str:
        memo: dict[int, tuple[str, int]] = {}
        for node in post_order(root):
            kids = [memo[id(c)] for c in expr_children(node)]
            memo[id(node)] = self._node(node, kids)
        return memo[id(root)][0]

    def _node(self, e, kids) -> tuple[str, int]:
        t = type(e)
        prec = _PREC.get(t)
        if prec is not None and isinstance(e, E.BinaryOp):
            (a, pa), (b, pb) = kids
            if t in (E.And, E.Or, E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE):
                sym = e.op_sym
            else:
                sym = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//",
                       E.FloorMod: "%"}[t]
            a = a if pa >= prec else f"({a})"
            b = b if pb > prec else f"({b})"
            return f"{a} {sym} {b}", prec
        if t is E.IntImm:
            if e.dtype == "bool":
                return f"T.bool({bool(e.value)})", _ATOM
            if e.dtype == "int32":
                return str(e.value), _ATOM if e.value >= 0 else 8
            return f"T.{e.dtype}({e.value})", _ATOM
        if t is E.FloatImm:
            return _float_text(e.dtype, e.value), _ATOM
        if t is E.StringImm:
            return '"' + e.value.replace('"', '\\"') + '"', _ATOM
        if isinstance(e, E.Var):
            return self.names.get(e), _ATOM
        if t is E.Any:
            return "T.Any()", _ATOM
        if t is E.Div:
            if e.dtype.startswith(("float", "bfloat")):
                (a, pa), (b, pb) = kids
                return f"{a if pa >= 7 else f'({a})'} / {b if pb > 7 else f'({b})'}", 7
            return f"T.Div({kids[0][0]}, {kids[1][0]})", _ATOM
        if t is E.Mod:
            return f"T.truncmod({kids[0][0]}, {kids[1][0]})", _ATOM
        if t is E.Min or t is E.Max:
            return f"T.{'min' if t is E.Min else 'max'}({kids[0][0]}, {kids[1][0]})", _ATOM
        if t is E.Not:
            a, pa = kids[0]
            return f"not {a if pa >= 3 else f'({a})'}", 3
        if t is E.Cast:
            return f'T.Cast("{e.dtype}", {kids[0][0]})', _ATOM
        if t is E.Select:
            return f"T.Select({', '.join(k[0] for k in kids)})", _ATOM
        if t is E.Ramp:
            return f"T.Ramp({kids[0][0]}, {kids[1][0]}, {e.lanes})", _ATOM
        if t is E.Broadcast:
            return f"T.Broadcast({kids[0][0]}, {e.lanes})", _ATOM
        if t is E.Let:
            v = self.names.get(e.var)
            self.let_vars.append(e.var)
            return f"T.Let({kids[1][0]}, where={{{v}: {kids[0][0]}}})", _ATOM
        if t is E.BufferLoad or t is E.ProducerLoad:
            obj = e.buffer if t is E.BufferLoad else e.producer
            idx = [self._index(i, k[0]) for i, k in zip(e.indices, kids)]
            return f"{self.names.get(obj)}[{', '.join(idx) or '()'}]", _ATOM  # 0-d: x[()]
        if t is E.Call:
            name = e.op_name
            args = ", ".join(k[0] for k in kids)
            if name in ("tir.call_extern", "tir.call_pure_extern"):
                return f'T.{name[4:]}("{e.dtype}", {args})', _ATOM
            short = name[4:] if name.startswith("tir.") else name
            return f"T.{short}({args})", _ATOM
        if t is E.Reduce:
            return f"T.reduce({', '.join(k[0] for k in kids)})", _ATOM
        return f"<{t.__name__}>", _ATOM

    def _index(self, idx, text: str) -> str:
        if isinstance(idx, E.Ramp) and isinstance(idx.stride, E.IntImm) and idx.stride.value == 1:
            base = self(idx.base)
            return f"{base}:{base} + {idx.lanes}"
        return text


def expr_to_str(e, names: NameTable | None = None) -> str:
    """Print one expression in TVMScript syntax."""
    return _ExprPrinter(names or NameTable())(e)


class _Printer:
    def __init__(self):
        self.names = NameTable()
        self.expr = _ExprPrinter(self.names)
        self.lines: list[str] = []
        self.loop_extent: dict[int, object] = {}
        self.param_data: dict[int, object] = {}  # id(data var) -> its parameter's buffer
        self.declared: list[set[int]] = [set()]  # ids of T.Let variables declared, per body

    def out(self, ind: int, text: str) -> None:
        """Append a line; T.Let variables its expressions bind are declared just before it
        (``v = T.int32()``), in the body that holds it, as TVM's printer does."""
        if self.expr.let_vars:
            for v in reversed(self.expr.let_vars):  # (post-order: the outer Let's is last)
                if not any(id(v) in scope for scope in self.declared):
                    self.declared[-1].add(id(v))
                    self.lines.append(f"{'    ' * ind}{self.names.get(v)} = T.{v.dtype}()")
            self.expr.let_vars.clear()
        self.lines.append("    " * ind + text)

    # ----------------------------------------------------------------- helpers
    def shape(self, dims) -> str:
        parts = [self.expr(d) for d in dims]
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"

    def region(self, br: S.BufferRegion) -> str:
        parts = []
        for r in br.region:
            if isinstance(r.extent, E.IntImm) and r.extent.value == 1:
                parts.append(self.expr(r.min))
            else:
                lo = self.expr(r.min)
                if isinstance(r.min, E.IntImm) and isinstance(r.extent, E.IntImm):
                    hi = self.expr(E.IntImm(r.min.dtype, r.min.value + r.extent.value))
                elif isinstance(r.min, E.IntImm) and r.min.value == 0:
                    hi = self.expr(r.extent)
                else:
                    hi = self.expr(r.min + r.extent)
                parts.append(f"{lo}:{hi}")
        return f"{self.names.get(br.buffer)}[{', '.join(parts) or '()'}]"

    def buffer_kwargs(self, b, skip_dtype: bool) -> str:
        out = "" if skip_dtype and b.dtype == "float32" else f', "{b.dtype}"'
        if b.strides:
            out += f", strides={self.shape(b.strides)}"
        default = b.shape[0].dtype if b.shape else "int32"  # (a 0 of that type is left out)
        if not (isinstance(b.elem_offset, E.IntImm) and b.elem_offset.value == 0
                and b.elem_offset.dtype == default):
            out += f", elem_offset={self.expr(b.elem_offset)}"
        if b.scope not in ("global", ""):
            out += f', scope="{b.scope}"'
        return out

    def attr_value(self, v) -> str:
        if isinstance(v, bool):
            return f"T.bool({v})"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, E.PrimExpr):
            return self.expr(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(self.attr_value(x) for x in v) + "]"
        if isinstance(v, dict):
            return self.attr_dict(v)
        return repr(v)

    def attr_dict(self, d: dict) -> str:
        items = sorted(d.items(), key=lambda kv: str(kv[0]))
        return "{" + ", ".join(f'"{k}": {self.attr_value(v)}' for k, v in items) + "}"

    def free_vars(self, exprs) -> list:
        out = []
        for e in exprs:
            for n in post_order(e):
                if isinstance(n, E.Var) and not self.names.has(n) and n not in out:
                    out.append(n)
        return out

    # ----------------------------------------------------------------- function
    def func(self, f, name: str, in_module: bool) -> None:
        attrs = dict(f.attrs.items()) if f.attrs else {}
        gsym = attrs.get("global_symbol")
        if gsym == name:
            attrs.pop("global_symbol")
        deco = "@T.prim_func(private=True)" if in_module and gsym is None else "@T.prim_func"
        params, inline, matched = [], set(), []
        for p in f.params:
            buf = f.buffer_map.get(p)
            simple = buf is not None and not buf.strides and not self.free_vars(
                [*buf.shape, buf.elem_offset])
            if simple:
                inline.add(id(p))
                self.names.get(buf)
                self.param_data[id(buf.data)] = buf  # (a view of it: data=<buffer>.data)
                params.append(f"{self.names.get(buf)}: T.Buffer({self.shape(buf.shape)}"
                              f"{self.buffer_kwargs(buf, False)})")
            else:
                ty = "T.handle" if p.dtype == "handle" else f"T.{p.dtype}"
                params.append(f"{self.names.get(p)}: {ty}")
                if buf is not None:
                    matched.append((p, buf))
                    self.param_data[id(buf.data)] = buf
        self.out(0, deco)
        self.out(0, f"def {name}({', '.join(params)}):")
        if attrs:
            self.out(1, f"T.func_attr({self.attr_dict(attrs)})")
        decl = []
        for _, buf in matched:
            decl += [v for v in self.free_vars([*buf.shape, *buf.strides, buf.elem_offset])
                     if v not in decl]
        for v in decl:
            self.out(1, f"{self.names.get(v)} = T.{v.dtype}()")
        for p, buf in matched:
            self.out(1, f"{self.names.get(buf)} = T.match_buffer({self.names.get(p)}, "
                        f"{self.shape(buf.shape)}{self.buffer_kwargs(buf, True)})")
        body = f.body
        if (isinstance(body, S.BlockRealize) and body.block.name_hint == "root"
                and not body.block.iter_vars and not body.block.reads
                and not body.block.writes):
            self.out(1, '# with T.block("root"):')
            for b in body.block.alloc_buffers:
                self.alloc(1, b)
            body = body.block.body
        self.stmt(body, 1)

    def alloc(self, ind: int, b) -> None:
        name = self.names.get(b)
        self.out(ind, f"{name} = T.alloc_buffer({self.shape(b.shape)}"
                      f"{self.buffer_kwargs(b, True)})")

    # ----------------------------------------------------------------- statements
    def stmt(self, s, ind: int) -> None:
        """Print ``s``; sequences and let-chains loop, nesting recurses."""
        self.declared.append(set())
        try:
            self._stmts(s, ind)
        finally:
            self.declared.pop()

    def _stmts(self, s, ind: int) -> None:
        work = [s]
        while work:
            s = work.pop()
            if isinstance(s, S.SeqStmt):
                work.extend(reversed(s.seq))
            elif isinstance(s, S.LetStmt):
                self.out(ind, f"{self.names.get(s.var)}: T.{s.var.dtype} = {self.expr(s.value)}")
                work.append(s.body)
            elif isinstance(s, S.Allocate):
                ext = ", ".join(self.expr(x) for x in s.extents)
                scope = "global"
                self.out(ind, f'{self.names.get(s.buffer_var)} = T.allocate([{ext}], '
                              f'"{s.dtype}", "{scope}")')
                work.append(s.body)
            elif isinstance(s, S.DeclBuffer):
                b = s.buffer
                owner = self.param_data.get(id(b.data))
                data = f"{self.names.get(owner)}.data" if owner is not None else \
                    self.names.get(b.data)
                self.out(ind, f"{self.names.get(b)} = T.decl_buffer({self.shape(b.shape)}"
                              f"{self.buffer_kwargs(b, True)}, data={data})")
                work.append(s.body)
            else:
                self.single(s, ind)

    def single(self, s, ind: int) -> None:
        if isinstance(s, S.BufferStore):
            idx = ", ".join(self.expr._index(i, self.expr(i)) for i in s.indices) or "()"
            self.out(ind, f"{self.names.get(s.buffer)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, S.For):
            self.loop(s, ind)
        elif isinstance(s, S.BlockRealize):
            self.block(s, ind)
        elif isinstance(s, S.IfThenElse):
            self.out(ind, f"if {self.expr(s.condition)}:")
            self.stmt(s.then_case, ind + 1)
            if s.else_case is not None:
                self.out(ind, "else:")
                self.stmt(s.else_case, ind + 1)
        elif isinstance(s, S.Evaluate):
            self.out(ind, f"T.evaluate({self.expr(s.value)})")
        elif isinstance(s, S.AssertStmt):
            self.out(ind, f"assert {self.expr(s.condition)}, {self.expr(s.message)}")
            self.stmt(s.body, ind)
        elif isinstance(s, S.AttrStmt):
            node = self.expr(s.node) if isinstance(s.node, E.PrimExpr) else repr(s.node)
            self.out(ind, f'with T.attr({node}, "{s.attr_key}", {self.expr(s.value)}):')
            self.stmt(s.body, ind + 1)
        elif isinstance(s, S.Block):
            self.block(S.BlockRealize([], True, s), ind)
        else:
            self.out(ind, f"# <{type(s).__name__}>")

    def _simple_serial(self, s) -> bool:
        return (isinstance(s, S.For) and s.kind == S.ForKind.SERIAL and not s.annotations
                and isinstance(s.min, E.IntImm) and s.min.value == 0)

    def loop(self, s: S.For, ind: int) -> None:
        if self._simple_serial(s):
            loops = [s]
            while self._simple_serial(loops[-1].body):
                inner = loops[-1].body
                outer_vars = {id(lp.loop_var) for lp in loops}
                if any(id(n) in outer_vars for n in post_order(inner.extent)):
                    break
                loops.append(inner)
            for lp in loops:
                self.loop_extent[id(lp.loop_var)] = lp.extent
            names = ", ".join(self.names.get(lp.loop_var) for lp in loops)
            if len(loops) == 1:
                self.out(ind, f"for {names} in range({self.expr(s.extent)}):")
            else:
                ext = ", ".join(self.expr(lp.extent) for lp in loops)
                self.out(ind, f"for {names} in T.grid({ext}):")
            self.stmt(loops[-1].body, ind + 1)
            for lp in loops:
                self.names.release(lp.loop_var)
            return
        self.loop_extent[id(s.loop_var)] = s.extent
        if isinstance(s.min, E.IntImm) and s.min.value == 0:
            rng = self.expr(s.extent)
        elif isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm):
            end = E.IntImm(s.min.dtype, s.min.value + s.extent.value)
            rng = f"{self.expr(s.min)}, {self.expr(end)}"
        else:
            rng = f"{self.expr(s.min)}, {self.expr(s.min + s.extent)}"
        extra = ""
        if s.kind == S.ForKind.THREAD_BINDING and s.thread_binding is not None:
            tag = getattr(s.thread_binding, "thread_tag", s.thread_binding)
            extra += f', thread="{tag}"'
        if s.annotations:
            extra += f", annotations={self.attr_dict(s.annotations)}"
        self.out(ind, f"for {self.names.get(s.loop_var)} in T.{_KIND[s.kind]}({rng}{extra}):")
        self.stmt(s.body, ind + 1)
        self.names.release(s.loop_var)

    def block(self, r: S.BlockRealize, ind: int) -> None:
        b = r.block
        self.out(ind, f'with T.block("{b.name_hint}"):')
        self.declared.append(set())  # the block's body: its T.axis / T.reads lines included
        try:
            self._block_body(r, b, ind + 1)
        finally:
            self.declared.pop()

    def _block_body(self, r: S.BlockRealize, b: S.Block, ind: int) -> None:
        ivs, vals = b.iter_vars, r.iter_values
        remap = len(ivs) > 1 and all(
            isinstance(v, E.Var) and iv.iter_type in (E.IterVar.DataPar, E.IterVar.CommReduce)
            and isinstance(iv.dom.min, E.IntImm) and iv.dom.min.value == 0
            and id(v) in self.loop_extent and _same(self.loop_extent[id(v)], iv.dom.extent)
            for iv, v in zip(ivs, vals))
        if remap and len({id(v) for v in vals}) == len(vals):
            kinds = "".join(_AXIS[iv.iter_type][0] for iv in ivs)
            lhs = ", ".join(self.names.get(iv.var) for iv in ivs)
            rhs = ", ".join(self.expr(v) for v in vals)
            self.out(ind, f'{lhs} = T.axis.remap("{kinds}", [{rhs}])')
        else:
            for iv, v in zip(ivs, vals):
                kind = _AXIS.get(iv.iter_type, ("O", "opaque"))[1]
                if isinstance(iv.dom.min, E.IntImm) and iv.dom.min.value == 0:
                    dom = self.expr(iv.dom.extent)
                else:
                    dom = f"({self.expr(iv.dom.min)}, {self.expr(iv.dom.min + iv.dom.extent)})"
                self.out(ind, f"{self.names.get(iv.var)} = T.axis.{kind}({dom}, {self.expr(v)})")
        if not S.is_true(r.predicate):
            self.out(ind, f"T.where({self.expr(r.predicate)})")
        self.out(ind, f"T.reads({', '.join(self.region(x) for x in b.reads)})")
        self.out(ind, f"T.writes({', '.join(self.region(x) for x in b.writes)})")
        if b.annotations:
            self.out(ind, f"T.block_attr({self.attr_dict(b.annotations)})")
        for buf in b.alloc_buffers:
            self.alloc(ind, buf)
        if b.init is not None:
            self.out(ind, "with T.init():")
            self.stmt(b.init, ind + 1)
        self.stmt(b.body, ind)
        for iv in ivs:
            self.names.release(iv.var)
        for buf in b.alloc_buffers:
            self.names.release(buf)


def _same(a, b) -> bool:
    if a is b:
        return True
    return isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.value == b.value


def script(func, name: str | None = None, in_module: bool = False) -> str:
    """TVMScript text of a PrimFunc, as ``func.script()`` prints it."""
    p = _Printer()
    gsym = func.attrs.get("global_symbol") if func.attrs else None
    p.func(func, name or gsym or "main", in_module)
    header = [] if in_module else ["# from tvm.script import tir as T", ""]
    return "\n".join(header + p.lines)


def prim_func_lines(func, name: str, indent: int = 1) -> list[str]:
    """Lines of ``func`` printed inside an ``@I.ir_module`` class (for the module printer)."""
    p = _Printer()
    p.func(func, name, in_module=True)
    return ["    " * indent + line for line in p.lines]


def stmt_to_str(s) -> str:
    p = _Printer()
    p.stmt(s, 0)
    return "\n".join(p.lines)

"""Parse ``@T.prim_func`` definitions into ``tir.PrimFunc``: what ``tir.printer`` prints.

Buffer parameters (``A: T.Buffer(...)``) and handles bound by ``T.match_buffer`` fill the
buffer map; ``for`` over ``T.grid``/``range``/``T.serial``... become ``For`` nests;
``with T.block(...)`` becomes a ``BlockRealize`` with the iteration variables of
``T.axis.*``, the regions of ``T.reads``/``T.writes``, ``T.init`` and allocations; statements
that scope over the rest of a body (``x: T.float32 = ...`` lets, ``assert``, ``T.allocate``)
wrap it. As TVM's parser does, a body holding blocks gets the implicit ``root`` block (the
printer's ``# with T.block("root"):``) with the top-level ``T.alloc_buffer``s.
"""

from __future__ import annotations

import ast

from ...ir.prim_expr import IntImm, PrimExpr
from ...tir import expr as E
from ...tir import stmt as S
from ...tir.buffer import Buffer
from ...tir.function import PrimFunc
from . import tir as T_ns
from .core import ExprEvaluator, VarTable, _Active
from .error import Source

__all__ = ["parse_prim_func", "attr_value"]


def attr_value(v):
    """A function attribute as written: ``T.bool(True)`` is Python's True (the printers show
    Python bools that way); lists and dicts converted element by element."""
    if isinstance(v, IntImm) and v.dtype == "bool":
        return bool(v.value)
    if isinstance(v, list | tuple):
        return type(v)(attr_value(x) for x in v)
    if isinstance(v, dict):
        return {k: attr_value(x) for k, x in v.items()}
    return v


def parse_prim_func(src: Source, node: ast.FunctionDef, env: dict, kwargs: dict,
                    in_module: bool) -> PrimFunc:
    return TIRParser(src, env).parse(node, kwargs)


class _BlockFrame:
    __slots__ = ("name", "iter_vars", "iter_values", "reads", "writes", "predicate", "init",
                 "allocs", "match_buffers", "annotations")

    def __init__(self, name: str):
        self.name = name
        self.iter_vars: list = []
        self.iter_values: list = []
        self.reads = None
        self.writes = None
        self.predicate = None
        self.init = None
        self.allocs: list = []
        self.match_buffers: list = []
        self.annotations: dict = {}


class _Wrap:
    """A statement that scopes over the rest of its body (let, assert, allocate, ...)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def _seq(stmts: list):
    if not stmts:
        return S.Evaluate(0)
    if len(stmts) == 1:
        return stmts[0]
    return S.SeqStmt(stmts)


def _dtype_of(ann, what: str):
    d = getattr(ann, "_tvmscript_dtype", None)
    if d is not None:
        return d
    if isinstance(ann, str):
        return ann
    raise TypeError(f"{what} must be annotated with a dtype (T.int32, T.float32, T.handle, "
                    f"...), got {ann!r}")


class TIRParser(ExprEvaluator):
    """Parses one PrimFunc."""

    dialect = "TIR"

    def __init__(self, source: Source, env: dict):
        self.source = source
        self.env = env
        self.var_table = VarTable()
        self.var_table.add("range", T_ns.serial)
        self.loop_dom: dict = {}
        self.blocks: list[_BlockFrame] = []
        self.root_allocs: list = []
        self.params: list = []
        self.buffer_map: dict = {}
        self.attrs: dict = {}
        self.saw_block = False
        self._stmt = None

    # ------------------------------------------------------------------ evaluation hooks
    def subscript(self, obj, index, node):
        if isinstance(obj, Buffer):
            idx = index if isinstance(index, tuple) else (index,)
            if len(idx) != len(obj.shape):
                raise self.error(node, f"buffer {obj.name!r} is {len(obj.shape)}-dimensional "
                                       f"(shape {list(obj.shape)}), indexed with {len(idx)} "
                                       f"indices")
            if any(isinstance(i, slice) for i in idx):
                return self._sliced(obj, idx, node)
            return E.BufferLoad(obj, idx)
        return obj[index]

    def _sliced(self, buf: Buffer, idx, node):
        """``A[i, 0:16]``: a vector load (Ramp indices) when every slice has a constant
        length, else a region (only meaningful in T.reads/T.writes/T.match_buffer)."""
        ranges, lanes_ok = [], True
        for i in idx:
            if isinstance(i, slice):
                if i.step is not None:
                    raise self.error(node, "buffer slices with a step are not supported")
                lo = 0 if i.start is None else i.start
                hi = buf.shape[len(ranges)] if i.stop is None else i.stop
                ext = T_ns.extent_of(lo, hi)
                lo = E._unify(lo, ext)[0]
                lanes_ok = lanes_ok and isinstance(ext, IntImm)
                ranges.append((lo, ext, True))
            else:
                ranges.append((E._to_expr(i), None, False))
        if lanes_ok:
            out = []
            for lo, ext, sl in ranges:
                out.append(E.Ramp(lo, E._to_expr(1, lo.dtype), ext.value) if sl else lo)
            return E.BufferLoad(buf, out)
        return S.BufferRegion(buf, [E.Range.from_min_extent(lo, ext if sl else 1)
                                    for lo, ext, sl in ranges])

    # ------------------------------------------------------------------ the function
    def parse(self, node: ast.FunctionDef, kwargs: dict) -> PrimFunc:
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.unsupported(node, "*args, **kwargs, keyword-only, positional-only and "
                                         "default parameters")
        with _Active(self):
            for arg in a.args:
                self._stmt = arg
                if arg.annotation is None:
                    raise self.error(arg, f"parameter {arg.arg!r} needs an annotation "
                                          "(T.Buffer(...), T.handle, T.int32, ...)")
                ann = self.eval_expr(arg.annotation)
                if isinstance(ann, Buffer):
                    self._name_buffer(ann, arg.arg)
                    v = E.Var(arg.arg, "handle")
                    self.buffer_map[v] = ann
                    self.params.append(v)
                    self.var_table.add(arg.arg, ann)
                else:
                    try:
                        dtype = _dtype_of(ann, f"parameter {arg.arg!r}")
                    except TypeError as e:
                        raise self.error(arg.annotation, str(e)) from None
                    v = E.Var(arg.arg, dtype)
                    self.params.append(v)
                    self.var_table.add(arg.arg, v)
            returns_none = isinstance(node.returns, ast.Constant) and node.returns.value is None
            if node.returns is not None and not returns_none:  # TVM's tests write ``-> None``
                raise self.unsupported(node.returns, "a return annotation on a PrimFunc")
            body = self._body(node.body)
        root = (isinstance(body, S.BlockRealize) and not body.block.iter_vars
                and body.block.name_hint == "root" and not self.root_allocs)
        if (self.saw_block or self.root_allocs) and not root:
            body = S.BlockRealize([], True, S.Block([], [], [], "root", body,
                                                    alloc_buffers=self.root_allocs))
        attrs = dict(self.attrs)
        if not kwargs.get("private", False) and "global_symbol" not in attrs:
            attrs["global_symbol"] = node.name
        # buffer_map in parameter order (T.Buffer params and T.match_buffer handles alike)
        bmap = {p: self.buffer_map[p] for p in self.params if p in self.buffer_map}
        bmap.update((p, b) for p, b in self.buffer_map.items() if p not in bmap)
        return PrimFunc(self.params, body, None, bmap, attrs)

    @staticmethod
    def _name_buffer(buf: Buffer, name: str) -> None:
        buf.name = name
        if isinstance(buf.data, E.Var) and buf.data.name in ("buffer", ""):
            buf.data.name = name

    # ------------------------------------------------------------------ bodies
    def _body(self, stmts):
        """A statement list as one Stmt; scoping statements wrap what follows them."""
        self.var_table.push()
        try:
            segments = []
            cur: list = []
            for stmt in stmts:
                self._stmt = stmt
                r = self._statement(stmt)
                if r is None:
                    continue
                if type(r) is _Wrap:
                    segments.append((cur, r, stmt))
                    cur = []
                else:
                    cur.append(self._spanned(r, stmt))
        finally:
            self.var_table.pop()
        body = _seq(cur)
        for pre, wrap, stmt in reversed(segments):
            body = _seq(pre + [self._spanned(wrap.make(body), stmt)])
        return body

    def _spanned(self, node, stmt):
        """``node`` with the source position of ``stmt`` (file, line, column) unless it has
        one; spans are bookkeeping, which structural equality ignores."""
        if getattr(node, "span", 1) is None:
            node.span = self.source.span(stmt)
        return node

    def _statement(self, stmt):
        t = type(stmt)
        if t is ast.Assign:
            return self._assign(stmt)
        if t is ast.AnnAssign:
            return self._ann_assign(stmt)
        if t is ast.Expr:
            return self._expr_stmt(stmt)
        if t is ast.For:
            return self._for(stmt)
        if t is ast.With:
            return self._with(stmt)
        if t is ast.If:
            cond = self.eval_expr(stmt.test)
            then = self._body(stmt.body)
            orelse = self._body(stmt.orelse) if stmt.orelse else None
            return S.IfThenElse(cond, then, orelse)
        if t is ast.AugAssign:
            return self._aug_assign(stmt)
        if t is ast.Assert:
            cond = self.eval_expr(stmt.test)
            msg = self.eval_expr(stmt.msg) if stmt.msg is not None else ""
            if isinstance(msg, E.StringImm):
                msg = msg.value
            return _Wrap(lambda body: S.AssertStmt(cond, msg, body))
        if t is ast.Pass:
            return None
        if t is ast.Return:
            raise self.unsupported(stmt, "return in a PrimFunc")
        raise self.unsupported(stmt, f"a `{t.__name__}` statement")

    def _frame(self, stmt, what: str) -> _BlockFrame:
        if not self.blocks:
            raise self.error(stmt, f"{what} is only valid inside `with T.block(...)`")
        return self.blocks[-1]

    # ------------------------------------------------------------------ assignments
    def _assign(self, stmt: ast.Assign):
        if len(stmt.targets) != 1:
            raise self.unsupported(stmt, "chained assignment (a = b = ...)")
        target = stmt.targets[0]
        value = self.eval_expr(stmt.value)
        if isinstance(target, ast.Subscript):
            return self._store(target, value)
        if isinstance(target, ast.Name) and isinstance(value, T_ns.AxisRemap) \
                and len(value.bindings) == 1:
            target = ast.Tuple([target], ast.Store())  # ``vi = T.axis.remap("S", [i])``
        if isinstance(target, ast.Tuple | ast.List):
            if not isinstance(value, T_ns.AxisRemap):
                raise self.unsupported(target, "tuple unpacking (except of T.axis.remap)")
            names = []
            for elt in target.elts:
                if not isinstance(elt, ast.Name):
                    raise self.error(elt, "T.axis.remap binds names")
                names.append(elt.id)
            if len(names) != len(value.bindings):
                raise self.error(stmt, f"T.axis.remap gives {len(value.bindings)} axes to "
                                       f"{len(names)} names")
            frame = self._frame(stmt, "T.axis.remap")
            for name, kind, b in zip(names, value.kinds, value.bindings):
                dom = self.loop_dom.get(b) if isinstance(b, E.Var) else None
                if dom is None:
                    raise self.error(stmt, f"T.axis.remap binds loop variables; {b!r} is not "
                                           "the variable of an enclosing loop")
                itype = E.IterVar.DataPar if kind == "S" else E.IterVar.CommReduce
                self._iter_var(frame, name, E.Range.from_min_extent(*dom), b, itype, b.dtype)
            return None
        if not isinstance(target, ast.Name):
            raise self.unsupported(target, "assigning to an attribute")
        return self._bind(target.id, value, stmt)

    def _bind(self, name: str, value, stmt):
        if isinstance(value, E.Var) and value.name == "":
            value.name = name  # ``n = T.int64()``
            self.var_table.add(name, value)
            return None
        if isinstance(value, T_ns.MatchBuffer):
            return self._match_buffer(name, value, stmt)
        if isinstance(value, T_ns.AllocBuffer):
            self._name_buffer(value.buffer, name)
            (self.blocks[-1].allocs if self.blocks else self.root_allocs).append(value.buffer)
            self.var_table.add(name, value.buffer)
            return None
        if isinstance(value, T_ns.DeclBufferScope):
            buf = value.buffer
            self._name_buffer(buf, name)
            self.var_table.add(name, buf)
            return _Wrap(lambda body: S.DeclBuffer(buf, body))
        if isinstance(value, T_ns.AllocateScope):
            ptr = E.Var(name, "handle")
            self.var_table.add(name, ptr)
            return _Wrap(lambda body: S.Allocate(ptr, value.dtype, value.extents,
                                                 value.condition, body, value.annotations))
        if isinstance(value, T_ns.AxisDef):
            frame = self._frame(stmt, f"T.axis.* ({name!r})")
            dom = value.dom
            if isinstance(dom, tuple | list):
                if len(dom) != 2:
                    raise self.error(stmt, "an axis domain is an extent or a (min, max) pair")
                lo, hi = E._unify(*dom)
                dom = E.Range.from_min_extent(lo, T_ns.extent_of(lo, hi))
            elif not isinstance(dom, E.Range):
                ext = E._to_expr(dom)
                dom = E.Range.from_min_extent(E._to_expr(0, ext.dtype), ext)
            binding = E._to_expr(value.binding, dom.extent.dtype)
            self._iter_var(frame, name, dom, binding, value.kind, dom.extent.dtype)
            return None
        if isinstance(value, Buffer):
            self.var_table.add(name, value)  # an alias
            return None
        if isinstance(value, PrimExpr):
            var = E.Var(name, value.dtype)
            self.var_table.add(name, var)
            return _Wrap(lambda body: S.LetStmt(var, value, body))
        self.var_table.add(name, value)  # a Python value (a constant, a helper)
        return None

    def _iter_var(self, frame, name, dom, binding, itype, dtype):
        v = E.Var(name, dtype)
        frame.iter_vars.append(E.IterVar(dom, v, itype))
        frame.iter_values.append(binding)
        self.var_table.add(name, v)

    def _match_buffer(self, name: str, mb, stmt):
        buf = mb.buffer
        self._name_buffer(buf, name)
        param = mb.param
        if self.blocks:
            region = self._region(param, stmt)
            self.blocks[-1].match_buffers.append(S.MatchBufferRegion(buf, region))
        else:
            if not (isinstance(param, E.Var) and param in self.params
                    and param.dtype == "handle"):
                raise self.error(stmt, "T.match_buffer outside a block binds a T.handle "
                                       "parameter of the function")
            if param in self.buffer_map:
                raise self.error(stmt, f"parameter {param.name!r} already has a buffer")
            self.buffer_map[param] = buf
        self.var_table.add(name, buf)
        return None

    def _ann_assign(self, stmt: ast.AnnAssign):
        if not isinstance(stmt.target, ast.Name):
            raise self.unsupported(stmt.target, "an annotated assignment to anything but a name")
        if stmt.value is None:
            raise self.error(stmt, f"{stmt.target.id!r} is annotated but not assigned")
        ann = self.eval_expr(stmt.annotation)
        try:
            dtype = _dtype_of(ann, f"{stmt.target.id!r}")
        except TypeError as e:
            raise self.error(stmt.annotation, str(e)) from None
        value = E._to_expr(self.eval_expr(stmt.value), dtype)
        var = E.Var(stmt.target.id, dtype)
        self.var_table.add(stmt.target.id, var)
        return _Wrap(lambda body: S.LetStmt(var, value, body))

    def _store(self, target: ast.Subscript, value):
        buf = self.eval_expr(target.value)
        if not isinstance(buf, Buffer):
            raise self.error(target, f"only buffers can be stored to, not "
                                     f"{type(buf).__name__}")
        load = self.subscript(buf, self.eval_expr(target.slice), target)
        if not isinstance(load, E.BufferLoad):
            raise self.error(target, "a store needs constant-length slices")
        try:
            return S.BufferStore(buf, value, load.indices)
        except Exception as e:
            raise self.error(target, str(e)) from e

    def _aug_assign(self, stmt: ast.AugAssign):
        if not isinstance(stmt.target, ast.Subscript):
            raise self.unsupported(stmt, "augmented assignment to anything but a buffer element")
        from .core import _BINOPS

        load = self.eval_expr(stmt.target)
        value = _BINOPS[type(stmt.op)](load, self.eval_expr(stmt.value))
        return self._store(stmt.target, value)

    # ------------------------------------------------------------------ expression statements
    def _expr_stmt(self, stmt: ast.Expr):
        if isinstance(stmt.value, ast.Constant):
            return None  # a docstring
        v = self.eval_expr(stmt.value)
        if isinstance(v, T_ns.Marker):
            kind = v.kind
            if kind == "func_attr":
                if self.blocks:
                    raise self.error(stmt, "T.func_attr belongs at the top of the function")
                self.attrs.update(attr_value(v.value))
                return None
            frame = self._frame(stmt, f"T.{kind}")
            if kind == "reads" or kind == "writes":
                regions = [self._region(r, stmt) for r in v.value]
                setattr(frame, kind, regions)
            elif kind == "where":
                frame.predicate = v.value
            elif kind == "block_attr":
                frame.annotations.update(attr_value(v.value))
            return None
        if isinstance(v, S.Stmt):
            return v
        if isinstance(v, PrimExpr):
            return S.Evaluate(v)
        if v is None:
            return None
        raise self.error(stmt, f"this expression statement has no meaning in a PrimFunc "
                               f"(its value is a {type(v).__name__})")

    def _region(self, r, stmt) -> S.BufferRegion:
        if isinstance(r, S.BufferRegion):
            return r
        if isinstance(r, E.BufferLoad):
            ranges = []
            for i in r.indices:
                if isinstance(i, E.Ramp):
                    ranges.append(E.Range.from_min_extent(i.base, E._to_expr(i.lanes,
                                                                              i.base.dtype)))
                else:
                    ranges.append(E.Range.from_min_extent(i, 1))
            return S.BufferRegion(r.buffer, ranges)
        if isinstance(r, Buffer):
            return S.BufferRegion.full_region(r)
        raise self.error(stmt, f"expected a buffer region (A[i, 0:16]), got {r!r}")

    # ------------------------------------------------------------------ loops
    def _for(self, stmt: ast.For):
        if stmt.orelse:
            raise self.unsupported(stmt, "for ... else")
        it = self.eval_expr(stmt.iter)
        if not isinstance(it, T_ns.Loop):
            raise self.error(stmt.iter, f"a TIR loop iterates over range(...), T.grid(...), "
                                        f"T.serial(...), T.parallel(...), ...; got {it!r}")
        target = stmt.target
        names = ([target.id] if isinstance(target, ast.Name) else
                 [e.id for e in target.elts if isinstance(e, ast.Name)]
                 if isinstance(target, ast.Tuple) else None)
        if names is None or (isinstance(target, ast.Tuple) and len(names) != len(target.elts)):
            raise self.error(target, "loop variables must be names")
        if len(names) != len(it.ranges):
            raise self.error(stmt, f"{len(names)} loop variables for {len(it.ranges)} loops")
        self.var_table.push()
        loops = []
        try:
            for name, (lo, ext) in zip(names, it.ranges):
                v = E.Var(name, ext.dtype)
                self.loop_dom[v] = (lo, ext)
                self.var_table.add(name, v)
                loops.append((v, lo, ext))
            body = self._body(stmt.body)
        finally:
            self.var_table.pop()
        for v, lo, ext in reversed(loops):
            thread = None
            if it.kind == S.ForKind.THREAD_BINDING:
                thread = E.IterVar(E.Range.from_min_extent(lo, ext), E.Var(it.thread, ext.dtype),
                                   E.IterVar.ThreadIndex, it.thread)
            body = S.For(v, lo, ext, it.kind, body, thread, attr_value(it.annotations or {}))
        return body

    # ------------------------------------------------------------------ scopes
    def _with(self, stmt: ast.With):
        if len(stmt.items) != 1 or stmt.items[0].optional_vars is not None:
            raise self.unsupported(stmt, "`with` of several items or with `as`")
        ctx = self.eval_expr(stmt.items[0].context_expr)
        if isinstance(ctx, T_ns.BlockScope):
            return self._block(ctx, stmt)
        if isinstance(ctx, T_ns.InitScope):
            frame = self._frame(stmt, "T.init()")
            if frame.init is not None:
                raise self.error(stmt, "a block has one T.init()")
            frame.init = self._body(stmt.body)
            return None
        if isinstance(ctx, T_ns.AttrScope):
            body = self._body(stmt.body)
            return S.AttrStmt(ctx.node, ctx.key, ctx.value, body)
        raise self.unsupported(stmt, f"`with {ast.unparse(stmt.items[0].context_expr)}`")

    def _block(self, scope, stmt):
        frame = _BlockFrame(scope.name)
        self.saw_block = True
        self.blocks.append(frame)
        try:
            body = self._body(stmt.body)
        finally:
            self.blocks.pop()
        reads, writes = frame.reads, frame.writes
        if reads is None or writes is None:  # omitted: inferred from the accesses, as TVM does
            from .tir_block_access import infer_block_access

            got_reads, got_writes = infer_block_access(body, frame.init, frame.allocs)
            reads = got_reads if reads is None else reads
            writes = got_writes if writes is None else writes
        block = S.Block(frame.iter_vars, reads or (), writes or (), frame.name,
                        body, frame.init, frame.allocs, frame.match_buffers, frame.annotations)
        if scope.no_realize:
            return block
        return S.BlockRealize(frame.iter_values, frame.predicate, block)

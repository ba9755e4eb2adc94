"""TVMScript printer for Relax: ``mod.show()``, ``func.script()``, ``str(expr)``, ``str(sinfo)``.

Prints what TVM's TVMScript printer prints (``src/script/printer/relax``, v0.15-v0.19): the
``@I.ir_module`` class with its PrimFuncs (through ``tir.printer``) and Relax functions, symbolic
variables declared where a function first uses them (``n = T.int64()``; as strings, ``"n"``,
in the signature), ``cls = Module`` before the first call of a module function, bindings with
their struct info unless the right-hand side states it (``R.call_tir``'s ``out_sinfo``), op
attrs as keyword arguments in field order, non-scalar constants in the metadata section.

The printer is one loop over a stack of generators: a handler ``yield``s a sub-node and is
resumed with its text, so nesting depth (deep expressions, long binding blocks, nested ifs)
costs no Python recursion. Names follow TVM's frames: a variable's name is reserved from its
definition to the end of the scope (function, SeqExpr) that defined it; a clash gets ``_1``,
``_2``, ... (``x_1``); the prefixes ``I``, ``T``, ``R`` and the module alias ``cls`` are taken.
"""

from __future__ import annotations

import json
import re
from types import GeneratorType

import numpy as np

from ...ir.attrs import Attrs, DictAttrs
from ...ir.expr import GlobalVar
from ...ir.global_info import DummyGlobalInfo, VDevice
from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.prim_expr import PrimExpr
from ...ir.structural import structural_equal
from ...relax import expr as rx
from ...relax import struct_info as si
from ...runtime.ndarray import NDArray
from ...tir import expr as tir_expr
from ...tir.function import PrimFunc
from ...tir.index_map import IndexMap
from ...tir.printer import prim_func_lines
from ...tir.stmt_functor import post_order
from . import doc as D
from .config import PrinterConfig
from .prim import float_literal, prim_doc
from .relax_expr import CALL_TIR_LIKE, DTYPE_FIELDS, SPECIAL_OPS, ExprPrinter
from .relax_struct_info import StructInfoPrinter

_SLOW = object()
_METADATA_OMITTED = "Metadata omitted. Use show_meta=True in script() method to show it."
_HIDE_ANN_OPS = frozenset({"relax.call_tir", "relax.call_dps_packed"})
_LITERAL_TYPES = (int, bool, float, str)


class Frame:
    """A scope of definitions (TVM's IRFrame / RelaxFrame): its statements, what it defined."""

    __slots__ = ("kind", "stmts", "defined", "is_func", "func_vars", "alias_printed")

    def __init__(self, kind: str):
        self.kind = kind
        self.stmts: list = []
        self.defined: list[int] = []
        self.is_func = False
        self.func_vars: set[int] | None = None
        self.alias_printed = False


class RelaxPrinter(ExprPrinter, StructInfoPrinter):
    """One printing of one root object (TVM's IRDocsifier with the Relax dispatch)."""

    def __init__(self, cfg: PrinterConfig):
        self.cfg = cfg
        self.frames: list[Frame] = []
        self.names: dict[int, tuple[object, str]] = {}
        self.defined_names: set[str] = set(cfg.builtin_keywords())
        self.usage: set[str] = set()
        self.metadata: dict[str, list] = {}
        self.binding_names: list[str] = [cfg.name] if cfg.name else []
        self.module_ctx: tuple[str, set[str]] | None = None
        self.global_infos: dict = {}  # of the module being printed (vdevice="llvm:0")
        self._next_suffix: dict[str, int] = {}
        self._handlers: dict[type, object] = {}

    # ------------------------------------------------------------------ prefixes, frames, names
    def R(self, attr: str) -> str:
        self.usage.add("relax")
        return f"{self.cfg.relax_prefix}.{attr}"

    def T(self, attr: str) -> str:
        self.usage.add("tir")
        return f"{self.cfg.tir_prefix}.{attr}"

    def I(self, attr: str) -> str:  # noqa: E743 - TVM's name for the IR prefix
        self.usage.add("ir")
        return f"{self.cfg.ir_prefix}.{attr}"

    def push(self, kind: str) -> Frame:
        f = Frame(kind)
        self.frames.append(f)
        return f

    def pop(self) -> None:
        f = self.frames.pop()
        for key in f.defined:
            _, name = self.names.pop(key)
            self._release(name)

    def _release(self, name: str) -> None:
        """Free ``name``; the search for ``base_k`` names may start lower again."""
        self.defined_names.discard(name)
        base, sep, k = name.rpartition("_")
        if sep and k.isdigit() and self._next_suffix.get(base, 1) > int(k):
            self._next_suffix[base] = int(k)

    def unique_name(self, hint: str) -> str:
        """``hint`` with unsupported characters as ``_``, made unique with the smallest free
        ``_1``, ``_2``, ... suffix (the search resumes where the last one for ``hint`` ended,
        so 100,000 variables named ``lv`` cost linear time)."""
        base = "".join(c if c == "_" or c.isalnum() else "_" for c in hint)
        if base not in self.defined_names:
            return base
        k = self._next_suffix.get(base, 1)
        while f"{base}_{k}" in self.defined_names:
            k += 1
        self._next_suffix[base] = k + 1
        return f"{base}_{k}"

    def define(self, obj, frame: Frame, hint: str) -> str:
        """Give ``obj`` a fresh name in ``frame`` (its name if it already has one)."""
        key = id(obj)
        info = self.names.get(key)
        if info is not None:
            return info[1]
        if self.cfg.show_object_address:
            hint = f"{hint}_{hex(id(obj))}"
        name = self.unique_name(hint)
        self.defined_names.add(name)
        self.names[key] = (obj, name)
        frame.defined.append(key)
        return name

    def define_var(self, var, frame: Frame) -> str:
        name = var.name_hint or "v"
        if not name.isidentifier():  # e.g. "0_weight": a name the parser can read back
            name = re.sub(r"\W", "_", name)
            name = name if name.isidentifier() else "v_" + name
        return self.define(var, frame, name)

    def relax_frame(self) -> Frame | None:
        """The outermost Relax function frame, else the outermost Relax frame."""
        found = None
        for f in self.frames:
            if f.kind == "relax":
                if f.is_func:
                    return f
                if found is None:
                    found = f
        return found

    def at_top_level_function(self) -> bool:
        n = len(self.frames)
        if n < 2:
            return False
        return n == 2 if self.frames[0].kind == "relax" else n == 3

    def header_wrapper(self, doc):
        """Prefix the ``# from tvm.script import ...`` lines for the dialects used so far."""
        if not self.usage:
            return doc
        stmts: list = []
        if "ir" in self.usage:
            stmts.append(D.Comment(f"from tvm.script import ir as {self.cfg.ir_prefix}"))
        if "tir" in self.usage:
            stmts.append(D.Comment(f"from tvm.script import tir as {self.cfg.tir_prefix}"))
        if "relax" in self.usage:
            stmts.append(D.Comment(f"from tvm.script import relax as {self.cfg.relax_prefix}"))
        stmts.append(D.Comment(""))
        stmts.append(doc)
        return stmts

    def add_metadata(self, obj, key: str) -> str:
        items = self.metadata.setdefault(key, [])
        k = next((i for i, o in enumerate(items) if o is obj), len(items))
        if k == len(items):
            items.append(obj)
        return f"metadata[{D.quote(key)}][{k}]"

    # ------------------------------------------------------------------ the driver
    def run(self, root):
        """The doc of ``root``: a str for an expression, a Stmt or a list of Stmts."""
        value = self._fast(root)
        if value is not _SLOW:
            return value
        first = self._start(root)
        if type(first) is not GeneratorType:
            return first
        stack = [first]
        value = None
        while True:
            try:
                req = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                if not stack:
                    return value
                continue
            value = self._fast(req)
            if value is _SLOW:
                g = self._start(req)
                if type(g) is GeneratorType:
                    stack.append(g)
                    value = None
                else:
                    value = g

    def _fast(self, obj):
        """Docs that need no handler: defined variables and global variables."""
        t = type(obj)
        if t is rx.Var or t is rx.DataflowVar:
            info = self.names.get(id(obj))
            return info[1] if info is not None else _SLOW
        if t is GlobalVar:
            return self.global_var(obj)
        return _SLOW

    def _start(self, req):
        """Call the handler of a request: a node, a value, or a ``(kind, *args)`` tuple."""
        t = type(req)
        if t is tuple:
            return getattr(self, "req_" + req[0])(*req[1:])
        if t is GeneratorType:
            return req
        return self._node(req)

    def _node(self, obj):
        h = self._handlers.get(type(obj))
        if h is None:
            h = self._handlers[type(obj)] = self._find_handler(type(obj))
        return h(obj)

    def _find_handler(self, cls: type):
        for c in cls.__mro__:
            h = _HANDLERS.get(c)
            if h is not None:
                return h.__get__(self)  # a bound method of this printer
        return self.fallback

    def fallback(self, obj):
        key = getattr(obj, "type_key", None) or type(obj).__name__
        return self.add_metadata(obj, key)

    # ------------------------------------------------------------------ scalars and values
    def tir_var(self, v) -> str:
        """A symbolic variable: declared (``n = T.int64()``) in the function that first uses it."""
        info = self.names.get(id(v))
        if info is not None:
            return info[1]
        f = self.relax_frame() or self.frames[-1]
        if f.func_vars is not None:
            f.func_vars.add(id(v))
        name = self.define(v, f, v.name_hint or "v")
        kwargs = [("is_size_var", "True")] if isinstance(v, tir_expr.SizeVar) else []
        f.stmts.append(D.assign(name, D.call_text(self.T(v.dtype), (), kwargs)))
        return name

    def prim(self, e) -> str:
        return prim_doc(e, self.tir_var, self.T)[0]

    def shape_var(self, e) -> str:
        """A dimension; quoted (``"n"``) while a signature declares its symbolic variables."""
        text = self.prim(e)
        f = next((f for f in self.frames if f.kind == "relax" and f.func_vars is not None), None)
        if f is not None and not isinstance(e, tir_expr.IntImm):
            if any(isinstance(n, tir_expr.Var) and id(n) in f.func_vars
                   for n in post_order(e)):
                return D.quote(text)
        return text

    def value(self, v):
        """Python values and attrs (literals, lists, dicts); nodes go through their handlers."""
        if isinstance(v, np.generic):
            v = v.item()
        if v is None:
            return "None"
        if isinstance(v, bool):
            return "True" if v else "False"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return float_literal(v)
        if isinstance(v, str):
            return self.add_metadata(v, "runtime.String") if "\n" in v else D.quote(v)
        if isinstance(v, _AttrImm):
            return f"{self.T(v.imm.dtype)}({v.imm.value})"
        if isinstance(v, PrimExpr):
            return self.prim(v)
        if isinstance(v, IndexMap):
            return v.script(self.T("index_map").rsplit(".", 1)[0])
        return self.run_value(v)

    def run_value(self, v):
        if isinstance(v, list | tuple):
            return self._list(v)
        if isinstance(v, dict | DictAttrs):
            return self._dict(dict(v.items()))
        return _SLOW

    def _list(self, items):
        docs = []
        for x in items:
            docs.append((yield ("value", x)))
        return D.list_text(docs)

    def _dict(self, d: dict):
        items = list(d.items())
        if all(isinstance(k, str) for k in d):
            items.sort(key=lambda kv: kv[0])
        parts = []
        for k, v in items:
            kd = yield ("value", k)
            vd = yield ("value", v)
            parts.append(D.cat([kd, ": ", vd]))
        return D.cat(["{", D.join(", ", parts), "}"])

    def req_value(self, v):
        out = self.value(v)
        return self._node(v) if out is _SLOW else out

    def req_attr(self, key: str, v):
        if v is None and key in DTYPE_FIELDS:
            return D.quote("void")
        return self.req_value(v)

    # ------------------------------------------------------------------ global variables
    def global_var(self, gv) -> str:
        ctx = self.module_ctx
        if ctx is None or gv.name_hint not in ctx[1]:
            return gv.name_hint
        mod_name = ctx[0]
        alias = self.cfg.module_alias
        if not alias:
            return f"{mod_name}.{gv.name_hint}"
        f = self.relax_frame()
        if f is None or not f.is_func:
            return f"{mod_name}.{gv.name_hint}"
        if not f.alias_printed:
            f.stmts.append(D.assign(alias, mod_name))
            f.alias_printed = True
        return f"{alias}.{gv.name_hint}"

    # ------------------------------------------------------------------ modules
    def module(self, mod):
        funcs = sorted(mod.functions.items(), key=_function_order)
        f = self.push("ir")
        name = self.define(mod, f, self.binding_names[-1] if self.binding_names else "Module")
        stmts = f.stmts
        if mod.attrs:
            stmts.append(D.expr_stmt(D.call_text(
                self.I("module_attrs"), [(yield ("value", _explicit_imms(dict(mod.attrs))))])))
        self.global_infos = mod.global_infos
        if mod.global_infos:
            stmts.append(D.expr_stmt(D.call_text(self.I("module_global_infos"),
                                               [(yield ("value", dict(mod.global_infos)))])))
        saved = self.module_ctx
        self.module_ctx = (name, {gv.name_hint for gv in mod.functions})
        for gv, func in funcs:
            self.binding_names.append(gv.name_hint)
            if isinstance(func, PrimFunc):
                self.usage.add("tir")
                doc = D.RawDef(prim_func_lines(func, gv.name_hint, indent=0))
            elif isinstance(func, rx.ExternFunc):
                doc = D.assign(gv.name_hint, self.extern_func(func, with_sinfo=True))
            elif isinstance(func, rx.Function):
                doc = yield func
                if isinstance(doc, list):
                    doc = doc[-1]
            else:
                doc = D.Comment(f"{gv.name_hint}: a {type(func).__module__}."
                                f"{type(func).__name__} has no TVMScript form")
            self.binding_names.pop()
            stmts.append(doc)
        self.module_ctx = saved
        out = self.header_wrapper(D.Def([self.I("ir_module")], f"class {name}:", stmts))
        self.pop()
        return out

    # ------------------------------------------------------------------ functions
    def function(self, n):
        f = self.push("relax")
        f.is_func = True
        f.func_vars = set()
        attrs = dict(n.attrs.items()) if n.attrs is not None else {}
        gsym = attrs.get("global_symbol")
        name = self.binding_names[-1] if self.binding_names else (gsym or "main")
        ret = None
        fs = n.struct_info_
        if isinstance(fs, si.FuncStructInfo):
            ret = yield fs.ret
        params = []
        for p in n.params:
            ann = yield ("ann", p, None)
            pname = self.define_var(p, f)
            params.append(pname if ann is None else f"{pname}: {D.flat(ann)}")
        f.func_vars = None
        top = self.at_top_level_function()
        if attrs:
            shown = attrs
            if top and gsym is not None and gsym == name:
                shown = {k: v for k, v in attrs.items() if k != "global_symbol"}
            if shown:
                f.stmts.append(D.expr_stmt(D.call_text(
                    self.R("func_attr"), [(yield ("value", _explicit_imms(shown)))])))
        dec_kw = []
        if not n.is_pure:
            dec_kw.append(("pure", "False"))
        if top and gsym is None:
            dec_kw.append(("private", "True"))
        decorator = self.R("function")
        if dec_kw:
            decorator = D.call_text(decorator, (), dec_kw)
        body = yield ("seq", n.body, True)
        f.stmts.extend(body)
        head = f"def {name}({', '.join(params)})"
        if ret is not None:
            head += f" -> {D.flat(ret)}"
        out = self.header_wrapper(D.Def([decorator], head + ":", f.stmts))
        self.pop()
        return out

    def extern_func(self, n, with_sinfo: bool = False) -> str:
        args = [D.quote(n.global_symbol)]
        s = n.struct_info_
        if with_sinfo and s is not None and not _default_extern_sinfo(s):
            args.append(self.run(s))
        return D.call_text(self.R("ExternFunc"), args)

    def req_seq(self, n, use_ret: bool):
        blocks, body = (n.blocks, n.body) if isinstance(n, rx.SeqExpr) else ((), n)
        f = self.push("relax")
        stmts = f.stmts
        for b in blocks:
            d = yield b
            if isinstance(d, list):
                stmts.extend(d)
            else:
                stmts.append(d)
        ret = yield body
        if not D.is_expr(ret):  # a statement in expression position (not normalized)
            stmts.extend(ret if isinstance(ret, list) else [ret])
            ret = "None"
        stmts.append(D.Line(D.cat(["return ", ret])) if use_ret else D.expr_stmt(ret))
        self.pop()
        return stmts

    # ------------------------------------------------------------------ bindings and blocks
    def binding_block(self, blk):
        dataflow = isinstance(blk, rx.DataflowBlock)
        stmts: list = []
        outputs: list[str] = []
        for b in blk.bindings:
            d = self._fast_binding(b) if type(b) is rx.VarBinding else _SLOW
            if d is _SLOW:
                d = yield b
            if type(d) is list:
                stmts.extend(d)
            else:
                stmts.append(d)
            if dataflow and not isinstance(b.var, rx.DataflowVar):
                outputs.append((yield b.var))
        if not dataflow:
            return stmts
        stmts.append(D.expr_stmt(D.call_text(self.R("output"), outputs)))
        return D.Scope(f"with {D.call_text(self.R('dataflow'))}:", stmts)

    def _fast_binding(self, b):
        """``var_binding`` without generators for the common ``v: sinfo = R.op(vars, attrs)``
        and ``v: sinfo = w``; _SLOW (before any effect but the prefix usage) otherwise."""
        value = b.value
        names = self.names
        t = type(value)
        if t is rx.Var or t is rx.DataflowVar:
            info = names.get(id(value))
            if info is None:
                return _SLOW
            rhs = info[1]
        elif t is rx.Call:
            op = value.op
            if type(op) is not Op or op.name in SPECIAL_OPS or value.sinfo_args:
                return _SLOW
            args = []
            for a in value.args:
                ta = type(a)
                info = names.get(id(a)) if ta is rx.Var or ta is rx.DataflowVar else None
                if info is None:
                    return _SLOW
                args.append(info[1])
            kwargs = []
            attrs = value.attrs
            if attrs is not None:
                if not isinstance(attrs, Attrs):
                    return _SLOW
                for k, x in attrs.items():
                    if x is None:
                        kwargs.append((k, '"void"' if k in DTYPE_FIELDS else "None"))
                    elif type(x) in _LITERAL_TYPES and not (type(x) is str and "\n" in x):
                        kwargs.append((k, self.value(x)))
                    else:
                        return _SLOW
            name = op.name
            prefix = self.R(name[6:]) if name.startswith("relax.") else name
            rhs = D.call_text(prefix, args, kwargs)
        else:
            return _SLOW
        if self.cfg.syntax_sugar and _is_void(value) and _is_void(b.var):
            return D.expr_stmt(rhs)
        ann = self.req_ann(b.var, value)
        if type(ann) is GeneratorType:  # not started: nothing printed yet
            return _SLOW
        return D.assign(self.define_var(b.var, self.frames[-1]), rhs, ann)

    def var_binding(self, b):
        value = b.value
        frame = self.frames[-1]
        if isinstance(value, rx.If):
            ann = yield ("ann", b.var, value)
            lhs = self.define_var(b.var, frame)
            return (yield ("if", value, lhs, ann))
        if isinstance(value, rx.Function):
            lhs = self.define_var(b.var, frame)
            self.binding_names.append(lhs)
            d = yield value
            self.binding_names.pop()
            return d  # TVM prints the import header before a local function too
        if isinstance(value, rx.SeqExpr):  # not normalized: its bindings, then the body's
            stmts = []
            for blk in value.blocks:
                d = yield blk
                stmts.extend(d if isinstance(d, list) else [d])
            rhs = yield value.body
            ann = yield ("ann", b.var, value.body)
            stmts.append(D.assign(self.define_var(b.var, frame), rhs, ann))
            return stmts
        if self.cfg.syntax_sugar and _is_void(value) and _is_void(b.var):
            return D.expr_stmt((yield value))
        rhs = yield value
        ann = yield ("ann", b.var, value)
        lhs = self.define_var(b.var, frame)
        return D.assign(lhs, rhs, ann)

    def match_cast(self, b):
        ann = None
        if self.cfg.show_all_struct_info:
            ann = yield ("ann", b.var, b.value)
        value = yield b.value
        sinfo = yield b.struct_info
        lhs = self.define_var(b.var, self.frames[-1])
        return D.assign(lhs, D.call_text(self.R("match_cast"), [value, sinfo]), ann)

    def req_ann(self, var, rhs):
        """The annotation of a defined variable, None where the right-hand side states it."""
        s = var.struct_info_
        if s is None:
            return None
        hide = not self.cfg.show_all_struct_info
        if isinstance(rhs, rx.Call) and isinstance(rhs.op, Op) and rhs.op.name in _HIDE_ANN_OPS:
            hide = True
        if hide:
            inferred = _inferred_sinfo(rhs)
            if inferred is not None and structural_equal(inferred, s):
                return None
        return self._node(s)

    def req_if(self, n, var_doc, ann):
        cond = yield n.cond
        then_body = yield ("seq", n.true_branch, False)
        else_body = yield ("seq", n.false_branch, False)
        if var_doc is not None:
            for body in (then_body, else_body):
                last = body[-1]
                body[-1] = D.assign(var_doc, last.expr if last.expr is not None else last.text,
                                    ann)
        return D.If(cond, then_body, else_body)

    def seq_expr(self, n):
        return (yield ("seq", n, False))

    def if_expr(self, n):
        return (yield ("if", n, None, None))


class _AttrImm:
    """An integer constant node among attributes, printed with its dtype (``T.int64(3)``) so it
    parses back as the node, not as the Python int an attribute ``3`` is."""

    __slots__ = ("imm",)

    def __init__(self, imm):
        self.imm = imm


def _explicit_imms(attrs: dict) -> dict:
    """``attrs`` with integer IntImm values (also inside lists and dicts) marked to print with
    their dtype; bools print as Python bools, which is what the parser makes of them."""
    def mark(v):
        if isinstance(v, tir_expr.IntImm) and v.dtype != "bool":
            return _AttrImm(v)
        if isinstance(v, list | tuple):
            return [mark(x) for x in v]
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        return v

    return {k: mark(v) for k, v in attrs.items()}


def _is_void(x) -> bool:
    s = x.struct_info_
    return isinstance(s, si.TupleStructInfo) and not s.fields


def _inferred_sinfo(rhs):
    """The struct info the parser would derive from ``rhs`` alone (what normalization set)."""
    if isinstance(rhs, rx.Call):
        if isinstance(rhs.op, Op) and rhs.op.name in CALL_TIR_LIKE and len(rhs.sinfo_args) == 1:
            out = rhs.sinfo_args[0]
            if rhs.op.name != "relax.call_tir_inplace" or rhs.struct_info_ is None:
                return out
        return rhs.struct_info_
    if isinstance(rhs, rx.Tuple | rx.TupleGetItem | rx.Var):
        return rhs.struct_info_
    return None


def _default_extern_sinfo(s) -> bool:
    return (isinstance(s, si.FuncStructInfo) and s.params is None
            and isinstance(s.ret, si.ObjectStructInfo)
            and (s.derive_func is None or s.derive_func is rx.infer_by_sinfo_args))


_PRIORITY = {PrimFunc: 1, rx.ExternFunc: 2, rx.Function: 3}


def _function_order(item):
    gv, func = item
    if gv.name_hint == "main":
        return (1000, gv.name_hint)
    prio = next((p for c, p in _PRIORITY.items() if isinstance(func, c)), 4)
    return (prio, gv.name_hint)


_HANDLERS = {
    IRModule: RelaxPrinter.module,
    rx.Function: RelaxPrinter.function,
    rx.ExternFunc: RelaxPrinter.extern_func,
    rx.Var: RelaxPrinter.var,
    rx.Constant: RelaxPrinter.constant,
    rx.PrimValue: RelaxPrinter.prim_value,
    rx.ShapeExpr: RelaxPrinter.shape_expr,
    rx.StringImm: lambda p, n: D.call_text(p.R("str"), [D.quote(n.value)]),
    rx.DataTypeImm: lambda p, n: D.call_text(p.R("dtype"), [D.quote(n.value)]),
    rx.Tuple: RelaxPrinter.tuple,
    rx.TupleGetItem: RelaxPrinter.tuple_get_item,
    rx.Call: RelaxPrinter.call,
    rx.If: RelaxPrinter.if_expr,
    rx.SeqExpr: RelaxPrinter.seq_expr,
    rx.VarBinding: RelaxPrinter.var_binding,
    rx.MatchCast: RelaxPrinter.match_cast,
    rx.BindingBlock: RelaxPrinter.binding_block,
    Op: lambda p, n: D.call_text(p.I("Op"), [D.quote(n.name)]),
    GlobalVar: lambda p, n: p.global_var(n),
    PrimExpr: RelaxPrinter.prim,
    si.ObjectStructInfo: RelaxPrinter.object_sinfo,
    si.PrimStructInfo: RelaxPrinter.prim_sinfo,
    si.ShapeStructInfo: RelaxPrinter.shape_sinfo,
    si.TensorStructInfo: RelaxPrinter.tensor_sinfo,
    si.TupleStructInfo: RelaxPrinter.tuple_sinfo,
    si.FuncStructInfo: RelaxPrinter.func_sinfo,
    DictAttrs: lambda p, a: p._dict(dict(a.items())),
    list: lambda p, v: p._list(v),
    tuple: lambda p, v: p._list(v),
    dict: lambda p, v: p._dict(v),
    str: lambda p, v: p.value(v),
    int: lambda p, v: p.value(v),
    float: lambda p, v: p.value(v),
    bool: lambda p, v: p.value(v),
    type(None): lambda p, v: "None",
    _AttrImm: lambda p, v: p.value(v),
    VDevice: RelaxPrinter.vdevice,
    DummyGlobalInfo: lambda p, v: D.call_text(p.I("dummy_global_info"), []),
}


def script(obj, **kwargs) -> str:
    """TVMScript text of a Relax node, struct info or IRModule (``obj.script(**kwargs)``)."""
    cfg = PrinterConfig.make(**kwargs)
    p = RelaxPrinter(cfg)
    root = p.push("ir" if isinstance(obj, IRModule) else "relax")
    d = p.run(obj)
    if D.is_expr(d):
        if not cfg.verbose_expr:
            root.stmts.clear()
        root.stmts.append(D.expr_stmt(d))
    elif isinstance(d, list):
        root.stmts.extend(d)
    else:
        root.stmts.append(d)
    head = ""
    if p.metadata:
        if cfg.show_meta:
            head = f'metadata = tvm.ir.load_json("""{_metadata_json(p.metadata)}""")\n'
        else:
            root.stmts.append(D.Comment(_METADATA_OMITTED))
    return head + D.render(root.stmts, cfg.indent_spaces)


def _metadata_json(metadata: dict) -> str:
    """The metadata section (not TVM's node JSON: constants as dtype, shape and values)."""
    out = {}
    for key, items in metadata.items():
        docs = []
        for obj in items:
            data = getattr(obj, "data", obj)
            if isinstance(data, NDArray):
                arr = data.numpy()
                docs.append({"dtype": str(arr.dtype), "shape": list(arr.shape),
                             "data": arr.tolist()})
            else:
                docs.append(str(obj))
        out[key] = docs
    return json.dumps(out)

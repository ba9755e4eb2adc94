"""Entry points of the parser: ``from_source`` (text), ``parse`` (text or a decorated Python
object), the decorators' plumbing (reading a definition's source where it is written, with the
names of that scope) and the top level of a text (imports, the metadata section)."""

from __future__ import annotations

import ast
import builtins
import inspect
import json
import sys
import textwrap

from ...ir.gc_pause import paused
from .core import ExprEvaluator, VarTable
from .error import ParserError, Source

__all__ = ["from_source", "parse", "parse_decorated", "decorator_kind", "default_env"]


# ---------------------------------------------------------------------------- decorators
def decorator_kind(ev: ExprEvaluator, node) -> tuple[str, dict]:
    """``("relax" | "tir" | "module", keyword arguments)`` of a def/class's decorator."""
    from . import ir as I_ns
    from . import relax as R_ns
    from . import tir as T_ns

    decs = getattr(node, "decorator_list", [])
    if len(decs) != 1:
        what = "no decorator" if not decs else f"{len(decs)} decorators"
        raise ev.error(node, f"{node.name!r} has {what}; expected one of @I.ir_module, "
                             "@R.function, @T.prim_func")
    dec = decs[0]
    target, kwargs = dec, {}
    if isinstance(dec, ast.Call):
        if dec.args:
            raise ev.error(dec, "decorator arguments must be given by keyword "
                                "(private=..., pure=...)")
        target = dec.func
        kwargs = {kw.arg: ev.eval_expr(kw.value) for kw in dec.keywords}
    known = {id(R_ns.function): "relax", id(T_ns.prim_func): "tir", id(I_ns.ir_module): "module"}
    try:
        obj = ev.eval_expr(target)
    except ParserError:
        obj = None
    kind = known.get(id(obj))
    if kind is None:
        kind = _DECORATOR_KINDS_BY_NAME.get(getattr(obj, "_tvmscript_kind", None))
    if kind is None:
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        kind = {"function": "relax", "prim_func": "tir", "ir_module": "module"}.get(name)
    if kind is None:
        raise ev.error(dec, f"unsupported decorator {ast.unparse(dec)!r}; expected one of "
                            "@I.ir_module, @R.function, @T.prim_func")
    unknown = set(kwargs) - _DECORATOR_KWARGS[kind]
    if unknown:
        raise ev.error(dec, f"unknown decorator argument {sorted(unknown)[0]!r}")
    return kind, kwargs


_DECORATOR_KINDS_BY_NAME = {"relax": "relax", "tir": "tir", "module": "module"}
_DECORATOR_KWARGS = {"relax": {"pure", "private", "check_well_formed"},
                     "tir": {"private", "check_well_formed"},
                     "module": {"check_well_formed"}}


# ---------------------------------------------------------------------------- entry points
def default_env() -> dict:
    """Names every TVMScript text may use without importing them (as TVM's ``from_source``)."""
    from . import ir as I_ns
    from . import relax as R_ns
    from . import tir as T_ns

    return {"I": I_ns, "ir": I_ns, "R": R_ns, "relax": R_ns, "T": T_ns, "tir": T_ns}


class _TopLevel(ExprEvaluator):
    """Evaluates decorators and top-level statements of a text."""

    dialect = "module level"

    def __init__(self, source: Source, env: dict):
        self.source = source
        self.env = env
        self.var_table = VarTable()


def _parse_def(top: _TopLevel, node, env: dict):
    if isinstance(node, ast.ClassDef):
        kind, kwargs = decorator_kind(top, node)
        if kind != "module":
            raise top.error(node, "a class must be decorated with @I.ir_module")
        from .module_parser import parse_module

        return parse_module(top.source, node, env)
    if isinstance(node, ast.FunctionDef):
        kind, kwargs = decorator_kind(top, node)
        if kind == "relax":
            from .relax_parser import parse_relax_function

            return parse_relax_function(top.source, node, env, kwargs)
        if kind == "tir":
            from .tir_parser import parse_prim_func

            return parse_prim_func(top.source, node, env, kwargs, in_module=False)
        raise top.error(node, "@I.ir_module decorates a class, not a function")
    if isinstance(node, ast.AsyncFunctionDef):
        raise top.unsupported(node, "async functions")
    raise top.unsupported(node, f"a top-level `{type(node).__name__}` statement")


def from_source(source: str, extra_vars: dict | None = None, source_name: str = "<string>"):
    """Parse TVMScript text: an ``@I.ir_module`` class gives an IRModule, an ``@R.function`` a
    ``relax.Function``, a ``@T.prim_func`` a ``tir.PrimFunc`` (``tvm.script.from_source``).

    ``extra_vars`` adds names the text may use (``metadata``, dtype names, constants).
    """
    if not isinstance(source, str):
        raise TypeError(f"from_source takes TVMScript text, got {type(source).__name__}")
    with paused():
        return _from_source(source, extra_vars, source_name)


def _from_source(source: str, extra_vars: dict | None, source_name: str):
    first = next((ln for ln in source.splitlines() if ln.strip()), "")
    indent = len(first) - len(first.lstrip())
    if indent:  # text indented as a whole (a triple-quoted string in a test)
        source = textwrap.dedent(source)
    src = Source(source, source_name, 0, indent)
    tree = _ast_parse(source, source_name, 0, indent)
    env = default_env()
    env.update(extra_vars or {})
    top = _TopLevel(src, env)
    results = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if _is_metadata_assign(stmt):
            env["metadata"] = _load_metadata(top, stmt)
            continue
        results.append(_parse_def(top, stmt, env))
    if not results:
        raise src.error(tree.body[-1] if tree.body else _Pos(1, 0),
                        "the text defines nothing to parse: expected an @I.ir_module class, "
                        "an @R.function or a @T.prim_func")
    if len(results) > 1:
        defs = [st for st in tree.body if isinstance(st, ast.FunctionDef | ast.ClassDef)]
        raise src.error(defs[1] if len(defs) > 1 else tree.body[-1],
                        f"the text defines {len(results)} top-level objects; from_source "
                        "parses one (an @I.ir_module class holds several functions)")
    return results[0]


class _Pos:
    """A position (1-based line, 0-based column) where no ``ast`` node is at hand."""

    def __init__(self, lineno: int, col_offset: int):
        self.lineno = lineno
        self.col_offset = col_offset


def _deepest(text: str) -> tuple[int, int]:
    """(line, column) of the most deeply nested bracket of ``text`` (both 1-based)."""
    depth = best = 0
    line, col, where = 1, 0, (1, 1)
    for ch in text:
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        elif ch in "([{":
            depth += 1
            if depth > best:
                best, where = depth, (line, col)
        elif ch in ")]}":
            depth -= 1
    return where


def _ast_parse(text: str, name: str, line_offset: int = 0, col_offset: int = 0):
    try:
        return ast.parse(text, filename=name)
    except SyntaxError as e:
        raise ParserError(f"invalid Python syntax: {e.msg}", name, (e.lineno or 1) + line_offset,
                          (e.offset or 1) + col_offset, (e.text or "").rstrip("\n"),
                          max((e.offset or 1) - 1, 0)) from None
    except (RecursionError, MemoryError):
        line, col = _deepest(text)
        lines = text.splitlines()
        raise ParserError("an expression is nested too deeply for Python's own parser "
                          "(ast.parse); split it into several bindings", name,
                          line + line_offset, col + col_offset,
                          lines[line - 1][:200] if 0 < line <= len(lines) else "",
                          col - 1) from None


def _is_metadata_assign(stmt) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "metadata")


def _load_metadata(top: _TopLevel, stmt) -> dict:
    """``metadata = tvm.ir.load_json(\"\"\"...\"\"\")`` as the printer writes it: constants as
    ``{"dtype", "shape", "data"}``, other objects as their text."""
    value = stmt.value
    if (isinstance(value, ast.Call) and len(value.args) == 1
            and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)):
        text = value.args[0].value
    elif isinstance(value, ast.Dict):
        return top.eval_expr(value)
    else:
        raise top.error(stmt, "metadata must be `tvm.ir.load_json(\"\"\"...\"\"\")`")
    try:
        raw = json.loads(text)
    except ValueError as e:
        raise top.error(stmt, f"the metadata is not valid JSON: {e}") from None
    except RecursionError:
        raise top.error(stmt, "the metadata JSON is nested too deeply") from None
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise top.error(stmt, "the metadata must be a JSON object of lists")
    try:
        return _metadata_objects(raw)
    except (TypeError, ValueError, KeyError, OverflowError, MemoryError) as e:
        raise top.error(stmt, f"bad metadata entry: {type(e).__name__}: {e}") from None


def _metadata_objects(raw: dict) -> dict:
    """The constants and arrays of the parsed metadata JSON ``raw``."""
    import numpy as np

    from ...relax.expr import const
    from ...runtime.ndarray import NDArray

    out = {}
    for key, items in raw.items():
        objs = []
        for item in items:
            if isinstance(item, dict) and {"dtype", "shape", "data"} <= set(item):
                if not isinstance(item["dtype"], str) or not isinstance(item["shape"], list) \
                        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                   for d in item["shape"]):
                    raise ValueError(f"{key}: a constant needs a dtype string and a shape of "
                                     f"non-negative integers, got {str(item)[:100]}")
                arr = np.asarray(item["data"], dtype=item["dtype"]).reshape(item["shape"])
                if key == "relax.expr.Constant":
                    objs.append(const(arr, item["dtype"]))
                elif key == "NDArray":  # a tvm.nd.array held in attrs
                    objs.append(NDArray(arr))
                else:
                    objs.append(arr)
            else:
                objs.append(item)
        out[key] = objs
    return out


# ---------------------------------------------------------------------------- decorated objects
def caller_env(depth: int) -> dict:
    """Globals and locals of the frame ``depth`` levels above the caller (names the decorated
    source may use: dtypes, constants, helper functions)."""
    frame = sys._getframe(depth + 1)
    env = dict(frame.f_globals)
    if frame.f_locals is not frame.f_globals:
        env.update(frame.f_locals)
    return env


def in_class_body(depth: int) -> bool:
    """Whether the frame ``depth`` levels above the caller executes a class body (a method of
    an ``@I.ir_module`` class: the module's decorator parses it)."""
    frame = sys._getframe(depth + 1)
    loc = frame.f_locals
    return frame.f_code.co_name != "<module>" and "__module__" in loc and "__qualname__" in loc


def source_of(obj) -> tuple[Source, ast.AST]:
    """The source of a decorated function or class and its ``ast`` definition."""
    try:
        lines, start = inspect.getsourcelines(obj)
        fname = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise ParserError(f"cannot read the source of {getattr(obj, '__name__', obj)!r} "
                          f"({e}); use tvm.script.from_source(text) instead") from None
    text = "".join(lines)
    first = next((ln for ln in lines if ln.strip()), "")
    indent = len(first) - len(first.lstrip())
    text = textwrap.dedent(text)
    src = Source(text, fname, start - 1, indent)
    tree = _ast_parse(text, fname, start - 1, indent)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    if not defs:
        raise ParserError(f"no definition found in the source of {obj!r}", fname)
    return src, defs[0]


def parse_decorated(obj, kind: str):
    """What ``@R.function`` / ``@T.prim_func`` return for ``obj``: inside a class body the
    function itself (the ``@I.ir_module`` decorator parses the class), else its parse, with the
    names of the scope that applies the decorator. Call it straight from the decorator (or the
    closure a decorator with arguments returns): the frame two up applies it."""
    if in_class_body(2):
        obj._tvmscript_kind = kind
        return obj
    env = caller_env(2)
    src, node = source_of(obj)
    return parse_definition(src, node, env)


def parse(program, extra_vars: dict | None = None):
    """Parse a TVMScript program: text, or a Python function/class written in TVMScript
    (``tvm.script.parse``); ``extra_vars`` are the names it may use."""
    if isinstance(program, str):
        return from_source(program, extra_vars)
    src, node = source_of(program)
    env = default_env()
    env.update(getattr(program, "__globals__", None) or
               vars(sys.modules.get(getattr(program, "__module__", ""), builtins)))
    env.update(extra_vars or {})
    return parse_definition(src, node, env)


def parse_definition(src: Source, node, env: dict):
    """Parse one decorated definition read from a Python file."""
    with paused():
        return _parse_def(_TopLevel(src, env), node, env)

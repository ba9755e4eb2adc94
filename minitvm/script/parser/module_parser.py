"""``@I.ir_module class Module:``: every function is declared (a GlobalVar, and for Relax
functions the struct info of its signature) before any body is parsed, so calls may refer to
functions defined further down (``cls.f``, ``Module.f``)."""

from __future__ import annotations

import ast

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from .core import ModuleProxy, VarTable
from .entry import _TopLevel, decorator_kind
from .error import Source

__all__ = ["parse_module"]


def parse_module(src: Source, node: ast.ClassDef, env: dict) -> IRModule:
    from . import ir as I_ns
    from .relax_parser import RelaxParser
    from .tir_parser import parse_prim_func

    top = _TopLevel(src, env)
    if node.bases or node.keywords:
        raise top.error(node, "an @I.ir_module class takes no base classes")
    gvars: dict[str, GlobalVar] = {}
    defs: list[tuple[ast.FunctionDef, str, dict]] = []
    externs: list[tuple[str, ast.expr]] = []
    module_attrs: dict = {}
    global_infos: dict = {}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef):
            kind, kwargs = decorator_kind(top, stmt)
            if kind == "module":
                raise top.error(stmt, "@I.ir_module decorates a class, not a function")
            if stmt.name in gvars:
                raise top.error(stmt, f"function {stmt.name!r} is defined twice in the module")
            gvars[stmt.name] = GlobalVar(stmt.name)
            defs.append((stmt, kind, kwargs))
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0], ast.Name):
            name = stmt.targets[0].id  # ``f = R.ExternFunc("symbol")``
            if name in gvars:
                raise top.error(stmt, f"function {name!r} is defined twice in the module")
            gvars[name] = GlobalVar(name)
            externs.append((name, stmt))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = top.eval_expr(stmt.value.func)
            if func is I_ns.module_attrs or func is I_ns.module_global_infos:
                value = top.eval_expr(stmt.value)
                target = module_attrs if func is I_ns.module_attrs else global_infos
                target.update(value)
            else:
                raise top.error(stmt, f"unsupported statement in an @I.ir_module class: "
                                      f"{ast.unparse(stmt)!r}")
        elif isinstance(stmt, ast.Pass):
            continue
        else:
            raise top.unsupported(stmt, f"a `{type(stmt).__name__}` statement in an "
                                        "@I.ir_module class")

    with I_ns.global_infos_scope(global_infos):  # `vdevice="llvm:0"` refers to them
        proxy = ModuleProxy(node.name, gvars)
        env = dict(env)
        env[node.name] = proxy
        funcs: dict[str, object] = {}
        for name, stmt in externs:
            ev = _TopLevel(src, env)
            value = ev.eval_expr(stmt.value)
            from ...relax.expr import ExternFunc

            if not isinstance(value, ExternFunc):
                raise top.error(stmt, f"a module-level assignment must bind an R.ExternFunc, got "
                                      f"{type(value).__name__}")
            funcs[name] = value
            if value.struct_info_ is not None:
                gvars[name]._checked_type = value.struct_info_

        # declare the Relax signatures first: callers see their callees' struct info
        relax_parsers: dict[str, RelaxParser] = {}
        for fdef, kind, kwargs in defs:
            if kind == "relax":
                p = RelaxParser(src, env, VarTable())
                sig = p.declare(fdef, kwargs, nested=False)
                gvars[fdef.name]._checked_type = sig.struct_info
                relax_parsers[fdef.name] = p
        from ...relax.block_builder import prim_func_struct_info

        for fdef, kind, kwargs in defs:  # PrimFuncs first: a direct call's result needs them
            if kind == "tir":
                funcs[fdef.name] = parse_prim_func(src, fdef, env, kwargs, in_module=True)
                gvars[fdef.name]._checked_type = prim_func_struct_info(funcs[fdef.name])
        for fdef, kind, _kwargs in defs:
            if kind != "tir":
                p = relax_parsers[fdef.name]
                func = p.finish()
                funcs[fdef.name] = func
                if func.struct_info_ is not None:
                    gvars[fdef.name]._checked_type = func.struct_info_
        mod = IRModule(attrs=_plain(module_attrs), global_infos=global_infos)
        for name, gv in gvars.items():
            mod[gv] = funcs[name]
    return mod


def _plain(d: dict) -> dict:
    from .tir_parser import attr_value

    return {k: attr_value(v) for k, v in d.items()}

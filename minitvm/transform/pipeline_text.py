"""Pipelines as text: ``FoldConstant,EliminateCommonSubexpr,FuseOps(fuse_opt_level=2)``.

Grammar (a Python expression): items separated by commas; an item is a registered pass name
with optional literal keyword arguments, ``Name(k=v, ...)``, or a nested Sequential,
``Name(opt_level=3, required=[...])[item, ...]`` (``sequential[...]`` for an unnamed one).
A name that is not a dotted identifier is written as a quoted string. ``str(seq)`` prints this
text and ``parse_pipeline(str(seq))`` rebuilds the same pipeline.
"""

from __future__ import annotations

import ast
import re

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class PipelineSyntaxError(ValueError):
    """Pipeline text that cannot be parsed or names an unknown pass."""


def _name_text(name: str) -> str:
    return name if _NAME_RE.match(name) else repr(name)


def _args_text(args: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def pass_to_text(p, top: bool = True) -> str:
    """The pipeline text of a pass (a Sequential prints its children)."""
    info = p.info
    if p.kind == "sequential" and p._factory_name is None:
        inner = ",".join(pass_to_text(c, top=False) for c in p.passes)
        args = {}
        if info.opt_level != 0:
            args["opt_level"] = info.opt_level
        if info.required:
            args["required"] = list(info.required)
        if top and info.name == "sequential" and not args:
            return inner
        head = _name_text(info.name) + (f"({_args_text(args)})" if args else "")
        return f"{head}[{inner}]"
    name = _name_text(p._factory_name or info.name)
    args = p._text_args
    return f"{name}({_args_text(args)})" if args else name


# ------------------------------------------------------------------------------- parsing
def _literal(node, text: str):
    try:
        return ast.literal_eval(node)
    except ValueError:
        src = ast.get_source_segment(text, node) or ast.dump(node)
        raise PipelineSyntaxError(f"pass argument {src!r} is not a literal (numbers, strings, "
                                  "booleans, None, lists, tuples and dicts are)") from None


def _head(node, text: str) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_head(node.value, text)}.{node.attr}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    src = ast.get_source_segment(text, node) or ast.dump(node)
    raise PipelineSyntaxError(f"expected a pass name, got {src!r}")


def _resolve(name: str, kwargs: dict, namespaces):
    from .pass_base import Pass
    from .registry import get_pass, get_pass_entry

    if get_pass_entry(name) is None:
        for ns in namespaces or ():
            for value in ns.values():
                if isinstance(value, Pass) and value.info.name == name and not kwargs:
                    return value
                if isinstance(value, type) and issubclass(value, Pass) and \
                        getattr(getattr(value, "info", None), "name", None) == name:
                    return value(**kwargs)
            f = ns.get(name)
            if callable(f) and not isinstance(f, type):
                p = f(**kwargs)
                if isinstance(p, Pass):
                    return p
    try:
        return get_pass(name, **kwargs)
    except ValueError as err:
        raise PipelineSyntaxError(str(err)) from None


def _build(node, text: str, namespaces):
    from .sequential import Sequential

    if isinstance(node, ast.Subscript):  # Name(args)[children]
        head = node.value
        kwargs = {}
        if isinstance(head, ast.Call):
            if head.args:
                raise PipelineSyntaxError("a Sequential takes keyword arguments only")
            kwargs = {kw.arg: _literal(kw.value, text) for kw in head.keywords}
            head = head.func
        name = _head(head, text)
        bad = set(kwargs) - {"opt_level", "required"}
        if bad:
            raise PipelineSyntaxError(f"Sequential {name!r} got unknown arguments {sorted(bad)}"
                                      "; it takes opt_level and required")
        inner = node.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        children = [_build(n, text, namespaces) for n in items]
        return Sequential(children, kwargs.get("opt_level", 0), name, kwargs.get("required"))
    if isinstance(node, ast.Call):
        if node.args:
            raise PipelineSyntaxError(
                f"pass arguments must be given by keyword: {ast.get_source_segment(text, node)}")
        kwargs = {kw.arg: _literal(kw.value, text) for kw in node.keywords}
        return _resolve(_head(node.func, text), kwargs, namespaces)
    return _resolve(_head(node, text), {}, namespaces)


def parse_pipeline(text: str, namespaces=None):
    """Build the Sequential that ``text`` describes (passes resolved from the registry)."""
    from .sequential import Sequential

    text = text.strip()
    if not text:
        return Sequential([])
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as err:
        raise PipelineSyntaxError(f"cannot parse pipeline text {text!r}: {err.msg} at column "
                                  f"{err.offset}") from None
    if isinstance(tree, ast.Subscript):
        return _build(tree, text, namespaces)
    items = tree.elts if isinstance(tree, ast.Tuple) else [tree]
    return Sequential([_build(n, text, namespaces) for n in items])

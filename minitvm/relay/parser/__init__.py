"""The Relay text format parser: ``relay.parse``, ``relay.fromtext``, ``relay.parse_expr``.

``parse`` reads a module (the ``#[version = "0.0.5"]`` header is required) and type-checks it
with InferType; ``parse_expr`` reads one expression (header optional, no type inference).
Syntax errors raise ``ParseError`` (a ValueError) with the line, column and a caret.
"""

from __future__ import annotations

from ...ir.gc_pause import gc_paused
from .errors import ParseError
from .parser import Parser
from .tokenizer import Source, tokenize

__all__ = ["parse", "fromtext", "parse_expr", "ParseError", "SpanCheck"]


def _meta_table(init_meta_table) -> dict:
    from ..expr import Constant

    table = {}
    for key, nodes in dict(init_meta_table or {}).items():
        entries = []
        for n in nodes:
            if key == "relay.Constant" and not isinstance(n, Constant):
                n = Constant(n)
            entries.append(n)
        table[key] = entries
    return table


@gc_paused
def parse(source: str, source_name: str = "from_string", init_module=None,
          init_meta_table=None):
    """Parse a Relay module from text and type-check it.

    Parameters
    ----------
    source : str
        The text, starting with ``#[version = "0.0.5"]``.
    source_name : str
        The name used in error messages.
    init_module : IRModule, optional
        Definitions the text may refer to; the result contains them too.
    init_meta_table : dict, optional
        ``{"relay.Constant": [...]}`` entries, appended after the text's own metadata.
    """
    from ...ir.module import IRModule

    src = Source(source, source_name)
    gvars, tvars, ctors = {}, {}, {}
    if init_module is not None:
        gvars = {g.name_hint: g for g in init_module.functions}
        tvars = {g.name_hint: g for g in init_module.type_definitions}
        ctors = {c.name_hint: c for td in init_module.type_definitions.values()
                 for c in td.constructors}
    parser = Parser(src, tokenize(src), _meta_table(init_meta_table), gvars, tvars, ctors)
    funcs, type_defs = parser.parse_module()
    mod = init_module.shallow_copy() if init_module is not None else IRModule()
    for gtv, td in type_defs.items():
        mod[gtv] = td
    for gv, fn in funcs.items():
        mod.update_func(gv, fn)
    return _infer_type(mod)


def _infer_type(mod):
    try:
        from ..transform import InferType
    except ImportError:  # type inference is not available in this build
        return mod
    return InferType()(mod)


def fromtext(source: str, source_name: str = "from_string"):
    """Same as ``parse`` (kept for TVM compatibility)."""
    return parse(source, source_name)


def parse_expr(source: str):
    """Parse one Relay expression; the version header is optional and no type inference runs."""
    src = Source(source, "from_string")
    return Parser(src, tokenize(src)).parse_expression()


def SpanCheck():  # noqa: N802 - TVM's name
    """TVM's span checking pass: warns (once per function) about the calls, lets and functions
    without a source span (the parser gives every parsed node one); the module is unchanged."""
    import warnings

    from ...transform import module_pass
    from ..expr import Call, Function, Let
    from ..expr_functor import post_order_visit

    def check(mod, ctx):
        for gv, fn in mod.functions.items():
            if not isinstance(fn, Function):
                continue
            missing = []

            def note(e, missing=missing):
                if isinstance(e, Call | Let | Function) and e.span is None:
                    missing.append(e)

            post_order_visit(fn, note)
            if missing:
                warnings.warn(f"SpanCheck: {len(missing)} expression(s) of @{gv.name_hint} have "
                              f"no span", stacklevel=2)
        return mod

    return module_pass(check, opt_level=0, name="SpanCheck")

"""``tvm.parser``: deprecated aliases of ``tvm.relay.parse``/``fromtext``/``parse_expr``."""

from __future__ import annotations

import warnings


def _warn(name: str) -> None:
    warnings.warn(f"tvm.parser.{name} is deprecated, use tvm.relay.{name} instead",
                  DeprecationWarning, stacklevel=3)


def parse(source, source_name="from_string", init_module=None, init_meta_table=None):
    """Deprecated alias of ``tvm.relay.parse``."""
    from .relay.parser import parse as _parse

    _warn("parse")
    return _parse(source, source_name, init_module, init_meta_table)


def parse_expr(source):
    """Deprecated alias of ``tvm.relay.parse_expr``."""
    from .relay.parser import parse_expr as _parse_expr

    _warn("parse_expr")
    return _parse_expr(source)


def fromtext(source, source_name="from_string"):
    """Deprecated alias of ``tvm.relay.fromtext``."""
    from .relay.parser import fromtext as _fromtext

    _warn("fromtext")
    return _fromtext(source, source_name)


def SpanCheck():  # noqa: N802 - TVM's name
    """Deprecated alias of ``tvm.relay.SpanCheck``."""
    from .relay.parser import SpanCheck as _span_check

    _warn("SpanCheck")
    return _span_check()

"""PrimFunc: a loop-level function over buffers and scalars."""

from __future__ import annotations

from ..ir.expr import BaseFunc
from .buffer import Buffer
from .expr import Var


def _attrs_dict(attrs) -> dict:
    if attrs is None:
        return {}
    if hasattr(attrs, "items"):
        return dict(attrs.items())
    return dict(attrs)


class PrimFunc(BaseFunc):
    """``PrimFunc(params, body, ret_type, buffer_map, attrs)``.

    ``params`` are Vars (handles or scalars); a handle param bound in ``buffer_map`` is a tensor
    argument. Buffers may also be passed directly as params: each gets a handle var.
    """

    __slots__ = ("params", "body", "ret_type", "buffer_map")
    _node_shared = True
    _node_fields = ("params", "buffer_map", "ret_type", "attrs", "body")
    _node_binders = frozenset({"params", "buffer_map"})

    def __init__(self, params, body, ret_type=None, buffer_map=None, attrs=None, span=None):
        super().__init__(span)
        buffer_map = dict(buffer_map or {})
        plist = []
        for p in params:
            if isinstance(p, Buffer):
                v = Var(p.name, "handle")
                buffer_map[v] = p
                plist.append(v)
            else:
                plist.append(p)
        self.params = tuple(plist)
        self.body = body
        self.ret_type = ret_type
        self.buffer_map = buffer_map
        self.attrs = _make_attrs(_attrs_dict(attrs))

    def with_attr(self, attr_key_or_dict, attr_value=None) -> PrimFunc:
        """A copy with the attribute(s) set (``func.with_attr("global_symbol", "main")``)."""
        new_attrs = _attrs_dict(self.attrs)
        if isinstance(attr_key_or_dict, dict):
            new_attrs.update(attr_key_or_dict)
        else:
            new_attrs[attr_key_or_dict] = attr_value
        return PrimFunc(self.params, self.body, self.ret_type, self.buffer_map, new_attrs,
                        self.span)

    def without_attr(self, key: str) -> PrimFunc:
        new_attrs = {k: v for k, v in _attrs_dict(self.attrs).items() if k != key}
        return PrimFunc(self.params, self.body, self.ret_type, self.buffer_map, new_attrs,
                        self.span)

    def with_body(self, new_body, span=None) -> PrimFunc:
        return PrimFunc(self.params, new_body, self.ret_type, self.buffer_map, self.attrs,
                        span or self.span)

    def script(self, name: str | None = None, show_meta: bool = False, **kwargs) -> str:
        """The TVMScript text of this function (``@T.prim_func`` ...)."""
        from .printer import script

        return script(self, name=name)

    def show(self, *args, **kwargs) -> None:
        print(self.script())

    def astext(self, *args, **kwargs) -> str:
        return self.script()

    def __str__(self):
        return self.script()

    def __repr__(self):
        return self.script()


def _make_attrs(d: dict):
    try:
        from ..ir.attrs import DictAttrs
    except ImportError:  # pragma: no cover - ir package in flux
        return d
    return DictAttrs(d)

"""An ATen call's arguments in its schema's order, for the torch.fx / torch.export importers of
both dialects: the converters take one positional list, whatever the graph passed by keyword."""

from __future__ import annotations

__all__ = ["schema_args"]


def schema_args(target, args, kwargs) -> list:
    """The arguments of a call of ``target`` (an ATen op overload) in its schema's order: each
    positional one, else the keyword, else the schema's default, else None. A target without a
    schema keeps ``args`` as they are."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return list(args)
    out = []
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            out.append(args[i])
        elif a.name in kwargs:
            out.append(kwargs[a.name])
        elif a.has_default_value():
            out.append(a.default_value)
        else:
            out.append(None)
    return out

"""The Relax IR properties passes may declare in their contracts (``needs``/``establishes``):

- ``relax_normalized``: every Relax function is in normal form (see ``normalize``);
  established by ``Normalize`` (``relax.transform.Normalize``).
"""

from __future__ import annotations

from ...transform.properties import register_property

__all__ = ["check_normalized"]


def check_normalized(mod, deep: bool = False) -> str | None:
    from ..expr import Function
    from .normalize import is_normalized

    for gv, func in mod.functions.items():
        if isinstance(func, Function):
            why = is_normalized(func)
            if why:
                return f"@{gv.name_hint} is not in normal form: {why}"
    return None


register_property("relax_normalized", check_normalized, "Normalize",
                  hint="run relax.transform.Normalize()")

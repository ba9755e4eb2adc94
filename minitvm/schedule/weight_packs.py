"""Weight layout transforms as data: a kernel's ``input_packs`` saved and read back.

A schedule that takes a constant weight in its own layout records the numpy transform that
makes that layout (``gemm._PackB``, each conv schedule's ``PackWeight``): small objects whose
fields (ints, strings, booleans) are all they hold. ``pack_record`` writes one as a plain dict
(its registered kind and its fields) and ``pack_from_record`` rebuilds it, so a saved kernel
packs its weights exactly as the build did without scheduling anything again. Only the kinds
registered here are read: a record never names code to import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

__all__ = ["PACK_KINDS", "pack_from_record", "pack_record"]

# kind -> (module under minitvm.schedule, class name); every class takes its fields as keywords
PACK_KINDS: dict[str, tuple[str, str]] = {
    "gemm.pack_b": ("gemm", "_PackB"),
    "conv_pointwise": ("conv_pointwise", "PackWeight"),
    "conv_lanes": ("conv_lanes", "PackWeight"),
    "conv_winograd": ("conv_winograd", "PackWeight"),
    "conv_vnni": ("conv_vnni", "PackWeight"),
    "gemm_vnni": ("gemm_vnni", "PackWeight"),
}
_PLAIN = (bool, int, float, str, type(None))


def _class(kind: str) -> type:
    module, name = PACK_KINDS[kind]
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def pack_record(fn: Callable) -> dict:
    """``{"kind": ..., "fields": {...}}`` of weight transform ``fn``; ValueError when ``fn`` is
    not a registered kind or holds a field that is not a plain value."""
    for kind in PACK_KINDS:
        if type(fn) is _class(kind):
            fields = dict(vars(fn))
            bad = [k for k, v in fields.items() if not isinstance(v, _PLAIN)]
            if bad:
                raise ValueError(f"weight transform {kind}: fields {bad} are not plain values")
            return {"kind": kind, "fields": fields}
    raise ValueError(f"weight transform {type(fn).__qualname__} is not a registered kind "
                     f"({sorted(PACK_KINDS)})")


def pack_from_record(record) -> Callable:
    """The weight transform ``pack_record`` described; ValueError naming what is wrong."""
    if not isinstance(record, dict) or not isinstance(record.get("fields"), dict):
        raise ValueError(f"a weight transform record must be an object with 'kind' and "
                         f"'fields', got {record!r}")
    kind = record.get("kind")
    if kind not in PACK_KINDS:
        raise ValueError(f"unknown weight transform kind {kind!r} (known: {sorted(PACK_KINDS)})")
    fields = record["fields"]
    if not all(isinstance(k, str) and isinstance(v, _PLAIN) for k, v in fields.items()):
        raise ValueError(f"weight transform {kind}: fields must be plain values, got {fields!r}")
    try:
        return _class(kind)(**fields)
    except TypeError as err:
        raise ValueError(f"weight transform {kind}: bad fields {fields!r}: {err}") from None

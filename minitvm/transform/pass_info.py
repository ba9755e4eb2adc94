"""PassInfo: the metadata of a pass (name, opt_level, required passes) plus its IR contracts."""

from __future__ import annotations

from collections.abc import Iterable

#: The IR properties Relay registers (any dialect registers more with register_property).
PROPERTIES = ("typed", "anf", "gnf", "fused")


def _names(value, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a list or tuple of names, got {type(value).__name__}")
    return tuple(value)


def _props(value, what: str) -> frozenset[str]:
    from .properties import registered_properties

    props = frozenset(_names(value, what))
    known = registered_properties()
    unknown = props.difference(known)
    if unknown:
        raise ValueError(f"unknown IR property {sorted(unknown)} in {what}; registered: "
                         f"{tuple(known)} (a dialect adds its own with register_property)")
    return props


class PassInfo:
    """The metadata of a pass: ``PassInfo(opt_level, name, required=None, traceable=False)``.

    Beyond TVM, a pass may declare IR-property contracts: ``needs`` (properties its input must
    have), ``establishes`` (hold after it), ``keeps`` (preserved when they held before) and
    ``breaks`` (no longer hold after it). Properties are those registered with
    ``transform.properties.register_property`` (Relay: "typed", "anf", "gnf", "fused").
    """

    __slots__ = ("opt_level", "name", "required", "traceable", "needs", "establishes", "keeps",
                 "breaks")

    def __init__(self, opt_level: int, name: str, required=None, traceable: bool = False, *,
                 needs=None, establishes=None, keeps=None, breaks=None):
        if not isinstance(opt_level, int):
            raise TypeError(f"opt_level must be an int, got {opt_level!r}")
        if not isinstance(name, str):
            raise TypeError(f"pass name must be a str, got {name!r}")
        self.opt_level = opt_level
        self.name = name
        self.required = list(_names(required, "required"))
        self.traceable = bool(traceable)
        self.needs = _props(needs, "needs")
        self.establishes = _props(establishes, "establishes")
        self.keeps = _props(keeps, "keeps")
        self.breaks = _props(breaks, "breaks")

    @property
    def has_contracts(self) -> bool:
        return bool(self.needs or self.establishes or self.keeps or self.breaks)

    def __str__(self) -> str:
        if self.required:
            req = "[\n" + "".join(f"{r}, " for r in self.required) + "]\n"
        else:
            req = "[]\n"
        return (f"The meta data of the pass - pass name: {self.name}, opt_level: "
                f"{self.opt_level}, required passes: {req}")

    __repr__ = __str__

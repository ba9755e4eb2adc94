"""IR-property contracts (Relay registers typed, anf, gnf and fused; any dialect adds its own).

A pass declares the properties it ``needs``, ``establishes``, ``keeps`` and ``breaks`` (on its
PassInfo). The pass manager remembers, per module object, which properties hold and which pass
promised them; it re-establishes a needed property only when it is stale (Relay's InferType only
where types are missing or changed) and, under ``transform.verify_each``, names the pass that broke a
promised property.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

from .pass_base import ModulePass
from .pass_info import PassInfo

# module -> {property: name of the pass that established or kept it}
_KNOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class PropertyError(ValueError):
    """A pass's input lacks a property it needs, or a pass broke a property it promised."""


@dataclass(frozen=True)
class Property:
    """A checkable IR property: ``check(mod, deep)`` is None when it holds, else a sentence
    saying where it fails; ``establish`` names the pass that makes it hold (None: none does,
    ``hint`` says what to do)."""

    name: str
    check: Callable
    establish: str | None
    hint: str = ""


_PROPERTIES: dict[str, Property] = {}


def register_property(name: str, check: Callable, establish: str | None = None,
                      hint: str = "") -> Property:
    """Declare property ``name`` (each dialect registers the properties of its IR)."""
    prop = _PROPERTIES[name] = Property(name, check, establish, hint)
    return prop


def registered_properties() -> list[str]:
    return sorted(_PROPERTIES)


def _property(name: str) -> Property:
    prop = _PROPERTIES.get(name)
    if prop is None:
        raise ValueError(f"unknown IR property {name!r} (registered: "
                         f"{', '.join(sorted(_PROPERTIES)) or 'none'})")
    return prop


def check_property(prop: str, mod, deep: bool = False) -> str | None:
    """None when ``prop`` holds on ``mod``, else a sentence saying where it fails."""
    return _property(prop).check(mod, deep)


# ------------------------------------------------------------------------------- establishers
class _WhenStale(ModulePass):
    """A property's establishing pass as the manager runs it: nothing when the property holds
    (so a required InferType re-checks only modules with missing or stale types)."""

    def __init__(self, real, prop: Property):
        super().__init__(None, real.info)
        self._real = real
        self._prop = prop

    def _run(self, mod, ctx):
        if self._prop.check(mod, False) is None:
            return mod
        return self._real._run(mod, ctx)  # the pass reports its own statistics


def managed_pass(name: str):
    """The pass the manager runs for a required name: a property's establisher runs only
    when the property does not hold."""
    from .registry import get_pass

    p = get_pass(name)
    prop = next((q for q in _PROPERTIES.values() if q.establish == name), None)
    if prop is not None and p.kind != "sequential":
        return _WhenStale(p, prop)
    return p


# ------------------------------------------------------------------------------- contracts
def known_properties(mod) -> dict:
    return dict(_KNOWN.get(mod, {}))


def _verify_mode(ctx) -> bool:
    return bool(ctx.config.get("transform.verify_each"))


def ensure_properties(p, mod, ctx):
    """Make ``mod`` have every property ``p`` needs, re-establishing only stale ones."""
    info = p.info
    for prop in sorted(info.needs):
        known = _KNOWN.get(mod, {})
        promiser = known.get(prop)
        if promiser is not None:
            if _verify_mode(ctx):
                why = check_property(prop, mod, deep=True)
                if why:
                    raise PropertyError(f"pass {info.name!r} needs property {prop!r}, which "
                                        f"pass {promiser!r} promised but broke: {why}")
            continue
        if check_property(prop, mod) is None:
            _KNOWN[mod] = {**known, prop: "(checked)"}
            continue
        establish = _property(prop).establish
        if establish is None:
            hint = _property(prop).hint
            raise PropertyError(f"pass {info.name!r} needs property {prop!r}"
                                + (f"; {hint}" if hint else ""))
        fixer = managed_pass(establish)
        mod = fixer(mod, ctx)
        why = check_property(prop, mod)
        if why:
            raise PropertyError(f"pass {info.name!r} needs property {prop!r}; "
                                f"{fixer.info.name} did not establish it: {why}")
        _KNOWN[mod] = {**_KNOWN.get(mod, {}), prop: fixer.info.name}
    return mod


def record_properties(p, before, after, ctx, extra=()) -> None:
    """Remember which properties hold on ``after`` and, in verify mode, check the promises."""
    info: PassInfo = p.info
    prev = _KNOWN.get(before, {})
    if after is before:
        now = dict(prev)
    else:
        now = {k: v for k, v in prev.items() if k in info.keeps}
    for prop in (*info.establishes, *extra):
        now[prop] = info.name
    for prop in info.breaks:
        now.pop(prop, None)
    if _verify_mode(ctx):
        for prop in sorted(set(now) & (info.establishes | info.keeps | set(extra))):
            why = check_property(prop, after, deep=True)
            if why:
                verb = "establish" if prop in info.establishes else "keep"
                raise PropertyError(f"pass {info.name!r} promised to {verb} property {prop!r} "
                                    f"but broke it: {why}")
    if now:
        try:
            _KNOWN[after] = now
        except TypeError:
            pass

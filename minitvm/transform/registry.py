"""The pass registry: every built-in pass registers its constructor under its ``info.name``.

``@register_pass("FoldConstant")`` on a factory (a function or a decorated pass class) makes the
pass buildable by name (required passes, textual pipelines, the CLI) and makes the passes it
builds remember their arguments, so a pipeline prints back as text.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field

from .pass_base import Pass


@dataclass
class PassEntry:
    """A registered pass constructor and what listing it shows."""

    name: str
    factory: object
    description: str = ""
    module: str = ""
    _meta: tuple | None = field(default=None, repr=False)

    def _probe(self) -> tuple:
        if self._meta is None:
            try:
                p = self.factory()
                self._meta = (p.info.opt_level, p.kind, list(p.info.required))
            except Exception:  # a factory with mandatory arguments cannot be probed
                self._meta = ("?", "?", [])
        return self._meta

    @property
    def opt_level(self):
        return self._probe()[0]

    @property
    def kind(self) -> str:
        return self._probe()[1]

    @property
    def required(self) -> list[str]:
        return self._probe()[2]


_REGISTRY: dict[str, PassEntry] = {}


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().split("\n", 1)[0].strip()


def _stamp(p, name: str, sig: inspect.Signature | None, args, kwargs):
    """Remember on the pass the registered name and the non-default arguments it was built with."""
    if not isinstance(p, Pass):
        raise TypeError(f"the factory registered as {name!r} returned {type(p).__name__}, "
                        "not a Pass")
    text_args = {}
    if sig is not None and (args or kwargs):
        bound = sig.bind(*args, **kwargs)
        for key, value in bound.arguments.items():
            param = sig.parameters[key]
            if param.kind is param.VAR_KEYWORD:
                text_args.update(value)
            elif param.default is param.empty or value is not param.default and \
                    not _same_value(value, param.default):
                text_args[key] = value
    p._factory_name = name
    p._text_args = text_args
    return p


def _same_value(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def register_pass(name=None, factory=None, *, description: str | None = None,
                  override: bool = False):
    """Register a pass constructor under ``name`` (default: the pass's ``info.name``).

    Forms: ``@register_pass("Name")`` / ``@register_pass`` on a factory function or a decorated
    pass class, ``register_pass("Name", factory)``, or ``register_pass(pass_instance)``.
    Returns the (wrapped) factory, which callers use in place of the original.
    """
    if isinstance(name, Pass):  # an instance: registered as a zero-argument factory
        inst = name
        return _register(inst.info.name, lambda: inst, description, override,
                         _first_line(type(inst).__doc__), type(inst).__module__)
    if callable(name) and factory is None:  # bare @register_pass
        return register_pass(None, name, description=description, override=override)
    if factory is None:
        return lambda f: register_pass(name, f, description=description, override=override)
    if not callable(factory):
        raise TypeError(f"register_pass needs a callable factory, got {factory!r}")
    if name is None:
        name = _infer_name(factory)
    doc = description if description is not None else _first_line(factory.__doc__)
    if isinstance(factory, type):  # a pass class records its own arguments
        _register(name, factory, doc, override, doc, factory.__module__)
        return factory
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        sig = None

    @functools.wraps(factory)
    def build(*args, **kwargs):
        return _stamp(factory(*args, **kwargs), name, sig, args, kwargs)

    build.__wrapped_factory__ = factory
    _register(name, build, doc, override, doc, getattr(factory, "__module__", ""))
    return build


def _infer_name(factory) -> str:
    info = getattr(factory, "info", None)  # decorated pass classes carry a class-level info
    if info is not None and hasattr(info, "name"):
        return info.name
    return factory.__name__


def _register(name, factory, doc, override, fallback_doc, module) -> object:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a pass name must be a non-empty string, got {name!r}")
    old = _REGISTRY.get(name)
    if old is not None and not override:
        same = (getattr(old.factory, "__qualname__", None) == getattr(factory, "__qualname__", 1)
                and old.module == module)
        if not same:
            raise ValueError(f"a pass named {name!r} is already registered (from "
                             f"{old.module or '?'}); pass override=True to replace it")
    _REGISTRY[name] = PassEntry(name, factory, doc or fallback_doc or "", module or "")
    return factory


def unregister_pass(name: str) -> None:
    _REGISTRY.pop(name, None)


def get_pass_entry(name: str) -> PassEntry | None:
    return _REGISTRY.get(name)


_FACTORY_NAMES: dict[str, object] = {}


def register_factory_names(namespace: dict) -> None:
    """Make a dialect's pass factories findable by their Python names too (TVM's GetPass finds
    ``relay.transform.CombineParallelConv2D`` although the pass is named
    ``CombineParallelConv2d``): every public callable in ``namespace`` that builds a Pass."""
    for name, f in namespace.items():
        if name.startswith("_") or not name[:1].isupper() or name in _REGISTRY:
            continue
        if isinstance(f, type):
            if issubclass(f, Pass) and f is not Pass:
                _FACTORY_NAMES.setdefault(name, f)
        elif callable(f) and getattr(f, "__module__", "").startswith("minitvm."):
            _FACTORY_NAMES.setdefault(name, f)


def _factory_by_name(name: str):
    f = _FACTORY_NAMES.get(name)
    if f is None and name.startswith("transform."):
        f = _FACTORY_NAMES.get(name[len("transform."):])
    return f


def get_pass(name: str, **kwargs) -> Pass:
    """Build the pass registered as ``name`` (zero arguments unless given, as TVM's GetPass)."""
    entry = _REGISTRY.get(name)
    factory = entry.factory if entry is not None else _factory_by_name(name)
    if factory is None:
        raise ValueError(f"Cannot use {name} to create the pass: no pass is registered under "
                         f"that name (registered: {', '.join(sorted(_REGISTRY)) or 'none'})")
    try:
        p = factory(**kwargs)
    except TypeError as err:
        raise TypeError(f"cannot build pass {name!r} with arguments {kwargs}: {err}") from err
    if not isinstance(p, Pass):
        raise TypeError(f"the factory of pass {name!r} returned {type(p).__name__}, not a Pass")
    return p


def list_passes() -> list[PassEntry]:
    """Every registered pass (name, opt_level, kind, required, description), sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]

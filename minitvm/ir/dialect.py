"""Hooks each dialect fills so the core never imports one.

A hook is looked up by name and by the class of the object it applies to (along the MRO), so
Relay registers its printer for Relay expressions, Relax its own for Relax expressions, and the
core asks for "the printer of this node". Hook names used by the core:

- ``"str"``: ``fn(node) -> str`` for ``str(node)``;
- ``"astext"``: ``fn(node, show_meta_data, annotate) -> str``;
- ``"script"``: ``fn(node, **kwargs) -> str`` (TVMScript);
- ``"module_str"`` / ``"module_astext"`` / ``"module_script"``: the same for an ``IRModule``,
  looked up by the class of the module's functions (a dialect's function class), then by
  ``IRModule`` itself (the default for an empty module);
- ``"from_expr"``: ``fn(expr, functions, type_defs) -> IRModule``;
- ``"call"``: ``fn(callee, args) -> Call`` for ``GlobalVar(...)(*args)``, looked up by the class of
  the first argument;
- ``"annotated_text"``: ``fn(root, annotate) -> str`` (programs in diagnostics);
- ``"evaluate"``: ``fn(mod, inputs, entry) -> list of arrays`` (reference evaluation, used by
  numerical bisection), looked up by the class of the entry function;
- ``"describe"``: ``fn(expr) -> str``, a one-line description of an expression (diagnostics);
- ``"input_specs"``: ``fn(func) -> [(name, shape, dtype)]`` of a function's tensor parameters
  (random inputs for bisection);
- ``"well_formed"``: ``fn(gv, func, limit) -> list of str``, up to ``limit`` problems of the
  function bound to ``gv`` (verify-each), looked up by the function's class;
- ``"file_suffix"``: ``fn(mod) -> str``, the extension of files holding a module's text (IR dumps,
  crash reproducers), looked up like the module hooks;
- ``"make_op_call"``: ``fn(op_name, args, attrs: dict) -> Call``, a call of an operator built by
  the dialect of ``args[0]`` (topi's AlterOpLayout rules, ``topi.x86``).
"""

from __future__ import annotations

from collections.abc import Callable

_HOOKS: dict[str, dict[type, Callable]] = {}
_TEXT_FORMATS: list[tuple[str, Callable[[str], bool], Callable[[str], object]]] = []


def register_hook(name: str, cls: type, fn: Callable | None = None):
    """Register ``fn`` as hook ``name`` for objects of class ``cls`` (usable as a decorator)."""

    def add(f):
        _HOOKS.setdefault(name, {})[cls] = f
        return f

    return add(fn) if fn is not None else add


def find_hook(name: str, cls: type) -> Callable | None:
    """The hook ``name`` registered for ``cls`` or its nearest base class, or None."""
    table = _HOOKS.get(name)
    if not table:
        return None
    for c in cls.__mro__:
        f = table.get(c)
        if f is not None:
            return f
    return None


def get_hook(name: str, obj) -> Callable:
    """Like find_hook for ``type(obj)``, raising a clear error when no dialect provides it."""
    f = find_hook(name, type(obj))
    if f is None:
        raise NotImplementedError(f"no dialect provides {name!r} for {type(obj).__name__} "
                                  "(is the dialect's package imported?)")
    return f


def module_hook(name: str, mod) -> Callable | None:
    """Hook ``name`` for a module: by its functions' classes (a dialect's functions before the
    shared ones, ``tir.PrimFunc``), then the default registered for ``IRModule``."""
    funcs = list(mod.functions.values())
    funcs.sort(key=lambda f: type(f)._node_shared)
    for f in funcs:
        h = find_hook(name, type(f))
        if h is not None:
            return h
    return find_hook(name, type(mod))


def register_text_format(name: str, detect: Callable[[str], bool],
                         parse: Callable[[str], object]) -> None:
    """A textual module format (Relay text, TVMScript): ``detect(text)`` says whether ``text``
    is in it, ``parse(text)`` reads it back into an IRModule."""
    _TEXT_FORMATS[:] = [f for f in _TEXT_FORMATS if f[0] != name]
    _TEXT_FORMATS.append((name, detect, parse))


def parse_module_text(text: str):
    """Parse module text in whichever registered format recognizes it."""
    for _name, detect, parse in _TEXT_FORMATS:
        if detect(text):
            return parse(text)
    known = ", ".join(n for n, _, _ in _TEXT_FORMATS) or "none registered"
    raise ValueError(f"the text is in no known module format ({known})")

"""IRModule: the unit of compilation, a map from GlobalVars to functions plus ADT definitions."""

from __future__ import annotations

from ..runtime.script_printer import Scriptable
from .dialect import find_hook, get_hook, module_hook
from .expr import BaseFunc, GlobalVar
from .node import Node
from .type import GlobalTypeVar


class IRModule(Node, Scriptable):
    """Functions by GlobalVar and type definitions by GlobalTypeVar.

    ``mod["main"]`` reads by name or GlobalVar; ``mod["f"] = fn`` adds or replaces a function.
    Passes copy the module (``shallow_copy``) before changing it, so a caller's module is never
    modified by a pass.
    """

    __slots__ = ("functions", "type_definitions", "attrs", "_gvars", "_tvars", "global_infos",
                 "source_map")
    _node_compare = "value"

    def _node_value(self):
        """Compared by the names of its type definitions and functions."""
        return ({g.name_hint: t for g, t in self.type_definitions.items()},
                {g.name_hint: f for g, f in self.functions.items()})

    def __init__(self, functions=None, type_definitions=None, attrs=None, global_infos=None):
        self.functions: dict = {}
        self.type_definitions: dict = {}
        self._gvars: dict[str, GlobalVar] = {}
        self._tvars: dict[str, GlobalTypeVar] = {}
        self.attrs = dict(attrs or {})
        self.global_infos = dict(global_infos or {})
        self.source_map = None
        for k, v in (type_definitions or {}).items():
            self._add_type(k, v)
        for k, v in (functions or {}).items():
            self._add(k, v, update=True)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def from_expr(expr, functions=None, type_defs=None) -> IRModule:
        """A module whose ``main`` is ``expr``; the expression's dialect decides how a bare
        expression becomes a function (Relay closes it over its free variables)."""
        if isinstance(expr, BaseFunc) and find_hook("from_expr", type(expr)) is None:
            mod = IRModule(functions, type_defs)
            mod._add(mod._gvars.get("main") or GlobalVar("main"), expr, update=True)
            return mod
        return get_hook("from_expr", expr)(expr, functions, type_defs)

    def shallow_copy(self) -> IRModule:
        new = IRModule.__new__(IRModule)
        new.functions = dict(self.functions)
        new.type_definitions = dict(self.type_definitions)
        new._gvars = dict(self._gvars)
        new._tvars = dict(self._tvars)
        new.attrs = dict(self.attrs)
        new.global_infos = dict(self.global_infos)
        new.source_map = self.source_map
        return new

    def _add(self, var, func, update=False):
        if isinstance(var, str):
            var = self._gvars.get(var) or GlobalVar(var)
        if not isinstance(var, GlobalVar):
            raise TypeError(f"IRModule keys must be str or GlobalVar, got {type(var).__name__}")
        existing = self._gvars.get(var.name_hint)
        if existing is not None and existing is not var:
            raise ValueError(
                f"a different GlobalVar named {var.name_hint!r} is already in the module"
            )
        if not update and var in self.functions:
            raise ValueError(f"function {var.name_hint!r} is already in the module")
        self._gvars[var.name_hint] = var
        self.functions[var] = func

    def _add_type(self, var, data):
        if isinstance(var, str):
            var = self._tvars.get(var) or GlobalTypeVar(var)
        self._tvars[var.name_hint] = var
        self.type_definitions[var] = data

    def __setitem__(self, var, val):
        from .type import Type

        if isinstance(val, Type):
            self._add_type(var, val)
        else:
            self._add(var, val, update=True)

    def add(self, var, func, update=False):
        self._add(var, func, update)
        return self

    def update_func(self, var, func):
        self._add(var, func, update=True)

    def update(self, other: IRModule):
        for k, v in other.type_definitions.items():
            self._add_type(k, v)
        for k, v in other.functions.items():
            self._add(k, v, update=True)

    def remove(self, var):
        var = self.get_global_var(var) if isinstance(var, str) else var
        del self.functions[var]
        del self._gvars[var.name_hint]

    __delitem__ = remove

    # ------------------------------------------------------------------ lookup
    def __getitem__(self, var):
        if isinstance(var, str):
            if var in self._gvars:
                return self.functions[self._gvars[var]]
            if var in self._tvars:
                return self.type_definitions[self._tvars[var]]
            raise KeyError(f"no function named {var!r} in the module; has {self._names()}")
        if isinstance(var, GlobalTypeVar):
            return self.type_definitions[var]
        try:
            return self.functions[var]
        except KeyError:
            raise KeyError(f"{var} is not in the module; has {self._names()}") from None

    def _names(self):
        return sorted(self._gvars)

    def __contains__(self, var):
        if isinstance(var, str):
            return var in self._gvars
        return var in self.functions

    def __len__(self):
        return len(self.functions)

    def get_global_var(self, name: str) -> GlobalVar:
        try:
            return self._gvars[name]
        except KeyError:
            raise ValueError(f"Cannot find global var \"{name}\" in the Module; "
                             f"candidates are: {self._names()}") from None

    def get_global_vars(self) -> list[GlobalVar]:
        return sorted(self.functions, key=lambda g: g.name_hint)

    def get_global_type_var(self, name: str) -> GlobalTypeVar:
        try:
            return self._tvars[name]
        except KeyError:
            raise ValueError(f"Cannot find global type var {name!r} in the Module") from None

    def get_global_type_vars(self) -> list[GlobalTypeVar]:
        return sorted(self.type_definitions, key=lambda g: g.name_hint)

    def get_type(self, name: str) -> tuple:
        """``(type var, *constructors)`` of the ADT called ``name`` (``List, Cons, Nil``)."""
        gtv = self.get_global_type_var(name)
        return (gtv, *self.type_definitions[gtv].constructors)

    def import_from_std(self, file_to_import: str):
        """Add the definitions of a standard-library file (``"prelude.rly"``) to this module,
        in place, and return the module type-checked (TVM's behaviour)."""
        return get_hook("import_from_std", self)(self, file_to_import)

    def get_constructor(self, tag: int):
        for td in self.type_definitions.values():
            for c in td.constructors:
                if c.tag == tag:
                    return c
        raise ValueError(f"no constructor with tag {tag}")

    def get_attr(self, name, default=None):
        return self.attrs.get(name, default)

    def with_attr(self, name, value) -> IRModule:
        new = self.shallow_copy()
        new.attrs[name] = value
        return new

    def update_global_info(self, name: str, global_info: list) -> None:
        """Set the global infos stored under ``name`` (``"vdevice"``), in place as TVM does."""
        if not isinstance(name, str):
            raise TypeError(f"update_global_info: name must be a str, got {type(name).__name__}")
        self.global_infos[name] = list(global_info)

    def items(self):
        return self.functions.items()

    def functions_items(self) -> list:
        """``(GlobalVar, function)`` pairs sorted by name (TVM's ``functions_items``)."""
        return sorted(self.functions.items(), key=lambda kv: kv[0].name_hint)

    def functions_with_attr(self, attr_key: str) -> dict:
        """The functions whose attrs hold ``attr_key`` (as ``{GlobalVar: function}``)."""
        return {gv: f for gv, f in self.functions.items() if _has_attr(f, attr_key)}

    def functions_without_attr(self, attr_key: str) -> dict:
        """The functions whose attrs lack ``attr_key``."""
        return {gv: f for gv, f in self.functions.items() if not _has_attr(f, attr_key)}

    # ------------------------------------------------------------------ printing
    def _printer(self, kind: str):
        h = module_hook(kind, self)
        if h is None:
            raise NotImplementedError(f"no dialect provides {kind!r} for this module "
                                      "(is the dialect's package imported?)")
        return h

    def astext(self, show_meta_data: bool = True, annotate=None) -> str:
        return self._printer("module_astext")(self, show_meta_data, annotate)

    def script(self, *args, **kwargs) -> str:
        return self._printer("module_script")(self, *args, **kwargs)

    def show(self, *args, **kwargs) -> None:
        print(self.script(*args, **kwargs))

    def __str__(self):
        h = module_hook("module_str", self)
        return h(self) if h is not None else f"IRModule({len(self.functions)} functions)"

    def __repr__(self):
        return self.__str__()


def _has_attr(func, key: str) -> bool:
    attrs = getattr(func, "attrs", None)
    if attrs is None:
        return False
    try:
        return key in attrs
    except TypeError:
        return False

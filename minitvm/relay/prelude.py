"""The Relay Prelude: the standard ADTs (List, Option, Tree, nat) and their functions.

``Prelude(mod)`` imports ``std/prelude.rly`` into ``mod`` (``mod.import_from_std``) and exposes the
global functions (``p.map``, ``p.foldl``, ``p.hd``, ...) and constructors (``p.cons``, ``p.nil``,
...) as attributes, as TVM's ``relay.prelude.Prelude`` does. It also imports ``std/nat.rly`` (TVM
leaves that to ``mod.import_from_std("nat.rly")``, which is then a no-op). The std files are
parsed by our Relay parser once per process and merged into each module that imports them; a
file that uses another's definitions (nat.rly uses the prelude's lists) imports it first.
"""

from __future__ import annotations

import os

from ..ir.dialect import register_hook
from ..ir.module import IRModule
from .tensor_array import (
    StaticTensorArrayOps,
    TensorArrayOps,
    get_tensor_array_shape,
    static_tensor_name,
)

__all__ = ["Prelude", "std_path", "import_from_std", "TensorArrayOps", "StaticTensorArrayOps",
           "get_tensor_array_shape"]

GLOBAL_DEFS = [
    "id", "compose", "flip", "hd", "tl", "nth", "update", "map", "foldl", "foldr", "foldr1",
    "concat", "filter", "zip", "rev", "map_accuml", "map_accumr", "unfoldl", "unfoldr", "sum",
    "length", "tmap", "size", "iterate",
]
NAT_DEFS = ["nat_double", "nat_add", "nat_nth", "nat_update", "nat_iterate", "nat_to_int"]

# std files whose definitions another std file uses: imported (and parsed) before it
_STD_DEPENDS = {"nat.rly": ("prelude.rly",)}

_PARSED: dict[str, tuple] = {}  # file -> (its type definitions, its functions)


def std_path() -> str:
    """The directory of the Relay standard library files."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "std")


def _parsed(file_to_import: str) -> tuple:
    """The (type definitions, functions) a std file defines, parsed once per process."""
    found = _PARSED.get(file_to_import)
    if found is None:
        path = os.path.join(std_path(), file_to_import)
        if os.path.basename(file_to_import) != file_to_import or not os.path.isfile(path):
            have = sorted(f for f in os.listdir(std_path()) if f.endswith(".rly"))
            raise ValueError(f"import_from_std: no standard library file {file_to_import!r}; "
                             f"available: {', '.join(have)}")
        from .parser import parse

        base = IRModule()
        for dep in _STD_DEPENDS.get(file_to_import, ()):
            _merge(base, dep)
        with open(path, encoding="utf-8") as f:
            mod = parse(f.read(), file_to_import, init_module=base if len(base) else None)
        found = (
            {g: td for g, td in mod.type_definitions.items() if g not in base.type_definitions},
            {g: fn for g, fn in mod.functions.items() if g not in base.functions},
        )
        _PARSED[file_to_import] = found
    return found


def _merge(mod: IRModule, file_to_import: str) -> None:
    """Add the definitions of ``file_to_import`` (and of the files it uses) to ``mod``."""
    for dep in _STD_DEPENDS.get(file_to_import, ()):
        _merge(mod, dep)
    type_defs, funcs = _parsed(file_to_import)
    names = [g.name_hint for g in type_defs] + [g.name_hint for g in funcs]
    present = [n for n in names if n in mod._tvars or n in mod._gvars]
    if present and len(present) < len(names):
        raise ValueError(f"import_from_std({file_to_import!r}): the module already defines "
                         f"{', '.join(sorted(present))} differently; rename them first")
    if not present:
        for gtv, td in type_defs.items():
            mod[gtv] = td
        for gv, fn in funcs.items():
            mod[gv] = fn


def import_from_std(mod: IRModule, file_to_import: str) -> IRModule:
    """Merge the definitions of ``file_to_import`` into ``mod`` (in place; a file already
    imported is skipped) and return ``mod`` type-checked."""
    from .transform.infer_type import InferType

    _merge(mod, file_to_import)
    return InferType()(mod)


register_hook("import_from_std", IRModule, import_from_std)


class Prelude:
    """The Relay Prelude, loaded into ``mod`` (a new module when None).

    Global functions are attributes by name (``p.map``); the ADTs are available as
    ``p.mod.get_type("List")`` and as attributes ``l, cons, nil``, ``optional, some, none``,
    ``tree, rose`` and ``nat, z, s`` (nat.rly's ``zero`` and ``succ``).
    """

    def __init__(self, mod: IRModule | None = None):
        self.mod = mod if mod is not None else IRModule()
        self.load_prelude()

    def load_prelude(self) -> None:
        self.mod.import_from_std("nat.rly")  # imports prelude.rly first; one type check
        for name in GLOBAL_DEFS + NAT_DEFS:
            setattr(self, name, self.mod.get_global_var(name))
        self.l, self.cons, self.nil = self.mod.get_type("List")
        self.optional, self.some, self.none = self.mod.get_type("Option")
        self.tree, self.rose = self.mod.get_type("Tree")
        self.nat, self.z, self.s = self.mod.get_type("nat")

    def get_global_var(self, canonical: str, dtype: str | None = None):
        """The global function ``canonical`` (a dtype suffix, ``name_dtype``, when given)."""
        self._tensor_array_ops(canonical, dtype)
        return self.mod.get_global_var(self.get_name(canonical, dtype))

    def get_name(self, canonical: str, dtype: str | None = None) -> str:
        """The module name of ``canonical`` for ``dtype`` (``tensor_{dtype}_t`` for the
        tensor ADT, else ``{canonical}_{dtype}``)."""
        if dtype is None:
            return canonical
        return f"tensor_{dtype}_t" if canonical == "tensor_t" else f"{canonical}_{dtype}"

    def get_type(self, canonical: str, dtype: str | None = None):
        """The ADT's global type var."""
        self._tensor_array_ops(canonical, dtype)
        return self.mod.get_global_type_var(self.get_name(canonical, dtype))

    def _tensor_array_ops(self, canonical: str, dtype: str | None) -> None:
        """Register the tensor arrays of ``dtype`` on first use of one of their names.

        TVM's Prelude registers them for nine dtypes up front; doing it on demand keeps the
        Prelude as cheap to load and type-check as before, with the same names afterwards.
        """
        if dtype is None or not canonical.startswith(("tensor", "ta_")):
            return
        if self.get_name(canonical, dtype) in self.mod or (
                self.get_name(canonical, dtype) in self.mod._tvars):
            return
        TensorArrayOps(self, dtype).register()

    def get_tensor_ctor(self, canonical: str, dtype: str):
        """A constructor of the dynamic tensor ADT of ``dtype`` (``tensor_nil``, ``tensor2``)."""
        return self.get_ctor("tensor_t", canonical, dtype)

    def get_global_var_static(self, canonical: str, dtype: str, shape, batch_dim=None):
        """The function ``canonical`` of the static tensor arrays of ``dtype`` and ``shape``
        (registered with ``StaticTensorArrayOps(p, dtype, shape).register()``)."""
        return self.mod.get_global_var(static_tensor_name(canonical, dtype, shape, batch_dim))

    def get_type_static(self, canonical: str, dtype: str, shape):
        """The static tensor ADT of ``dtype`` and ``shape``."""
        return self.mod.get_global_type_var(static_tensor_name(canonical, dtype, shape))

    def get_ctor_static(self, ty_name: str, canonical: str, dtype: str, shape):
        """A constructor of the static tensor ADT of ``dtype`` and ``shape``."""
        gtv = self.get_type_static(ty_name, dtype, shape)
        name = static_tensor_name(canonical, dtype, shape)
        for c in self.mod.type_definitions[gtv].constructors:
            if c.name_hint == name:
                return c
        raise ValueError(f"the ADT {gtv.name_hint} has no constructor {name!r}")

    def get_tensor_ctor_static(self, canonical: str, dtype: str, shape):
        """``tensor_nil`` or ``tensor_constructor`` of the static tensor ADT."""
        return self.get_ctor_static("tensor_t", canonical, dtype, shape)

    def get_ctor(self, ty_name: str, canonical: str, dtype: str | None = None):
        """The constructor ``canonical`` of the ADT ``ty_name``."""
        gtv = self.get_type(ty_name, dtype)
        for c in self.mod.type_definitions[gtv].constructors:
            if c.name_hint == self.get_name(canonical, dtype) or c.name_hint == canonical:
                return c
        raise ValueError(f"the ADT {ty_name} has no constructor {canonical!r}")


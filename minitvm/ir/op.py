"""The operator registry: ``Op.get("nn.conv2d")`` and per-op attributes.

Every rule about an op (type relation, numpy reference, pattern, layout hooks, lowering) is an
attribute keyed by name, set through ``register_op_attr`` with a priority ``level`` as in TVM.

Each op also records whose code registered it and each of its attributes: an op created by
code outside the ``minitvm`` package is ``foreign``; ``_builtin`` holds the attributes as
minitvm's own code set them. The whole-build caches' key (``backend.whole_build``) reads these:
what minitvm's code registers is covered by the package's files, what other code did is not.
"""

from __future__ import annotations

import sys

from .expr import RelayExpr


def _registered_by_minitvm() -> bool:
    """Whether the registration under way is minitvm's own: every frame from the caller up to
    the module body being executed (an import) belongs to the ``minitvm`` package. A user's
    call through a minitvm helper (``register_op_attr``, ``register_legalize``) reaches the
    user's frame first; an import of a minitvm module reaches its body first (whoever
    triggered the import, lazily or not)."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_globals.get("__name__") or ""
        if name != "minitvm" and not name.startswith("minitvm."):
            return False
        if f.f_code.co_name == "<module>":
            return True
        f = f.f_back
    return False


class OpPattern:
    """TOpPattern values, ordered from most to least fusable."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


class Op(RelayExpr):
    """A primitive operator, unique by name."""

    __slots__ = ("name", "num_inputs", "description", "attrs_type", "support_level", "_attrs",
                 "arguments", "_builtin", "foreign")
    _node_shared = True
    _node_compare = "name"
    _registry: dict[str, Op] = {}

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self.num_inputs = -1
        self.description = ""
        self.attrs_type = None
        self.support_level = 10
        self.arguments = ()
        self._attrs: dict[str, tuple[int, object]] = {}
        # the entries of ``_attrs`` as minitvm's own code set them; whether code outside the
        # package created the op (its registrant sets this)
        self._builtin: dict[str, tuple[int, object]] = {}
        self.foreign = False

    @staticmethod
    def get(op_name: str) -> Op:
        try:
            return Op._registry[op_name]
        except KeyError:
            raise ValueError(f"operator {op_name!r} is not registered") from None

    @staticmethod
    def list_op_names() -> list[str]:
        return sorted(Op._registry)

    def get_attr(self, attr_name: str):
        entry = self._attrs.get(attr_name)
        return None if entry is None else entry[1]

    def has_attr(self, attr_name: str) -> bool:
        return attr_name in self._attrs

    def set_attr(self, attr_name: str, value, plevel: int = 10):
        old = self._attrs.get(attr_name)
        if old is not None and old[0] == plevel and old[1] is not value:
            raise ValueError(
                f"attribute {attr_name!r} of op {self.name!r} is already registered at level "
                f"{plevel}; use a higher level to override it"
            )
        if old is None or plevel >= old[0]:
            entry = self._attrs[attr_name] = (plevel, value)
            if _registered_by_minitvm():
                self._builtin[attr_name] = entry

    def reset_attr(self, attr_name: str):
        self._attrs.pop(attr_name, None)
        if _registered_by_minitvm():
            self._builtin.pop(attr_name, None)

    def changed_attrs(self) -> list[str]:
        """Names of the attributes that differ from what minitvm's own code registered (set,
        overridden or removed by other code); all of them for a foreign op."""
        attrs, builtin = self._attrs, self._builtin
        if attrs == builtin and not self.foreign:
            return []
        if self.foreign:
            return sorted(attrs)
        return sorted(k for k in attrs.keys() | builtin.keys() if attrs.get(k) != builtin.get(k))

    # TVM's builder methods for ops registered from Python (``op.register`` then these)
    def set_num_inputs(self, n: int) -> None:
        self.num_inputs = int(n)

    def add_argument(self, name: str, type: str, description: str) -> None:  # noqa: A002
        self.arguments = (*self.arguments, (name, type, description))

    def set_support_level(self, level: int) -> None:
        self.support_level = int(level)

    def set_attrs_type_key(self, key: str) -> None:
        self.attrs_type = key

    def add_type_rel(self, rel_name: str, type_rel_func=None) -> None:
        """The op's type relation: ``type_rel_func(arg_types, attrs) -> type``, or one of the
        relations registered by name (``"Identity"``, ``"Broadcast"``, ...)."""
        if type_rel_func is None:
            type_rel_func = NAMED_TYPE_RELATIONS.get(rel_name)
            if type_rel_func is None:
                raise ValueError(f"op {self.name}: no type relation named {rel_name!r}; known: "
                                 f"{sorted(NAMED_TYPE_RELATIONS)} (or pass type_rel_func)")
        self.set_attr("FTypeRelation", type_rel_func)

    def __repr__(self):
        return f"Op({self.name})"

    def __str__(self):
        return self.name


# type relations ops may name in ``add_type_rel`` (a dialect fills it with its own)
NAMED_TYPE_RELATIONS: dict = {}


def register_op(name: str) -> Op:
    """Create (or return) the registry entry of an op (``foreign`` when code outside minitvm
    creates it)."""
    op = Op._registry.get(name)
    if op is None:
        op = Op(name)
        op.foreign = not _registered_by_minitvm()
        Op._registry[name] = op
    return op


def register_op_attr(op_name: str, attr_key: str, value=None, level: int = 10):
    """Register an op attribute; usable directly or as a decorator (``value`` omitted)."""

    def _register(v):
        Op.get(op_name).set_attr(attr_key, v, level)
        return v

    return _register(value) if value is not None else _register


def register_intrin_lowering(op_name: str, target: str, *, f=None, level: int = 10):
    """Register ``f`` as the lowering of intrinsic ``op_name`` (``"tir.exp"``) for ``target``
    (its ``"<target>.FLowerIntrinsic"`` attribute); usable as a decorator when ``f`` is omitted.
    The op entry is created if the intrinsic has none yet."""
    if not isinstance(target, str) or not target:
        raise ValueError(f"register_intrin_lowering({op_name!r}): target must be a target kind "
                         f"name such as 'llvm', got {target!r}")
    register_op(op_name)
    return register_op_attr(op_name, f"{target}.FLowerIntrinsic", f, level)

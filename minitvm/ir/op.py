"""The operator registry: ``Op.get("nn.conv2d")`` and per-op attributes.

Every rule about an op (type relation, numpy reference, pattern, layout hooks, lowering) is an
attribute keyed by name, set through ``register_op_attr`` with a priority ``level`` as in TVM.
"""

from __future__ import annotations

from .expr import RelayExpr


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
                 "arguments")
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
            self._attrs[attr_name] = (plevel, value)

    def reset_attr(self, attr_name: str):
        self._attrs.pop(attr_name, None)

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
    """Create (or return) the registry entry of an op."""
    op = Op._registry.get(name)
    if op is None:
        op = Op(name)
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

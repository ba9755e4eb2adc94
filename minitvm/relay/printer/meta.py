"""The metadata table of the text format: ``meta[relay.Constant][0]`` refs and their JSON section.

Format of the ``#[metadata]`` section (minitvm's own, readable back by the parser): a JSON object
mapping a type key to the list of its entries, in reference order. Every entry has ``type_key``;
constants add ``dtype``, ``shape`` and ``data`` (base64 of the raw little-endian C-order bytes);
tir variables add ``name`` and ``dtype``; attrs add ``fields``; global vars add ``name_hint``.
"""

from __future__ import annotations

import base64
import json

import numpy as np


def type_key_of(node) -> str:
    """TVM's type key for the kinds of node that can land in the metadata table."""
    name = type(node).__name__
    explicit = getattr(type(node), "type_key", None)
    if isinstance(explicit, str) and explicit not in ("Attrs",):
        return explicit
    module = type(node).__module__
    if ".tir." in module or module.endswith(".tir"):
        return "tir." + name
    if name in ("GlobalVar", "IncompleteType", "TypeVar", "PrimType", "TensorType"):
        return name
    return "relay." + name


class MetaContext:
    """Assigns ``meta[<type key>][<index>]`` refs in order of first use and serializes them."""

    def __init__(self):
        self.tables: dict[str, list] = {}
        self._refs: dict[int, str] = {}
        self._keep: list = []

    def empty(self) -> bool:
        return not self.tables

    def ref(self, node, type_key: str | None = None) -> str:
        text = self._refs.get(id(node))
        if text is not None:
            return text
        key = type_key or type_key_of(node)
        entries = self.tables.setdefault(key, [])
        text = f"meta[{key}][{len(entries)}]"
        entries.append(node)
        self._refs[id(node)] = text
        self._keep.append(node)
        return text

    def to_json(self) -> str:
        """One line per entry, so large constants stay readable line-wise."""
        blocks = []
        for key, nodes in self.tables.items():
            entries = ",\n".join("    " + json.dumps(_encode(key, n)) for n in nodes)
            blocks.append(f"  {json.dumps(key)}: [\n{entries}\n  ]")
        return "{\n" + ",\n".join(blocks) + "\n}"


def _json_value(v):
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    if isinstance(v, list | tuple):
        return [_json_value(x) for x in v]
    if hasattr(v, "value") and type(v).__name__ in ("IntImm", "FloatImm", "StringImm"):
        return v.value
    return str(v)


def _encode(key: str, node) -> dict:
    entry = {"type_key": key}
    data = getattr(node, "data", None)
    if key == "relay.Constant" and data is not None:
        arr = np.array(data.numpy(), order="C")  # ascontiguousarray would make a 0-d array 1-d
        little = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        entry["dtype"] = str(arr.dtype)
        entry["shape"] = list(arr.shape)
        entry["data"] = base64.b64encode(little.tobytes()).decode("ascii")
    elif key == "VirtualDevice":
        entry["device_type_int"] = node.device_type_int
        entry["virtual_device_id"] = node.virtual_device_id
        entry["target"] = None if node.target is None else str(node.target)
        entry["memory_scope"] = node.memory_scope
    elif key.startswith("tir.") and key[4:] in _DIM_OPS:
        entry["nodes"] = _dim_nodes(node)
    elif key.startswith("tir.") and hasattr(node, "name") and hasattr(node, "dtype"):
        entry["name"] = node.name
        entry["dtype"] = str(node.dtype)
    elif hasattr(node, "non_default_items"):
        entry["fields"] = {k: _json_value(v) for k, v in node.items()}
    elif hasattr(node, "name_hint"):
        entry["name_hint"] = node.name_hint
    else:
        entry["repr"] = repr(node)
    return entry


#: arithmetic of dimensions a type may hold (``2 * ?`` of an NMS's selected boxes): kept as
#: a flat post-order list of nodes (``_dim_nodes``) so that they parse back
_DIM_OPS = frozenset({"Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max"})


def _dim_nodes(root) -> list:
    """``root`` (dimension arithmetic) as a post-order list: ``["Any"]``, ``["Int", value,
    dtype]``, ``["Var", name, dtype, size_var]``, ``[op, a, b]`` with a, b indices of earlier
    entries (an explicit stack: no recursion on a long sum)."""
    from ...ir.prim_expr import Any
    from ...tir import expr as tir_expr

    out: list = []
    index: dict = {}
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in index:
            continue
        kind = type(node).__name__
        if kind in _DIM_OPS and not ready:
            stack += [(node, True), (node.b, False), (node.a, False)]
            continue
        if kind in _DIM_OPS:
            item = [kind, index[id(node.a)], index[id(node.b)]]
        elif isinstance(node, Any):
            item = ["Any"]
        elif isinstance(node, tir_expr.Var):
            item = ["Var", node.name, str(node.dtype), isinstance(node, tir_expr.SizeVar)]
        elif hasattr(node, "value"):
            item = ["Int", int(node.value), str(node.dtype)]
        else:
            raise ValueError(f"cannot write a dimension node {kind} to the metadata")
        index[id(node)] = len(out)
        out.append(item)
    return out


def _dim_from_nodes(nodes) -> object:
    """The inverse of ``_dim_nodes``: the root (the last entry)."""
    from ...ir.prim_expr import Any
    from ...tir import expr as tir_expr

    if not isinstance(nodes, list) or not nodes:
        raise ValueError("a dimension entry needs a non-empty list of nodes")
    built: list = []
    for item in nodes:
        if not isinstance(item, list) or not item:
            raise ValueError(f"bad dimension node {item!r}")
        kind = item[0]
        if kind == "Any" and len(item) == 1:
            built.append(Any())
        elif kind == "Int" and len(item) == 3 and isinstance(item[1], int):
            built.append(tir_expr.IntImm(str(item[2]), item[1]))
        elif kind == "Var" and len(item) == 4:
            cls = tir_expr.SizeVar if item[3] else tir_expr.Var
            built.append(cls(str(item[1]), str(item[2])))
        elif kind in _DIM_OPS and len(item) == 3 and all(
                isinstance(k, int) and 0 <= k < len(built) for k in item[1:]):
            built.append(getattr(tir_expr, kind)(built[item[1]], built[item[2]]))
        else:
            raise ValueError(f"bad dimension node {item!r}")
    return built[-1]


def decode_meta_section(text: str) -> dict[str, list]:
    """Rebuild the nodes of a ``#[metadata]`` JSON section (the inverse of MetaContext.to_json)."""
    raw = json.loads(text) if text.strip() else {}
    if not isinstance(raw, dict):
        raise ValueError("the metadata section must be a JSON object of type key -> entries")
    for key, entries in raw.items():
        if not isinstance(entries, list):
            raise ValueError(f"metadata entries of {key!r} must be a list")
    return {key: [_decode(key, e) for e in entries] for key, entries in raw.items()}


_CONST_DTYPES = frozenset(("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                           "uint64", "float16", "float32", "float64"))


def _decode(key: str, e: dict):
    from ...ir.attrs import get_attrs_type
    from ...ir.expr import GlobalVar
    from ...ir.type import IncompleteType
    from ...tir import expr as tir_expr
    from ..expr import Constant

    if not isinstance(e, dict):
        raise ValueError(f"a metadata entry of {key!r} must be an object, got {type(e).__name__}")
    if key == "relay.Constant":
        shape, dtype_name = e.get("shape"), e.get("dtype")
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 62
                for d in shape):
            raise ValueError(f"constant shape must be a list of non-negative integers, "
                             f"got {shape!r}")
        if not isinstance(dtype_name, str) or dtype_name not in _CONST_DTYPES:
            raise ValueError(f"constant dtype {dtype_name!r} is not supported")
        if not isinstance(e.get("data"), str):
            raise ValueError("constant data must be a base64 string")
        dtype = np.dtype(e["dtype"]).newbyteorder("<")
        arr = np.frombuffer(base64.b64decode(e["data"], validate=True), dtype=dtype)
        arr = arr.astype(np.dtype(e["dtype"]), copy=True).reshape(tuple(e["shape"]))
        return Constant(arr)
    if key.startswith("tir.") and key[4:] in _DIM_OPS and "nodes" in e:
        return _dim_from_nodes(e["nodes"])
    if key in ("tir.SizeVar", "tir.Var"):
        cls = tir_expr.SizeVar if key == "tir.SizeVar" else tir_expr.Var
        return cls(e["name"], e.get("dtype", "int32"))
    if "fields" in e:
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in e["fields"].items()}
        return get_attrs_type(key)(**fields)
    if key == "GlobalVar":
        return GlobalVar(e["name_hint"])
    if key == "VirtualDevice":
        from ...ir.virtual_device import VirtualDevice

        vd = VirtualDevice(None, e.get("target"), e.get("memory_scope", ""))
        vd.device_type_int = int(e["device_type_int"])
        vd.virtual_device_id = int(e["virtual_device_id"])
        if vd.target is not None:
            from ...target import Target

            vd.target = Target(vd.target)
        return vd
    if key == "IncompleteType":
        return IncompleteType()
    raise ValueError(f"cannot rebuild a metadata entry of type {key!r}")

"""``tvm.ir.save_json`` / ``load_json``: a JSON node graph of any IR value, and back.

The format follows TVM's: ``{"root": i, "nodes": [...], "b64ndarrays": [...], "attrs": {...}}``.
Every value reachable from the root (IR nodes, attrs, lists, tuples, dicts, strings, numbers,
tensors) is one entry of ``nodes``; an entry names its kind in ``type_key`` and refers to other
values by their index. Shared values are stored once, so a DAG stays a DAG and the identities
inside a module (one ``GlobalVar`` object for a function's name and all its calls, a variable
and its uses) survive the round trip. Tensors are stored in ``.npy`` form, base64-encoded.

Both directions use explicit worklists (no recursion): a 100,000-node chain round-trips at the
default recursion limit. Loading only rebuilds classes defined in minitvm's own modules.
"""

from __future__ import annotations

import base64
import enum
import importlib
import json
import types
from dataclasses import fields as dc_fields
from dataclasses import is_dataclass

import numpy as np

from ..runtime.ndarray import Device, NDArray
from .gc_pause import gc_paused
from .op import Op

__all__ = ["save_json", "load_json"]

_FORMAT_VERSION = 1
_TVM_VERSION = "0.19.0"
# slots that are caches or weak references: rebuilt on demand, never stored
_SKIP_SLOTS = frozenset({"__weakref__", "__dict__", "_content_hash", "_structural_hash_cache"})
_CODE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)
_PRIMS = {"py.str": str, "py.int": int, "py.float": float, "py.bool": bool}


_KEYS: dict[type, str] = {}


def _class_key(cls: type) -> str:
    key = _KEYS.get(cls)
    if key is not None:
        return key
    if "<locals>" in cls.__qualname__:
        raise TypeError(f"save_json: cannot store an instance of {cls.__qualname__}, a class "
                        "defined inside a function (load_json could not find it again)")
    key = _KEYS[cls] = f"{cls.__module__}:{cls.__qualname__}"
    return key


_CLASSES: dict[str, type] = {}


def _class_of(key: str) -> type:
    cls = _CLASSES.get(key)
    if cls is not None:
        return cls
    module, _, qualname = key.partition(":")
    if not (module == "minitvm" or module.startswith("minitvm.")) or not qualname:
        raise ValueError(f"load_json: refusing to rebuild {key!r}: only classes of minitvm's own "
                         "modules are loaded")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ValueError(f"load_json: {key!r} names no class of this minitvm")
    if not isinstance(obj, type):
        raise ValueError(f"load_json: {key!r} is not a class")
    _CLASSES[key] = obj
    return obj


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slot_names(cls: type) -> tuple[str, ...]:
    cached = _SLOTS.get(cls)
    if cached is not None:
        return cached
    names: list[str] = []
    for base in reversed(cls.__mro__):
        slots = base.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for s in slots:
            if s not in _SKIP_SLOTS and s not in names:
                names.append(s)
    _SLOTS[cls] = tuple(names)
    return _SLOTS[cls]


def _array_b64(arr: np.ndarray) -> str:
    """``dtype:shape:base64 bytes`` (little header; 0-d arrays keep their shape)."""
    arr = np.asarray(arr)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    shape = ",".join(str(d) for d in arr.shape)
    return f"{arr.dtype.str}:{shape}:{base64.b64encode(arr.tobytes()).decode('ascii')}"


def _b64_array(text: str) -> np.ndarray:
    try:
        dtype, shape, data = text.split(":", 2)
        dims = tuple(int(d) for d in shape.split(",")) if shape else ()
        return np.frombuffer(base64.b64decode(data), np.dtype(dtype)).reshape(dims).copy()
    except (ValueError, TypeError) as err:
        raise ValueError(f"load_json: malformed tensor entry {text[:60]!r}: {err}") from None


def _is_minitvm_object(value) -> bool:
    mod = type(value).__module__ or ""
    return mod == "minitvm" or mod.startswith("minitvm.")


class _Writer:
    """Assigns each distinct value an entry; children are queued, never recursed into."""

    def __init__(self):
        self.nodes: list[dict | None] = []
        self.b64: list[str] = []
        self.ids: dict[int, int] = {}
        self.prims: dict[tuple, int] = {}
        self.keep: list = []  # holds every stored value so that ids stay unique
        self.todo: list[tuple[int, object]] = []

    def ref(self, value) -> int:
        """The index of ``value``'s entry, creating (and queueing) it on first sight."""
        if value is None or type(value) in (str, bool, int, float):
            key = (type(value), value if not isinstance(value, float) else repr(value))
            idx = self.prims.get(key)
            if idx is None:
                idx = self.prims[key] = len(self.nodes)
                self.nodes.append(self._prim(value))
            return idx
        idx = self.ids.get(id(value))
        if idx is None:
            idx = self.ids[id(value)] = len(self.nodes)
            self.nodes.append(None)
            self.keep.append(value)
            self.todo.append((idx, value))
        return idx

    @staticmethod
    def _prim(value) -> dict:
        if value is None:
            return {"type_key": "py.None"}
        key = {str: "py.str", bool: "py.bool", int: "py.int", float: "py.float"}[type(value)]
        return {"type_key": key, "repr_str": value if key == "py.str" else repr(value)}

    def run(self, root) -> dict:
        root_idx = self.ref(root)
        while self.todo:
            idx, value = self.todo.pop()
            self.nodes[idx] = self.entry(value)
        return {"root": root_idx, "nodes": self.nodes, "b64ndarrays": self.b64,
                "attrs": {"tvm_version": _TVM_VERSION, "minitvm_json": str(_FORMAT_VERSION)}}

    def entry(self, value) -> dict:
        if isinstance(value, Op):
            return {"type_key": "Op", "repr_str": value.name}
        if isinstance(value, NDArray):
            self.b64.append(_array_b64(value.numpy()))
            return {"type_key": "runtime.NDArray", "b64": len(self.b64) - 1,
                    "attrs": {"device": self.ref(value.device)}}
        if isinstance(value, np.ndarray | np.generic):
            self.b64.append(_array_b64(np.asarray(value)))
            kind = "numpy.ndarray" if isinstance(value, np.ndarray) else "numpy.generic"
            return {"type_key": kind, "b64": len(self.b64) - 1}
        if isinstance(value, list):
            return {"type_key": "py.list", "data": [self.ref(v) for v in value]}
        if isinstance(value, tuple) and type(value) is tuple:
            return {"type_key": "py.tuple", "data": [self.ref(v) for v in value]}
        if isinstance(value, dict) and type(value) is dict:
            return {"type_key": "py.dict", "keys": [self.ref(k) for k in value],
                    "data": [self.ref(v) for v in value.values()]}
        if isinstance(value, bytes):
            return {"type_key": "py.bytes", "repr_str": base64.b64encode(value).decode("ascii")}
        if isinstance(value, type) and (value.__module__ or "").startswith("minitvm"):
            return {"type_key": "py.type", "repr_str": _class_key(value)}
        if isinstance(value, str) and _is_minitvm_object(value):  # tvm.runtime.String
            return {"type_key": "py.strclass", "repr_str": _class_key(type(value)),
                    "attrs": {"value": self.ref(str(value))}}
        if isinstance(value, enum.Enum) and _is_minitvm_object(value):
            return {"type_key": "py.enum", "repr_str": _class_key(type(value)),
                    "attrs": {"name": self.ref(value.name)}}
        if isinstance(value, np.dtype):
            return {"type_key": "numpy.dtype", "repr_str": str(value)}
        if _is_minitvm_object(value) and not isinstance(value, _CODE) or isinstance(value, Device):
            return self.object_entry(value)
        raise TypeError(f"save_json: cannot store a value of type {type(value).__module__}."
                        f"{type(value).__qualname__} ({value!r:.80}); only IR nodes, attrs, "
                        "tensors, containers and plain values are serializable")

    def object_entry(self, value) -> dict:
        cls = type(value)
        attrs: dict[str, int] = {}
        if is_dataclass(value):
            for f in dc_fields(value):
                attrs[f.name] = self.ref(getattr(value, f.name))
            return {"type_key": _class_key(cls), "dataclass": True, "attrs": attrs}
        for name in _slot_names(cls):
            try:
                v = object.__getattribute__(value, name)
            except AttributeError:
                continue  # an unset slot stays unset
            attrs[name] = self.ref(v)
        state = getattr(value, "__dict__", None)
        if state:
            for name, v in state.items():
                attrs[name] = self.ref(v)
        return {"type_key": _class_key(cls), "attrs": attrs}


@gc_paused
def save_json(node) -> str:
    """Serialize ``node`` (an expression, type, function, IRModule, attrs, ...) to JSON text.

    Parameters
    ----------
    node : Object
        Any IR value; shared sub-values are stored once.

    Returns
    -------
    json_str : str
        The node graph; ``load_json`` rebuilds an equal (structurally and in sharing) value.
    """
    return json.dumps(_Writer().run(node), separators=(",", ":"))


_IMMUTABLE = frozenset({"py.tuple", "py.enum", "py.strclass", "runtime.NDArray"})


@gc_paused
def load_json(json_str: str):
    """Rebuild the value ``save_json`` wrote.

    Parameters
    ----------
    json_str : str
        Text produced by ``save_json``.

    Returns
    -------
    node : Object
        A fresh copy of the saved value, sharing preserved.
    """
    try:
        graph = json.loads(json_str)
    except json.JSONDecodeError as err:
        raise ValueError(f"load_json: not JSON text: {err}") from None
    if not isinstance(graph, dict) or "nodes" not in graph or "root" not in graph:
        raise ValueError("load_json: expected an object with 'root' and 'nodes' (text written "
                         "by tvm.ir.save_json)")
    if "minitvm_json" not in graph.get("attrs", {}):
        raise ValueError("load_json: this JSON was not written by minitvm's save_json (TVM's "
                         "C++ node graphs name C++ classes that minitvm does not have)")
    nodes: list[dict] = graph["nodes"]
    b64: list[str] = graph.get("b64ndarrays", [])
    n = len(nodes)
    out: list = [None] * n
    done = [False] * n
    objects: list[int] = []

    # 1. leaves, and empty shells for every mutable value (so cycles and sharing resolve)
    for i, e in enumerate(nodes):
        key = e["type_key"]
        if key == "py.None":
            done[i] = True
        elif key in _PRIMS:
            out[i] = _PRIMS[key](e["repr_str"]) if key != "py.bool" else e["repr_str"] == "True"
            done[i] = True
        elif key == "py.list":
            out[i], done[i] = [], True
        elif key == "py.dict":
            out[i], done[i] = {}, True
        elif key == "Op":
            out[i], done[i] = Op.get(e["repr_str"]), True
        elif key == "py.bytes":
            out[i], done[i] = base64.b64decode(e["repr_str"]), True
        elif key == "py.type":
            out[i], done[i] = _class_of(e["repr_str"]), True
        elif key == "numpy.dtype":
            out[i], done[i] = np.dtype(e["repr_str"]), True
        elif key in ("numpy.ndarray", "numpy.generic"):
            arr = _b64_array(b64[e["b64"]])
            out[i], done[i] = (arr if key == "numpy.ndarray" else arr[()]), True
        elif key in _IMMUTABLE or e.get("dataclass"):
            pass  # immutable: built once its parts exist (step 2)
        else:
            cls = _class_of(key)
            out[i], done[i] = cls.__new__(cls), True
            objects.append(i)

    # 2. immutable values, parts first, with an explicit stack
    for start in range(n):
        if done[start]:
            continue
        stack = [start]
        while stack:
            i = stack[-1]
            if done[i]:
                stack.pop()
                continue
            e = nodes[i]
            parts = e.get("data", []) if e["type_key"] == "py.tuple" else \
                list(e.get("attrs", {}).values())
            pending = [j for j in parts if not done[j]]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            out[i], done[i] = _build_immutable(e, out, b64), True

    # 3. fill the shells: objects first (dict keys may hash by their fields), then containers
    for i in objects:
        obj = out[i]
        for name, j in nodes[i].get("attrs", {}).items():
            object.__setattr__(obj, name, out[j])
    for i, e in enumerate(nodes):
        if e["type_key"] == "py.list":
            out[i].extend(out[j] for j in e["data"])
    for i, e in enumerate(nodes):
        if e["type_key"] == "py.dict":
            d = out[i]
            for k, v in zip(e["keys"], e["data"], strict=True):
                d[out[k]] = out[v]
    return out[graph["root"]]


def _build_immutable(e: dict, out: list, b64: list):
    key = e["type_key"]
    if key == "py.tuple":
        return tuple(out[j] for j in e["data"])
    attrs = {name: out[j] for name, j in e.get("attrs", {}).items()}
    if key == "runtime.NDArray":
        return NDArray(_b64_array(b64[e["b64"]]), attrs.get("device"))
    if key == "py.enum":
        return _class_of(e["repr_str"])[attrs["name"]]
    if key == "py.strclass":
        return _class_of(e["repr_str"])(attrs["value"])
    return _class_of(key)(**attrs)  # a frozen dataclass (Span, SourceName, ...)

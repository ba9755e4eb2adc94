"""An exact content digest of an IR value, for cache keys.

``fingerprint(x)`` is the SHA-256 of a serialization of everything ``x`` holds: every field of
every node (names of variables included, source spans and inferred types left out; a Relax
variable's annotation, kept in the same slot, is written), each
shared node written once and referred back to afterwards, constants by the SHA-1 of their
bytes. Two values with the same fingerprint are the same program, names and sharing included;
unlike ``structural_hash`` it does not identify alpha-equivalent programs, and unlike the text
printer it writes constants' values. One iterative pass: a 100,000-deep program is fine.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable

import numpy as np

from ..runtime.ndarray import NDArray
from .node import Node
from .op import Op

# slots that say nothing about the program: caches, source locations, inferred types (InferType
# fills these in place, so a module built once would key differently the second time)
_SKIP = frozenset({"__weakref__", "__dict__", "span", "_checked_type", "_gvars", "_tvars",
                   "source_map", "_content_hash", "_structural_hash_cache"})


class Unfingerprintable(TypeError):
    """A value holds something whose content this digest cannot see (a function, a handle)."""


_SLOTS: dict[type, tuple[str, ...]] = {}
_NAMES: dict[type, str] = {}


def _slots(cls: type) -> tuple[str, ...]:
    s = _SLOTS.get(cls)
    if s is None:
        names: list[str] = []
        for base in reversed(cls.__mro__):
            declared = base.__dict__.get("__slots__", ())
            for n in (declared,) if isinstance(declared, str) else declared:
                if n not in _SKIP and n not in names:
                    names.append(n)
        # a class whose skipped slot holds what the program says, not what inference found
        # (a Relax Var's annotation lives in the cached-type slot) names it to be digested
        names.extend(n for n in getattr(cls, "_fingerprint_slots", ()) if n not in names)
        s = _SLOTS[cls] = tuple(names)
    return s


def _type_name(cls: type) -> str:
    n = _NAMES.get(cls)
    if n is None:
        n = _NAMES[cls] = f"{cls.__module__}.{cls.__qualname__}"
    return n


# SHA-1 of each NDArray's bytes, valid while its ``_content_hash`` is set (the runtime clears
# that when it rewrites an array in place, which drops this entry's validity too)
_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def array_token(a: np.ndarray) -> str:
    """Dtype, shape and SHA-1 of the bytes of ``a``, as one string."""
    return _token(np.ascontiguousarray(a))[0]


def _token(a: np.ndarray) -> tuple[str, str]:
    from .structural import array_sha1

    if a.dtype.hasobject:
        raise Unfingerprintable("an object array has no byte content to digest")
    sha1 = array_sha1(a)
    return f"A{a.dtype.str}{a.shape}{sha1}", sha1


def ndarray_token(nd: NDArray) -> str:
    """``array_token`` of an NDArray, computed once while its content hash stays set (and
    setting that hash from the same SHA-1, so ``structural_hash`` does not read the bytes
    again)."""
    from .structural import array_content_hash

    if nd._content_hash is not None:
        tok = _DIGESTS.get(nd)
        if tok is not None:
            return tok
    arr = np.ascontiguousarray(nd.numpy())
    tok, sha1 = _token(arr)
    if nd._content_hash is None:
        nd._content_hash = array_content_hash(arr, sha1)
    _DIGESTS[nd] = tok
    return tok


_UNSET = object()
_NODE, _SEQ, _DICT, _OBJ, _OP = range(5)


def _int_imm(x) -> str:
    return f"I{x.dtype}:{x.value}"


def _float_imm(x) -> str:
    return f"F{x.dtype}:{x.value!r}"


def _generic(x) -> str:
    return f"g{x.dtype.str}{x.item()!r}"


def _class(x) -> str:
    return f"C{_type_name(x)}"


def _text(x) -> str:
    if callable(x):
        raise Unfingerprintable(f"cannot fingerprint a {_type_name(type(x))} (code)")
    text = repr(x)
    if " at 0x" in text:
        raise Unfingerprintable(f"cannot fingerprint a {_type_name(type(x))}: {text[:80]}")
    return f"?{_type_name(type(x))}{text!r}"


# each type's token (a function of the value) or its kind of container, decided once
_LEAVES: dict[type, object] = {
    str: repr, int: lambda x: f"i{x}", float: lambda x: f"f{x!r}", bool: lambda x: f"b{x:d}",
    type(None): lambda x: "N", type(_UNSET): lambda x: "U", NDArray: lambda x: ndarray_token(x),
    np.ndarray: array_token,
}


def _classify(t: type):
    from .prim_expr import FloatImm, IntImm  # (imports this package)

    if t is IntImm:
        return _int_imm
    if t is FloatImm:
        return _float_imm
    if t is Op:
        return _OP  # by name: the build key covers the op registry apart
    if issubclass(t, Node):
        return _NODE
    if issubclass(t, NDArray):
        return ndarray_token
    if issubclass(t, np.ndarray):
        return array_token
    if issubclass(t, np.generic):
        return _generic
    if issubclass(t, type):
        return _class
    if issubclass(t, list | tuple):
        return _SEQ
    if issubclass(t, dict):
        return _DICT
    if issubclass(t, str | int | float | bytes | complex):
        return lambda x: f"{_type_name(type(x))}{repr(x)!r}"
    if not issubclass(t, Callable) and (
            any("__slots__" in b.__dict__ for b in t.__mro__ if b is not object)
            or "__dict__" in dir(t)):
        return _OBJ
    return _text


def fingerprint(value, ops: set[str] | None = None) -> str:
    """The hex SHA-256 of ``value``'s serialization (see the module docstring); raises
    ``Unfingerprintable`` when it holds a function or another object without visible content.
    ``ops``, when given, receives the name of every op ``value`` refers to, anywhere in it
    (nested, fused, composite functions included): the build key reads them.

    Each node, sequence or dict becomes one record: its number, its type and its fields' tokens
    (a leaf's value, or ``@k`` for the object numbered ``k``); objects are numbered when first
    met, so a shared one is written once."""
    leaves = _LEAVES
    index: dict[int, int] = {}  # id -> number of each container met
    keep = []  # numbered objects stay alive, so their ids stay unique
    stack: list = [(0, value)]
    records: list[str] = []
    fn = leaves.get(type(value))
    if fn is None:
        fn = leaves[type(value)] = _classify(type(value))
    if not isinstance(fn, int):
        records.append(fn(value))
        stack.clear()
    else:
        index[id(value)] = 0
    while stack:
        k, x = stack.pop()
        t = type(x)
        kind = leaves[t]
        if kind == _NODE:
            parts = [f"{k}<{_type_name(t)}"]
            values = [getattr(x, f, _UNSET) for f in _slots(t)]
        elif kind == _SEQ:
            parts = [f"{k}[{_type_name(t)}"]
            values = x
        elif kind == _DICT:
            keys = list(x)
            if all(type(key) is str for key in keys):
                keys.sort()
            parts = [f"{k}{{"]
            values = [y for key in keys for y in (key, x[key])]
        elif kind == _OP:
            records.append(f"{k}<{_type_name(t)}\x00{x.name!r}")
            if ops is not None:
                ops.add(x.name)
            continue
        else:
            parts = [f"{k}<{_type_name(t)}"]
            values = _object_items(x)
        for v in values:
            fn = leaves.get(type(v))
            if fn is None:
                fn = leaves[type(v)] = _classify(type(v))
            if not isinstance(fn, int):
                parts.append(fn(v))
                continue
            j = index.get(id(v))
            if j is None:
                j = index[id(v)] = len(index)
                keep.append(v)
                stack.append((j, v))
            parts.append(f"@{j}")
        records.append("\x00".join(parts))
    h = hashlib.sha256()
    h.update("\n".join(records).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _object_items(obj) -> list:
    """The fields of a plain (non-node) object: its slots, or its ``__dict__`` in key order."""
    cls = type(obj)
    if any("__slots__" in b.__dict__ for b in cls.__mro__ if b is not object):
        return [getattr(obj, f, _UNSET) for f in _slots(cls)]
    d = getattr(obj, "__dict__", None) or {}
    return [y for k in sorted(d) if k not in _SKIP for y in (k, d[k])]

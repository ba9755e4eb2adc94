"""A proof that a value was not modified in place: what ``structural_hash`` reads, held by identity.

Proving that a pass left its input alone by hashing the input before and after costs two full
hashes (about 3 s each for a typed 100,000-call chain). ``snapshot(x)`` walks ``x`` once and
keeps, for every node, sequence and dict it reaches, the values it holds (the fields
``structural_hash`` reads); ``Snapshot.changed()`` then re-reads only those values and compares
them by identity (leaves by the code the hash gives them), without walking or hashing again.
It sees every change the hash sees (a field set to something else, a list or dict changed in
place) and more: a node replaced by a structurally equal copy counts as a change too.
"""

from __future__ import annotations

from operator import is_

from .gc_pause import gc_paused
from .structural import (
    _COMPOSITE,
    _DICT,
    _IMM,
    _KINDS,
    _NAME,
    _SEQ,
    _VALUE,
    _field_values,
    _kind_of,
    _leaf_code,
    _named_key,
)


def _flat_value(v) -> tuple:
    """A ``_node_value()`` as the values it holds: a dict's keys and values, a tuple's elements
    (a tuple of dicts, an IRModule's, flattened too); the containers are built afresh per call."""
    if isinstance(v, dict):
        return tuple(x for kv in v.items() for x in kv)
    if isinstance(v, tuple):
        out: list = []
        for x in v:
            out.extend(_flat_value(x) if isinstance(x, dict) else (x,))
        return tuple(out)
    return (v,)


def _held(obj, kind: int) -> tuple:
    """The values ``obj`` holds that a change to would change its structural hash."""
    if kind == _SEQ:
        return obj if type(obj) is tuple else tuple(obj)
    if kind == _DICT:
        return tuple(x for kv in obj.items() for x in kv)
    if kind == _VALUE:
        return _flat_value(obj._node_value())
    if kind == _NAME:
        return (_named_key(obj),)
    return tuple(_field_values(obj))


def _same_leaf(a, b) -> bool:
    """``a`` and ``b`` are one object, or leaves ``structural_hash`` codes alike (a name built
    again, the fresh unconstrained VirtualDevice a Relay expression reads where none is set)."""
    if a is b:
        return True
    ka = _KINDS.get(type(a)) or _kind_of(type(a))
    if ka >= _COMPOSITE or ka == _IMM or ka != (_KINDS.get(type(b)) or _kind_of(type(b))):
        return False
    return _leaf_code(a, ka) == _leaf_code(b, ka)


def _same(before: tuple, now: tuple) -> bool:
    if now is before:
        return True
    if len(now) != len(before):
        return False
    return all(map(is_, now, before)) or all(map(_same_leaf, before, now))


class Snapshot:
    """What a value held when ``snapshot`` took it; ``changed()`` finds what differs now."""

    __slots__ = ("_entries", "_keep")

    def __init__(self, entries: list, keep: list) -> None:
        self._entries = entries  # (object, kind, the values it held), in walk order
        self._keep = keep  # the tuples met (unchangeable, so not compared)

    def changed(self):
        """The first object (a node, list or dict) whose values differ now, else None."""
        for obj, kind, held in self._entries:
            if not _same(held, _held(obj, kind)):
                return obj
        return None


@gc_paused
def snapshot(value) -> Snapshot:
    """Record what ``value`` and everything it reaches hold, for ``Snapshot.changed``."""
    kinds = _KINDS
    seen: set[int] = set()
    entries: list = []
    keep: list = []  # the objects seen stay alive (here or in entries), so their ids stay unique
    stack = [value]
    while stack:
        obj = stack.pop()
        t = type(obj)
        kind = kinds.get(t)
        if kind is None:
            kind = _kind_of(t)
        if kind < _COMPOSITE and kind != _IMM:
            continue
        oid = id(obj)
        if oid in seen:
            continue
        seen.add(oid)
        if t is tuple:  # cannot change: only what it holds is recorded
            held = obj
            keep.append(obj)
        else:
            held = _held(obj, kind)
            entries.append((obj, kind, held))
        if kind != _NAME:
            stack.extend(held)
    return Snapshot(entries, keep)

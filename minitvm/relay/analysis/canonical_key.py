"""A cheap exact key of a small fused (primitive) function: equal keys mean structurally equal
functions (so equal structural hashes and one kernel), where ``structural_hash`` costs ~20 us
for even a one-op function.

The key encodes the function as a labelled DAG: the parameters, then the body's nodes in
post order, each a tuple of its class tag, plain field values and its operands' positions
(so renamed parameters key alike, as ``structural_equal`` binds them). It covers only what is
cheap to encode exactly: parameters and calls of operators, constants of at most 64 bytes,
tuples and their items, static tensor types, unconstrained-target virtual devices and
attributes of plain values; anything else gives None (the caller hashes and compares as
before). A different key says nothing: two equal functions may key apart.
"""

from __future__ import annotations

import weakref

from ...ir.attrs import DictAttrs
from ...ir.op import Op
from ...ir.prim_expr import IntImm
from ...ir.type import TensorType, TupleType
from ...ir.virtual_device import VirtualDevice
from ...runtime.ndarray import NDArray
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var

#: functions with more nodes than this are not keyed (a hit is unlikely, the walk not free;
#: a 256-op fused chain still keys in 60% of its hash)
MAX_NODES = 4096

_PLAIN = (str, int, float, bool, type(None))


class _NoKey(Exception):
    """A value this key does not encode exactly."""


def _vd(vd):
    if vd is None:
        return None
    if type(vd) is VirtualDevice and vd.target is None:
        return (vd.device_type_int, vd.virtual_device_id, vd.memory_scope)
    raise _NoKey


def _type(t):
    if t is None:
        return None
    tt = type(t)
    if tt is TensorType:
        shape = t.shape
        for d in shape:
            if type(d) is not int:
                raise _NoKey
        return (shape, t.dtype)
    if tt is TupleType:
        return ("tuple", *(_type(f) if type(f) is TensorType else _fail() for f in t.fields))
    raise _NoKey


def _fail():
    raise _NoKey


def _value(v):
    """A plain attribute value: its type with it (1, 1.0 and True hash alike but are kept
    apart here), a sequence of plain values or an int32/int64 IntImm; nothing deeper."""
    tv = type(v)
    if tv in _PLAIN:
        if tv is float and v != v:  # NaN: not equal to itself, so never a hit
            raise _NoKey
        return (tv, v)
    if tv is tuple or tv is list:
        out = []
        for x in v:
            tx = type(x)
            if tx in _PLAIN and not (tx is float and x != x):
                out.append((tx, x))
            elif tx is IntImm:
                out.append((IntImm, x.dtype, x.value))
            else:
                raise _NoKey
        return ("seq", *out)
    if tv is IntImm:
        return (IntImm, v.dtype, v.value)
    raise _NoKey


def _attrs(a):
    """Operator attrs or a function's DictAttrs: the class and its string-keyed plain values."""
    if a is None:
        return None
    if getattr(type(a), "_node_compare", None) != "value":  # (hashed by its value, as here)
        raise _NoKey
    values = a._node_value()
    if type(values) is not dict:
        raise _NoKey
    items = []
    for k in sorted(values):
        if type(k) is not str:
            raise _NoKey
        items.append((k, _value(values[k])))
    return (type(a), *items)


# the body parts of the last keys made, by the body's id: (a weak reference to the body, its
# function's params, the part or None when it has no key). LabelOps keys each fused function,
# and the graph codegen keys its labelled copy (the same params and body, other attributes)
# again; a dead body's id may be reused, which the reference tells apart
_BODY_PARTS: dict[int, tuple] = {}
_BODY_PARTS_MAX = 4096


def canonical_key(fn) -> tuple | None:
    """The key of ``fn`` (see the module docstring), or None when it holds something the key
    does not encode. Iterative: the walk keeps its own stack."""
    if type(fn) is not Function or fn.type_params:
        return None
    part = _body_part(fn)
    if part is None:
        return None
    try:
        attrs = fn.attrs
        if attrs is not None and type(attrs) is not DictAttrs:
            raise _NoKey
        # (type_params: None and [] hash apart; a non-empty list was refused)
        return (fn.type_params is None, _type(fn.ret_type), _attrs(attrs),
                _vd(getattr(fn, "_virtual_device", None)), *part)
    except _NoKey:
        return None


def _body_part(fn: Function) -> tuple | None:
    """``(position of the body, entries)`` of ``fn``'s params and body (remembered), or None."""
    body, params = fn.body, fn.params
    hit = _BODY_PARTS.get(id(body))
    if hit is not None and hit[0]() is body and len(hit[1]) == len(params) and all(
            a is b for a, b in zip(hit[1], params)):
        return hit[2]
    try:
        part = _walk(params, body)
    except _NoKey:
        part = None
    try:
        ref = weakref.ref(body)
    except TypeError:  # (a body without weak references: not remembered)
        return part
    if len(_BODY_PARTS) >= _BODY_PARTS_MAX:
        _BODY_PARTS.clear()
    _BODY_PARTS[id(body)] = (ref, tuple(params), part)
    return part


def _walk(params, body) -> tuple:
    pos: dict[int, int] = {}  # id(node) -> its position in the key
    entries: list = []
    for p in params:
        if type(p) is not Var:
            raise _NoKey
        pos[id(p)] = len(entries)
        # (the raw slot: None reads as a fresh unconstrained device through the property)
        vd = getattr(p, "_virtual_device", None)
        entries.append(("param", _type(p.type_annotation), vd if vd is None else _vd(vd)))
    stack = [(body, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in pos:
            continue
        te = type(e)
        if not ready and te is not Constant:
            if te is Call:
                if type(e.op) is not Op:
                    raise _NoKey
                kids = e.args
            elif te is Tuple:
                kids = e.fields
            elif te is TupleGetItem:
                kids = (e.tuple_value,)
            else:  # a free variable, a nested function, a global, control flow
                raise _NoKey
            stack.append((e, True))
            stack.extend((a, False) for a in reversed(kids) if id(a) not in pos)
            continue
        vd = getattr(e, "_virtual_device", None)
        if vd is not None:
            vd = _vd(vd)
        if te is Call:
            targs = e.type_args  # (None and [] hash apart: keyed apart)
            entry = ("call", e.op.name, tuple(pos[id(a)] for a in e.args), _attrs(e.attrs),
                     None if targs is None else tuple(_type(t) for t in targs), vd)
        elif te is Constant:
            if type(e.data) is not NDArray:
                raise _NoKey
            data = e.data.numpy()
            if data.nbytes > 64 or data.dtype.kind not in "biuf":
                raise _NoKey
            entry = ("const", data.dtype.str, data.shape, data.tobytes(), vd)
        elif te is Tuple:
            entry = ("tuple", tuple(pos[id(a)] for a in e.fields), vd)
        else:
            entry = ("item", pos[id(e.tuple_value)], _value(e.index), vd)
        pos[id(e)] = len(entries)
        entries.append(entry)
        if len(entries) > MAX_NODES:
            raise _NoKey
    return pos[id(body)], tuple(entries)

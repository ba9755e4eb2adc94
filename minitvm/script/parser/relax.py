"""``R``: the Relax names TVMScript uses (``from tvm.script import relax as R``).

Struct info (``R.Tensor``, ``R.Shape``, ``R.Tuple``, ``R.Object``, ``R.Prim``, ``R.Callable``),
the ``@R.function`` decorator, scopes and markers the parser interprets (``R.dataflow()``,
``R.output``, ``R.func_attr``, ``R.match_cast``), value constructors (``R.const``, ``R.shape``,
``R.prim_value``, ``R.str``, ``R.dtype``, ``R.tuple``, ``R.ExternFunc``) and every operator:
``R.add``, ``R.nn.relu``, ``R.call_tir``... are looked up by name in ``minitvm.relax.op`` when
used (an operator registered as ``relax.<name>`` without a Python constructor is called
generically), so new operators need no change here.
"""

from __future__ import annotations

import ast as _ast
import builtins as _builtins

from ...ir.attrs import DictAttrs as _DictAttrs
from ...ir.op import Op as _Op
from ...ir.prim_expr import IntImm as _IntImm
from ...ir.prim_expr import PrimExpr as _PrimExpr
from ...relax import expr as _rx
from ...relax import struct_info as _si
from .core import current_parser as _current_parser
from .entry import parse_decorated as _parse_decorated

__all__ = [
    "Tensor", "Shape", "Tuple", "Object", "Prim", "Callable", "function", "dataflow", "output",
    "func_attr", "match_cast", "const", "shape", "prim_value", "str", "dtype", "tuple",
    "ExternFunc", "as_struct_info", "call_packed", "call_builtin_with_ctx", "to_vdevice",
]


# ---------------------------------------------------------------------------- struct info
class _SInfoFactory:
    """``R.Tensor``-like names: called they build struct info; written bare (``x: R.Tensor``)
    they mean the least specific one."""

    __slots__ = ("_name", "_make")

    def __init__(self, name, make):
        self._name = name
        self._make = make

    def __call__(self, *args, **kwargs) -> _si.StructInfo:
        return self._make(*args, **kwargs)

    def default(self) -> _si.StructInfo:
        return self._make()

    def __repr__(self):
        return f"R.{self._name}"


def as_struct_info(v) -> _si.StructInfo:
    """``v`` as struct info (bare ``R.Tensor`` / ``R.Object`` are their defaults)."""
    if isinstance(v, _si.StructInfo):
        return v
    if isinstance(v, _SInfoFactory):
        return v.default()
    raise TypeError(f"expected struct info (R.Tensor(...), R.Tuple(...), ...), got "
                    f"{type(v).__name__} {v!r}")


def _dim(d):
    """A shape dimension: ints become int64 immediates; strings (``"n"``, ``"n * 2"``) are the
    function's symbolic variables (declared by the signature that first names them)."""
    if isinstance(d, _builtins.str):
        p = _current_parser()
        if p is not None and hasattr(p, "symbolic_dim"):
            return p.symbolic_dim(d)
        return _free_symbolic(d)
    if isinstance(d, _builtins.bool):
        raise TypeError(f"a shape dimension cannot be a bool, got {d!r}")
    return _si.as_dim(d)


def _free_symbolic(text: str):
    """Outside a parse: each name of ``text`` becomes a new int64 variable."""
    from ...tir.expr import Var

    names: dict = {}
    tree = _ast.parse(text.strip(), mode="eval")

    def conv(node):
        if isinstance(node, _ast.Name):
            return names.setdefault(node.id, Var(node.id, "int64"))
        if isinstance(node, _ast.Constant):
            return node.value
        if isinstance(node, _ast.BinOp):
            import operator as op

            fn = {_ast.Add: op.add, _ast.Sub: op.sub, _ast.Mult: op.mul,
                  _ast.FloorDiv: op.floordiv, _ast.Mod: op.mod}[type(node.op)]
            return fn(conv(node.left), conv(node.right))
        raise ValueError(f"unsupported symbolic dimension {text!r}")

    return _si.as_dim(conv(tree.body))


def _tensor(shape=None, dtype=None, vdevice=None, ndim: int = -1):
    if isinstance(shape, _builtins.str) and dtype is None:
        shape, dtype = None, shape
    if shape is not None and not isinstance(shape, _rx.Expr):
        if isinstance(shape, _builtins.tuple | list):
            shape = [_dim(d) for d in shape]
            for d in shape:
                if isinstance(d, _IntImm) and d.value < 0:
                    raise ValueError(f"R.Tensor: dimension {d.value} is negative (sizes are "
                                     f">= 0; a dimension not known statically is a symbolic "
                                     f"variable, \"n\")")
        else:
            raise TypeError(f"R.Tensor's shape must be a tuple or list of dimensions or a "
                            f"shape-valued expression, got {type(shape).__name__}")
    if vdevice is not None:
        from .ir import resolve_vdevice

        vdevice = resolve_vdevice(vdevice)
    return _si.TensorStructInfo(shape, dtype, vdevice, ndim)


def to_vdevice(data, dst_vdevice):
    """``R.to_vdevice(x, dst_vdevice="cuda:0")``: the destination names a device of the
    module's ``I.module_global_infos`` (or is a VDevice)."""
    from ...relax.op import to_vdevice as make
    from .ir import resolve_vdevice

    dev = resolve_vdevice(dst_vdevice)
    if dev is None:
        raise ValueError(f"R.to_vdevice: the module declares no virtual device {dst_vdevice!r}")
    return make(to_relax(data), dev)


def _shape(values=None, ndim: int = -1):
    if values is not None:
        values = [_dim(v) for v in values]
    return _si.ShapeStructInfo(values, ndim)


def _prim(dtype=None, value=None):
    if isinstance(value, _builtins.str):
        value = _dim(value)
    elif isinstance(value, _builtins.int) and not isinstance(value, _builtins.bool):
        value = _IntImm(dtype or "int64", value)
    if dtype is not None and not isinstance(dtype, _builtins.str):
        dtype = getattr(dtype, "_tvmscript_dtype", None) or _builtins.str(dtype)
    return _si.PrimStructInfo(dtype, value)


def _object():
    return _si.ObjectStructInfo()


def _tuple_sinfo(*fields):
    if len(fields) == 1 and isinstance(fields[0], list | _builtins.tuple):
        fields = fields[0]
    return _si.TupleStructInfo([as_struct_info(f) for f in fields])


def _callable(params=None, ret=None, purity=None, derive_func=None):
    ret = _si.ObjectStructInfo() if ret is None else as_struct_info(ret)
    if params is None:
        f = _si.FuncStructInfo.opaque_func(ret=ret, purity=bool(purity))
        if derive_func is not None:
            f.derive_func = derive_func
        return f
    params = [as_struct_info(p) for p in params]
    return _si.FuncStructInfo(params, ret, True if purity is None else bool(purity))


Tensor = _SInfoFactory("Tensor", _tensor)
Shape = _SInfoFactory("Shape", _shape)
Prim = _SInfoFactory("Prim", _prim)
Object = _SInfoFactory("Object", _object)
Tuple = _SInfoFactory("Tuple", _tuple_sinfo)
Callable = _SInfoFactory("Callable", _callable)


# ---------------------------------------------------------------------------- the decorator
def function(f=None, *, pure: bool = True, private: bool = False,
             check_well_formed: bool = True):
    """``@R.function``: parse the decorated Python function as a ``relax.Function`` (inside an
    ``@I.ir_module`` class the module's decorator parses it with the other functions)."""
    if f is None:
        return lambda func: _parse_decorated(func, "relax")
    return _parse_decorated(f, "relax")


function._tvmscript_kind = "relax"


def rewriter(cls):
    """``@R.rewriter class Rewrite:`` with ``@R.function``s ``pattern`` and ``replacement``:
    a ``relax.dpl.PatternMatchingRewriter`` applying the rewrite to a module or function."""
    from ...relax.dpl.pattern_rewriter import PatternMatchingRewriter
    from .entry import caller_env, parse_definition, source_of

    if not isinstance(cls, type):
        raise TypeError(f"@R.rewriter decorates a class, got {type(cls).__name__}")
    src, node = source_of(cls)
    return PatternMatchingRewriter.from_module(parse_definition(src, node, caller_env(1)))


rewriter._tvmscript_kind = "module"  # (its class parses as an @I.ir_module class)


# ---------------------------------------------------------------------------- parser markers
class _DataflowScope:
    """``with R.dataflow():`` (only meaningful inside a parsed function)."""

    __slots__ = ()

    def __enter__(self):
        raise RuntimeError("R.dataflow() is a TVMScript scope; use it inside an @R.function")

    def __exit__(self, *exc):
        return False


class _Output:
    __slots__ = ("vars",)

    def __init__(self, vars):
        self.vars = vars


class _FuncAttr:
    __slots__ = ("attrs",)

    def __init__(self, attrs):
        self.attrs = attrs


class _MatchCast:
    __slots__ = ("value", "struct_info")

    def __init__(self, value, struct_info):
        self.value = value
        self.struct_info = struct_info


def dataflow() -> _DataflowScope:
    """``with R.dataflow():`` opens a dataflow block."""
    return _DataflowScope()


def output(*vars) -> _Output:
    """``R.output(a, b)``: the variables of a dataflow block visible after it."""
    return _Output(vars)


def func_attr(attrs: dict) -> _FuncAttr:
    """``R.func_attr({"num_input": 1})``: attributes of the enclosing function."""
    if not isinstance(attrs, dict):
        raise TypeError(f"R.func_attr takes a dict, got {type(attrs).__name__}")
    return _FuncAttr(attrs)


def match_cast(value, struct_info) -> _MatchCast:
    """``y = R.match_cast(x, R.Tensor((m,), "float32"))``: a MatchCast binding."""
    return _MatchCast(value, as_struct_info(struct_info))


# ---------------------------------------------------------------------------- values
def to_relax(value):
    """A Python value as a Relax expression (tuples become ``relax.Tuple``, scalars
    ``PrimValue``, strings ``StringImm``)."""
    if isinstance(value, _rx.Expr):
        return value
    from ...ir.expr import GlobalVar

    if isinstance(value, GlobalVar | _Op):
        return value
    if isinstance(value, _builtins.tuple | list):
        return _rx.Tuple([to_relax(v) for v in value])
    if isinstance(value, _builtins.bool):
        return _rx.PrimValue(_IntImm("bool", int(value)))
    if isinstance(value, _builtins.int | float | _PrimExpr):
        _check_declared(value)
        return _rx.PrimValue(value)
    if isinstance(value, _builtins.str):
        return _rx.StringImm(value)
    raise TypeError(f"cannot use {type(value).__name__} {value!r} as a Relax expression")


def _check_declared(value) -> None:
    """Refuse a scalar that holds ``T.<dtype>()`` inline (in a tuple, an expression): that
    declares an unnamed symbolic variable nothing defines (an ill-formed module)."""
    if not isinstance(value, _PrimExpr):
        return
    from ...tir.expr import Var as _TirVar
    from ...tir.stmt_functor import post_order

    for node in post_order(value):
        if isinstance(node, _TirVar) and node.name == "":
            raise ValueError("an unnamed symbolic variable used as a value: `T.<dtype>()` "
                             "declares one (`n = T.int64()`); give a value (`T.int64(3)`) "
                             "or use a declared name")


def const(value, dtype=None) -> _rx.Constant:
    """``R.const(1.0, "float32")``: a constant tensor."""
    return _rx.const(value, dtype)


def shape(value) -> _rx.ShapeExpr:
    """``R.shape([n, 4])``: a shape value."""
    return _rx.ShapeExpr([_dim(v) for v in value])


def prim_value(value) -> _rx.PrimValue:
    """``R.prim_value(n)``: a scalar value."""
    if isinstance(value, _builtins.bool):
        value = _IntImm("bool", int(value))
    elif isinstance(value, _builtins.str):
        value = _dim(value)
    if getattr(value, "name", None) == "" and type(value).__name__ == "Var":
        # ``T.int64()`` with no value declares a symbolic variable (``n = T.int64()``);
        # inline, the variable has no name and nothing defines it
        raise ValueError("R.prim_value of an unnamed variable: `T.<dtype>()` declares a "
                         "symbolic variable (`n = T.int64()`); give a value (`T.int64(3)`) "
                         "or use a declared name")
    _check_declared(value)
    return _rx.PrimValue(value)


def str(value) -> _rx.StringImm:  # noqa: A001 - TVM's name
    """``R.str("text")``: a string value."""
    return _rx.StringImm(value)


def dtype(value) -> _rx.DataTypeImm:
    """``R.dtype("float32")``: a data type value."""
    return _rx.DataTypeImm(value)


def tuple(*fields) -> _rx.Tuple:  # noqa: A001 - TVM's name
    """``R.tuple(a, b)``: a tuple value (``R.tuple()`` is the empty tuple)."""
    return _rx.Tuple([to_relax(f) for f in fields])


def ExternFunc(global_symbol, struct_info=None) -> _rx.ExternFunc:  # noqa: N802
    """``R.ExternFunc("name")``: a function provided by the runtime."""
    if struct_info is not None:
        struct_info = as_struct_info(struct_info)
    return _rx.ExternFunc(global_symbol, struct_info)


def call_packed(func, *args, sinfo_args=None, **kwargs) -> _rx.Call:
    """``R.call_packed("name", *args, sinfo_args=...)``: a call of a runtime packed function
    (extra keywords become the call's attrs; ``attrs_type_key`` names their type)."""
    type_key = kwargs.pop("attrs_type_key", None)
    attrs = None
    if kwargs or type_key is not None:
        attrs = _DictAttrs(kwargs)
        if type_key not in (None, "DictAttrs"):
            from ...ir.attrs import get_attrs_type

            atype = get_attrs_type(type_key)
            attrs = atype(**kwargs) if isinstance(atype, type) else attrs
    if sinfo_args is None:
        sinfo_args = ()
    elif not isinstance(sinfo_args, list | _builtins.tuple):
        sinfo_args = [sinfo_args]
    if isinstance(func, _builtins.str):
        func = _rx.ExternFunc(func)
    return _rx.Call(func, [to_relax(a) for a in args], attrs,
                    [as_struct_info(s) for s in sinfo_args])


def call_builtin_with_ctx(func, args, sinfo_args=None) -> _rx.Call:
    """``R.call_builtin_with_ctx("vm.builtin.x", (args,), sinfo_args=...)``: a runtime builtin
    called with the VM as hidden first argument (a name becomes an ``ExternFunc``, as TVM
    does)."""
    from ...relax.op.vm import call_builtin_with_ctx as make

    if isinstance(args, _builtins.list | _builtins.tuple):
        args = _rx.Tuple([to_relax(a) for a in args])
    if sinfo_args is not None:
        if not isinstance(sinfo_args, list | _builtins.tuple):
            sinfo_args = [sinfo_args]
        sinfo_args = [as_struct_info(si) for si in sinfo_args]
    return make(func if isinstance(func, _builtins.str) else to_relax(func), args, sinfo_args)


# ---------------------------------------------------------------------------- operators
class _OpNamespace:
    """``R.nn``, ``R.image``, ...: operators found in ``minitvm.relax.op.<prefix>`` or in the
    registry as ``relax.<prefix>.<name>``."""

    __slots__ = ("_prefix",)

    def __init__(self, prefix: _builtins.str):
        self._prefix = prefix

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _lookup_op(f"{self._prefix}.{name}")

    def __repr__(self):
        return f"R.{self._prefix}"


def _lookup_op(path: _builtins.str):
    """``R.<path>``: the constructor in ``minitvm.relax.op`` (``nn.relu`` ->
    ``relax.op.nn.relu``), else a generic builder of a registered ``relax.<path>`` op, else a
    namespace when ``path`` names a sub-package."""
    from ...relax import op as obj

    try:
        for p in path.split("."):
            obj = getattr(obj, p)
    except AttributeError:
        obj = None
    if obj is not None and not isinstance(obj, type(_ast)):
        return obj
    op_name = "relax." + path
    if op_name in _Op._registry:
        return _generic_op(_Op.get(op_name))
    if obj is not None or any(n.startswith(op_name + ".") for n in _Op._registry):
        return _OpNamespace(path)
    raise AttributeError(f"R.{path} is not available: minitvm.relax.op has no {path!r} and no "
                         f"operator {op_name!r} is registered")


def _generic_op(op: _Op):
    def build(*args, sinfo_args=None, **attrs):
        attrs_obj = None
        if attrs:
            atype = op.attrs_type
            if isinstance(atype, _builtins.str):
                from ...ir.attrs import get_attrs_type

                atype = get_attrs_type(atype)
            attrs_obj = atype(**attrs) if isinstance(atype, type) else _DictAttrs(attrs)
        if sinfo_args is not None and not isinstance(sinfo_args, list | _builtins.tuple):
            sinfo_args = [sinfo_args]
        return _rx.Call(op, [to_relax(a) for a in args], attrs_obj,
                        [as_struct_info(s) for s in sinfo_args or ()])

    build.__name__ = op.name
    return build


def __getattr__(name: _builtins.str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _lookup_op(name)


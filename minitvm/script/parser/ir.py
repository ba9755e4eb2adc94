"""``I``: the module-level names of TVMScript (``from tvm.script import ir as I``):
``@I.ir_module``, ``I.module_attrs``, ``I.module_global_infos`` and ``I.Op``."""

from __future__ import annotations

from ...ir.op import Op as _Op
from .entry import caller_env as _caller_env
from .entry import parse_definition as _parse_definition
from .entry import source_of as _source_of

__all__ = ["ir_module", "module_attrs", "module_global_infos", "Op"]


def ir_module(cls=None, *, check_well_formed: bool = True):
    """``@I.ir_module class Module: ...``: parse the class's ``@R.function`` and
    ``@T.prim_func`` methods into an IRModule (names resolve in the defining scope)."""

    def decorate(c):
        if not isinstance(c, type):
            raise TypeError(f"@I.ir_module decorates a class, got {type(c).__name__}")
        env = _caller_env(2)
        src, node = _source_of(c)
        return _parse_definition(src, node, env)

    if cls is None:
        return lambda c: decorate(c)
    return decorate(cls)


ir_module._tvmscript_kind = "module"


def module_attrs(attrs: dict) -> dict:
    """``I.module_attrs({...})`` in an ``@I.ir_module`` class: the module's attributes."""
    if not isinstance(attrs, dict):
        raise TypeError(f"I.module_attrs takes a dict, got {type(attrs).__name__}")
    return attrs


def module_global_infos(infos: dict) -> dict:
    """``I.module_global_infos({...})``: the module's global infos."""
    if not isinstance(infos, dict):
        raise TypeError(f"I.module_global_infos takes a dict, got {type(infos).__name__}")
    return infos


def Op(name: str) -> _Op:  # noqa: N802 - TVM's name
    """``I.Op("relax.add")``: a registered operator as a value."""
    return _Op.get(name)

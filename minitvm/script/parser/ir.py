"""``I``: the module-level names of TVMScript (``from tvm.script import ir as I``):
``@I.ir_module``, ``I.module_attrs``, ``I.module_global_infos``, the global infos it holds
(``I.vdevice``, ``I.dummy_global_info``), ``I.lookup_vdevice`` and ``I.Op``."""

from __future__ import annotations

import contextlib as _contextlib
import threading as _threading
import warnings as _warnings

from ...ir.global_info import DummyGlobalInfo as _DummyGlobalInfo
from ...ir.global_info import VDevice as _VDevice
from ...ir.op import Op as _Op
from .entry import caller_env as _caller_env
from .entry import parse_definition as _parse_definition
from .entry import source_of as _source_of

__all__ = ["ir_module", "module_attrs", "module_global_infos", "vdevice", "dummy_global_info",
           "lookup_vdevice", "Op"]


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


def vdevice(target=None, vdevice_id: int = 0, memory_scope: str = "global") -> _VDevice:
    """``I.vdevice({"kind": "llvm", ...}, 0, "global")``: a virtual device (a target given as a
    dict, string or Target, an id and a memory scope) for ``I.module_global_infos``."""
    if isinstance(target, dict) and target.get("tag") == "":
        target = {k: v for k, v in target.items() if k != "tag"}  # TVM's "no tag"
    return _VDevice(target, vdevice_id, memory_scope)


def dummy_global_info() -> _DummyGlobalInfo:
    """``I.dummy_global_info()``: a global info without content."""
    return _DummyGlobalInfo()


class _Infos(_threading.local):
    def __init__(self):
        self.stack: list[dict] = []


_INFOS = _Infos()


@_contextlib.contextmanager
def global_infos_scope(infos: dict):
    """While an ``@I.ir_module`` class's functions are parsed: its global infos, which
    ``vdevice="cuda:1"`` annotations refer to."""
    _INFOS.stack.append(infos)
    try:
        yield infos
    finally:
        _INFOS.stack.pop()


def lookup_vdevice(target_kind: str | None = None, device_index: int = -1) -> _VDevice | None:
    """The ``device_index``-th virtual device of kind ``target_kind`` among the global infos
    of the module being parsed (``"llvm:0"``); with no kind, the ``device_index``-th of all.
    None outside a module (Python evaluates a signature's annotations once before the
    parser reads them); TVM warns and gives no device when the module declares none such."""
    if not _INFOS.stack:
        return None
    devices = _INFOS.stack[-1].get("vdevice", [])
    if target_kind is None:
        if 0 <= device_index < len(devices):
            return devices[device_index]
    else:
        same = [d for d in devices if getattr(getattr(d.target, "kind", None), "name", None)
                == target_kind]
        if 0 <= device_index < len(same):
            return same[device_index]
    _warnings.warn(f"The annotated device was not found, please check your vdevice list "
                   f"(wanted {target_kind}:{device_index}, the module declares "
                   f"{len(devices)} vdevice(s))", stacklevel=3)
    return None


def resolve_vdevice(spec):
    """A ``vdevice=`` argument as a VDevice: ``"kind"``, ``"kind:index"`` (TVM's text, also
    ``"kind:index:scope"``), a VDevice, or None."""
    if spec is None or isinstance(spec, _VDevice):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"vdevice must be a VDevice or a string such as 'llvm:0', got "
                        f"{type(spec).__name__}")
    kind, _, rest = spec.partition(":")
    index_text = rest.partition(":")[0] if rest else "0"
    try:
        index = int(index_text)
    except ValueError:
        raise ValueError(f"vdevice {spec!r}: the index after ':' must be an integer") from None
    return lookup_vdevice(kind, index)

"""Typed registry of PassContext config options (TVM's TVM_REGISTER_PASS_CONFIG_OPTION)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

# Python type -> the type key TVM's list_configs reports.
_TYPE_KEYS = {bool: "IntImm", int: "IntImm", float: "FloatImm", str: "runtime.String",
              list: "Array", dict: "Map"}


@dataclass(frozen=True)
class ConfigOption:
    key: str
    type: type
    default: Any
    description: str


_REGISTRY: dict[str, ConfigOption] = {}


def register_pass_config(key: str, value_type: type, default: Any = None,
                         description: str = "") -> ConfigOption:
    """Register the config option ``key`` with its type (bool, int, float, str, list or dict)."""
    if value_type not in _TYPE_KEYS:
        raise TypeError(f"config option {key!r}: unsupported type {value_type!r}; "
                        f"use one of {[t.__name__ for t in _TYPE_KEYS]}")
    old = _REGISTRY.get(key)
    if old is not None and old.type is not value_type:
        raise ValueError(f"config option {key!r} is already registered with type "
                         f"{old.type.__name__}")
    opt = ConfigOption(key, value_type, default, description)
    _REGISTRY[key] = opt
    return opt


def list_configs() -> dict[str, dict[str, str]]:
    """All registered options: ``{key: {"type": type_key}}`` as in TVM."""
    return {k: {"type": _TYPE_KEYS[o.type], "description": o.description}
            for k, o in sorted(_REGISTRY.items())}


def config_default(key: str) -> Any:
    return _REGISTRY[key].default


def _convert(opt: ConfigOption, value: Any) -> Any:
    t = opt.type
    if t is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
    elif t is int:
        if isinstance(value, int):
            return int(value)
    elif t is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif t is str:
        if isinstance(value, str):
            return value
    elif t is list:
        if isinstance(value, list | tuple):
            return list(value)
    elif t is dict:
        if isinstance(value, dict):
            return dict(value)
    raise AttributeError(
        f"expect config {opt.key} to have type {t.__name__}, but received {value!r} "
        f"of type {type(value).__name__}, which cannot be converted to this type."
    )


def validate_config(config: dict | None) -> dict:
    """Check every key is registered and every value converts to its type (AttributeError)."""
    out: dict = {}
    for key, value in (config or {}).items():
        opt = _REGISTRY.get(key)
        if opt is None:
            close = difflib.get_close_matches(str(key), list(_REGISTRY), n=3)
            hint = f" Did you mean {close}?" if close else ""
            raise AttributeError(
                f"Invalid config option '{key}' candidates are: "
                + " ,".join(sorted(_REGISTRY)) + "." + hint
            )
        if value is None:
            raise AttributeError(f"config option {key} is None")
        out[key] = _convert(opt, value)
    return out


# ---------------------------------------------------------------- options known to the compiler
_R = register_pass_config
_R("relay.FuseOps.max_depth", int, 256, "maximum number of ops fused into one group")
_R("relay.FuseOps.link_params", bool, False, "link parameters into fused functions")
_R("relay.backend.use_auto_scheduler", bool, False, "use auto-scheduler schedules")
_R("relay.backend.use_meta_schedule", bool, False, "use meta-schedule schedules")
_R("relay.backend.use_meta_schedule_dispatch", int, 0, "meta-schedule dispatch mode")
_R("relay.backend.tir_converter", str, "default", "how Relay ops are converted to TIR")
_R("relay.fallback_device_type", int, 1, "device type for unannotated ops")
_R("relay.ToMixedPrecision.keep_orig_output_dtype", bool, False, "keep the output dtype")
_R("relay.remove_standalone_reshapes.enable", bool, True, "remove standalone reshapes")
_R("relay.frontend.fill_span", bool, True, "fill spans in frontends")
_R("relay.collage.tvm_max_depth", int, 8, "collage: max depth of TVM candidates")
_R("relay.collage.byoc_max_depth", int, 8, "collage: max depth of BYOC candidates")
_R("testing.immutable_module", bool, False, "fail when a pass modifies its input module")
_R("tir.noalias", bool, True, "assume buffers do not alias")
_R("tir.disable_vectorize", bool, False, "do not vectorize loops")
_R("tir.disable_assert", bool, False, "drop asserts in generated code")
_R("tir.UnrollLoop", dict, None, "loop unrolling options")
# minitvm's pipeline debugging options
_R("transform.verify_each", bool, False,
   "check well-formedness and IR-property promises after every pass")
_R("transform.dump_ir_dir", str, "", "write the IR after every pass into this directory")
_R("transform.bisect_limit", int, -1,
   "run only the first N passes of the pipeline (-1: all), printing which ran")
_R("transform.crash_reproducer", bool, False,
   "write a reproducer file when a pass raises (opt-in; also MINITVM_CRASH_REPRODUCER=1)")
_R("transform.reproducer_dir", str, "",
   "directory for crash reproducers (default: temp dir); setting it opts in to reproducers")
del _R

#: Options whose presence (with a non-default value) switches passes to the instrumented path.
DEBUG_KEYS = ("transform.verify_each", "transform.dump_ir_dir", "transform.bisect_limit",
              "testing.immutable_module")

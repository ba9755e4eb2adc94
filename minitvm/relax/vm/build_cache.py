"""Whole-build cache for ``relax.build``: a build seen before is loaded, not compiled again.

A warm ``relax.build`` through the per-kernel disk cache still runs the whole pipeline
(legalization, fusion, FuseTIR, constant folding), schedules every kernel and prints it to
find its cache key: 4-8 s for ResNet-50 or BERT-base where loading the result takes a fraction
of a second. The key is ``backend.whole_build``'s (the module's every field and constants'
bytes, the parameters' bytes, the PassContext, the lowering options, the package's files, the
host, the registered op attributes, ``MINITVM_*`` / ``TVM_*`` environment variables), shared
with ``relay.build``, for the target ``relax.build <target>``, plus what only this build reads:
the pipeline (by its registered factory's name), the exec mode, the schedule rule table and
this entry format.

An entry holds the executable's VM functions, function table, constants (tensors out of band,
mapped in place on a load) and kernel specs, and each distinct kernel's object code and LLVM
IR; a hit loads the object code (``jit.load_objects``) and makes the same Executable a fresh
build makes (its kernels without their PrimFuncs, which the VM does not read).

Not cached: where ``whole_build.enabled`` is off (no disk cache, ``MINITVM_DISABLE_BUILD_CACHE``,
``relay.backend.use_build_cache`` false, pass instruments), a pipeline given as a pass object
or registered from outside minitvm (code no key can see), a module with external codegen
modules (``RunCodegen``: they live in the process), a kernel without object code.
"""

from __future__ import annotations

import json

import numpy as np

from ...backend import whole_build
from ...backend.disk_cache import DiskCache
from ...backend.options import lowering_options
from ...runtime.module import Kernel
from ...runtime.relax_vm import Executable
from ...runtime.relax_vm.builtins import ShapeTuple
from ...runtime.relax_vm.executable import VMFunction
from ...schedule.knobs import SCHEDULE_KNOBS_ATTR, use_knobs
from ...transform.context import PassContext

__all__ = ["STATS", "build_key", "load", "store"]

FORMAT = "1"
# hits (executables loaded) and stores in this process (tests and benchmarks read them)
STATS = {"hits": 0, "stores": 0}


def _pipeline_text(pipeline) -> str | None:
    """How ``pipeline`` (relax.build's argument) enters the key: a registered pipeline's name
    and its factory's code name, "none"; None for a pass object or a foreign factory."""
    if pipeline is None:
        return "none"
    if not isinstance(pipeline, str):
        return None  # a pass object: its code (a user's function pass) is not seen
    from ..pipeline import _PIPELINES

    factory = _PIPELINES.get(pipeline)
    code = whole_build._attr_text(factory) if factory is not None else None
    return None if code is None else f"{pipeline}={code}"


def build_key(mod, params, target, pipeline, exec_mode: str,
              ctx: PassContext | None = None) -> tuple[DiskCache, str] | None:
    """``(disk cache, key)`` of ``relax.build(mod, target, params, pipeline, exec_mode)`` in
    ``ctx`` (default: current), or None when this build must not be cached (see the module)."""
    ctx = ctx if ctx is not None else PassContext.current()
    cache = whole_build.enabled(ctx)
    if cache is None or mod.get_attr("external_mods"):
        return None
    pipe = _pipeline_text(pipeline)
    rules = whole_build.schedule_rules_digest()
    if pipe is None or rules is None:
        return None
    knobs = mod.get_attr(SCHEDULE_KNOBS_ATTR)
    if knobs is not None:
        with use_knobs(knobs):
            options = lowering_options(ctx)
    else:
        options = lowering_options(ctx)
    extra = {"format": FORMAT, "pipeline": pipe, "exec_mode": exec_mode, "rules": rules}
    key = whole_build.build_key(mod, params, f"relax.build {target}", options, ctx, extra)
    return None if key is None else (cache, key)


# ------------------------------------------------------------------ entries
def _constant(c):
    """A VM constant as entry data: [kind, value]; TypeError for one that cannot be stored."""
    if isinstance(c, np.ndarray):
        return ["nd", c]
    if isinstance(c, ShapeTuple):
        return ["shape", [int(x) for x in c]]
    if c is None:
        return ["none", None]
    if isinstance(c, bool | int | float | str):
        return [type(c).__name__, c]
    raise TypeError(f"a VM constant of type {type(c).__name__} cannot be stored")


_SCALARS = {"bool": bool, "int": int, "float": float, "str": str}


def _from_constant(entry):
    kind, value = entry
    if kind == "nd":
        return value
    if kind == "shape":
        return ShapeTuple(int(x) for x in value)
    if kind == "none":
        return None
    return _SCALARS[kind](value)


def _chunks(ex: Executable, codes: dict) -> list | None:
    """The entry of ``ex`` as bytes-like chunks (``codes``: symbol -> (object code, pipeline
    level) of its kernels); None when part of it cannot be stored."""
    try:
        consts = [_constant(c) for c in ex.constants]
    except TypeError:
        return None
    recs = [rec for rec, _ in ex.kernels.values()]
    payload = {
        "functions": [[f.name, f.params, f.param_sinfo, f.num_regs, [list(i) for i in f.code]]
                      for f in ex.functions.values()],
        "func_table": [list(e) for e in ex.func_table],
        "constants": consts,
        # (a spec is JSON data, as export_library writes it)
        "kernels": [[name, rec.symbol, json.dumps(spec)] for name, (rec, spec)
                    in ex.kernels.items()],
        "objects": whole_build.object_entries(recs, codes),
    }
    return whole_build.payload_chunks(payload)


def store(cache: DiskCache, key: str, ex: Executable) -> bool:
    """Write ``ex`` under ``key`` on a thread (the caller goes on; the executable's constants
    must not be written in place meanwhile); False when it cannot be cached."""
    if ex.external_mods:
        return False
    codes = whole_build.kernel_objects(rec for rec, _ in ex.kernels.values())
    if codes is None:
        return False
    try:
        json.dumps([spec for _, spec in ex.kernels.values()])
    except (TypeError, ValueError):
        return False
    cache.put_build(key, lambda: _chunks(ex, codes), wait=False)
    STATS["stores"] += 1
    return True


def load(cache: DiskCache, key: str) -> Executable | None:
    """The executable stored under ``key``, or None (absent, damaged or not loadable here:
    built anew)."""
    data = cache.get_build(key)
    if data is None:
        return None
    try:
        payload = whole_build.read_payload(data)
        compiled = whole_build.load_objects(payload["objects"])
        kernels = {}
        for name, sym, spec in payload["kernels"]:
            c = compiled[sym]
            rec = Kernel(name, "native", symbol=sym, address=c.address, ir=c.source_ir,
                         compiled=c)
            kernels[name] = (rec, json.loads(spec))
        functions = [VMFunction(name, params, num_regs, code, sinfo)
                     for name, params, sinfo, num_regs, code in payload["functions"]]
        consts = [_from_constant(c) for c in payload["constants"]]
        ex = Executable(functions, payload["func_table"], consts, kernels)
    except Exception:  # a damaged or foreign entry: build from scratch instead
        return None
    STATS["hits"] += 1
    return ex

"""minitvm: Apache TVM's graph-level compiler in pure Python. ``import minitvm as tvm``."""

import gc as _gc
import sys as _sys

# The cyclic GC is paused while the package loads: its ~700 modules' objects all live on, and
# the full collections their allocations set off rescanned them for nothing (import CPU time,
# bytecode cached: 0.375 -> 0.312 s)
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    from . import ir, tir, runtime
    from . import arith
    from .ir import IRModule
    from . import transform, instrument
    from .runtime import cpu, cuda, gpu, device
    from .runtime import ndarray as nd
    from . import te, topi, schedule, codegen, backend
    from . import relay, relax, target, testing, contrib, parser
    from . import script
    from .runtime import get_global_func, register_func  # noqa: E402,F401
    from .runtime import DataType, DataTypeCode  # noqa: E402,F401  (tvm.DataType)
    from .relax.vm.build import compile  # noqa: E402,F401,A004  (tvm.compile)
    from . import compat
    from . import autotvm, meta_schedule  # noqa: E402  (TVM's tuning APIs, on minitvm.tune)
    from .meta_schedule import relax_passes as _relax_passes  # noqa: E402
    from . import dlight  # noqa: E402,F401  (tvm.dlight: GPU rules, a documented difference)
    from . import driver  # noqa: E402,F401  (tvm.driver.tvmc)
    from . import rpc  # noqa: E402,F401  (tvm.rpc: LocalSession; the network parts differ)
finally:
    if _gc_was_enabled:
        _gc.enable()
    del _gc_was_enabled

# TVM's relax.transform.MetaScheduleTuneTIR / ApplyDatabase sit above the tuner they drive
relax.transform.MetaScheduleTuneTIR = _relax_passes.MetaScheduleTuneTIR
relax.transform.MetaScheduleApplyDatabase = _relax_passes.MetaScheduleApplyDatabase

__version__ = "0.1.0"

# TVM exposes tvm.ir.transform / tvm.ir.instrument as the same modules (importable by those
# names too: ``import tvm.ir.instrument``), and tvm.runtime.convert as tvm.ir's converter.
ir.transform = transform
ir.instrument = instrument
_sys.modules.setdefault(__name__ + ".ir.transform", transform)
_sys.modules.setdefault(__name__ + ".ir.instrument", instrument)
runtime.convert = ir.convert
# tvm.error and tvm._ffi (TVM's error classes and registration entry points)
error = runtime.error
_ffi = runtime.ffi
TVMError = runtime.error.TVMError
_sys.modules.setdefault(__name__ + ".error", runtime.error)
_sys.modules.setdefault(__name__ + "._ffi", runtime.ffi)
# tvm.ir.Range is TIR's Range (one class); tvm.tir.layout / bijective_layout are the layouts
# the operator library defines; tvm.save_json / load_json and tvm.support as in TVM
ir.Range = tir.Range
from .relay.op.layout import BijectiveLayout, Layout, bijective_layout, layout  # noqa: E402

tir.Layout, tir.BijectiveLayout, tir.layout, tir.bijective_layout = (
    Layout, BijectiveLayout, layout, bijective_layout)
del BijectiveLayout, Layout, bijective_layout, layout
from .ir import load_json, save_json  # noqa: E402,F401
support = runtime.support
_sys.modules.setdefault(__name__ + ".support", runtime.support)
ir.expr.Range = tir.Range
# tvm.ir.adt: Relay's algebraic data types (TVM keeps them in tvm.ir)
ir.Constructor, ir.TypeData = relay.Constructor, relay.TypeData
ir.adt = relay.adt
_sys.modules.setdefault(__name__ + ".ir.adt", relay.adt)

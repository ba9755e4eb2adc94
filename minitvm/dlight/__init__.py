"""tvm.dlight: TVM's default GPU schedule rules (``ApplyDefaultSchedule(dl.gpu.Matmul(),
...)``). minitvm compiles for the CPU and schedules every kernel with its own built-in
schedules (tuned with ``relax.transform.MetaScheduleTuneTIR`` / ``minitvm.tune``), so the
names raise ``TVMDifferenceError`` saying what to use instead of an AttributeError."""

from __future__ import annotations

from ..runtime.error import missing_attribute

_GPU = ("minitvm builds for the host CPU and schedules kernels with its own CPU schedules when "
        "relax.build lowers them; there are no GPU schedule rules",
        "relax.build(mod, target='llvm') directly (after relax.get_pipeline('zero') if you "
        "like), and relax.transform.MetaScheduleTuneTIR / MetaScheduleApplyDatabase to tune")
_LEFT_OUT = {"gpu": _GPU, "ApplyDefaultSchedule": _GPU, "ScheduleRule": _GPU,
             "benchmark": _GPU}


def __getattr__(name: str):
    missing_attribute("tvm.dlight", name, _LEFT_OUT)

"""tvm.driver.tvmc: TVMC's Python API for the beginner's path::

    model = tvmc.load("my_model.onnx")              # TVMCModel (Relay module + params)
    records = tvmc.tune(model, target="llvm")        # optional: tuning records file
    package = tvmc.compile(model, target="llvm", tuning_records=records)   # TVMCPackage
    result = tvmc.run(package, device="cpu")         # TVMCResult: outputs and timings

Models load through the ``minitvm`` command's readers (ONNX, TFLite, torch.export ``.pt2``,
Relay text) or a ``TVMCModel.save`` archive. Devices other than the CPU, RPC and the
autoscheduler's own search are deliberate differences (``TVMDifferenceError``).
"""

from .model import TVMCException, TVMCModel, TVMCPackage, TVMCResult  # noqa: F401
from .runner import compile, load, run, tune  # noqa: F401,A004

__all__ = ["TVMCException", "TVMCModel", "TVMCPackage", "TVMCResult", "compile", "load",
           "run", "tune"]

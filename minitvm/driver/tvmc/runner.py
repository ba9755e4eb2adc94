"""``tvmc.load`` / ``tune`` / ``compile`` / ``run`` (TVM's ``tvm.driver.tvmc`` functions),
on the ``minitvm`` command's model readers, ``relay.build``, ``minitvm.tune`` and the graph
executor."""

from __future__ import annotations

import os

import numpy as np

from ... import relay, runtime, transform
from ...autotvm.differs import differs
from ...cli_model import CLIError, load_model
from ...runtime.graph_executor import GraphModule
from ...tune import apply_history_best, tune_relay
from .model import TVMCException, TVMCModel, TVMCPackage, TVMCResult

__all__ = ["load", "tune", "compile", "run"]


def load(path: str, shape_dict: dict | None = None, model_format: str | None = None
         ) -> TVMCModel:
    """Import a model file (``.onnx``, ``.tflite``, ``.pt2``, Relay text, or a
    ``TVMCModel.save`` archive ``.tar``) as a TVMCModel; ``shape_dict`` overrides input
    shapes."""
    if path.endswith(".tar") and model_format is None:
        return TVMCModel(model_path=path)
    try:
        mod, params, _ = load_model(path, {k: tuple(v) for k, v in (shape_dict or {}).items()})
    except CLIError as e:
        raise TVMCException(str(e)) from e
    return TVMCModel(mod, params)


def tune(tvmc_model: TVMCModel, target: str = "llvm", tuning_records: str | None = None,
         prior_records: str | None = None, enable_autoscheduler: bool = False,
         trials: int = 32, timeout: float = 10.0, hostname: str | None = None,
         runner=None) -> str:
    """Tune the model's workloads; returns the records file (``tuning_records``, else a new
    file in the model's temporary directory, removed with the model).
    ``enable_autoscheduler`` uses the same tuner: minitvm searches the knobs of its own
    schedules."""
    if hostname is not None:
        raise differs("tvmc.tune(hostname=...)", "minitvm tunes on this machine, without RPC",
                      "tvmc.tune without hostname / rpc_key")
    records = tuning_records or tvmc_model.default_tuning_records_path()
    if prior_records and prior_records != records and os.path.exists(prior_records):
        with open(prior_records) as src, open(records, "a") as dst:
            dst.write(src.read())
    tune_relay(tvmc_model.mod, tvmc_model.params, target, records=records, trials=trials,
               timeout=timeout, runner=runner)
    if not os.path.exists(records):
        open(records, "a").close()  # nothing tunable: an empty records file
    return records


def compile(tvmc_model: TVMCModel, target: str = "llvm", opt_level: int = 3,  # noqa: A001
            package_path: str | None = None, tuning_records: str | None = None,
            desired_layout: str | None = None) -> TVMCPackage:
    """Build the model for ``target``; the package goes to ``package_path`` (else the
    model's temporary directory, removed with the model). ``tuning_records`` (from
    ``tune``) schedule the tuned workloads;
    ``desired_layout`` ("NCHW"/"NHWC") converts the convolutions first."""
    mod = tvmc_model.mod
    if desired_layout is not None:
        layouts = {op: [desired_layout, "default"] for op in ("nn.conv2d", "qnn.conv2d")}
        with transform.PassContext(opt_level=3):
            mod = transform.Sequential([relay.transform.RemoveUnusedFunctions(),
                                        relay.transform.ConvertLayout(layouts)])(mod)
    with transform.PassContext(opt_level=opt_level):
        if tuning_records:
            with apply_history_best(tuning_records, target):
                lib = relay.build(mod, target=target, params=tvmc_model.params)
        else:
            lib = relay.build(mod, target=target, params=tvmc_model.params)
    path = package_path or tvmc_model.default_package_path()
    lib.export_library(path)
    return TVMCPackage(path)


def run(tvmc_package: TVMCPackage, device: str = "cpu", hostname: str | None = None,
        inputs: dict | None = None, fill_mode: str = "random", benchmark: bool = False,
        repeat: int = 10, number: int = 10, seed: int = 0) -> TVMCResult:
    """Run the package on the CPU. Inputs not in ``inputs`` are filled by ``fill_mode``
    ("random", "zeros", "ones"); the result holds ``output_<i>`` and, always, the times of
    ``repeat`` x ``number`` runs (``benchmark`` kept for TVM's signature)."""
    if device != "cpu":
        raise differs(f"tvmc.run(device={device!r})", "minitvm runs on the host CPU only",
                      "device='cpu'")
    if hostname is not None:
        raise differs("tvmc.run(hostname=...)", "minitvm runs locally, without RPC",
                      "tvmc.run without hostname / rpc_key")
    if fill_mode not in ("random", "zeros", "ones"):
        raise TVMCException(f"fill_mode must be 'random', 'zeros' or 'ones', got {fill_mode!r}")
    gm = GraphModule(tvmc_package.lib["default"](runtime.cpu()))
    given = dict(inputs or {})
    unknown = sorted(set(given) - set(gm.input_names))
    if unknown:
        raise TVMCException(f"unknown input(s) {unknown}; the model's inputs are "
                            f"{list(gm.input_names)}")
    rng = np.random.default_rng(seed)
    for name in gm.input_names:
        spec = gm.get_input(name)
        shape, dtype = tuple(spec.shape), str(spec.dtype)
        if name in given:
            value = np.asarray(given[name], dtype)
        elif fill_mode == "zeros":
            value = np.zeros(shape, dtype)
        elif fill_mode == "ones":
            value = np.ones(shape, dtype)
        elif dtype.startswith("float"):
            value = rng.random(shape).astype(dtype)
        else:
            value = rng.integers(0, 10, shape).astype(dtype)
        gm.set_input(name, value)
    gm.run()
    outputs = {f"output_{i}": gm.get_output(i).numpy() for i in range(gm.get_num_outputs())}
    times = gm.benchmark(runtime.cpu(), repeat=max(1, repeat), number=max(1, number))
    return TVMCResult(outputs, times)

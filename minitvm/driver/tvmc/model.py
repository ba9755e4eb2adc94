"""TVMC's model, package and result objects (``tvm.driver.tvmc.model``)."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile

import numpy as np

from ... import relay, runtime
from ...ir import load_json, save_json

__all__ = ["TVMCException", "TVMCModel", "TVMCPackage", "TVMCResult"]


class TVMCException(ValueError):
    """A TVMC error the user can fix (a missing file, a wrong input name...)."""


class TVMCModel:
    """A Relay module and its parameters; ``TVMCModel(model_path=...)`` reads a ``save``d one."""

    def __init__(self, mod=None, params=None, model_path: str | None = None):
        if (mod is None) == (model_path is None):
            raise TVMCException("TVMCModel takes either mod (and params) or model_path")
        if model_path is not None:
            mod, params = self._read(model_path)
        self.mod = mod
        self.params = dict(params or {})
        self._tmp_dir: tempfile.TemporaryDirectory | None = None

    def _scratch(self, name: str) -> str:
        """A path in this model's own temporary directory, removed with the model (or at
        exit), as TVM's TVMCModel keeps its default outputs."""
        if self._tmp_dir is None:
            self._tmp_dir = tempfile.TemporaryDirectory(prefix="tvmc_")
        return os.path.join(self._tmp_dir.name, name)

    def default_tuning_records_path(self) -> str:
        """Where ``tvmc.tune`` writes records when given no ``tuning_records``."""
        return self._scratch("tuning_records.jsonl")

    def default_package_path(self) -> str:
        """Where ``tvmc.compile`` writes the package when given no ``package_path``."""
        return self._scratch("model_package.tar")

    @staticmethod
    def _read(path: str):
        if not os.path.exists(path):
            raise TVMCException(f"no such TVMC model file: {path}")
        with tarfile.open(path) as tar:
            names = tar.getnames()
            if "model.json" not in names or "model.params" not in names:
                raise TVMCException(f"{path} is not a TVMCModel archive (model.json and "
                                    "model.params expected)")
            mod = load_json(tar.extractfile("model.json").read().decode())
            params = relay.load_param_dict(tar.extractfile("model.params").read())
        return mod, params

    def save(self, model_path: str) -> None:
        """Write the module (JSON) and parameters to a tar archive."""
        with tarfile.open(model_path, "w") as tar:
            for name, data in (("model.json", save_json(self.mod).encode()),
                               ("model.params", runtime.save_param_dict(self.params))):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    def summary(self, file=None) -> None:
        """Print the Relay program."""
        print(self.mod, file=file)

    def __repr__(self) -> str:
        return f"TVMCModel(main inputs={[p.name_hint for p in self.mod['main'].params]}, " \
               f"{len(self.params)} params)"


class TVMCPackage:
    """A compiled model on disk (``tvmc.compile``'s ``package_path``): the graph executor
    library that ``tvmc.run`` loads."""

    def __init__(self, package_path: str):
        if not os.path.exists(package_path):
            raise TVMCException(f"no such TVMC package: {package_path}")
        self.package_path = package_path
        self.lib = runtime.load_module(package_path)
        if not hasattr(self.lib, "get_graph_json"):
            raise TVMCException(f"{package_path} is not a graph-executor package written by "
                                "tvmc.compile")
        self.graph = self.lib.get_graph_json()
        self.params = self.lib.get_params()

    def __repr__(self) -> str:
        return f"TVMCPackage({self.package_path!r})"


class TVMCResult:
    """The outputs of ``tvmc.run`` (``output_0``, ...) and, with timing, its times."""

    def __init__(self, outputs: dict[str, np.ndarray], times=None):
        self.outputs = outputs
        self.times = times

    def format_times(self) -> str:
        return str(self.times) if self.times is not None else "(not timed)"

    def get_output(self, name: str) -> np.ndarray:
        if name not in self.outputs:
            raise TVMCException(f"no output {name!r}; the outputs are {list(self.outputs)}")
        return self.outputs[name]

    def save(self, output_path: str) -> None:
        np.savez(output_path, **self.outputs)

    def __str__(self) -> str:
        return f"{self.format_times()}\nOutput Names:\n {list(self.outputs)}"

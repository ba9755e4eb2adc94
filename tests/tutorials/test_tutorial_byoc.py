"""TVM's Relax "Bring Your Own Codegen" how-to with ``import minitvm as tvm``: the backend
probes it guards its build cells with (``tvm.get_global_func("relax.ext.tensorrt", True)``,
``tvm.cuda(0).exist``), the ConvReLU model, ``relax.transform.BindParams`` and
``partition_for_tensorrt`` (``FuseOpsByPattern`` over the ``tensorrt.*`` patterns +
``MergeCompositeFunctions``), checked on the printed partitioned module. Its build-and-run cells
need the TensorRT codegen and a CUDA GPU: in minitvm the probes say they are absent (so the
tutorial skips them, as on TVM without them) and ``RunCodegen`` raises ``TVMDifferenceError``.
The example NPU backend is not provided (its patterns are not registered)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
import minitvm.relax.backend.contrib.tensorrt  # noqa: F401  (registers the patterns)
from minitvm import relax
from minitvm.autotvm import TVMDifferenceError
from minitvm.relax.backend.contrib.tensorrt import partition_for_tensorrt
from minitvm.relax.backend.pattern_registry import get_patterns_with_prefix
from minitvm.relax.transform import FuseOpsByPattern, MergeCompositeFunctions, RunCodegen
from minitvm.script import relax as R


@tvm.script.ir_module
class ConvReLU:
    @R.function
    def main(data: R.Tensor((1, 3, 32, 32), "float32"),
             weight: R.Tensor((16, 3, 3, 3), "float32")) -> R.Tensor((1, 16, 30, 30), "float32"):
        with R.dataflow():
            conv = relax.op.nn.conv2d(data, weight)
            out = relax.op.nn.relu(conv)
            R.output(out)
        return out


def test_backend_probes_report_absent_backends():
    assert tvm.get_global_func("relax.ext.tensorrt", True) is None
    assert tvm.get_global_func("relax.is_tensorrt_runtime_enabled", True) is None
    assert tvm.get_global_func("relax.ext.example_npu", True) is None
    assert not tvm.cuda(0).exist
    assert get_patterns_with_prefix("example_npu") == []


def test_partition_for_tensorrt():
    names = {p.name for p in get_patterns_with_prefix("tensorrt")}
    assert {"tensorrt.nn.conv2d", "tensorrt.nn.relu", "tensorrt.add",
            "tensorrt.nn.batch_matmul", "tensorrt.transpose"} <= names
    weight = np.random.default_rng(0).standard_normal((16, 3, 3, 3)).astype("float32")
    mod = relax.transform.BindParams("main", {"weight": weight})(ConvReLU)
    mod = partition_for_tensorrt(mod)
    offloaded = [gv.name_hint for gv, f in mod.functions.items()
                 if f.attrs is not None and f.attrs.get("Codegen") == "tensorrt"]
    assert offloaded == ["fused_relax_nn_conv2d_relax_nn_relu"]  # the two composites, merged
    text = mod.script()
    assert '"Composite": "tensorrt.nn.conv2d"' in text and '"Composite": "tensorrt.nn.relu"' in text
    assert 'metadata["relax.expr.Constant"][0]' in text  # the bound weight, inside the group
    assert [p.name_hint for p in mod["main"].params] == ["data"]

    # the same by hand, as the tutorial's NPU section does, with the codegen annotation
    by_hand = FuseOpsByPattern(get_patterns_with_prefix("tensorrt"), bind_constants=False,
                               annotate_codegen=True)(ConvReLU)
    by_hand = MergeCompositeFunctions()(by_hand)
    assert len(by_hand["main"].params) == 2  # the weight stays an argument

    with pytest.raises(TVMDifferenceError, match="no tensorrt codegen"):
        RunCodegen()(mod)

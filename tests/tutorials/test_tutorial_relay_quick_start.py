"""TVM's "Quick Start Tutorial for Compiling Deep Learning Models", as a TVM user types it with
``import minitvm as tvm``: a network from ``relay.testing``, ``relay.build`` at opt_level 3,
the graph executor (``GraphModule(lib["default"](dev))``), timing through
``module.module.time_evaluator``, and saving/loading the compiled library.

The tutorial's ResNet-18 is swapped for the MobileNet it names as an alternative, at 32x32 and
10 classes, to keep the build short; the steps are the tutorial's."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor, utils
from minitvm.relay import testing

NUM_CLASS = 10
DATA_SHAPE = (1, 3, 32, 32)


def he_weights(params: dict) -> dict:
    """Weights redrawn with He scaling: the workload's own init gives near-uniform softmax
    outputs, which would hide a wrong result."""
    rng = np.random.default_rng(1)
    out = dict(params)
    for name, value in params.items():
        if name.endswith("weight"):
            shape = value.shape
            fan_in = int(np.prod(shape[1:]))
            out[name] = tvm.nd.array((rng.standard_normal(shape) * np.sqrt(2.0 / fan_in))
                                     .astype("float32"))
    return out


@pytest.fixture(scope="module")
def built():
    mod, params = testing.mobilenet.get_workload(batch_size=1, image_shape=DATA_SHAPE[1:],
                                                 num_classes=NUM_CLASS)
    params = he_weights(params)
    target = tvm.target.Target("llvm")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target, params=params)
    data = np.random.default_rng(0).uniform(-1, 1, size=DATA_SHAPE).astype("float32")
    # the reference: the same network run by the debug interpreter (numpy)
    ref = relay.create_executor("debug", mod=mod, device=tvm.cpu(0), target="llvm") \
        .evaluate()(data, **params).numpy()
    return mod, params, lib, data, ref


def run_graph(lib, data, dev):
    module = graph_executor.GraphModule(lib["default"](dev))
    module.set_input("data", data)
    module.run()
    return module, module.get_output(0, tvm.nd.empty((1, NUM_CLASS))).numpy()


def test_build_and_run(built):
    mod, _, lib, data, ref = built
    assert "nn.conv2d" in mod.astext(show_meta_data=False)
    _, out = run_graph(lib, data, tvm.cpu())
    assert out.shape == (1, NUM_CLASS)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)  # the model ends in softmax
    assert out.max() - out.min() > 1e-3  # (a real spread of class scores, far above atol)


def test_time_evaluator_through_module(built):
    """The tutorials time a model with ``module.module.time_evaluator("run", dev, ...)``."""
    _, _, lib, data, _ = built
    dev = tvm.cpu()
    module, _ = run_graph(lib, data, dev)
    assert module.module.type_key == "GraphExecutor"
    ftimer = module.module.time_evaluator("run", dev, number=2, repeat=3)
    prof = ftimer()
    res = np.array(prof.results) * 1000
    assert res.shape == (3,) and (res > 0).all()
    text = str(prof)  # TVM's summary table, in milliseconds
    lines = text.splitlines()
    assert lines[0] == "Execution time summary:"
    assert lines[1].split() == ["mean", "(ms)", "median", "(ms)", "max", "(ms)", "min", "(ms)",
                                "std", "(ms)"]
    assert float(lines[2].split()[0]) == pytest.approx(prof.mean * 1000, rel=1e-3, abs=1e-4)
    # functions by name on the runtime module work on the same storage
    module.module["set_input"]("data", np.zeros(DATA_SHAPE, "float32"))
    module.module.get_function("run")()
    assert not module.get_input("data").numpy().any()
    zero_out = module.get_output(0).numpy()
    assert np.abs(zero_out - run_graph(lib, data, dev)[1]).max() > 1e-3
    with pytest.raises(AttributeError, match="no function 'nope'"):
        module.module["nope"]
    with pytest.raises(ValueError, match="only 'run'"):
        module.module.time_evaluator("get_output", dev)


def test_benchmark(built):
    _, _, lib, data, _ = built
    module, _ = run_graph(lib, data, tvm.cpu())
    res = module.benchmark(tvm.cpu(), number=1, repeat=2)
    assert len(res.results) == 2 and res.min <= res.mean <= res.max


@pytest.mark.parametrize("name", ["deploy_lib.tar", "deploy_lib.so"])
def test_export_and_load(built, name):
    _, _, lib, data, ref = built
    temp = utils.tempdir()
    path_lib = temp.relpath(name)
    lib.export_library(path_lib)
    assert name in temp.listdir()
    loaded = tvm.runtime.load_module(path_lib)
    dev = tvm.cpu()
    module = graph_executor.GraphModule(loaded["default"](dev))
    module.run(data=tvm.nd.array(data))
    np.testing.assert_allclose(module.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-6)


def test_factory_accessors_and_old_style_create(built):
    """``get_graph_json``/``get_lib``/``get_params`` and the pre-0.8
    ``graph, lib, params = relay.build(...)`` with ``graph_executor.create``."""
    _, _, lib, data, ref = built
    graph_json, mlib, params = lib
    assert graph_json == lib.get_graph_json() and '"nodes"' in graph_json
    assert mlib is lib.get_lib()
    assert set(params) == set(lib.get_params())
    m = graph_executor.create(graph_json, mlib, tvm.cpu(0))
    m.set_input(**params)
    m.set_input("data", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-6)

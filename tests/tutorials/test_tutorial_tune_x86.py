"""TVM's "Auto-tuning a Convolutional Network for x86 CPU" tutorial with
``import minitvm as tvm``: ``autotvm.task.extract_from_program`` with ``ops=(relay.op.get(
"nn.conv2d"),)``, an ``XGBTuner`` per task with ``measure_option(LocalBuilder(), LocalRunner(
...))`` and the ``progress_bar`` / ``log_to_file`` callbacks, then ``apply_history_best`` around
``relay.build``; and MetaSchedule's ``relay_integration.tune_relay`` / ``compile_relay``.
A one-conv network and one trial keep the real measurements short. Where minitvm
deliberately differs (RPC, grid search, graph tuner, templates, TVM's own logs) the error says
so and names the replacement."""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitvm as tvm
from minitvm import autotvm, relay
from minitvm import meta_schedule as ms
from minitvm.autotvm import TVMDifferenceError
from minitvm.autotvm.tuner import GATuner, RandomTuner, XGBTuner


def conv_net():
    data = relay.var("data", shape=(1, 4, 8, 8))
    weight = relay.var("weight", shape=(8, 4, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(data, weight, padding=(1, 1), channels=8,
                                      kernel_size=(3, 3)))
    y = relay.nn.dense(relay.nn.batch_flatten(y), relay.var("fc", shape=(4, 8 * 8 * 8)))
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    rng = np.random.default_rng(0)
    params = {"weight": rng.standard_normal((8, 4, 3, 3)).astype("float32"),
              "fc": rng.standard_normal((4, 512)).astype("float32")}
    return mod, params


def run(lib, x):
    m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("data", x)
    m.run()
    return m.get_output(0).numpy()


def reference(params, x):
    w = params["weight"]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 8, 8, 8))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 8, j:j + 8], w[:, :, i, j])
    return np.maximum(out, 0).reshape(1, -1) @ params["fc"].T


def test_extract_tasks_filtered_by_op():
    mod, params = conv_net()
    target = tvm.target.Target("llvm")
    tasks = autotvm.task.extract_from_program(mod["main"], target=target, params=params,
                                              ops=(relay.op.get("nn.conv2d"),))
    assert len(tasks) == 1
    task = tasks[0]
    assert task.name.startswith("conv2d") and task.args[0] == [1, 4, 8, 8]
    assert len(task.config_space) > 1 and "len=" in repr(task.config_space)
    # the dense workload (if minitvm tunes one) is dropped by the filter; no ops: all tasks
    every = autotvm.task.extract_from_program(mod, params=params, target=target)
    assert {t.name for t in tasks} <= {t.name for t in every}
    assert autotvm.task.extract_from_program(mod, params, target,
                                             ops=(relay.op.get("nn.batch_matmul"),)) == []


def test_tune_then_apply_history_best(tmp_path):
    mod, params = conv_net()
    target = "llvm"
    log_file = str(tmp_path / "tuning.log")
    tasks = autotvm.task.extract_from_program(mod["main"], target=target, params=params,
                                              ops=(relay.op.get("nn.conv2d"),))
    measure_option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=60),  # (a generous limit: CI machines are shared)
        runner=autotvm.LocalRunner(number=1, repeat=10, min_repeat_ms=0,
                                   enable_cpu_cache_flush=True))
    for i, task in enumerate(tasks):
        prefix = f"[Task {i + 1:2d}/{len(tasks):2d}] "
        tuner_obj = XGBTuner(task, loss_type="reg")
        n_trial = min(1, len(task.config_space))  # (the tutorial: 1500 or the space)
        tuner_obj.tune(n_trial=n_trial, early_stopping=None, measure_option=measure_option,
                       callbacks=[autotvm.callback.progress_bar(n_trial, prefix=prefix),
                                  autotvm.callback.log_to_file(log_file)])
        assert tuner_obj.best_config is not None and tuner_obj.best_cost > 0
    lines = [json.loads(s) for s in open(log_file) if s.strip()]
    assert len(lines) >= 1 and all(rec["workload"][0].startswith("conv2d") for rec in lines)
    records = autotvm.record.load_from_file(log_file)
    assert len(records) == len(lines)
    autotvm.record.pick_best(log_file, str(tmp_path / "best.log"))
    assert len(autotvm.record.load_from_file(str(tmp_path / "best.log"))) == 1

    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype("float32")
    with autotvm.apply_history_best(log_file):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target=target, params=params)
    np.testing.assert_allclose(run(lib, x), reference(params, x), rtol=1e-4, atol=1e-3)


def test_meta_schedule_relay_integration(tmp_path):
    mod, params = conv_net()
    target = tvm.target.Target("llvm")
    database = ms.relay_integration.tune_relay(mod=mod, params=params, target=target,
                                               work_dir=str(tmp_path), max_trials_global=1)
    assert len(database) >= 1 and (tmp_path / "records.jsonl").exists()
    lib = ms.relay_integration.compile_relay(database, mod, target, params)
    x = np.random.default_rng(2).standard_normal((1, 4, 8, 8)).astype("float32")
    np.testing.assert_allclose(run(lib, x), reference(params, x), rtol=1e-4, atol=1e-3)
    with pytest.raises(TVMDifferenceError, match="not MetaSchedule databases"):
        ms.relay_integration.compile_relay(object(), mod, target, params)
    with pytest.raises(ValueError, match="strategy must be one of"):
        ms.relay_integration.tune_relay(mod, params, target, None, 1, strategy="sa")


def test_tuner_kinds_map_to_minitvm_search():
    mod, params = conv_net()
    (task,) = autotvm.task.extract_from_program(mod, params, "llvm",
                                                ops=(relay.op.get("nn.conv2d"),))
    assert XGBTuner(task).strategy == GATuner(task).strategy == "evolutionary"
    assert RandomTuner(task).strategy == "random"
    with pytest.raises(TypeError, match="extract_from_program"):
        XGBTuner(object())


@pytest.mark.parametrize("use, match", [
    (lambda: autotvm.RPCRunner("key", host="127.0.0.1", port=9190), "no RPC"),
    (lambda: autotvm.tuner.GridSearchTuner, "RandomTuner"),
    (lambda: autotvm.graph_tuner.DefaultGraphTuner, "no graph tuner"),
    (lambda: autotvm.template, "templates are not supported"),
    (lambda: autotvm.task.get_config, "templates are not supported"),
    (lambda: ms.tune_tir, "does not search TIR schedules"),
    (lambda: ms.database.JSONDatabase, "does not search TIR schedules"),
])
def test_deliberate_differences_say_what_to_use(use, match):
    with pytest.raises(TVMDifferenceError, match=match) as info:
        use()
    assert "minitvm differs from TVM" in str(info.value) and "Use " in str(info.value)
    assert isinstance(info.value, NotImplementedError)


def test_unknown_names_stay_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        autotvm.nonexistent  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        ms.nonexistent  # noqa: B018


def test_tvm_autotvm_log_is_a_clear_error(tmp_path):
    log = tmp_path / "tvm.log"
    log.write_text(json.dumps({"input": ["llvm -keys=cpu", "conv2d_NCHWc.x86", [], {}],
                               "config": {"index": 1}, "result": [[1e-4], 0, 1.0, 0],
                               "version": 0.2, "tvm_version": "0.8.0"}) + "\n")
    with pytest.raises(TVMDifferenceError, match="written by TVM's AutoTVM"):
        autotvm.apply_history_best(str(log))


def test_measure_option_and_callback_errors():
    with pytest.raises(ValueError, match="timeout must be positive"):
        autotvm.LocalRunner(timeout=0)
    with pytest.raises(TypeError, match="LocalRunner"):
        autotvm.measure_option(runner=object())
    with pytest.raises(TypeError, match="LocalBuilder"):
        autotvm.measure_option(builder=object())
    option = autotvm.measure_option(autotvm.LocalBuilder(timeout=5), autotvm.LocalRunner(7))
    assert option["timeout"] == 12  # a candidate is built and run in one step
    with pytest.raises(TypeError, match="file path"):
        autotvm.callback.log_to_file(object())
    mod, params = conv_net()
    (task,) = autotvm.task.extract_from_program(mod, params, "llvm",
                                                ops=(relay.op.get("nn.conv2d"),))
    with pytest.raises(TVMDifferenceError, match="user callbacks"):
        RandomTuner(task).tune(1, callbacks=[lambda tuner, inputs, results: None])

"""Tasks measured as the model runs them: the fused function (op + epilogue) as a program."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from tune_helpers import DENSE, small_mlp

import minitvm
from minitvm import relay
from minitvm.tune import extract_tasks, fused, run_candidate, workload


def _residual_conv():
    """conv2d + bias + residual add + relu: one fused function with two constant inputs."""
    rng = np.random.default_rng(3)
    x = relay.var("x", shape=(1, 8, 10, 10))
    r = relay.var("r", shape=(1, 16, 10, 10))
    w = relay.const(rng.standard_normal((16, 8, 3, 3)).astype("float32"))
    b = relay.const(rng.standard_normal(16).astype("float32"))
    y = relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1), channels=16,
                                          kernel_size=(3, 3)), b)
    return minitvm.IRModule.from_expr(relay.Function([x, r], relay.nn.relu(y + r)))


def test_a_task_keeps_its_fused_function_with_the_constants_named():
    (task,) = extract_tasks(_residual_conv())
    spec = json.loads(task.program)
    mod = relay.parser.parse(spec["text"])
    text = spec["text"]
    assert "nn.conv2d" in text and "nn.relu" in text and text.count("add(") == 2, text
    params = mod["main"].params
    assert len(params) == 4  # data, weight, bias, residual
    shapes = {p.name_hint: tuple(int(d) for d in p.type_annotation.shape) for p in params}
    assert sorted(shapes[n] for n in spec["consts"]) == [(1, 16, 1, 1), (16, 8, 3, 3)]
    assert pickle.loads(pickle.dumps(task)).program == task.program  # (to a worker)


def test_the_fused_program_is_built_measured_and_checked():
    (task,) = extract_tasks(_residual_conv())
    mod, params, inputs = fused.fused_program(task.program)
    assert set(params) | set(inputs) == {p.name_hint for p in mod["main"].params}
    assert all(-1 <= v.min() and v.max() < 1 for v in [*params.values(), *inputs.values()])
    gm, _ = fused.build_fused(task.program, task.workload, None)
    gm.run()
    ref = fused.reference_output(task.program)
    assert ref.shape == (1, 16, 10, 10) and (ref >= 0).all()
    np.testing.assert_allclose(gm.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)
    res = run_candidate(task, task.space.default())
    assert res.ok and len(res.costs) == 5


def test_a_program_that_misses_its_workload_is_an_error():
    (task,) = extract_tasks(small_mlp())
    other = ["dense", 16, 48, 32, "float32"]  # a key this program never asks for
    with pytest.raises(RuntimeError, match="did not reach its schedule"):
        fused.build_fused(task.program, other, None)


def test_an_unparsable_fused_function_keeps_the_op_alone(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("no parser today")

    monkeypatch.setattr(minitvm.relay.parser, "parse", broken)
    (task,) = extract_tasks(small_mlp())
    assert task.workload == DENSE and task.program is None
    assert run_candidate(task, task.space.default()).ok


def test_non_finite_outputs_must_match_the_reference():
    class Out:
        def __init__(self, a):
            self.a = a

        def get_output(self, _):
            return self

        def numpy(self):
            return self.a

    ref = np.array([1.0, np.inf, np.nan], "float32")
    workload.check_output(Out(ref.copy()), DENSE, reference=ref)
    for bad in ([1.0, -np.inf, np.nan], [1.0, np.inf, 0.0], [1.5, np.inf, np.nan]):
        with pytest.raises(ValueError, match="wrong result"):
            workload.check_output(Out(np.array(bad, "float32")), DENSE, reference=ref)


def test_a_program_that_does_not_build_is_dropped_at_extraction(monkeypatch):
    """A fused function that parses but cannot be built alone would fail every candidate:
    ``extract_tasks`` builds it once with the defaults and otherwise keeps the op alone."""
    def broken(spec, key, knobs, target="llvm"):
        raise RuntimeError("this program does not build")

    monkeypatch.setattr(fused, "build_fused", broken)
    (task,) = extract_tasks(small_mlp())
    assert task.workload == DENSE and task.program is None
    assert fused.checked_spec(None, DENSE) is None

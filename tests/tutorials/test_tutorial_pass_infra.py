"""TVM's "How to Use TVM Pass Infra" and "How to Use TVM Pass Instrument" tutorials with
``import minitvm as tvm``: passes applied one by one and as a ``Sequential`` under a
``PassContext`` (opt_level, disabled_pass, required_pass), ``AlterOpLayout`` under a target, a
custom ``function_pass`` with an ``ExprMutator``, ``PrintIR``, ``PassTimingInstrument``, and
user instruments made with ``@pass_instrument`` (counting calls, skipping a pass, raising), and
the instrument tutorial's exception handling: which enter / exit hooks run when an
instrument's enter, exit or before-pass hook raises, with and without a ``with``."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.testing import resnet


def example():
    """The tutorial's example: a conv2d followed by constant arithmetic and a repeated add."""
    shape = (1, 64, 54, 54)
    c_data = np.empty(shape).astype("float32")
    c = relay.const(c_data)
    weight = relay.var("weight", shape=(64, 64, 3, 3))
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    conv = relay.nn.conv2d(x, weight)
    y = relay.add(c, c)
    y = relay.multiply(y, relay.const(2, "float32"))
    y = relay.add(conv, y)
    z = relay.add(y, c)
    z1 = relay.add(y, c)
    z2 = relay.add(z, z1)
    return relay.Function([x, weight], z2)


def count_calls(mod, name=None) -> int:
    n = [0]

    def visit(e):
        if isinstance(e, relay.Call) and (name is None or getattr(e.op, "name", "") == name):
            n[0] += 1

    relay.analysis.post_order_visit(mod["main"], visit)
    return n[0]


def test_passes_one_by_one():
    mod = tvm.IRModule.from_expr(example())
    fold_const = relay.transform.FoldConstant()
    mod = fold_const(mod)
    # add(c, c) * 2 folded into one constant
    assert count_calls(mod, "multiply") == 0
    mod = relay.transform.EliminateCommonSubexpr()(mod)
    assert count_calls(mod, "add") == 3  # the two equal adds became one
    mod = relay.transform.FuseOps(fuse_opt_level=0)(mod)
    text = mod.astext(show_meta_data=False)
    # fuse_opt_level=0: every operator in a primitive function of its own
    assert text.count("Primitive=1") == 4


def test_sequential_opt_levels_and_disabled_pass():
    f = example()
    mod = tvm.IRModule.from_expr(f)
    seq = tvm.transform.Sequential([relay.transform.FoldConstant(),
                                    relay.transform.EliminateCommonSubexpr(),
                                    relay.transform.FuseOps(fuse_opt_level=2)])
    # default opt_level 2: EliminateCommonSubexpr (level 3) is skipped
    mod1 = seq(mod)
    assert mod1.astext().count(" add(") == 4 and "Primitive=1" in mod1.astext()
    with tvm.transform.PassContext(opt_level=3):
        mod2 = seq(mod)
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["EliminateCommonSubexpr"]):
        mod3 = seq(mod)
    # (structurally the two are equal, as in TVM: a shared add and two equal adds compare
    # alike; the text shows the one CSE removed)
    assert mod3.astext().count(" add(") == mod2.astext().count(" add(") + 1
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["EliminateCommonSubexpr"]):
        seq_wo = tvm.transform.Sequential([relay.transform.FoldConstant(),
                                           relay.transform.FuseOps(fuse_opt_level=2)])
        assert tvm.ir.structural_equal(seq_wo(mod), mod3)
    # (minitvm alters conv layouts only for a target that names its CPU: -mcpu)
    with tvm.target.Target("llvm -mcpu=skylake-avx512"), tvm.transform.PassContext(opt_level=3):
        laid = tvm.transform.Sequential([relay.transform.AlterOpLayout()])(mod)
    text = laid.astext(show_meta_data=False)
    assert "layout_transform" in text and 'data_layout="NCHW' in text


def test_custom_function_pass_and_print_ir(capsys):
    @relay.transform.function_pass(opt_level=1)
    class CustomPipeline:
        """Multiply every constant by ``multiplier``."""

        def __init__(self, multiplier):
            self.multiplier = multiplier

        def transform_function(self, func, mod, ctx):
            obj = self

            class ReplaceConstant(tvm.relay.ExprMutator):
                def visit_constant(self, c):
                    return relay.multiply(obj.multiplier, c)

            return ReplaceConstant().visit(func)

    f = example()
    mod = tvm.IRModule.from_expr(f)
    custom_pass = CustomPipeline(multiplier=relay.const(3, "float32"))
    assert custom_pass.info.name == "CustomPipeline"
    mod3 = custom_pass(mod)
    # one multiply per distinct constant (c, used three times, is one node; and 2.0)
    assert count_calls(mod3, "multiply") == count_calls(mod, "multiply") + 2
    seq = tvm.transform.Sequential([relay.transform.FoldConstant(), tvm.transform.PrintIR(),
                                    relay.transform.EliminateCommonSubexpr()])
    with tvm.transform.PassContext(opt_level=3):
        seq(mod)
    out = capsys.readouterr().err  # (TVM logs it; minitvm prints to stderr)
    assert "PrintIR():" in out and "def @main(%x: Tensor[(1, 64, 56, 56), float32]" in out


def test_pass_timing_instrument():
    mod, params = resnet.get_workload(num_layers=8, batch_size=1, image_shape=(3, 16, 16),
                                      num_classes=10)
    timing_inst = tvm.instrument.PassTimingInstrument()
    with tvm.transform.PassContext(instruments=[timing_inst]):
        mod2 = relay.transform.InferType()(mod)
        mod2 = relay.transform.FoldScaleAxis()(mod2)
        profiles = timing_inst.render()
    assert "InferType:" in profiles and "FoldScaleAxis:" in profiles
    # the pass context's instruments can be replaced on the current context
    cur = tvm.transform.PassContext.current()
    cur.override_instruments([timing_inst])
    relay.transform.InferType()(mod)
    assert "InferType:" in timing_inst.render()
    cur.override_instruments([])


def test_custom_instruments():
    mod = tvm.IRModule.from_expr(example())

    @tvm.instrument.pass_instrument
    class RelayCallNodeDiffer:
        def __init__(self):
            self._depth = 0
            self.diffs = {}
            self._before = []
            self.entered = self.exited = 0

        def enter_pass_ctx(self):
            self.entered += 1

        def exit_pass_ctx(self):
            self.exited += 1

        def run_before_pass(self, mod, info):
            self._before.append(count_calls(mod))

        def run_after_pass(self, mod, info):
            self.diffs[info.name] = count_calls(mod) - self._before.pop()

    call_differ = RelayCallNodeDiffer()
    with tvm.transform.PassContext(opt_level=3, instruments=[call_differ]):
        mod2 = relay.transform.FoldConstant()(mod)
        mod2 = relay.transform.EliminateCommonSubexpr()(mod2)
    assert call_differ.entered == call_differ.exited == 1
    assert call_differ.diffs["FoldConstant"] == -2  # add(c, c) and its multiply
    assert call_differ.diffs["EliminateCommonSubexpr"] == -1

    @tvm.instrument.pass_instrument
    class SkipFold:
        def should_run(self, mod, info):
            return info.name != "FoldConstant"

    with tvm.transform.PassContext(instruments=[SkipFold()]):
        assert tvm.ir.structural_equal(relay.transform.FoldConstant()(mod), mod)

    @tvm.instrument.pass_instrument
    class PassFine:
        def run_before_pass(self, mod, info):
            raise RuntimeError("refused " + info.name)

    with pytest.raises(RuntimeError, match="refused FoldConstant"):
        with tvm.transform.PassContext(instruments=[PassFine()]):
            relay.transform.FoldConstant()(mod)


class _Traced:
    """The instrument tutorial's ``PassExampleBase``: each hook records ``(name, hook)``."""

    log: list = []

    def __init__(self, name):
        self._name = name

    def _say(self, what):
        _Traced.log.append(f"{self._name} {what}")

    def enter_pass_ctx(self):
        self._say("enter")

    def exit_pass_ctx(self):
        self._say("exit")

    def should_run(self, mod, info):
        self._say("should_run")
        return True

    def run_before_pass(self, mod, info):
        self._say("before")

    def run_after_pass(self, mod, info):
        self._say("after")


@tvm.instrument.pass_instrument
class _Fine(_Traced):
    pass


@tvm.instrument.pass_instrument
class _BadEnter(_Traced):
    def enter_pass_ctx(self):
        raise ValueError(f"{self._name} bad enter_pass_ctx")


@tvm.instrument.pass_instrument
class _BadExit(_Traced):
    def exit_pass_ctx(self):
        raise ValueError(f"{self._name} bad exit_pass_ctx")


@tvm.instrument.pass_instrument
class _BadBefore(_Traced):
    def run_before_pass(self, mod, info):
        raise ValueError(f"{self._name} bad run_before_pass")


@pytest.mark.parametrize("bad, during, after_override", [
    # enter fails: the instruments that entered exit, instrumentation is off, nothing later
    (_BadEnter, ["A enter", "A exit"], []),
    # exit fails: the instruments after it never exit; instrumentation is off after it
    (_BadExit, ["A enter", "B enter", "C enter", "A should_run", "B should_run",
                "C should_run", "A before", "B before", "C before", "A after", "B after",
                "C after", "A exit"], []),
    # a hook fails: the with-statement exits every instrument; they stay registered, so
    # override_instruments([]) exits them once more
    (_BadBefore, ["A enter", "B enter", "C enter", "A should_run", "B should_run",
                  "C should_run", "A before", "A exit", "B exit", "C exit"],
     ["A exit", "B exit", "C exit"]),
])
def test_instrument_exceptions(bad, during, after_override):
    mod = tvm.IRModule.from_expr(example())
    _Traced.log = []
    ctx = tvm.transform.PassContext(instruments=[_Fine("A"), bad("B"), _Fine("C")])
    with pytest.raises(ValueError, match="B bad"):
        with ctx:
            relay.transform.InferType()(mod)
    assert _Traced.log == during
    _Traced.log = []
    ctx.override_instruments([])
    assert _Traced.log == after_override


def test_instrument_exception_without_a_with_statement():
    # on the current context, no with-statement exits the instruments after a failing hook
    mod = tvm.IRModule.from_expr(example())
    cur = tvm.transform.PassContext.current()
    _Traced.log = []
    cur.override_instruments([_Fine("A"), _BadBefore("B"), _Fine("C")])
    try:
        with pytest.raises(ValueError, match="B bad run_before_pass"):
            relay.transform.InferType()(mod)
        assert _Traced.log[-1] == "A before" and not any("exit" in e for e in _Traced.log)
    finally:
        _Traced.log = []
        cur.override_instruments([])
    assert _Traced.log == ["A exit", "B exit", "C exit"]

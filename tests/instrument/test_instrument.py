"""tvm.instrument: callback order and error rules, timing, printing instruments."""

import io

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.instrument import PassInstrument, pass_instrument
from minitvm.transform import PassContext, Sequential


def small_module():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))


def noop(name, opt_level=0, required=None):
    @tvm.transform.module_pass(opt_level=opt_level, name=name, required=required)
    def run(mod, ctx):
        return mod

    return run


@relay.transform.function_pass(opt_level=2, name="AddToMul")
def add_to_mul(func, mod, ctx):
    class M(relay.ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            return relay.multiply(*new.args) if new.op.name == "add" else new

    return M().visit(func)


class Recorder(PassInstrument):
    def __init__(self, tag, events, skip=(), fail=()):
        super().__init__()
        self.tag, self.events, self.skip, self.fail = tag, events, set(skip), set(fail)

    def _ev(self, what):
        self.events.append(f"{self.tag} {what}")
        if what.split()[0] in self.fail:
            raise RuntimeError(f"instrument {self.tag} fails in {what}")

    def enter_pass_ctx(self):
        self._ev("enter")

    def exit_pass_ctx(self):
        self._ev("exit")

    def should_run(self, mod, info):
        self._ev(f"should_run {info.name}")
        return info.name not in self.skip

    def run_before_pass(self, mod, info):
        self._ev(f"before {info.name}")

    def run_after_pass(self, mod, info):
        self._ev(f"after {info.name}")


def test_call_sequence():
    ev = []
    with PassContext(instruments=[Recorder("A", ev), Recorder("B", ev)]):
        noop("p1")(small_module())
        noop("p2")(small_module())
    assert ev == [
        "A enter", "B enter",
        "A should_run p1", "B should_run p1", "A before p1", "B before p1", "A after p1",
        "B after p1",
        "A should_run p2", "B should_run p2", "A before p2", "B before p2", "A after p2",
        "B after p2",
        "A exit", "B exit",
    ]


def test_should_run_all_asked_and_veto_skips():
    ev = []
    mod = small_module()
    ran = []

    @tvm.transform.module_pass(opt_level=0, name="p")
    def p(m, ctx):
        ran.append(1)
        return m

    with PassContext(instruments=[Recorder("A", ev, skip={"p"}), Recorder("B", ev)]):
        out = p(mod)
    assert out is mod and ran == []
    assert ev == ["A enter", "B enter", "A should_run p", "B should_run p", "A exit", "B exit"]


def test_required_pass_is_not_asked_should_run():
    ev = []
    with PassContext(required_pass=["p"], instruments=[Recorder("A", ev, skip={"p"})]):
        noop("p")(small_module())
    assert ev == ["A enter", "A before p", "A after p", "A exit"]


def test_sequential_skipped_child_fires_nothing():
    ev = []
    with PassContext(opt_level=1, instruments=[Recorder("A", ev)]):
        Sequential([noop("low", 1), noop("high", 3)])(small_module())
    assert "A should_run high" not in ev
    assert ev[1:4] == ["A should_run sequential", "A before sequential", "A should_run low"]


def test_enter_error_exits_entered_in_reverse_and_clears():
    ev = []
    insts = [Recorder("1", ev), Recorder("2", ev, fail={"enter"}), Recorder("3", ev)]
    ctx = PassContext(instruments=insts)
    before = PassContext.current()
    with pytest.raises(RuntimeError, match="instrument 2 fails in enter"):
        with ctx:
            pass
    assert ev == ["1 enter", "2 enter", "1 exit"]
    assert ctx.instruments == []
    assert PassContext.current() is before


def test_enter_error_reverse_order_with_two_entered():
    ev = []
    insts = [Recorder("1", ev), Recorder("2", ev), Recorder("3", ev, fail={"enter"})]
    with pytest.raises(RuntimeError):
        with PassContext(instruments=insts):
            pass
    assert ev == ["1 enter", "2 enter", "3 enter", "2 exit", "1 exit"]


def test_exit_error_stops_remaining_and_clears():
    ev = []
    insts = [Recorder("1", ev), Recorder("2", ev, fail={"exit"}), Recorder("3", ev)]
    ctx = PassContext(instruments=insts)
    with pytest.raises(RuntimeError, match="fails in exit"):
        with ctx:
            ev.clear()
    assert ev == ["1 exit", "2 exit"]
    assert ctx.instruments == []
    assert PassContext.current() is not ctx


def test_should_run_error_propagates_and_context_exits():
    ev = []
    insts = [Recorder("1", ev, fail={"should_run"}), Recorder("2", ev)]
    with pytest.raises(RuntimeError, match="fails in should_run"):
        with PassContext(instruments=insts):
            noop("p")(small_module())
    assert ev == ["1 enter", "2 enter", "1 should_run p", "1 exit", "2 exit"]


def test_override_instruments_on_global_context():
    ev = []
    glob = PassContext.current()
    glob.override_instruments([Recorder("G", ev)])
    try:
        noop("p")(small_module())
    finally:
        glob.override_instruments(None)
    assert ev == ["G enter", "G should_run p", "G before p", "G after p", "G exit"]
    assert glob.instruments == []


def test_instruments_must_be_instruments():
    with pytest.raises(TypeError, match="is not a PassInstrument"):
        PassContext(instruments=[object()])


def test_counting_matches_tvm_semantics():
    # TVM's test_print_debug_callback: Sequential + InferType + function pass (+ its InferType)
    # + required InferType + module pass = 6 run_before_pass calls.
    count = [0]

    @pass_instrument
    class Counter:
        def run_before_pass(self, mod, info):
            count[0] += 1

    seq = Sequential([relay.transform.InferType(), add_to_mul,
                      noop("DCE", 1, required=["InferType"])])
    with PassContext(opt_level=3, instruments=[Counter()]):
        seq(small_module())
    assert count[0] == 6


def test_pass_instrument_decorator():
    @pass_instrument
    class Plain:
        """doc"""

        def __init__(self, x):
            self.x = x

    inst = Plain(5)
    assert isinstance(inst, PassInstrument) and inst.x == 5
    assert Plain.__name__ == "Plain" and Plain.__doc__ == "doc"
    assert repr(inst) == "Plain"
    assert pass_instrument(Recorder) is Recorder
    with pytest.raises(TypeError, match="pi_cls must be a class"):
        pass_instrument(3)


def test_seed002_print_instrument(capsys):
    @tvm.instrument.pass_instrument
    class PrintIR:
        """Print the name of the pass, the IR, only before passes execute."""

        def run_before_pass(self, mod, info):
            print("Running pass: {}", info)
            print(mod.astext(False))

    with tvm.transform.PassContext(opt_level=3, instruments=[PrintIR()]):
        relay.transform.InferType()(small_module())
    out = capsys.readouterr().out
    assert "Running pass: {} The meta data of the pass - pass name: InferType" in out
    assert "add(%x, %x)" in out


def test_timing_render_format_and_cleared_on_exit():
    timing = tvm.instrument.PassTimingInstrument()
    with PassContext(opt_level=3, instruments=[timing]):
        Sequential([relay.transform.InferType(), add_to_mul])(small_module())
        text = tvm.instrument.PassTimingInstrument.render()
    lines = text.splitlines()
    assert lines[0].startswith("sequential: ") and "us [" in lines[0]
    assert lines[1].startswith("\tInferType: ")
    assert lines[2].startswith("\tAddToMul: ")
    assert lines[3].startswith("\t\tInferType: ")  # the InferType after a function pass
    assert any(line.startswith("Per-pass totals") for line in lines)
    assert any("InferType: 2 runs" in line for line in lines)
    with pytest.warns(UserWarning, match="no passes have been profiled"):
        assert tvm.instrument.PassTimingInstrument.render() == ""


def test_pass_statistics_in_timing_report():
    @tvm.transform.module_pass(opt_level=0, name="Folder")
    def folder(mod, ctx):
        tvm.transform.record_stat("folded constants", 12)
        return mod

    with PassContext(instruments=[tvm.instrument.PassTimingInstrument()]):
        folder(small_module())
        text = tvm.instrument.PassTimingInstrument.render()
    assert "Folder:" in text and "{folded constants: 12}" in text
    tvm.transform.record_stat("ignored", 1)  # nobody listening: a no-op


def test_print_before_and_after_all(capsys):
    with PassContext(instruments=[tvm.instrument.PrintBeforeAll(),
                                  tvm.instrument.PrintAfterAll()]):
        noop("p")(small_module())
    out = capsys.readouterr().out
    assert "Before Running Pass: The meta data of the pass - pass name: p" in out
    assert "After Running Pass: The meta data of the pass - pass name: p" in out
    assert out.count("add(%x, %x)") == 2


def test_pass_printing_instrument(capsys):
    inst = tvm.instrument.PassPrintingInstrument(["a"], ["b"])
    with PassContext(instruments=[inst]):
        Sequential([noop("a"), noop("b")])(small_module())
    out = capsys.readouterr().out
    assert "Print IR before: a" in out and "Print IR after: b" in out
    assert "Print IR after: a" not in out


def test_print_ir_pass_in_sequential(capfd):
    seq = Sequential([add_to_mul, tvm.transform.PrintIR()])
    with PassContext(opt_level=3):
        seq(small_module())
    err = capfd.readouterr().err
    assert "PrintIR" in err and "multiply" in err


def test_print_after_change_prints_only_changes_as_diff():
    buf = io.StringIO()
    inst = tvm.instrument.PrintAfterChange(file=buf)
    mod = relay.transform.InferType()(small_module())
    with PassContext(opt_level=3, instruments=[inst]):
        Sequential([noop("Same"), add_to_mul, noop("Same2")])(mod)
    out = buf.getvalue()
    assert inst.changed == ["AddToMul"]
    assert "*** IR changed by pass AddToMul ***" in out
    assert "-  add(%x, %x)" in out and "+  multiply(%x, %x)" in out
    assert "Same" not in out


def test_instrument_appended_after_creation_is_used():
    ev = []
    ctx = PassContext()
    ctx.instruments.append(Recorder("late", ev))
    noop("p")(small_module(), ctx)
    assert ev == ["late should_run p", "late before p", "late after p"]

"""Found by the saved-executable run of the dynamic fuzzer (seeds 0, 2, 3): a Relay VM
executable saved, exported and loaded back failed to load when a fallback kernel's function
had a type dimension that is arithmetic of Any (``2 * ?``, the selected boxes of an all-class
NMS): the printer wrote it as a ``tir.Mul`` metadata entry that the parser could not rebuild.
Such entries now keep their nodes and parse back."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.prim_expr import Any
from minitvm.relay.printer.meta import _dim_from_nodes, _dim_nodes
from minitvm.runtime import vm as runtime_vm
from minitvm.testing.fuzz.dynamic_differential import _saved_and_loaded
from minitvm.tir import expr as E


def test_dimension_arithmetic_round_trips_through_the_text():
    x = relay.var("x", shape=(E.Mul(E.IntImm("int32", 2), Any()), 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.shape_of(x)))
    text = mod.astext()
    assert "tir.Mul" in text
    back = tvm.parser.parse(text)
    dim = back["main"].params[0].type_annotation.shape[0]
    assert isinstance(dim, E.Mul) and isinstance(dim.b, Any) and int(dim.a.value) == 2


def test_dimension_nodes_of_a_long_sum():
    """Flat nodes, no recursion: a sum of 5,000 sizes."""
    e = Any()
    for k in range(5000):
        e = E.Add(e, E.IntImm("int32", k))
    nodes = _dim_nodes(e)
    assert len(nodes) == 1 + 5000 * 2 and nodes[-1][0] == "Add"
    back = _dim_from_nodes(nodes)
    assert isinstance(back, E.Add) and int(back.b.value) == 4999


def test_saved_executable_with_an_nms_shape_of_loads_and_runs(tmp_path):
    boxes = relay.var("boxes", shape=(1, relay.Any(), 4), dtype="float32")
    scores = relay.var("scores", shape=(1, 2, relay.Any()), dtype="float32")
    sel = relay.vision.all_class_non_max_suppression(boxes, scores, 2, 0.5, 0.0)[0]
    mod = tvm.IRModule.from_expr(relay.Function([boxes, scores], relay.shape_of(sel)))
    exe = _saved_and_loaded(relay.vm.compile(mod, target="llvm"), str(tmp_path))
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    ref = relay.create_executor("debug", mod=mod).evaluate()
    rng = np.random.default_rng(0)
    for n in (3, 5):
        xy = rng.uniform(0, 1, (1, n, 2)).astype("float32")
        b = np.concatenate([xy, xy + 0.3], axis=2)
        s = rng.uniform(0, 1, (1, 2, n)).astype("float32")
        np.testing.assert_array_equal(vm.run(b, s).numpy(), ref(b, s).numpy())


def test_arange_of_a_computed_stop_prints_parses_and_loads(tmp_path):
    """Seeds 100026, 100048 of the saved run: arange(0, take(shape_of(x), 0)) kept the computed
    stop in its attrs, printed as a relay.Call metadata entry the parser cannot rebuild; the
    attrs now keep constant operands only (all its type relation reads)."""
    x = relay.var("x", shape=(relay.Any(),), dtype="float32")
    stop = relay.take(relay.shape_of(x, "int32"), relay.const(0, "int32"))
    r = relay.arange(relay.const(0, "int32"), stop, relay.const(1, "int32"), dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x], r))
    text = mod.astext()
    assert "relay.Call" not in text
    tvm.parser.parse(text)
    exe = _saved_and_loaded(relay.vm.compile(mod, target="llvm"), str(tmp_path))
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    assert vm.run(np.zeros(4, "float32")).numpy().tolist() == [0, 1, 2, 3]
    static = relay.arange(relay.const(1, "int32"), relay.const(7, "int32"),
                          relay.const(2, "int32"), dtype="int32")
    typed = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([], static)))
    assert [int(d) for d in typed["main"].ret_type.shape] == [3]

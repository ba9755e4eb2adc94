"""CI sample of the build-matrix fuzzer (``fuzz_long --build-programs``): generated Relay
programs through relay.build + the graph executor and relay.vm.compile + the VM under a random
opt_level and disabled_pass set, against the interpreter; a planted wrong result is found and
its disabled set shrunk to the pass that matters."""

import numpy as np

from minitvm.testing.fuzz import build_matrix
from minitvm.testing.fuzz.build_matrix import (
    build_pass_names,
    check_build_matrix,
    draw_config,
    generate_build_program,
)


def test_disable_candidates_are_the_pipelines_passes():
    names = build_pass_names()
    for name in ("FuseOps", "FoldConstant", "SimplifyExpr", "FoldScaleAxis",
                 "ForwardFoldScaleAxis", "EtaExpand", "AlterOpLayout"):
        assert name in names
    assert "InferType" not in names and len(set(names)) == len(names)


def test_configurations_are_drawn_by_seed():
    configs = [draw_config(s) for s in range(40)]
    assert configs == [draw_config(s) for s in range(40)]  # deterministic
    assert {lv for lv, _ in configs} == {0, 1, 2, 3}
    assert any(not d for _, d in configs) and any(len(d) > 5 for _, d in configs)


def test_dataflow_program_through_both_executors():
    prog = generate_build_program(2)  # even: no control flow, the graph executor runs it
    assert prog.graph_compatible
    assert check_build_matrix(prog, level=3, disabled=("FoldConstant", "SimplifyExpr")) == []


def test_control_flow_program_through_the_vm():
    prog = generate_build_program(1)
    assert not prog.graph_compatible
    assert check_build_matrix(prog, level=1, disabled=("FuseOps",)) == []


def test_a_planted_difference_is_found_and_its_pass_named(monkeypatch):
    prog = generate_build_program(2)
    real = build_matrix.EXECUTORS["vm"]

    def wrong_without_fold(p, level, disabled, inputs):
        out = real(p, level, disabled, inputs)
        if "FoldConstant" in disabled:  # planted: wrong only when FoldConstant is off
            out[0] = out[0] + np.ones_like(out[0])
        return out

    monkeypatch.setitem(build_matrix.EXECUTORS, "vm", wrong_without_fold)
    found = check_build_matrix(prog, level=2, disabled=("CanonicalizeCast", "FoldConstant"),
                               executors=("vm",))
    assert [f.kind for f in found] == ["mismatch"]
    assert "(minimal ['FoldConstant'])" in found[0].detail
    assert found[0].pass_name == "relay.vm.compile"


def test_sign_of_a_let_bound_near_zero_is_a_boundary():
    """Seed 600576: sign(variance of three equal rows) -- 0 in the interpreter, a rounding
    above 0 compiled (the mean of equal values is not always exact), both right. The operand
    is reached through a let (the program is read in graph normal form), and sign jumps at 0."""
    import minitvm as tvm
    from minitvm import relay
    from minitvm.testing.fuzz.generator import GeneratedProgram

    x = relay.var("x", shape=(1, 4))
    v = relay.var("v")
    b = relay.broadcast_to(v, (3, 4))
    body = relay.Let(v, relay.log(relay.add(relay.abs(x), relay.const(1.0))),
                     relay.sign(relay.variance(b, axis=[0])))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))
    prog = GeneratedProgram(mod, 0, [("x", mod["main"].params[0].checked_type)])
    xv = np.array([[0.5, 1.0, 1.27, 3.0]], "float32")
    assert build_matrix._near_jump(prog, [xv], None) == \
        "sign of a computed value near its boundary"
    far = xv
    body2 = relay.sign(relay.subtract(x, relay.const(10.0)))
    mod2 = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body2)))
    assert build_matrix._near_jump(GeneratedProgram(mod2, 0, prog.input_types), [far],
                                   None) is None

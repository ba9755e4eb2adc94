"""PlanDevices after lowering: memory scopes flow between ``call_lowered`` and PrimFunc buffers.

TVM v0.19's ``test_lowered`` case restated: a PrimFunc's buffers that declare a memory scope
constrain the arguments and result of its calls, one that declares none (``scope=""``) takes the
scope of what is passed to it (the PrimFunc is rewritten), and where the scopes of an argument
or the result disagree with the buffer a ``device_copy`` mediates. Each case checks the planned
module against TVM's expected one, idempotence, that the input was not modified, and runs the
program before and after planning (``on_device``/``device_copy`` are identities on one CPU,
``call_lowered`` runs the compiled PrimFunc) on random inputs.

Both PrimFuncs of a case are called ``gem``: TVMScript gives a PrimFunc a ``global_symbol``
attribute from its Python name, which structural equality compares. Also here: TVM's
``test_left_add_on_cpu_via_copy_as_map`` (the device map recovered by post-DFS index).
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.codegen.build import build
from minitvm.relay import transform
from minitvm.relay.op.call import call_lowered
from minitvm.script import tir as T
from minitvm.target import Target, VirtualDevice, make_compilation_config
from minitvm.tir.analysis import (
    apply_prim_func_arg_and_result_memory_constraints,
    prim_func_arg_and_result_memory_scopes,
)

HOST_TARGET = Target("llvm")
CPU_TARGET = Target("llvm").with_host(HOST_TARGET)
GPU_TARGET = Target("cuda").with_host(HOST_TARGET)
CPU = VirtualDevice(tvm.cpu(), CPU_TARGET)
CPU_A = VirtualDevice(tvm.cpu(), CPU_TARGET, memory_scope="scopeA")
CPU_B = VirtualDevice(tvm.cpu(), CPU_TARGET, memory_scope="scopeB")
GPU = VirtualDevice(tvm.cuda(), GPU_TARGET)
CTX = tvm.transform.PassContext(config={"relay.fallback_device_type": GPU.device_type_int})
CONFIG = make_compilation_config(CTX, [CPU_TARGET, GPU_TARGET])
META = {"VirtualDevice": [CPU, CPU_A, CPU_B]}
RNG = np.random.default_rng(13)
T128 = relay.TensorType((128, 128), "float32")


def gem_before():
    @T.prim_func
    def gem(a: T.handle, b: T.handle, c: T.handle, d: T.handle) -> None:
        A = T.match_buffer(a, [128, 128], scope="scopeA")  # flows out to the argument
        B = T.match_buffer(b, [128, 128], scope="")  # no scope: takes its argument's
        C = T.match_buffer(c, [128, 128], scope="scopeB")  # the argument is copied here
        D = T.match_buffer(d, [128, 128], scope="scopeA")  # the result is copied from here
        for i, j, k in T.grid(128, 128, 128):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    D[vi, vj] = C[vi, vj]
                D[vi, vj] = D[vi, vj] + A[vi, vk] * B[vj, vk]

    return gem


def gem_after():
    @T.prim_func
    def gem(a: T.handle, b: T.handle, c: T.handle, d: T.handle) -> None:
        A = T.match_buffer(a, [128, 128], scope="scopeA")
        B = T.match_buffer(b, [128, 128], scope="scopeB")
        C = T.match_buffer(c, [128, 128], scope="scopeB")
        D = T.match_buffer(d, [128, 128], scope="scopeA")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    D[vi, vj] = C[vi, vj]
                D[vi, vj] = D[vi, vj] + A[vi, vk] * B[vj, vk]

    return gem


def with_prim_func(gv, prim_func, text):
    mod = tvm.IRModule()
    mod[gv] = prim_func
    return relay.parse(text, "from_string", mod, META)


def plan(mod):
    mod = transform.InferType()(mod)
    return transform.InferType()(transform.PlanDevices(CONFIG)(mod))


def run(mod, inputs):
    """Evaluate ``@main`` of a lowered module on one CPU: annotations and copies are identities,
    ``call_lowered`` runs the compiled PrimFunc, writing its result buffer."""
    main = mod["main"]
    env = dict(zip(main.params, [tvm.nd.array(x) for x in inputs], strict=True))
    order = []
    relay.analysis.post_order_visit(main.body, order.append)
    for e in order:
        if isinstance(e, relay.Tuple):
            env[e] = [env[f] for f in e.fields]
        elif isinstance(e, relay.Call) and e.op.name in ("on_device", "device_copy"):
            env[e] = env[e.args[0]]
        elif isinstance(e, relay.Call) and e.op.name == "call_lowered":
            gv, args = e.args
            out = tvm.nd.array(np.zeros([int(d) for d in e.checked_type.shape], "float32"))
            build(mod[gv], target="llvm")(*env[args], out)
            env[e] = out
    return env[main.body].numpy()


def check(before, expected, inputs):
    text = before.astext()
    got = plan(before)
    tvm.ir.assert_structural_equal(got, plan(expected), map_free_vars=True)
    tvm.ir.assert_structural_equal(plan(got), got, map_free_vars=True)
    assert before.astext() == text, "PlanDevices modified its input"
    np.testing.assert_allclose(run(got, inputs), run(before, inputs), rtol=1e-5)
    return got


def test_memory_scopes_flow_between_call_lowered_and_the_prim_func():
    """TVM's test_lowered: %x (no scope) takes scopeA from A; B (no scope) takes %y's scopeB;
    %z (scopeA) is copied to C's scopeB; the result, in D's scopeA, is copied to scopeB."""
    gv = relay.GlobalVar("gem", type_annot=relay.FuncType([T128] * 3, T128))
    before = with_prim_func(
        gv,
        gem_before(),
        """
        #[version = "0.0.5"]
        def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(128, 128), float32],
                  %y {virtual_device=meta[VirtualDevice][2]}: Tensor[(128, 128), float32],
                  %z {virtual_device=meta[VirtualDevice][1]}: Tensor[(128, 128), float32],
                  virtual_device=meta[VirtualDevice][2]) {
          call_lowered(@gem, (%x, %y, %z))
        }""",
    )
    expected = with_prim_func(
        gv,
        gem_after(),
        """
        #[version = "0.0.5"]
        def @main(%x {virtual_device=meta[VirtualDevice][1]}: Tensor[(128, 128), float32],
                  %y {virtual_device=meta[VirtualDevice][2]}: Tensor[(128, 128), float32],
                  %z {virtual_device=meta[VirtualDevice][1]}: Tensor[(128, 128), float32],
                  virtual_device=meta[VirtualDevice][2]) {
          %0 = device_copy(%z, src_virtual_device=meta[VirtualDevice][1],
                           dst_virtual_device=meta[VirtualDevice][2]);
          %1 = on_device(%0, virtual_device=meta[VirtualDevice][2], constrain_result=True);
          %2 = call_lowered(@gem, (%x, %y, %1));
          %3 = on_device(%2, virtual_device=meta[VirtualDevice][1], constrain_result=True);
          device_copy(%3, src_virtual_device=meta[VirtualDevice][1],
                      dst_virtual_device=meta[VirtualDevice][2])
        }""",
    )
    x, y, z = (RNG.standard_normal((128, 128)).astype("float32") for _ in range(3))
    got = check(before, expected, [x, y, z])
    np.testing.assert_allclose(run(got, [x, y, z]), z + x @ y.T, rtol=1e-4, atol=1e-4)
    assert prim_func_arg_and_result_memory_scopes(got[gv], gv.type_annotation) == [
        "scopeA",
        "scopeB",
        "scopeB",
        "scopeA",
    ]


def test_scopes_agreeing_everywhere_leave_the_program_alone():
    """Arguments already in the buffers' scopes: no copies, the PrimFunc is the same object."""
    gv = relay.GlobalVar("gem", type_annot=relay.FuncType([T128] * 3, T128))
    before = with_prim_func(
        gv,
        gem_after(),
        """
        #[version = "0.0.5"]
        def @main(%x {virtual_device=meta[VirtualDevice][1]}: Tensor[(128, 128), float32],
                  %y {virtual_device=meta[VirtualDevice][2]}: Tensor[(128, 128), float32],
                  %z {virtual_device=meta[VirtualDevice][2]}: Tensor[(128, 128), float32],
                  virtual_device=meta[VirtualDevice][1]) {
          call_lowered(@gem, (%x, %y, %z))
        }""",
    )
    got = check(
        before, before, [RNG.standard_normal((128, 128)).astype("float32") for _ in range(3)]
    )
    assert got[gv] is before[gv]
    assert "device_copy" not in got.astext()


def test_call_lowered_of_a_relay_function_plans_like_a_call():
    """Only PrimFunc calls may copy at their boundary: a lowered call of a Relay function takes
    the function's devices, as a direct call does."""
    x = relay.var("x", shape=(4,))
    x.virtual_device_ = CPU
    f = relay.Function([x], relay.negative(x))
    f.virtual_device_ = CPU
    gv = relay.GlobalVar("f")
    mod = tvm.IRModule({gv: f})
    a = relay.var("a", shape=(4,))
    mod["main"] = relay.Function([a], call_lowered(gv, [a]))
    got = plan(mod)
    main = got["main"]
    assert main.params[0].virtual_device_ == CPU and main.virtual_device_ == CPU
    assert got[gv].virtual_device_ == CPU
    assert "device_copy" not in got.astext() and "on_device" not in got.astext()


# ------------------------------------------------------------------ the PrimFunc side
def test_tuple_parameters_flatten_to_one_buffer_per_field():
    """A tuple parameter covers consecutive buffers; an unscoped field takes its sibling's
    scope, and every field's buffer is rewritten to the tuple's planned scope."""

    @T.prim_func
    def add3(a0: T.handle, a1: T.handle, b: T.handle, o: T.handle) -> None:
        A0 = T.match_buffer(a0, [8], scope="")
        A1 = T.match_buffer(a1, [8], scope="scopeA")
        B = T.match_buffer(b, [8], scope="")
        O = T.match_buffer(o, [8], scope="")
        for i in range(8):
            with T.block("o"):
                vi = T.axis.spatial(8, i)
                O[vi] = A0[vi] + A1[vi] + B[vi]

    t8 = relay.TensorType((8,), "float32")
    ty = relay.FuncType([relay.TupleType([t8, t8]), t8], t8)
    assert prim_func_arg_and_result_memory_scopes(add3, ty) == ["scopeA", "", ""]
    new = apply_prim_func_arg_and_result_memory_constraints(add3, ty, ["scopeA", "scopeB", ""])
    scopes = [new.buffer_map[p].scope for p in new.params]
    assert scopes == ["scopeA", "scopeA", "scopeB", "global"]
    assert prim_func_arg_and_result_memory_scopes(new, ty) == ["scopeA", "scopeB", ""]
    args = [RNG.standard_normal(8).astype("float32") for _ in range(3)]
    outs = []
    for f in (add3, new):
        nd = [tvm.nd.array(v) for v in (*args, np.zeros(8, "float32"))]
        build(f, target="llvm")(*nd)
        outs.append(nd[-1].numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6)
    np.testing.assert_allclose(outs[0], args[0] + args[1] + args[2], rtol=1e-6)


def test_fields_of_one_tuple_in_different_scopes_are_rejected():
    @T.prim_func
    def two(a0: T.handle, a1: T.handle, o: T.handle) -> None:
        A0 = T.match_buffer(a0, [8], scope="scopeA")
        A1 = T.match_buffer(a1, [8], scope="scopeB")
        O = T.match_buffer(o, [8], scope="")
        for i in range(8):
            with T.block("o"):
                vi = T.axis.spatial(8, i)
                O[vi] = A0[vi] + A1[vi]

    t8 = relay.TensorType((8,), "float32")
    ty = relay.FuncType([relay.TupleType([t8, t8])], t8)
    with pytest.raises(ValueError, match="different memory scopes .'scopeA' and 'scopeB'"):
        prim_func_arg_and_result_memory_scopes(two, ty)
    with pytest.raises(ValueError, match="3 buffer parameters cannot implement"):
        prim_func_arg_and_result_memory_scopes(two, relay.FuncType([t8], t8))


def test_buffers_matched_onto_a_rescoped_parameter_follow_it():
    """A block's match_buffer over a rewritten parameter takes its scope, and the block body's
    accesses use the new buffer (TVM substitutes only after visiting the body)."""

    @T.prim_func
    def before(a: T.handle, o: T.handle) -> None:
        A = T.match_buffer(a, [16], scope="")
        O = T.match_buffer(o, [16], scope="")
        for i in range(4):
            with T.block("outer"):
                vi = T.axis.spatial(4, i)
                sub = T.match_buffer(A[vi * 4 : vi * 4 + 4], [4], scope="")
                for j in range(4):
                    O[vi * 4 + j] = sub[j] * T.float32(2)

    @T.prim_func
    def after(a: T.handle, o: T.handle) -> None:
        A = T.match_buffer(a, [16], scope="scopeA")
        O = T.match_buffer(o, [16], scope="")
        for i in range(4):
            with T.block("outer"):
                vi = T.axis.spatial(4, i)
                sub = T.match_buffer(A[vi * 4 : vi * 4 + 4], [4], scope="scopeA")
                for j in range(4):
                    O[vi * 4 + j] = sub[j] * T.float32(2)

    t16 = relay.TensorType((16,), "float32")
    new = apply_prim_func_arg_and_result_memory_constraints(
        before, relay.FuncType([t16], t16), ["scopeA", ""]
    )
    tvm.ir.assert_structural_equal(
        new.with_attr("global_symbol", "f"), after.with_attr("global_symbol", "f")
    )


def test_a_100000_deep_prim_func_expression_is_rescoped_without_recursion():
    a = tvm.tir.decl_buffer((4,), "float32", "A")
    o = tvm.tir.decl_buffer((1,), "float32", "O")
    value = a[0]
    for i in range(100_000):
        value = value + a[i % 4]
    func = tvm.tir.PrimFunc([a, o], tvm.tir.BufferStore(o, value, [0]))
    t4, t1 = relay.TensorType((4,), "float32"), relay.TensorType((1,), "float32")
    new = apply_prim_func_arg_and_result_memory_constraints(
        func, relay.FuncType([t4], t1), ["scopeB", ""]
    )
    new_a = new.buffer_map[new.params[0]]
    assert new_a.scope == "scopeB" and new_a is not a
    e, loads = new.body.value, 0
    while isinstance(e, tvm.tir.Add):
        assert e.b.buffer is new_a
        e, loads = e.a, loads + 1
    assert loads == 100_000 and e.buffer is new_a


# ------------------------------------------------------------------ the recovered device map
def test_recovered_map_by_post_dfs_index():
    """TVM's test_left_add_on_cpu_via_copy_as_map: plan with an explicit host target, capture
    post-DFS indexes in the spans, and recover the device of every sub-expression: TVM's map
    of indexes to device types, exactly (4..7 are the operators, which get no device)."""
    config = make_compilation_config(CTX, [CPU_TARGET, GPU_TARGET], HOST_TARGET)
    meta = {"VirtualDevice": [CPU, GPU]}
    before = relay.parse(
        """
        #[version = "0.0.5"]
        def @main(%a: Tensor[(5, 7), float32], %b: Tensor[(5, 7), float32],
                  %c: Tensor[(5, 7), float32], %d: Tensor[(5, 7), float32]) {
          %0 = add(%a, %b);
          %1 = device_copy(%0, src_virtual_device=meta[VirtualDevice][0],
                           dst_virtual_device=meta[VirtualDevice][1]);
          %2 = add(%c, %d);
          subtract(%1, %2)
        }""",
        "from_string",
        None,
        meta,
    )
    expected = relay.parse(
        """
        #[version = "0.0.5"]
        def @main(%a {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
                  %b {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32],
                  %c {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
                  %d {virtual_device=meta[VirtualDevice][1]}: Tensor[(5, 7), float32],
                  virtual_device=meta[VirtualDevice][1]) {
          %0 = add(%a, %b);
          %1 = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
          %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0],
                           dst_virtual_device=meta[VirtualDevice][1]);
          %3 = add(%c, %d);
          subtract(%2, %3)
        }""",
        "from_string",
        None,
        meta,
    )
    got = transform.PlanDevices(config)(transform.InferType()(before))
    got = transform.CapturePostDfsIndexInSpans()(got)
    tvm.ir.assert_structural_equal(got, expected, map_free_vars=True)
    raw = tvm.get_global_func("relay.transform.RecoverVirtualDeviceMap")(got, got["main"])
    found = {e.span.line: vd.device_type for e, vd in raw.items()}
    cpu, gpu = CPU.device_type, GPU.device_type
    assert found == {
        0: cpu,
        1: cpu,
        2: gpu,
        3: gpu,
        8: cpu,
        9: cpu,
        10: gpu,
        11: gpu,
        12: gpu,
        13: gpu,
    }
    args = [RNG.standard_normal((5, 7)).astype("float32") for _ in range(4)]
    out = [relay.create_executor("debug", mod=m).evaluate()(*args).numpy() for m in (before, got)]
    np.testing.assert_allclose(out[1], out[0], rtol=1e-6)
    np.testing.assert_allclose(out[0], args[0] + args[1] - (args[2] + args[3]), rtol=1e-5)

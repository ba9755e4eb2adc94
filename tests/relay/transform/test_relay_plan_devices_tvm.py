"""PlanDevices builds TVM v0.19's programs: the cases of TVM's own test, restated with the builder.

Two virtual devices: CPU (llvm) and GPU (cuda, only a name: planning is a pure IR transform),
the GPU the fallback device. Each case checks the planned program against TVM's expected one,
that planning the expected program again changes nothing (idempotence), that the input was not
modified, and, where the program is first-order, that the interpreter gives the same numbers.
"""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.target import Target, VirtualDevice, make_compilation_config

HOST_TARGET = Target("llvm")
CPU_TARGET = Target("llvm").with_host(HOST_TARGET)
GPU_TARGET = Target("cuda").with_host(HOST_TARGET)
HOST = VirtualDevice(tvm.cpu(), HOST_TARGET)
CPU = VirtualDevice(tvm.cpu(), CPU_TARGET)
GPU = VirtualDevice(tvm.cuda(), GPU_TARGET)
CPU_A = VirtualDevice(tvm.cpu(), CPU_TARGET, memory_scope="scopeA")
CPU_B = VirtualDevice(tvm.cpu(), CPU_TARGET, memory_scope="scopeB")
CTX = tvm.transform.PassContext(config={"relay.fallback_device_type": GPU.device_type_int})
CONFIG = make_compilation_config(CTX, [CPU_TARGET, GPU_TARGET])
SHAPE = (5, 7)
RNG = np.random.default_rng(7)


def var(name, vd=None, shape=SHAPE, dtype="float32"):
    v = relay.var(name, shape=shape, dtype=dtype) if shape is not None else relay.var(name)
    if vd is not None:
        v.virtual_device_ = vd
    return v


def func(params, body, vd=None, **attrs):
    f = relay.Function(params, body)
    if attrs:
        f = f.with_attrs(attrs)
    if vd is not None:
        f.virtual_device_ = vd
    return f


def on(e, vd, result=False, body=True):
    return relay.annotation.on_device(e, vd, constrain_result=result, constrain_body=body)


def fixed(e, vd):
    return on(e, vd, result=True)


def copy(e, src, dst):
    return relay.device_copy(e, src, dst)


def plan(mod, config=CONFIG):
    mod = transform.InferType()(mod)
    return transform.InferType()(transform.PlanDevices(config)(mod))


def _mod(f):
    if isinstance(f, tvm.IRModule):
        return f
    return tvm.IRModule.from_expr(f)


def check(before, expected, inputs=None):
    """Planned ``before`` equals ``expected``; planning is idempotent, pure and exact."""
    before, expected = transform.InferType()(_mod(before)), transform.InferType()(_mod(expected))
    text = before.astext()
    got = plan(before)
    tvm.ir.assert_structural_equal(got, expected, map_free_vars=True)
    tvm.ir.assert_structural_equal(plan(expected), expected, map_free_vars=True)
    assert before.astext() == text, "PlanDevices modified its input"
    if inputs is not None:
        run = [relay.create_executor("debug", mod=m).evaluate()(*inputs).numpy()
               for m in (before, got)]
        np.testing.assert_allclose(run[1], run[0], rtol=1e-6)
    return got


def rand(n, shape=SHAPE):
    return [RNG.standard_normal(shape).astype("float32") for _ in range(n)]


# ------------------------------------------------------------------ first-order programs
def test_everything_defaults_to_the_fallback_device():
    a, b, c, d = (var(n) for n in "abcd")
    before = func([a, b, c, d], relay.subtract(relay.add(a, b), relay.add(c, d)))
    a, b, c, d = (var(n, GPU) for n in "abcd")
    expected = func([a, b, c, d], relay.subtract(relay.add(a, b), relay.add(c, d)), GPU)
    check(before, expected, rand(4))


def test_one_annotated_add_pulls_its_inputs_to_the_cpu():
    a, b, c, d = (var(n) for n in "abcd")
    before = func([a, b, c, d],
                  relay.subtract(on(relay.add(a, b), CPU), relay.add(c, d)))
    a, b = var("a", CPU), var("b", CPU)
    c, d = var("c", GPU), var("d", GPU)
    left = copy(fixed(relay.add(a, b), CPU), CPU, GPU)
    expected = func([a, b, c, d], relay.subtract(left, relay.add(c, d)), GPU)
    check(before, expected, rand(4))


def test_an_explicit_copy_plans_like_an_annotation():
    a, b, c, d = (var(n) for n in "abcd")
    before = func([a, b, c, d],
                  relay.subtract(copy(relay.add(a, b), CPU, GPU), relay.add(c, d)))
    a, b = var("a", CPU), var("b", CPU)
    c, d = var("c", GPU), var("d", GPU)
    left = copy(fixed(relay.add(a, b), CPU), CPU, GPU)
    expected = func([a, b, c, d], relay.subtract(left, relay.add(c, d)), GPU)
    check(before, expected, rand(4))


def test_both_adds_on_the_cpu_result_on_the_gpu():
    a, b, c, d = (var(n) for n in "abcd")
    before = func([a, b, c, d], relay.subtract(on(relay.add(a, b), CPU),
                                               on(relay.add(c, d), CPU)))
    a, b, c, d = (var(n, CPU) for n in "abcd")
    expected = func([a, b, c, d], relay.subtract(copy(fixed(relay.add(a, b), CPU), CPU, GPU),
                                                 copy(fixed(relay.add(c, d), CPU), CPU, GPU)),
                    GPU)
    check(before, expected, rand(4))


def test_a_shared_value_annotated_twice_is_copied_twice():
    a, b = var("a"), var("b")
    s = relay.add(a, b)
    before = func([a, b], relay.subtract(on(s, CPU), on(s, CPU)))
    a, b = var("a", CPU), var("b", CPU)
    s = relay.add(a, b)
    expected = func([a, b], relay.subtract(copy(fixed(s, CPU), CPU, GPU),
                                           copy(fixed(s, CPU), CPU, GPU)), GPU)
    check(before, expected, rand(2))


def test_let_bound_values_get_their_device_from_their_uses():
    a, b, c, d = (var(n) for n in "abcd")
    lv, rv = relay.Var("l"), relay.Var("r")
    before = func([a, b, c, d], relay.Let(lv, relay.add(a, b), relay.Let(
        rv, relay.add(c, d), relay.subtract(on(lv, CPU), rv))))
    a, b = var("a", CPU), var("b", CPU)
    c, d = var("c", GPU), var("d", GPU)
    lv, rv = relay.Var("l"), relay.Var("r")
    expected = func([a, b, c, d], relay.Let(lv, fixed(relay.add(a, b), CPU), relay.Let(
        rv, fixed(relay.add(c, d), GPU), relay.subtract(copy(lv, CPU, GPU), rv))), GPU)
    check(before, expected, rand(4))


def test_partially_unknown_shapes_plan_like_known_ones():
    x0, x1 = var("x0", shape=(relay.Any(), relay.Any())), var("x1", shape=(relay.Any(),
                                                                               relay.Any()))
    before = func([x0, x1], relay.add(x0, x1))
    y0, y1 = (var(n, GPU, shape=(relay.Any(), relay.Any())) for n in ("x0", "x1"))
    expected = func([y0, y1], relay.add(y0, y1), GPU)
    check(before, expected, rand(2))


def test_a_value_annotated_twice_on_one_device():
    x, y, z = var("x"), var("y"), var("z")
    s = relay.add(x, y)
    before = func([x, y, z], relay.add(relay.subtract(on(s, CPU), z), on(s, CPU)))
    x, y, z = var("x", CPU), var("y", CPU), var("z", GPU)
    s = relay.add(x, y)
    expected = func([x, y, z], relay.add(
        relay.subtract(copy(fixed(s, CPU), CPU, GPU), z), copy(fixed(s, CPU), CPU, GPU)), GPU)
    check(before, expected, rand(3))


def test_an_annotated_result_fixes_the_function_result():
    x, y, z = var("x"), var("y"), var("z")
    before = func([x, y, z], on(relay.subtract(on(relay.add(x, y), GPU), z), CPU))
    x, y, z = var("x", GPU), var("y", GPU), var("z", CPU)
    expected = func([x, y, z], relay.subtract(copy(fixed(relay.add(x, y), GPU), GPU, CPU), z),
                    CPU)
    check(before, expected, rand(3))


def test_annotations_agreeing_everywhere_leave_no_copies():
    x, y, z = var("x"), var("y"), var("z")
    before = func([x, y, z], on(relay.subtract(on(relay.add(x, y), CPU), z), CPU))
    x, y, z = var("x", CPU), var("y", CPU), var("z", CPU)
    expected = func([x, y, z], relay.subtract(relay.add(x, y), z), CPU)
    check(before, expected, rand(3))


def test_conv_network_crossing_devices_twice():
    d1, d2 = var("data1", shape=(1, 64, 56, 56)), var("data2", shape=(1, 64, 56, 56))
    w = var("weight", shape=(64, 64, 3, 3))

    def conv(x, w):
        return relay.nn.conv2d(x, w, padding=(1, 1), channels=64, kernel_size=(3, 3))

    s = on(relay.add(on(conv(d1, w), CPU), on(conv(d2, w), CPU)), GPU)
    before = func([d1, d2, w], on(conv(s, w), CPU))
    d1, d2 = var("data1", CPU, (1, 64, 56, 56)), var("data2", CPU, (1, 64, 56, 56))
    w = var("weight", CPU, (64, 64, 3, 3))
    s = relay.add(copy(fixed(conv(d1, w), CPU), CPU, GPU), copy(fixed(conv(d2, w), CPU), CPU,
                                                                 GPU))
    expected = func([d1, d2, w], conv(copy(fixed(s, GPU), GPU, CPU), w), CPU)
    check(before, expected)


def test_projection_happens_before_the_copy():
    x = var("x", shape=(3, 3, 4))
    t = relay.Var("t")
    split = relay.split(x, 3).astuple()
    body = on(relay.subtract(relay.TupleGetItem(on(t, CPU), 0),
                             relay.TupleGetItem(on(t, CPU), 1)), GPU)
    before = func([x], relay.Let(t, split, body))
    x = var("x", CPU, (3, 3, 4))
    t = relay.Var("t")
    split = relay.split(x, 3).astuple()
    body = relay.subtract(copy(fixed(relay.TupleGetItem(t, 0), CPU), CPU, GPU),
                          copy(fixed(relay.TupleGetItem(t, 1), CPU), CPU, GPU))
    expected = func([x], relay.Let(t, fixed(split, CPU), body), GPU)
    check(before, expected, rand(1, (3, 3, 4)))


def test_devices_propagate_through_a_diamond():
    x = var("x")
    n0 = relay.negative(x)
    left, right = on(relay.negative(on(n0, CPU)), GPU), on(relay.negative(on(n0, CPU)), GPU)
    before = func([x], on(relay.negative(on(relay.add(left, right), GPU)), CPU))
    x = var("x", CPU)
    n0 = relay.negative(x)
    s = relay.add(relay.negative(copy(fixed(n0, CPU), CPU, GPU)),
                  relay.negative(copy(fixed(n0, CPU), CPU, GPU)))
    expected = func([x], relay.negative(copy(fixed(s, GPU), GPU, CPU)), CPU)
    check(before, expected, rand(1))


def test_fusible_network_alternating_devices():
    x, y = var("x"), var("y")
    s = relay.add(x, y)
    left = on(relay.negative(on(s, GPU)), CPU)
    before = func([x, y], on(relay.negative(on(relay.add(left, relay.negative(s)), GPU)), CPU))
    x, y = var("x", GPU), var("y", GPU)
    s = relay.add(x, y)
    left = copy(fixed(relay.negative(copy(fixed(s, GPU), GPU, CPU)), CPU), CPU, GPU)
    inner = relay.add(left, relay.negative(s))
    expected = func([x, y], relay.negative(copy(fixed(inner, GPU), GPU, CPU)), CPU)
    check(before, expected, rand(2))


def test_unpropagatable_graph():
    a, b, c, d = (var(n) for n in "abcd")
    before = func([a, b, c, d], on(relay.subtract(on(relay.add(a, b), CPU),
                                                  on(relay.multiply(c, d), GPU)), CPU))
    a, b, c, d = var("a", CPU), var("b", CPU), var("c", GPU), var("d", GPU)
    expected = func([a, b, c, d], relay.subtract(
        relay.add(a, b), copy(fixed(relay.multiply(c, d), GPU), GPU, CPU)), CPU)
    check(before, expected, rand(4))


def test_device_copy_of_a_parameter_with_a_constant():
    k = RNG.standard_normal(SHAPE).astype("float32")
    x = var("x")
    before = func([x], relay.add(copy(x, CPU, GPU), relay.const(k)))
    x = var("x", CPU)
    expected = func([x], relay.add(copy(x, CPU, GPU), relay.const(k)), GPU)
    check(before, expected, rand(1))


def test_shape_of_keeps_its_result_on_the_host():
    x = var("x", shape=(relay.Any(), relay.Any()))
    before = func([x], relay.op.vm.shape_of(on(x, GPU, result=True)))
    x = var("x", GPU, (relay.Any(), relay.Any()))
    expected = func([x], relay.op.vm.shape_of(x), HOST)
    check(before, expected)


def test_reshape_tensor_keeps_the_new_shape_on_the_host():
    x = var("x", shape=(2, 8))
    shape = relay.const(np.array([2, 4, 2], "int64"))
    before = func([x], relay.op.vm.reshape_tensor(x, shape, [2, 4, 2]))
    x = var("x", GPU, (2, 8))
    expected = func([x], relay.op.vm.reshape_tensor(x, fixed(shape, HOST), [2, 4, 2]), GPU)
    check(before, expected)


def _memory_ops():
    try:
        from minitvm.relay.op import memory
    except ImportError:
        pytest.skip("the memory.* ops are not registered")
    return memory


def test_alloc_storage_sizes_on_the_host_storage_on_its_device():
    memory = _memory_ops()
    size, align = var("size", shape=(), dtype="int64"), var("alignment", shape=(), dtype="int64")
    before = func([size, align], memory.alloc_storage(size, align, GPU))
    size, align = var("size", HOST, (), "int64"), var("alignment", HOST, (), "int64")
    expected = func([size, align], memory.alloc_storage(size, align, GPU), GPU)
    check(before, expected)


def test_alloc_tensor_offset_and_shape_on_the_host():
    memory = _memory_ops()
    sto = relay.var("sto", memory.storage_type())
    before = func([sto], memory.alloc_tensor(sto, 0, [3, 2]))
    sto = relay.var("sto", memory.storage_type())
    sto.virtual_device_ = GPU
    call = memory.alloc_tensor(sto, 0, [3, 2])
    args = [call.args[0], fixed(call.args[1], HOST), fixed(call.args[2], HOST)]
    expected = func([sto], relay.Call(call.op, args, call.attrs), GPU)
    check(before, expected)


# ------------------------------------------------------------------ functions and higher order
def test_a_local_function_result_on_the_cpu_flows_to_its_callers():
    a, b, c, d = (var(n) for n in "abcd")
    px, py, f = relay.Var("x"), relay.Var("y"), relay.Var("f")
    body = relay.Let(f, func([px, py], on(relay.add(px, py), CPU)),
                     relay.subtract(relay.Call(f, [a, b]), relay.add(c, d)))
    before = func([a, b, c, d], body)
    a, b, c, d = (var(n, CPU) for n in "abcd")
    px, py, f = relay.Var("x"), relay.Var("y"), relay.Var("f")
    px.virtual_device_ = CPU
    py.virtual_device_ = CPU
    body = relay.Let(f, func([px, py], relay.add(px, py), CPU),
                     relay.subtract(relay.Call(f, [a, b]), relay.add(c, d)))
    expected = func([a, b, c, d], body, CPU)
    check(before, expected, rand(4))


def test_a_call_annotated_on_the_cpu_puts_the_callee_there():
    a, b, c, d = (var(n) for n in "abcd")
    px, py, f = relay.Var("x"), relay.Var("y"), relay.Var("f")
    body = relay.Let(f, func([px, py], relay.add(px, py)),
                     relay.subtract(on(relay.Call(f, [a, b]), CPU), relay.add(c, d)))
    before = func([a, b, c, d], body)
    a, b, c, d = var("a", CPU), var("b", CPU), var("c", GPU), var("d", GPU)
    px, py, f = relay.Var("x"), relay.Var("y"), relay.Var("f")
    px.virtual_device_ = CPU
    py.virtual_device_ = CPU
    call = copy(fixed(relay.Call(f, [a, b]), CPU), CPU, GPU)
    body = relay.Let(f, func([px, py], relay.add(px, py), CPU),
                     relay.subtract(call, relay.add(c, d)))
    expected = func([a, b, c, d], body, GPU)
    check(before, expected, rand(4))


def _closure_vars():
    t = relay.TensorType(SHAPE, "float32")
    ft = relay.FuncType([t], t)
    return (relay.Var("g", ft), relay.Var("a", t), relay.Var("b", t), relay.Var("f"),
            relay.Var("h"))


def test_higher_order_constraint_flows_back_through_closures():
    x, y = var("x"), var("y")
    g, pa, pb, f, h = _closure_vars()
    inner = func([pa], relay.add(relay.Call(g, [on(pa, CPU)]), x))
    prog = relay.Let(f, func([g], inner), relay.Let(h, func([pb], relay.negative(pb)),
                     relay.subtract(x, relay.Call(relay.Call(f, [h]), [y]))))
    before = func([x, y], prog)
    x, y = var("x", GPU), var("y", CPU)
    g, pa, pb, f, h = _closure_vars()
    g.virtual_device_, pa.virtual_device_, pb.virtual_device_ = GPU, CPU, GPU
    inner = func([pa], relay.add(relay.Call(g, [copy(pa, CPU, GPU)]), x), GPU)
    prog = relay.Let(f, func([g], inner, GPU), relay.Let(h, func([pb], relay.negative(pb), GPU),
                     relay.subtract(x, relay.Call(relay.Call(f, [h]), [y]))))
    expected = func([x, y], prog, GPU)
    check(before, expected, rand(2))


def test_a_function_stored_in_a_tuple_is_forced_onto_the_tuple_device():
    x, y = var("x"), var("y")
    pa, pb, f, t = var("a"), var("b"), relay.Var("f"), relay.Var("t")
    fn = func([pa, pb], relay.add(pa, on(pb, CPU)))
    call = relay.Call(relay.TupleGetItem(t, 0), [relay.TupleGetItem(t, 1), y])
    before = func([x, y], relay.Let(f, fn, relay.Let(t, relay.Tuple([f, x]), call)))
    x, y = var("x", CPU), var("y", CPU)
    pa, pb, f, t = var("a", CPU), var("b", CPU), relay.Var("f"), relay.Var("t")
    fn = func([pa, pb], relay.add(pa, pb), CPU)
    call = relay.Call(relay.TupleGetItem(t, 0), [relay.TupleGetItem(t, 1), y])
    expected = func([x, y], relay.Let(f, fn, relay.Let(t, fixed(relay.Tuple([f, x]), CPU),
                                                       call)), CPU)
    check(before, expected, rand(2))


def test_conditional_over_functions():
    x, y, z = var("x", shape=(), dtype="bool"), var("y"), var("z")
    # annotated: InferType cannot type this unannotated builder form (TVM's text form parses)
    pa, pa1, f, g, h = var("a"), var("a1"), relay.Var("f"), relay.Var("g"), relay.Var("h")
    prog = relay.Let(f, func([pa], relay.add(pa, on(y, CPU, result=True))), relay.Let(
        g, func([pa1], relay.subtract(pa1, y)), relay.Let(h, relay.If(x, f, g),
                                                          relay.Call(h, [z]))))
    before = func([x, y, z], prog)
    x, y, z = var("x", CPU, (), "bool"), var("y", CPU), var("z", CPU)
    # annotated: InferType cannot type this unannotated builder form (TVM's text form parses)
    pa, pa1, f, g, h = var("a"), var("a1"), relay.Var("f"), relay.Var("g"), relay.Var("h")
    pa.virtual_device_ = pa1.virtual_device_ = CPU
    prog = relay.Let(f, func([pa], relay.add(pa, y), CPU), relay.Let(
        g, func([pa1], relay.subtract(pa1, y), CPU),
        relay.Let(h, fixed(relay.If(x, f, g), CPU), relay.Call(h, [z]))))
    expected = func([x, y, z], prog, CPU)
    out = check(before, expected)
    args = [np.array(True), *rand(2)]
    got = relay.create_executor("debug", mod=out).evaluate()(*args).numpy()
    np.testing.assert_allclose(got, args[1] + args[2], rtol=1e-6)


def test_global_function_devices_flow_between_definition_and_call():
    def build(with_devices):
        a = var("a", GPU if with_devices else None)
        b = var("b", CPU if with_devices else None)
        gf = relay.GlobalVar("f")
        fbody = relay.add(a, copy(b, CPU, GPU) if with_devices else on(b, CPU))
        f = func([a, b], fbody, GPU if with_devices else None)
        x = var("x", CPU if with_devices else None)
        y = var("y", GPU if with_devices else None)
        main = func([x, y], relay.Call(gf, [y, x]), GPU if with_devices else None)
        mod = tvm.IRModule()
        mod[gf] = f
        mod["main"] = main
        return mod

    check(build(False), build(True), rand(2))


def test_reference_cells():
    x, y, r = var("x"), var("y"), relay.Var("r")
    w = relay.Var("w")
    before = func([x, y], relay.Let(r, relay.RefCreate(x), relay.Let(
        w, relay.RefWrite(r, on(y, CPU)), relay.add(x, relay.RefRead(r)))))
    x, y, r, w = var("x", GPU), var("y", CPU), relay.Var("r"), relay.Var("w")
    expected = func([x, y], relay.Let(r, fixed(relay.RefCreate(x), GPU), relay.Let(
        w, fixed(relay.RefWrite(r, copy(y, CPU, GPU)), GPU), relay.add(x, relay.RefRead(r)))),
        GPU)
    check(before, expected, rand(2))


def test_adt_constructor_arguments_share_a_device():
    def build(planned):
        mod = tvm.IRModule()
        a = relay.TypeVar("A")
        lst = relay.GlobalTypeVar("List")
        cons = relay.Constructor("Cons", [a, relay.TypeCall(lst, [a])], lst)
        nil = relay.Constructor("Nil", [], lst)
        mod[lst] = relay.TypeData(lst, [a], [cons, nil])
        x = var("x", CPU if planned else None)
        y = var("y", CPU if planned else None)
        lv, z = relay.Var("l"), relay.Var("z")
        yy = y if planned else on(y, CPU, result=True)
        lst = relay.Call(cons, [x, relay.Call(cons, [yy, relay.Call(nil, [])])])
        clause = relay.Clause(relay.PatternConstructor(cons, [relay.PatternVar(z),
                                                              relay.PatternWildcard()]), z)
        body = relay.Let(lv, fixed(lst, CPU) if planned else lst,
                         relay.Match(lv, [clause], complete=False))
        mod["main"] = func([x, y], body, CPU if planned else None)
        return mod

    check(build(False), build(True), rand(2))


def test_free_on_device_allows_a_copy_only_where_scopes_differ():
    def build(planned):
        mod = tvm.IRModule()
        gv = relay.GlobalVar("on_scope_b")
        px = var("x", CPU_B)
        mod[gv] = func([px], px, CPU_B)
        a = var("a", CPU_B if planned else CPU)
        b, c = var("b", CPU_A), var("c", CPU_B)

        def free(e):
            return on(e, CPU, body=False)

        if planned:
            s = relay.add(relay.add(relay.Call(gv, [a]), relay.Call(gv, [copy(b, CPU_A, CPU_B)])),
                          relay.Call(gv, [c]))
            body = copy(fixed(s, CPU_B), CPU_B, CPU_A)
        else:
            s = relay.add(relay.add(relay.Call(gv, [free(a)]), relay.Call(gv, [free(b)])),
                          relay.Call(gv, [free(c)]))
            body = free(s)
        mod["main"] = func([a, b, c], body, CPU_A)
        return mod

    check(build(False), build(True), rand(3))


def test_primitive_functions_are_left_alone():
    gscope = VirtualDevice(tvm.cuda(), GPU_TARGET, memory_scope="global")
    tex = VirtualDevice(tvm.cuda(), GPU_TARGET, memory_scope="global.texture")
    d1, d2 = var("data1", shape=(1, 32, 40, 40)), var("data2", shape=(1, 32, 40, 40))
    p = relay.Var("a")
    to4 = func([p], relay.layout_transform(p, "NCHW", "NCHW4c"), Primitive=1)
    pa, pb = relay.Var("a"), relay.Var("b")
    pa.virtual_device_ = pb.virtual_device_ = gscope
    add = func([pa, pb], relay.add(pa, pb), tex, Primitive=1)
    q = relay.Var("a")
    back = func([q], relay.layout_transform(q, "NCHW4c", "NCHW"), Primitive=1)
    main = func([d1, d2], relay.Call(back, [relay.Call(add, [relay.Call(to4, [d1]),
                                                             relay.Call(to4, [d2])])]), tex)
    config = make_compilation_config(CTX, GPU_TARGET)
    out = plan(tvm.IRModule.from_expr(main), config)
    f = out["main"]
    assert f.virtual_device_ == tex
    assert all(pv.virtual_device_ == tex for pv in f.params)
    assert f.body.op.attrs["Primitive"] == 1 and f.body.op.body.op.name == "layout_transform"


# ------------------------------------------------------------------ depth, errors, API
def test_100000_node_chain_plans_without_recursion():
    x = var("x", shape=(2,))
    y = x
    for i in range(100_000):
        y = relay.add(y, x) if i % 2 else relay.negative(y)
    y = on(y, CPU)
    out = plan(tvm.IRModule.from_expr(relay.Function([x], y)))
    f = out["main"]
    assert f.virtual_device_ == CPU and f.params[0].virtual_device_ == CPU


def test_conflicting_constraints_name_both_devices():
    x = var("x")
    y = on(on(relay.negative(x), CPU, result=True), GPU, result=True)
    with pytest.raises(ValueError, match="do not match|incompatible|different virtual devices"):
        plan(tvm.IRModule.from_expr(relay.Function([x], y)))


def test_a_device_without_a_target_is_named():
    x = var("x")
    mod = tvm.IRModule.from_expr(relay.Function([x], on(relay.negative(x), tvm.device("opencl"))))
    with pytest.raises(ValueError, match=r"opencl \(device type 4\)"):
        plan(mod)


def test_virtual_device_api():
    assert tvm.ir.VirtualDevice is VirtualDevice is tvm.target.VirtualDevice
    assert VirtualDevice().is_fully_unconstrained()
    assert VirtualDevice.join(CPU, CPU_A) == CPU_A
    assert VirtualDevice.join(CPU, GPU) is None
    assert VirtualDevice.join(CPU_A, CPU_B) is None
    partial = VirtualDevice(tvm.cpu())
    assert VirtualDevice.default(partial, CPU_B) == CPU_B
    assert VirtualDevice.default(VirtualDevice(tvm.cuda()), CPU).target is None
    assert repr(GPU).startswith("VirtualDevice(device_type=2, virtual_device_id=0, target=cuda")
    assert CONFIG.default_primitive_virtual_device == GPU
    assert CONFIG.host_virtual_device == HOST
    assert make_compilation_config(tvm.transform.PassContext(), CPU_TARGET) \
        .default_primitive_virtual_device == CPU
    assert CONFIG.canonical_virtual_device(VirtualDevice(tvm.cuda())) == GPU


def test_printed_virtual_devices_round_trip():
    x = var("x")
    out = plan(tvm.IRModule.from_expr(relay.Function([x], on(relay.negative(x), CPU))))
    short = str(out)
    assert "%x {virtual_device=VirtualDevice(device_type=1" in short
    assert ", virtual_device=VirtualDevice(device_type=1" in short
    text = out.astext()
    assert "%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(5, 7), float32]" in text
    tvm.ir.assert_structural_equal(relay.parse(text), out)


def test_recovered_device_map_of_a_planned_program():
    a, b, c, d = (var(n) for n in "abcd")
    left = relay.add(a, b)
    right = relay.add(c, d)
    before = func([a, b, c, d], relay.subtract(copy(left, CPU, GPU), right))
    out = plan(tvm.IRModule.from_expr(before))
    recover = tvm.runtime.registry.get_global_func("relay.transform.RecoverVirtualDeviceMap")
    main = out["main"]
    found = recover(out, main)
    types = {k: v.device_type for k, v in found.items()}
    pa, pb, pc, pd = main.params
    sub = main.body
    copied, second = sub.args
    annotated = copied.args[0]
    assert [types[p] for p in (pa, pb, pc, pd)] == [1, 1, 2, 2]
    assert types[annotated] == 1 and types[annotated.args[0]] == 1  # on_device, first add
    assert types[copied] == types[second] == types[sub] == types[main] == 2


def test_collect_device_info_and_annotation_ops():
    x, y = var("x"), var("y")
    s = relay.add(x, y)
    o = on(s, tvm.cuda())
    e = relay.multiply(relay.negative(o), relay.const(2.0))
    info = relay.analysis.collect_device_info(e)
    assert info[s] == info[x] == info[y] == 2
    # the annotation's own value, and what uses it, default to the CPU: a copy sits there
    assert info[o] == info[e] == 1
    assert relay.analysis.collect_device_annotation_ops(e) == {o: 2}


def test_core_std_declares_the_extern_storage_type():
    core = tvm.IRModule()
    core.import_from_std("core.rly")  # TVM's PlanDevices test imports it at module level
    (storage,) = [g for g in core.type_definitions if g.name_hint == "Storage"]
    assert not core.type_definitions[storage].constructors
    mod = relay.parse('#[version = "0.0.5"]\nextern type Blob\ndef @main(%b: Blob[]) { %b }')
    assert [g.name_hint for g in mod.type_definitions] == ["Blob"]


def test_parsed_sequencing_plans_like_a_let():
    # TVM's ref case is written with ``e1; e2`` (e1 run for its effect): parse it that way
    src = """#[version = "0.0.5"]
    def @main(%p: Tensor[(5, 7), float32], %q: Tensor[(5, 7), float32]) {
      let %cell = ref(%p);
      ref_write(%cell, on_device(%q, virtual_device=meta[VirtualDevice][0]));
      add(%p, ref_read(%cell))
    }"""
    mod = relay.parse(src, "seq", None, {"VirtualDevice": [CPU, GPU]})
    seq = mod["main"].body.body
    assert isinstance(seq, relay.Let) and seq.var.name_hint == "_"
    assert isinstance(seq.value, relay.RefWrite)
    out = plan(mod)
    written = out["main"].body.body.value
    assert written.op.name == "on_device" and written.attrs.virtual_device == GPU
    assert written.args[0].value.op.name == "device_copy"


def test_conditional_over_unannotated_closures_from_text():
    src = """#[version = "0.0.5"]
    def @main(%c: bool, %k: Tensor[(5, 7), float32], %v: Tensor[(5, 7), float32]) {
      let %plus = fn (%p) { add(%p, on_device(%k, virtual_device=meta[VirtualDevice][0],
                                              constrain_result=True)) };
      let %minus = fn (%m) { subtract(%m, %k) };
      let %pick = if (%c) { %plus } else { %minus };
      %pick(%v)
    }"""
    out = plan(relay.parse(src, "cond", None, {"VirtualDevice": [CPU, GPU]}))
    main = out["main"]
    assert main.virtual_device_ == CPU and all(p.virtual_device_ == CPU for p in main.params)
    plus, minus = main.body.value, main.body.body.value
    assert plus.virtual_device_ == minus.virtual_device_ == plus.params[0].virtual_device_ == CPU
    assert plus.body.args[1] is main.params[1]  # the annotation is gone: already on the CPU
    pick = main.body.body.body.value
    assert pick.op.name == "on_device" and isinstance(pick.args[0], relay.If)

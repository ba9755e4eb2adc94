"""A dynamic-shape kernel's call site keeps its binding (``BoundCall``) across calls at the same
shapes and binds anew when they change; outputs equal the unbound path's bit for bit."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.bound_call import BoundCall
from minitvm.runtime import vm as runtime_vm


def _dense_vm():
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    w = relay.var("w", shape=(4, 3), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, w)) + relay.const(1.0)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    return runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


def _sites(vm) -> list:
    return [ins[7] for code, _, _, _ in vm._code for ins in code
            if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4]]


def test_call_site_binds_once_per_shape_and_matches_the_kernel_run():
    vm = _dense_vm()
    vm.native_entry = False  # (every call in the dispatch loop)
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((4, 3)).astype("float32")
    sites = _sites(vm)
    assert sites and all(s is not None for s in sites)
    seen = []
    for n in (2, 2, 5, 2):
        xv = rng.standard_normal((n, 3)).astype("float32")
        got = vm.run(xv, wv).numpy()
        bound = [s[0] for s in sites]
        assert all(isinstance(b, BoundCall) for b in bound)
        assert all(b.shapes[0] == (n, 3) for b in bound)
        seen.append(bound)
        np.testing.assert_allclose(got, np.maximum(xv @ wv.T, 0) + 1, rtol=1e-5, atol=1e-5)
    assert seen[1][0] is seen[0][0]  # the same shapes: the binding is kept
    assert seen[2][0] is not seen[1][0] and seen[3][0] is not seen[2][0]  # rebound


def test_bound_call_refuses_other_shapes_dtypes_layouts():
    vm = _dense_vm()
    rng = np.random.default_rng(1)
    wv = rng.standard_normal((4, 3)).astype("float32")
    xv = rng.standard_normal((2, 3)).astype("float32")
    idx = next(ins[1] for code, _, _, _ in vm._code for ins in code
               if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4])
    run = vm.exe.kernels[idx].run
    assert not vm.exe.kernels[idx].consts
    args = [xv, wv]
    bound = run.bind(args)
    assert isinstance(bound, BoundCall)
    out = bound(args)
    np.testing.assert_array_equal(out[0], run(args)[0])  # the unbound run: the same bits
    assert bound([rng.standard_normal((3, 3)).astype("float32"), wv]) is None
    assert bound([xv.astype("float64"), wv]) is None
    strided = rng.standard_normal((2, 6)).astype("float32")[:, ::2]
    assert strided.shape == (2, 3) and not strided.flags.c_contiguous
    assert bound([strided, wv]) is None
    assert bound([xv]) is None


def test_generated_run_is_the_call_bit_for_bit_and_refuses_the_same():
    vm = _dense_vm()
    rng = np.random.default_rng(2)
    wv = rng.standard_normal((4, 3)).astype("float32")
    xv = rng.standard_normal((2, 3)).astype("float32")
    idx = next(ins[1] for code, _, _, _ in vm._code for ins in code
               if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4])
    bound = vm.exe.kernels[idx].run.bind([xv, wv])
    assert bound.run is not bound.__call__  # (generated: one frame)
    for keep in (False, True):
        if keep:
            bound.keep_outputs()
        got, want = bound.run([xv, wv]), bound([xv, wv])
        assert got[0].tobytes() == want[0].tobytes() and got[0] is not want[0]
        assert bound.run([xv.astype("float64"), wv]) is None
        assert bound.run([rng.standard_normal((3, 3)).astype("float32"), wv]) is None
        assert bound.run([xv]) is None
    # kept outputs: written again only once nothing else holds them
    first = bound.run([xv, wv])[0]
    held = first.copy()
    for _ in range(4):
        bound.run([xv + 1, wv])
    assert first.tobytes() == held.tobytes()


def test_generated_run_checks_in_native_code_and_refuses_what_python_refused():
    vm = _dense_vm()
    rng = np.random.default_rng(3)
    wv = rng.standard_normal((4, 3)).astype("float32")
    xv = rng.standard_normal((2, 3)).astype("float32")
    idx = next(ins[1] for code, _, _, _ in vm._code for ins in code
               if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4])
    bound = vm.exe.kernels[idx].run.bind([xv, wv])
    assert "native checks" in bound.run.__code__.co_filename

    class Sub(np.ndarray):
        pass

    assert bound.run([xv.view(Sub), wv]) is None  # (the Python checks: not exactly an array)
    assert bound.run([xv, wv.astype(">f4")]) is None  # (another descriptor, not float32's)
    assert bound.run([xv, np.zeros((4, 3, 1), "float32")]) is None  # (rank)
    assert bound.run([xv[:, :2], wv]) is None
    want = bound([xv, wv])[0]
    assert bound.run([xv, wv])[0].tobytes() == want.tobytes()


def test_kept_outputs_are_reused_only_when_nothing_holds_them():
    vm = _dense_vm()
    rng = np.random.default_rng(4)
    wv = rng.standard_normal((4, 3)).astype("float32")
    xs = [rng.standard_normal((2, 3)).astype("float32") for _ in range(6)]
    idx = next(ins[1] for code, _, _, _ in vm._code for ins in code
               if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4])
    bound = vm.exe.kernels[idx].run.bind([xs[0], wv])
    bound.keep_outputs()
    assert "native checks" in bound.run.__code__.co_filename
    made = {id(bound.run([x, wv])[0]) for x in xs}  # (each dropped at once)
    assert len(made) <= 2  # a step's output of two steps before is free: written again
    held = [bound.run([x, wv])[0] for x in xs]  # (all held: none may be written under us)
    assert len({id(h) for h in held}) == len(xs)
    for h, x in zip(held, xs, strict=True):
        want = bound([x, wv])[0]
        assert h.tobytes() == want.tobytes()


def test_call_sites_of_one_kernel_at_equal_inputs_share_a_binding():
    # two dense layers of one shape: one kernel, two call sites; the second site binds to the
    # first one's binding (nothing of a site is kept in it), and the outputs stay right
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    w = relay.var("w", shape=(3, 3), dtype="float32")
    y = relay.nn.relu(relay.nn.dense(x, w)) + relay.const(1.0)
    z = relay.nn.relu(relay.nn.dense(y, w)) + relay.const(1.0)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], z))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    vm.native_entry = False  # (every call in the dispatch loop)
    rng = np.random.default_rng(5)
    wv = rng.standard_normal((3, 3)).astype("float32")
    xv = rng.standard_normal((2, 3)).astype("float32")
    want = np.maximum(xv @ wv.T, 0) + 1
    want = np.maximum(want @ wv.T, 0) + 1
    np.testing.assert_allclose(vm.run(xv, wv).numpy(), want, rtol=1e-5, atol=1e-5)
    sites = _sites(vm)
    idx = {ins[1] for code, _, _, _ in vm._code for ins in code
           if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4]}
    assert len(sites) == 2 and len(idx) == 1
    assert isinstance(sites[0][0], BoundCall) and sites[1][0] is sites[0][0]


def test_a_shared_binding_is_handed_out_only_while_it_keeps_no_outputs():
    vm = _dense_vm()
    rng = np.random.default_rng(6)
    wv, wv2 = (rng.standard_normal((4, 3)).astype("float32") for _ in range(2))
    xv, xv2 = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
    idx = next(ins[1] for code, _, _, _ in vm._code for ins in code
               if ins[0] == runtime_vm.vm.B.INVOKE_PACKED and ins[4])
    run = vm.exe.kernels[idx].run
    first = run.bind([xv, wv])
    assert run.bind([xv2, wv2]) is first  # (equal shapes and dtypes; no packed weight)
    np.testing.assert_array_equal(first.run([xv2, wv2])[0], run([xv2, wv2])[0])
    assert run.bind([xv[:1], wv]) is not first  # (another shape)
    assert run.bind([xv.astype("float64"), wv]) is not first  # (another dtype)
    own = first.copy()  # (what the VM gives a call site in a loop before keeping outputs)
    own.keep_outputs()
    assert own.kept is not None and first.kept is None
    assert run.bind([xv, wv]) is first
    first.keep_outputs()  # kept outputs belong to one site: such a binding is never shared
    again = run.bind([xv, wv])
    assert again is not first and again.kept is None
    np.testing.assert_array_equal(again.run([xv, wv])[0], run([xv, wv])[0])

"""The Relax VM code generator's loops: a function's call of itself in tail position becomes
moves into its parameters and a jump back (past its parameter checks when the arguments' struct
info is the parameters'; to the start when a shape changes), a move before its source's kill
takes the source's register, and ``alloc_storage`` reuses a loop-carried output's buffer two
steps later. Each against the build with ``relax.vm.tail_call_loops`` off (frames: bitwise the
same outputs) and numpy. A loop runs as generated Python (``straight_line``): bitwise the
interpreter's outputs, its heap's shapes made once when nothing in the loop writes the heap, a
storage and its one tensor made by one call of the site's allocator, which reuses a tensor of
two steps before only when nothing refers to it or its memory."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.op.call_inplace import call_inplace_packed
from minitvm.relax.vm.codegen import _kill_counts
from minitvm.runtime.relax_vm import builtins
from minitvm.runtime.relax_vm.executable import CALL, GOTO, IF, KILL, MOVE, RET, VMFunction
from minitvm.runtime.relax_vm.straight_line import (
    loop_invariant_shapes,
    straight_line_function,
)

_CHECKS = ("vm.builtin.check_tensor_info", "vm.builtin.match_shape",
           "vm.builtin.alloc_shape_heap")


def _private(bb, gv, name, params, body_fn):
    """A private recursive function ``name`` made by ``body_fn(bb)`` (returns its result)."""
    with bb.function(name, params, private=True):
        fgv = bb.emit_func_output(body_fn(bb))
    return fgv


def _finish(bb, gv, fgv):
    mod = bb.get()
    func = mod[fgv]
    mod.remove(fgv)
    mod[gv] = func
    return mod


def _row_loop():
    """main(src [n, 3]): ys[t] = src[t] * 2 + 1 for every row, by a recursive function."""
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    t = relax.Var("t", relax.TensorStructInfo([], "int64"))
    src = relax.Var("src", relax.TensorStructInfo([m, 3], "float32"))
    ys = relax.Var("ys", relax.TensorStructInfo([m, 3], "float32"))
    gv = relax.GlobalVar("rows")
    gv._checked_type = relax.FuncStructInfo([t.struct_info, src.struct_info, ys.struct_info],
                                            ys.struct_info)
    bb = relax.BlockBuilder()

    def body(bb):
        steps = bb.emit(relax.op.take(relax.op.shape_to_tensor(relax.ShapeExpr([m, 3])),
                                      relax.const(np.array(0, "int64")), 0))
        go = bb.emit(relax.op.less(t, steps))
        bb.begin_dataflow_block()
        twice = bb.emit(relax.op.multiply(relax.op.take(src, t, 0),
                                          relax.const(np.array(2.0, "float32"))))
        row = bb.emit(relax.op.add(twice, relax.const(np.array(1.0, "float32"))))
        written = bb.emit_output(call_inplace_packed("vm.builtin.update_row", ys, row, t,
                                                     inplace_indices=[0],
                                                     sinfo_args=ys.struct_info))
        nxt = bb.emit_output(relax.op.add(t, relax.const(np.array(1, "int64"))))
        step = bb.end_block()
        bb.begin_binding_block()
        again = bb.emit(relax.Call(gv, [nxt, src, written]))
        then = relax.SeqExpr([step, bb.end_block()], again)
        return bb.emit(relax.If(go, then, relax.SeqExpr([], ys)))

    fgv = _private(bb, gv, "rows", [t, src, ys], body)
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    with bb.function("main", [x]):
        zeros = bb.emit(relax.op.zeros(relax.ShapeExpr([n, 3]), "float32"))
        bb.emit_func_output(bb.emit(relax.Call(gv, [relax.const(np.array(0, "int64")), x,
                                                    zeros])))
    return _finish(bb, gv, fgv)


def _shrinking_sum():
    """main(x [n]): the sum of x's entries in order, by f(v [k], acc) = f(v[1:], acc + v[0])
    while k > 0: each call's argument one entry shorter (another shape)."""
    n, k = tir.Var("n", "int64"), tir.Var("k", "int64")
    v = relax.Var("v", relax.TensorStructInfo([k], "float32"))
    acc = relax.Var("acc", relax.TensorStructInfo([], "float32"))
    gv = relax.GlobalVar("shrink")
    gv._checked_type = relax.FuncStructInfo([v.struct_info, acc.struct_info], acc.struct_info)
    bb = relax.BlockBuilder()

    def body(bb):
        size = bb.emit(relax.op.take(relax.op.shape_to_tensor(relax.ShapeExpr([k])),
                                     relax.const(np.array(0, "int64")), 0))
        go = bb.emit(relax.op.less(relax.const(np.array(0, "int64")), size))
        bb.begin_binding_block()
        head = bb.emit(relax.op.take(v, relax.const(np.array(0, "int64")), 0))
        total = bb.emit(relax.op.add(acc, head))
        rest = bb.emit(relax.op.strided_slice(v, [0], [1], [2 ** 62]))
        again = bb.emit(relax.Call(gv, [rest, total]))
        then = relax.SeqExpr([bb.end_block()], again)
        return bb.emit(relax.If(go, then, relax.SeqExpr([], acc)))

    fgv = _private(bb, gv, "shrink", [v, acc], body)
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.Call(gv, [x, relax.const(np.array(0, "float32"))])))
    return _finish(bb, gv, fgv)


def _swap_loop():
    """main(a, b [2]): f(i, a, b) = f(i - 1, b, a) while i > 0: arguments that are the other
    parameters (a parallel move)."""
    i = relax.Var("i", relax.TensorStructInfo([], "int64"))
    a = relax.Var("a", relax.TensorStructInfo([2], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([2], "float32"))
    gv = relax.GlobalVar("swap")
    ret = relax.TupleStructInfo([a.struct_info, b.struct_info])
    gv._checked_type = relax.FuncStructInfo([i.struct_info, a.struct_info, b.struct_info], ret)
    bb = relax.BlockBuilder()

    def body(bb):
        go = bb.emit(relax.op.less(relax.const(np.array(0, "int64")), i))
        bb.begin_binding_block()
        dec = bb.emit(relax.op.subtract(i, relax.const(np.array(1, "int64"))))
        again = bb.emit(relax.Call(gv, [dec, b, a]))
        then = relax.SeqExpr([bb.end_block()], again)
        return bb.emit(relax.If(go, then, relax.SeqExpr([], relax.Tuple([a, b]))))

    fgv = _private(bb, gv, "swap", [i, a, b], body)
    n = relax.Var("n", relax.TensorStructInfo([], "int64"))
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([2], "float32"))
    with bb.function("main", [n, x, y]):
        bb.emit_func_output(bb.emit(relax.Call(gv, [n, x, y])))
    return _finish(bb, gv, fgv)


def _build(mod, loops: bool):
    with tvm.transform.PassContext(config={"relax.vm.tail_call_loops": loops}):
        ex = relax.build(mod, "llvm")
    return ex, relax.VirtualMachine(ex, tvm.cpu())


def _callee(ex, ins) -> str:
    return ex.func_table[ins[2]][1] if ins[0] == CALL else ""


def test_a_tail_call_of_itself_is_a_jump_past_the_parameter_checks():
    ex, vm = _build(_row_loop(), True)
    code = ex.functions["rows"].code
    assert not any(ins[0] == CALL and ex.func_table[ins[2]] == ("vm", "rows") for ins in code)
    back = [(pc, ins) for pc, ins in enumerate(code) if ins[0] == GOTO and ins[1] < 0]
    assert len(back) == 1
    pc, ins = back[0]
    target = pc + ins[1]
    # the checks of t, src, ys and their shape-heap matches run once, before the jump's target
    assert all(_callee(ex, i) in _CHECKS for i in code[:target])
    assert sum(_callee(ex, i) == "vm.builtin.check_tensor_info" for i in code[:target]) == 3
    assert _callee(ex, code[target]) not in _CHECKS
    # t and ys written right before the jump (src is passed on as it is: no move)
    assert [(i[0], i[1]) for i in code[pc - 2:pc]] == [(MOVE, 0), (MOVE, 2)]
    x = np.arange(200 * 3, dtype="float32").reshape(200, 3)
    got = vm["main"](x).numpy()
    _, vm_off = _build(_row_loop(), False)
    np.testing.assert_array_equal(got, vm_off["main"](x).numpy())
    np.testing.assert_array_equal(got, x * 2 + 1)


def test_a_tail_call_of_another_shape_jumps_to_the_checks():
    ex, vm = _build(_shrinking_sum(), True)
    code = ex.functions["shrink"].code
    back = [pc + ins[1] for pc, ins in enumerate(code) if ins[0] == GOTO and ins[1] < 0]
    assert back == [0]  # (v[1:] is [k - 1], the parameter [k]: matched again)
    assert not any(ins[0] == CALL and ex.func_table[ins[2]] == ("vm", "shrink")
                   for ins in code)
    x = np.random.default_rng(0).standard_normal(50).astype("float32")
    want = np.float32(0)
    for v in x:
        want = np.float32(want + v)
    _, vm_off = _build(_shrinking_sum(), False)
    got = vm["main"](x).numpy()
    assert got == want == vm_off["main"](x).numpy()
    assert vm["main"](x[:7]).numpy() == vm_off["main"](x[:7]).numpy()


@pytest.mark.parametrize("count", [0, 1, 4, 7])
def test_arguments_that_are_other_parameters_move_in_parallel(count):
    ex, vm = _build(_swap_loop(), True)
    assert any(ins[0] == GOTO and ins[1] < 0 for ins in ex.functions["swap"].code)
    a, b = np.array([1, 2], "float32"), np.array([3, 4], "float32")
    got = [o.numpy() for o in vm["main"](np.array(count, "int64"), a, b)]
    want = [b, a] if count % 2 else [a, b]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_move_before_its_sources_kill_takes_its_register():
    ex, _ = _build(_row_loop(), True)
    for f in ex.functions.values():
        for ins, nxt in zip(f.code, f.code[1:]):
            assert not (ins[0] == MOVE and nxt[0] == KILL and ins[2] == [0, nxt[1]]), f.name
    ex_main = ex.functions["main"].code
    assert not any(ins[0] == MOVE for ins in ex_main[:-2])  # (only the result's, by the ret)


def _site_allocators(vm, func) -> list:
    """The ``site_tensor`` allocators of ``func``'s generated code."""
    run = vm._straight[id(func)]
    return [v for v in run.__globals__.values()
            if getattr(v, "builtin", None) is builtins.storage_tensor and hasattr(v, "buffers")]


def test_the_loop_reuses_its_storage_two_steps_later():
    # (the generated code's allocators, builtins.site_tensor: the interpreter's alloc_storage
    # keeps two buffers a site too, test_alloc_storage_keeps_two_buffers_a_site)
    ex, vm = _build(_row_loop(), True)
    x = np.arange(100 * 3, dtype="float32").reshape(100, 3)
    np.testing.assert_array_equal(vm["main"](x).numpy(), x * 2 + 1)
    sites = _site_allocators(vm, ex.functions["rows"])
    assert sites and sum(s.buffers for s in sites) <= 3 * len(sites)  # (not one a step: 100)


def _carry_loop(view: bool):
    """main(n, x [2]): f(i, a, b) = f(i - 1, a * 0.5 + 1, a) while 0 < i, returning (a, b):
    each step's result is made at one site while the two before are alive (``b`` the step
    before's ``a``; with ``view``, ``b`` is a reshape of it: a view of its memory)."""
    i = relax.Var("i", relax.TensorStructInfo([], "int64"))
    a = relax.Var("a", relax.TensorStructInfo([2], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([2, 1] if view else [2], "float32"))
    gv = relax.GlobalVar("carry")
    ret = relax.TupleStructInfo([a.struct_info, b.struct_info])
    gv._checked_type = relax.FuncStructInfo([i.struct_info, a.struct_info, b.struct_info], ret)
    bb = relax.BlockBuilder()

    def body(bb):
        go = bb.emit(relax.op.less(relax.const(np.array(0, "int64")), i))
        bb.begin_binding_block()
        dec = bb.emit(relax.op.subtract(i, relax.const(np.array(1, "int64"))))
        nxt = bb.emit(relax.op.add(relax.op.multiply(a, relax.const(np.float32(0.5))),
                                   relax.const(np.float32(1.0))))
        old = bb.emit(relax.op.reshape(a, [2, 1])) if view else a
        again = bb.emit(relax.Call(gv, [dec, nxt, old]))
        then = relax.SeqExpr([bb.end_block()], again)
        return bb.emit(relax.If(go, then, relax.SeqExpr([], relax.Tuple([a, b]))))

    fgv = _private(bb, gv, "carry", [i, a, b], body)
    n = relax.Var("n", relax.TensorStructInfo([], "int64"))
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    with bb.function("main", [n, x]):
        start = bb.emit(relax.op.reshape(x, [2, 1])) if view else x
        bb.emit_func_output(bb.emit(relax.Call(gv, [n, x, start])))
    return _finish(bb, gv, fgv)


@pytest.mark.parametrize("view", [False, True])
def test_a_loop_never_reuses_a_tensor_a_later_step_still_sees(view):
    ex, vm = _build(_carry_loop(view), True)
    x = np.array([3.0, -7.0], "float32")
    want_a, want_b = x, x
    for steps in (0, 1, 2, 3, 9):
        a = x
        for _ in range(steps):
            a, b = a * np.float32(0.5) + np.float32(1.0), a
        want_a, want_b = a, (b if steps else x)
        vm.straight_line = True
        fast = vm["main"](np.array(steps, "int64"), x)
        assert callable(vm._straight[id(ex.functions["carry"])])
        vm.straight_line = False
        slow = vm["main"](np.array(steps, "int64"), x)
        for f, s, w in zip(fast, slow, (want_a, want_b.reshape(2, 1) if view else want_b),
                           strict=True):
            assert f.numpy().tobytes() == s.numpy().tobytes() == w.tobytes()
    # results the caller holds are never handed out again
    vm.straight_line = True
    first = vm["main"](np.array(5, "int64"), x)
    kept = [o.numpy().copy() for o in first]
    vm["main"](np.array(6, "int64"), x * 3)
    assert all(o.numpy().tobytes() == k.tobytes() for o, k in zip(first, kept, strict=True))


def test_tuples_are_built_and_read_in_the_generated_code_itself():
    ex, vm = _build(_carry_loop(False), True)
    x = np.array([3.0, -7.0], "float32")
    vm.straight_line = True
    fast = vm["main"](np.array(4, "int64"), x)
    used = list(vm._straight[id(ex.functions["carry"])].__globals__.values())
    assert not any(v is builtins.make_tuple or v is builtins.tuple_getitem for v in used)
    vm.straight_line = False
    slow = vm["main"](np.array(4, "int64"), x)
    assert [o.numpy().tobytes() for o in fast] == [o.numpy().tobytes() for o in slow]


class _FakeVM:
    def __init__(self):
        self._storage_cache, self._storage_offset = {}, {}
        self._storage_spare, self._storage_spare_offset = {}, {}


def test_alloc_storage_keeps_two_buffers_a_site():
    vm = _FakeVM()
    size = builtins.ShapeTuple([64])
    a = builtins.alloc_storage(vm, size, 0, "float32", 1)
    b = builtins.alloc_storage(vm, size, 0, "float32", 1)  # (a alive: another buffer)
    assert a.buf.base is not b.buf.base
    first = id(a.buf.base)  # (the cache holds it: its id stays its own)
    del a
    c = builtins.alloc_storage(vm, size, 0, "float32", 1)  # b alive, a free: a's buffer
    assert id(c.buf.base) == first
    assert c.buf.ctypes.data % builtins.ALIGN == 0 and b.buf.ctypes.data % builtins.ALIGN == 0
    del b, c
    d = builtins.alloc_storage(vm, size, 0, "float32", 1)  # the last one, free again
    assert id(d.buf.base) == first
    big = builtins.alloc_storage(vm, builtins.ShapeTuple([4096]), 0, "float32", 1)
    assert big.nbytes == 4096 and id(big.buf.base) != first  # (too small: a new one)


def test_storage_tensor_is_the_tensor_of_the_sites_storage():
    vm, size, shape = _FakeVM(), builtins.ShapeTuple([64]), builtins.ShapeTuple([4, 4])
    a = builtins.storage_tensor(vm, size, 0, "uint8", 1, 0, shape, "float32")
    b = builtins.storage_tensor(vm, size, 0, "uint8", 1, 0, shape, "float32")
    assert a.shape == (4, 4) and a.dtype == "float32" and a.base is not b.base
    first = id(a.base)  # (numpy's views point at the owning array)
    del a
    c = builtins.alloc_tensor_from_storage(builtins.alloc_storage(vm, size, 0, "uint8", 1), 0,
                                           shape, "float32")  # b alive, a free: a's buffer
    assert id(c.base) == first and c.ctypes.data % builtins.ALIGN == 0
    with pytest.raises(TypeError, match="buffer is too small"):  # (bounded by the storage)
        builtins.storage_tensor(vm, size, 0, "uint8", 2, 0, builtins.ShapeTuple([5, 4]),
                                "float32")


def _function_of(ex, vm, name):
    f = ex.functions[name]
    return f, vm._linked[id(f)]


def test_a_loop_runs_as_generated_code_making_its_shapes_once():
    ex, vm = _build(_row_loop(), True)
    f, code = _function_of(ex, vm, "rows")
    back = [pc + ins[1] for pc, ins in enumerate(code) if ins[0] == GOTO and ins[1] < 0]
    head, pcs = loop_invariant_shapes(code, {pc: pc + ins[1] for pc, ins in enumerate(code)
                                             if ins[0] == GOTO} |
                                      {pc: pc + ins[2] for pc, ins in enumerate(code)
                                       if ins[0] == IF})
    assert head == back[0] and pcs  # the make_shape of (m, 3) a step, made on entering
    assert all(_callee(ex, f.code[pc]) == "vm.builtin.make_shape" for pc in pcs)
    x = np.random.default_rng(0).standard_normal((50, 3)).astype("float32")
    for rows in (50, 1, 0):
        vm.straight_line = True
        fast = vm["main"](x[:rows]).numpy()
        assert callable(vm._straight[id(f)])
        vm.straight_line = False
        slow = vm["main"](x[:rows]).numpy()
        assert fast.tobytes() == slow.tobytes()
        np.testing.assert_array_equal(fast, x[:rows] * np.float32(2) + np.float32(1))


def _counting_loop(bump_heap: bool):
    """Linked code of f(n): a heap [0]; each step records make_shape(heap) = (heap[0],) and
    adds one to the heap's entry (through the heap register, or a copy of its value)."""
    seen: list = []
    site = builtins.specialize("vm.builtin.make_shape", [None, 1, 1, 0], [(0, 1)])

    def bump(heap, shape):
        seen.append(tuple(shape))
        if bump_heap:
            heap[0] += 1
        return len(seen)

    def count(shape):
        seen.append(tuple(shape))
        return len(seen)

    def more(k, n):
        return k < n

    def call(dst, fn, *regs):
        return (CALL, dst, 2, fn, fn.__name__, [None] * len(regs),
                list(enumerate(regs)), list(regs))

    code = [call(1, lambda n: np.zeros(1, "int64"), 0),
            call(2, site, 1),
            call(3, bump, 1, 2) if bump_heap else call(3, count, 2),
            call(4, more, 3, 0),
            (IF, 4, 2),
            (GOTO, -4),
            (RET, 3)]
    return VMFunction("f", ["n"], 5, []), code, seen


@pytest.mark.parametrize("bump_heap", [True, False])
def test_shapes_of_a_heap_the_loop_writes_are_made_every_step(bump_heap):
    func, code, seen = _counting_loop(bump_heap)
    targets = {4: 6, 5: 1}
    head, pcs = loop_invariant_shapes(code, targets)
    assert (head, pcs) == ((-1, set()) if bump_heap else (1, {1}))
    run = straight_line_function(func, code, lambda k, v: v)
    assert run([4]) == 4
    assert seen == ([(0,), (1,), (2,), (3,)] if bump_heap else [(0,)] * 4)


def test_loop_invariant_shapes_walks_a_hundred_thousand_instructions():
    site = builtins.specialize("vm.builtin.make_shape", [None, 1, 1, 0], [(0, 1)])
    code = [(CALL, 1, 2, lambda n: np.zeros(1, "int64"), "heap", [None], [(0, 0)], [0])]
    code += [(CALL, 2, 2, site, "s", [None], [(0, 1)], [1])] * 100_000
    code += [(IF, 0, 2), (GOTO, -100_001), (RET, 2)]
    head, pcs = loop_invariant_shapes(code, {100_001: 100_003, 100_002: 1})
    assert head == 1 and len(pcs) == 100_000


def test_kill_counts_walk_a_hundred_thousand_nested_branches():
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    cond = relax.Var("c", relax.TensorStructInfo([], "bool"))
    v = relax.Var("v")  # (no struct info: the chain is built without deducing any)
    kill = relax.VarBinding(relax.Var("k"), relax.Call(tvm.ir.Op.get("relax.vm.kill_object"),
                                                       [x]))
    other = relax.SeqExpr([relax.BindingBlock([kill])], v)
    body = relax.SeqExpr([], v)
    for _ in range(100_000):
        body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(
            v, relax.If(cond, body, other))])], v)
    func = relax.Function([x, cond], body, relax.TensorStructInfo([2], "float32"))
    assert _kill_counts(func) == {x: 100_000}  # (the else branch, shared, at every level)

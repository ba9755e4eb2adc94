"""``relax_vm.liveness.dead_at_vm_calls``: the registers a Relax VM function drops before it
calls a VM function (its frame then holds only what is read after the call): hand-made code,
a recursive row loop run in the VM (same results, intermediates dropped, storage reused across
steps), a backward jump (no kills), and a 100,000-instruction function."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.op.call_inplace import call_inplace_packed
from minitvm.runtime.relax_vm.executable import (
    ARG_IMM,
    ARG_REG,
    CALL,
    GOTO,
    IF,
    KILL,
    MOVE,
    RET,
)
from minitvm.runtime.relax_vm.liveness import dead_at_vm_calls

_VM_FN, _PACKED_FN = 7, 3  # function table indices in the hand-made code


def _is_vm(ins) -> bool:
    return ins[2] == _VM_FN


def test_dead_registers_at_a_vm_call():
    code = [
        [CALL, 2, _PACKED_FN, [[ARG_REG, 0]]],                # %2 = f(%0)
        [CALL, 3, _PACKED_FN, [[ARG_REG, 2], [ARG_IMM, 5]]],  # %3 = f(%2, 5)
        [IF, 3, 4],                                           # if %3 else -> pc 6
        [MOVE, 4, [ARG_REG, 2]],                              # %4 = %2
        [CALL, 5, _VM_FN, [[ARG_REG, 4]]],                    # %5 = vm(%4): %1 read after
        [GOTO, 2],
        [MOVE, 5, [ARG_REG, 1]],                              # %5 = %1
        [RET, 5],
    ]
    # read after the call: nothing but %5 (its destination), on the then path; %1 is read only
    # on the else path, which the call is not on
    assert dead_at_vm_calls(code, 2, _is_vm) == {4: (0, 1, 2, 3, 4)}
    code[5] = [MOVE, 6, [ARG_REG, 1]]  # now %1 is read after the call
    code.insert(6, [GOTO, 2])
    code[2] = [IF, 3, 5]
    # (%6, written after the call and never read, counts as dead: dropping it is harmless)
    assert dead_at_vm_calls(code, 2, _is_vm) == {4: (0, 2, 3, 4, 6)}


def test_killed_registers_and_backward_jumps():
    code = [[CALL, 1, _PACKED_FN, [[ARG_REG, 0]]], [KILL, 0], [CALL, 2, _VM_FN, [[ARG_REG, 1]]],
            [MOVE, 3, [ARG_REG, 1]], [RET, 3]]
    assert dead_at_vm_calls(code, 1, _is_vm) == {2: (0, 3)}  # (%1 is read after)
    assert dead_at_vm_calls(code + [[GOTO, -3]], 1, _is_vm) == {}
    assert dead_at_vm_calls(code + [[IF, 1, 0]], 1, _is_vm) == {}


def test_a_hundred_thousand_instructions():
    n = 100_000
    code = [[MOVE, k + 1, [ARG_REG, k]] for k in range(n)]
    code += [[CALL, n + 1, _VM_FN, [[ARG_REG, n]]], [RET, n + 1]]
    dead = dead_at_vm_calls(code, 1, _is_vm)
    assert dead == {n: tuple(range(n + 1))}


def _row_loop():
    """main(src [n, 3]): ys = zeros; for t < n: ys[t] = src[t] * 2 + 1 (a recursive function)."""
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    t = relax.Var("t", relax.TensorStructInfo([], "int64"))
    src = relax.Var("src", relax.TensorStructInfo([m, 3], "float32"))
    ys = relax.Var("ys", relax.TensorStructInfo([m, 3], "float32"))
    gv = relax.GlobalVar("rows")
    gv._checked_type = relax.FuncStructInfo([t.struct_info, src.struct_info, ys.struct_info],
                                            ys.struct_info)
    bb = relax.BlockBuilder()
    with bb.function("rows", [t, src, ys], private=True):
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
        out = bb.emit(relax.If(go, then, relax.SeqExpr([], ys)))
        fgv = bb.emit_func_output(out)
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    with bb.function("main", [x]):
        zeros = bb.emit(relax.op.zeros(relax.ShapeExpr([n, 3]), "float32"))
        res = bb.emit(relax.Call(gv, [relax.const(np.array(0, "int64")), x, zeros]))
        bb.emit_func_output(res)
    mod = bb.get()
    func = mod[fgv]
    mod.remove(fgv)
    mod[gv] = func
    return mod


def test_recursive_loop_drops_its_step_intermediates():
    # (a recursion that is not a tail call keeps its frames; with tail calls as calls, this
    # one does too: the relax.vm.tail_call_loops build, the default, runs it as a jump instead,
    # tests/relax/vm/test_relax_vm_tail_call_loops.py)
    with tvm.transform.PassContext(config={"relax.vm.tail_call_loops": False}):
        ex = relax.build(_row_loop(), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rows = ex.functions["rows"]
    dead = vm._dead[id(rows)]
    (pc, regs), = dead.items()  # the one call of a VM function: the next step
    assert rows.code[pc][0] == CALL and ex.func_table[rows.code[pc][2]] == ("vm", "rows")
    assert set(range(3)) <= set(regs)  # the parameters are passed on, not read after
    x = np.arange(100 * 3, dtype="float32").reshape(100, 3)
    np.testing.assert_array_equal(vm["main"](x).numpy(), x * 2 + 1)
    # the step's intermediate (x[t] * 2) is dropped before the next step, whose allocation at
    # the same site then reuses its buffer: 100 steps hold a handful of buffers, not 100
    owners = {id(v) for v in vm._storage_cache.values()}
    vm_off = relax.VirtualMachine(ex, tvm.cpu())
    vm_off._dead = {k: {} for k in vm_off._dead}
    seen_on, seen_off = set(), set()
    for v, seen in ((vm, seen_on), (vm_off, seen_off)):
        real = v._storage_cache.__class__

        class Spy(real):
            def __setitem__(self, key, value, seen=seen):
                seen.add(id(value))
                super().__setitem__(key, value)

        v._storage_cache = Spy(v._storage_cache)
        np.testing.assert_array_equal(v["main"](x).numpy(), x * 2 + 1)
    assert owners and len(seen_on) < 20 < 100 <= len(seen_off)

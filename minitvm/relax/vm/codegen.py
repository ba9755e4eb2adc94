"""VM code generation: lowered Relax functions (after VMShapeLower) to the Relax VM's
instruction lists, constant pool and function table (``runtime.relax_vm``).

Every variable gets a register (parameters first); a binding becomes one instruction — a call of
a kernel (a PrimFunc of the module), of another Relax function, of a packed function or builtin
by name, a register move, or a kill; ``If`` becomes a conditional jump over the true branch and a
jump over the false one. Nested branches are generated from an explicit stack of generators.

Two rewrites make a loop written as recursion (an RNN over a run-time length) cheap a step:

- a call of the function itself in tail position (its result is the function's result) moves
  its arguments into the parameter registers and jumps back instead of pushing a frame; past
  the parameter checks (``VMShapeLower``'s prologue) when every argument's struct info is the
  parameter's own, so the checks would pass and the shape heap would get the values it holds;
- a move ``y = x`` right before ``x``'s kill (``KillAfterLastUse`` after a kernel's output
  tensor) gives ``y`` the register of ``x``: no move, no kill."""

from __future__ import annotations

import numpy as np

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.prim_expr import FloatImm, IntImm
from ...ir.structural import structural_equal
from ...runtime.relax_vm.builtins import ShapeTuple
from ...runtime.relax_vm.executable import (
    ARG_CONST,
    ARG_CTX,
    ARG_FUNC,
    ARG_IMM,
    ARG_REG,
    CALL,
    GOTO,
    IF,
    KILL,
    MOVE,
    RET,
    VMFunction,
)
from ...tir.function import PrimFunc
from ...transform.config import register_pass_config
from ..expr import (
    Call,
    Constant,
    DataTypeImm,
    ExternFunc,
    Function,
    If,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)

__all__ = ["TAIL_CALL_LOOPS", "VMCodeGenError", "codegen"]

TAIL_CALL_LOOPS = "relax.vm.tail_call_loops"
register_pass_config(TAIL_CALL_LOOPS, bool, True,
                     "a Relax function's call of itself in tail position runs as a jump back "
                     "(no frame), past its parameter checks when the arguments' struct info is "
                     "the parameters'")


class VMCodeGenError(ValueError):
    """A construct the VM cannot run (an op left unlowered, a local function...)."""


def _why_not_lowered(call: Call) -> str:
    """Why LegalizeOps left ``call`` as it is: no lowering, or a shape not known at compile
    time (with the fix), for the error that stops the build."""
    from ..struct_info import TensorStructInfo

    if call.op.get_attr("FLegalize") is None:
        return " (it has no legalization: register one with customize_legalize_map, or " \
               "replace the call before relax.build)"
    unknown = []
    for what, e in [("its result", call)] + [(f"argument {i}", a)
                                             for i, a in enumerate(call.args)]:
        sinfo = e.struct_info_ if hasattr(e, "struct_info_") else None
        if isinstance(sinfo, TensorStructInfo) and (sinfo.shape is None or
                                                    sinfo.dtype == "void"):
            unknown.append(f"{what} is {sinfo}")
    if unknown:
        return (": LegalizeOps needs every shape and dtype known at compile time, but "
                f"{'; '.join(unknown)} (give it one with R.match_cast, e.g. when two symbolic "
                "dimensions cannot be proven equal)")
    return " (run LegalizeOps and the build pipeline: relax.build)"


class _Tables:
    def __init__(self, mod):
        self.mod = mod
        self.func_index: dict[tuple, int] = {}
        self.func_table: list[tuple[str, str]] = []
        self.constants: list = []
        self.const_index: dict = {}
        self._by_content: dict = {}  # (dtype, shape, first / last bytes) -> tensor indices
        self.kernels: dict[str, PrimFunc] = {}
        self.sites = 0

    def func(self, kind: str, name: str) -> int:
        key = (kind, name)
        if key not in self.func_index:
            self.func_index[key] = len(self.func_table)
            self.func_table.append(key)
        return self.func_index[key]

    def tensor_const(self, data: np.ndarray, key) -> int:
        """The index of constant tensor ``data`` (Relax constant ``key``): one entry per
        distinct content. An importer that unrolls a loop (ONNX LSTM: a Constant per time
        step, the same weight) would otherwise give the VM one copy per step, each packed
        for its GEMM and streamed from memory on every call (CRNN: 128 copies of a 64 KB
        packed weight, 3.4 us per step's matmul instead of 1 us). Candidates are found by
        dtype, shape and the first and last bytes, and compared in full only then: hashing
        every weight cost BERT-base's build 1.4 s for no duplicate."""
        if data.dtype.hasobject:
            return self.const(data, key)
        flat = data.reshape(-1).view(np.uint8)
        content = ("data", data.dtype.str, data.shape, flat[:64].tobytes(),
                   flat[-64:].tobytes())
        for k in self._by_content.get(content, ()):
            if np.array_equal(self.constants[k].reshape(-1).view(np.uint8), flat):
                break
        else:
            k = self.const(data)
            self._by_content.setdefault(content, []).append(k)
        self.const_index[key] = k
        return k

    def const(self, value, key=None) -> int:
        if key is not None and key in self.const_index:
            return self.const_index[key]
        self.constants.append(value)
        k = len(self.constants) - 1
        if key is not None:
            self.const_index[key] = k
        return k

    def global_func(self, gv: GlobalVar) -> int:
        f = self.mod.functions.get(gv) if gv in self.mod.functions else None
        if f is None:
            for g, fn in self.mod.functions.items():
                if g.name_hint == gv.name_hint:
                    f = fn
                    break
        if isinstance(f, PrimFunc):
            self.kernels[gv.name_hint] = f
            return self.func("kernel", gv.name_hint)
        if isinstance(f, Function):
            return self.func("vm", gv.name_hint)
        raise VMCodeGenError(f"call of @{gv.name_hint}, which the module does not define")


_PROLOGUE_CHECKS = frozenset({
    "vm.builtin.check_tensor_info", "vm.builtin.check_shape_info",
    "vm.builtin.check_prim_value_info", "vm.builtin.check_tuple_info",
    "vm.builtin.match_shape", "vm.builtin.match_prim_value"})


class _FuncGen:
    def __init__(self, name: str, func: Function, tables: _Tables, gv: GlobalVar | None = None):
        """``gv``: the function's GlobalVar, when its tail calls of itself become loops."""
        self.name, self.func, self.t, self.gv = name, func, tables, gv
        self.regs: dict[Var, int] = {}
        self.nregs = 0
        self.code: list = []
        self.params = set(func.params)
        for p in func.params:
            self.new_reg(p)
        self.kills = _kill_counts(func)
        # the pc after the parameter checks (the prologue); None while they are emitted
        self.prologue_end: int | None = None
        self.heap: Var | None = None
        self.aliased = False

    def new_reg(self, var=None) -> int:
        r = self.nregs
        self.nregs += 1
        if var is None:
            var = Var(f"%tmp{r}")
        self.regs[var] = r
        return r

    # ------------------------------------------------------------------ operands
    def operand(self, e) -> list:
        if isinstance(e, Var):
            if e not in self.regs:
                raise VMCodeGenError(f"{self.name}: variable {e.name_hint!r} is used before it "
                                     "is defined")
            return [ARG_REG, self.regs[e]]
        if isinstance(e, Constant):
            key = ("c", id(e))
            if key in self.t.const_index:
                return [ARG_CONST, self.t.const_index[key]]
            data = e.data.numpy()  # (np.ascontiguousarray would make a 0-d array 1-d)
            data = data if data.flags.c_contiguous else data.copy(order="C")
            return [ARG_CONST, self.t.tensor_const(data, key)]
        if isinstance(e, ShapeExpr):
            if not all(isinstance(d, IntImm) for d in e.values):
                raise VMCodeGenError(f"{self.name}: symbolic shape {list(e.values)} was not "
                                     "lowered (run VMShapeLower)")
            vals = tuple(int(d.value) for d in e.values)
            return [ARG_CONST, self.t.const(ShapeTuple(vals), ("shape", vals))]
        if isinstance(e, PrimValue):
            v = e.value
            if isinstance(v, IntImm):
                if v.dtype == "bool":
                    return [ARG_CONST, self.t.const(bool(v.value), ("bool", bool(v.value)))]
                return [ARG_IMM, int(v.value)]
            if isinstance(v, FloatImm):
                return [ARG_CONST, self.t.const(float(v.value), ("float", float(v.value)))]
            raise VMCodeGenError(f"{self.name}: symbolic value {v} was not lowered (run "
                                 "VMShapeLower)")
        if isinstance(e, StringImm | DataTypeImm):
            return [ARG_CONST, self.t.const(e.value, ("str", e.value))]
        if isinstance(e, GlobalVar):
            return [ARG_FUNC, self.t.global_func(e)]
        if isinstance(e, ExternFunc):
            return [ARG_FUNC, self.t.func("packed", e.global_symbol)]
        if isinstance(e, Tuple):
            fields = [self.operand(f) for f in e.fields]
            r = self.new_reg()
            self.code.append([CALL, r, self.t.func("packed", "vm.builtin.make_tuple"), fields])
            return [ARG_REG, r]
        if isinstance(e, TupleGetItem | Call):
            r = self.new_reg()
            self.value(e, r)
            return [ARG_REG, r]
        raise VMCodeGenError(f"{self.name}: cannot pass a {type(e).__name__} as an argument")

    # ------------------------------------------------------------------ values
    def value(self, v, dst: int) -> None:
        t, code = self.t, self.code
        if isinstance(v, Call):
            op = v.op
            if isinstance(op, Op):
                self.op_call(v, dst)
                return
            if isinstance(op, ExternFunc):
                fidx = t.func("packed", op.global_symbol)
                code.append([CALL, dst, fidx, [self.operand(a) for a in v.args]])
                return
            if isinstance(op, GlobalVar):
                code.append([CALL, dst, t.global_func(op), [self.operand(a) for a in v.args]])
                return
            # a closure value held in a variable
            code.append([CALL, dst, t.func("packed", "vm.builtin.invoke_closure"),
                         [[ARG_CTX, 0], self.operand(op)] + [self.operand(a) for a in v.args]])
            return
        if isinstance(v, TupleGetItem):
            code.append([CALL, dst, t.func("packed", "vm.builtin.tuple_getitem"),
                         [self.operand(v.tuple_value), [ARG_IMM, v.index]]])
            return
        if isinstance(v, Tuple):
            code.append([CALL, dst, t.func("packed", "vm.builtin.make_tuple"),
                         [self.operand(f) for f in v.fields]])
            return
        if isinstance(v, GlobalVar):  # a function value
            code.append([CALL, dst, t.func("packed", "vm.builtin.make_closure"),
                         [[ARG_CTX, 0], self.operand(v)]])
            return
        if isinstance(v, Function):
            raise VMCodeGenError(f"{self.name}: a local function is left; run "
                                 "relax.transform.LambdaLift first")
        code.append([MOVE, dst, self.operand(v)])

    def op_call(self, v: Call, dst: int) -> None:
        name, a, t, code = v.op.name, v.args, self.t, self.code
        if name == "relax.vm.alloc_storage":
            t.sites += 1
            code.append([CALL, dst, t.func("packed", "vm.builtin.alloc_storage"),
                         [[ARG_CTX, 0], self.operand(a[0]), self.operand(a[1]),
                          self.operand(a[2]), [ARG_IMM, t.sites]]])
        elif name == "relax.vm.alloc_tensor":
            code.append([CALL, dst, t.func("packed", "vm.builtin.alloc_tensor_from_storage"),
                         [self.operand(x) for x in a]])
        elif name == "relax.vm.kill_object":
            if isinstance(a[0], Var) and a[0] in self.regs:
                code.append([KILL, self.regs[a[0]]])
        elif name == "relax.call_builtin_with_ctx":
            callee = a[0]
            if not isinstance(callee, ExternFunc):
                raise VMCodeGenError(f"{self.name}: call_builtin_with_ctx needs a builtin name")
            args = list(a[1].fields) if isinstance(a[1], Tuple) else [a[1]]
            code.append([CALL, dst, t.func("packed", callee.global_symbol),
                         [[ARG_CTX, 0]] + [self.operand(x) for x in args]])
        elif name == "relax.make_closure":
            captured = list(a[1].fields) if isinstance(a[1], Tuple) else [a[1]]
            code.append([CALL, dst, t.func("packed", "vm.builtin.make_closure"),
                         [[ARG_CTX, 0], self.operand(a[0])] +
                         [self.operand(x) for x in captured]])
        elif v.op.get_attr("FCallPacked") is not None:  # R.print, R.assert_op: run as is
            code.append([CALL, dst, t.func("packed", str(v.op.get_attr("FCallPacked"))),
                         [self.operand(x) for x in a]])
        else:
            raise VMCodeGenError(f"{self.name}: operator {name} is not lowered for the VM"
                                 f"{_why_not_lowered(v)}")

    # ------------------------------------------------------------------ sequences
    def seq(self, s, dst, tail: bool = False):
        """Generator: emit a sequence; yields (nested seq, dst, tail) to have branches emitted.
        ``tail``: the sequence's value is the function's result."""
        if not isinstance(s, SeqExpr):
            if not (tail and self.tail_call(s)):
                self.value(s, dst)
            return
        flat = [b for block in s.blocks for b in block.bindings]
        last = len(flat) - 1
        skip = -1
        for i, b in enumerate(flat):
            if i == skip:
                continue
            if self.prologue_end is None and not self.in_prologue(b):
                self.prologue_end = len(self.code)  # (the first binding of the body)
            v = b.value
            if i < last and self.coalesce(b, flat[i + 1]):
                skip = i + 1
                continue
            if self.aliased:  # (y = x, x never killed: y names x's register)
                self.aliased = False
                continue
            if tail and i == last and s.body is b.var and isinstance(v, Call) and \
                    self.tail_call(v):
                return
            r = self.regs.get(b.var)
            if r is None:
                r = self.new_reg(b.var)
            if isinstance(v, If):
                cond = self.operand(v.cond)
                if cond[0] != ARG_REG:
                    cr = self.new_reg()
                    self.code.append([MOVE, cr, cond])
                    cond = [ARG_REG, cr]
                jif = len(self.code)
                self.code.append([IF, cond[1], 0])
                # (an If whose value the sequence, in tail position, returns: its branches too)
                branch_tail = tail and i == last and s.body is b.var
                yield (v.true_branch, r, branch_tail)
                jgoto = len(self.code)
                self.code.append([GOTO, 0])
                self.code[jif][2] = len(self.code) - jif
                yield (v.false_branch, r, branch_tail)
                self.code[jgoto][1] = len(self.code) - jgoto
            else:
                self.value(v, r)
        self.value(s.body, dst)

    # ------------------------------------------------------------------ loops
    def in_prologue(self, b) -> bool:
        """Is binding ``b`` (while the prologue lasts) one of ``VMShapeLower``'s parameter
        checks: the shape heap's allocation, a check or match of a parameter, or a shape
        function of the heap? They read nothing but the parameters and the heap."""
        v = b.value
        if not isinstance(v, Call):
            return False
        op, args = v.op, v.args
        if isinstance(op, Op) and op.name == "relax.call_builtin_with_ctx" and \
                isinstance(args[0], ExternFunc) and \
                args[0].global_symbol == "vm.builtin.alloc_shape_heap" and self.heap is None:
            self.heap = b.var
            return True
        if isinstance(op, ExternFunc) and op.global_symbol in _PROLOGUE_CHECKS:
            reads = [a for a in args if isinstance(a, Var)]
            return bool(reads) and reads[0] in self.params and \
                all(a in self.params or a is self.heap for a in reads)
        if isinstance(op, GlobalVar) and self.heap is not None and len(args) == 1 and \
                args[0] is self.heap:
            f = self.t.mod.functions.get(op) if op in self.t.mod.functions else None
            return isinstance(f, PrimFunc) and bool(f.attrs and f.attrs.get("tir.is_host_func"))
        return False

    def coalesce(self, b, nxt) -> bool:
        """A move ``y = x`` that ``y`` can take ``x``'s register for (True: nothing emitted, and
        ``nxt`` skipped too when it is ``x``'s kill): right before ``x``'s only kill (the move
        is its last use), or when neither is ever killed (the register then holds one value
        from ``x``'s binding on; a register is written once a pass of the function body)."""
        x, y = b.value, b.var
        if not (type(x) is Var and x in self.regs and x not in self.params and
                y not in self.regs and self.kills.get(y, 0) == 0):
            return False
        k = nxt.value
        if isinstance(k, Call) and isinstance(k.op, Op) and \
                k.op.name == "relax.vm.kill_object" and k.args[0] is x and \
                self.kills.get(x) == 1:
            self.regs[y] = self.regs[x]
            return True
        if self.kills.get(x, 0) == 0:
            self.regs[y] = self.regs[x]
            self.aliased = True
        return False

    def tail_call(self, v) -> bool:
        """Emit ``v``, a call of this function in tail position, as a loop: the arguments moved
        into the parameter registers, a jump back (past the prologue when each argument's
        struct info is its parameter's: same checks, same shape heap). False (nothing emitted)
        for any other value."""
        if not (isinstance(v, Call) and isinstance(v.op, GlobalVar) and self.gv is not None
                and (v.op is self.gv or v.op.name_hint == self.gv.name_hint)):
            return False
        params = self.func.params
        if len(v.args) != len(params):
            return False
        same = self.prologue_end is not None and all(
            isinstance(a, Var) and a in self.regs and
            structural_equal(a._struct_info, p._struct_info)
            for a, p in zip(v.args, params, strict=True))
        ops = [self.operand(a) for a in v.args]
        preg = {self.regs[p]: k for k, p in enumerate(params)}
        # a parallel move: an argument read from another parameter goes through a register
        # of its own first, as that parameter may be overwritten before it is read
        for k, op in enumerate(ops):
            if op[0] == ARG_REG and op[1] in preg and op[1] != k:
                r = self.new_reg()
                self.code.append([MOVE, r, op])
                ops[k] = [ARG_REG, r]
        for k, op in enumerate(ops):
            if op != [ARG_REG, k]:
                self.code.append([MOVE, k, op])
        target = self.prologue_end if same else 0
        self.code.append([GOTO, target - len(self.code)])
        return True

    def run(self) -> VMFunction:
        ret = self.new_reg()
        stack = [self.seq(self.func.body, ret, True)]
        while stack:
            try:
                sub, dst, tail = next(stack[-1])
            except StopIteration:
                stack.pop()
                continue
            stack.append(self.seq(sub, dst, tail))
        self.code.append([RET, ret])
        return VMFunction(self.name, [p.name_hint for p in self.func.params], self.nregs,
                          self.code, [str(p._struct_info) for p in self.func.params])


def _kill_counts(func: Function) -> dict:
    """{variable: how many ``relax.vm.kill_object`` of it} in ``func`` (branches included)."""
    counts: dict = {}
    stack = [func.body]
    while stack:
        s = stack.pop()
        if not isinstance(s, SeqExpr):
            continue
        for block in s.blocks:
            for b in block.bindings:
                v = b.value
                if isinstance(v, If):
                    stack += [v.true_branch, v.false_branch]
                elif isinstance(v, Call) and isinstance(v.op, Op) and \
                        v.op.name == "relax.vm.kill_object" and isinstance(v.args[0], Var):
                    counts[v.args[0]] = counts.get(v.args[0], 0) + 1
    return counts


def codegen(mod, tail_call_loops: bool = True) -> tuple[list, list, list, dict]:
    """(VM functions, function table, constants, {kernel name: PrimFunc}) of a lowered module;
    ``tail_call_loops``: a function's calls of itself in tail position become jumps."""
    t = _Tables(mod)
    funcs = []
    for gv, f in mod.functions.items():
        if isinstance(f, Function):
            if f.attrs and f.attrs.get("Primitive"):
                continue
            name = f.attrs.get("global_symbol") if f.attrs else None
            name = str(getattr(name, "value", name)) if name is not None else gv.name_hint
            funcs.append(_FuncGen(name, f, t, gv if tail_call_loops else None).run())
            t.func("vm", name)
    return funcs, t.func_table, t.constants, t.kernels

"""Relay functions (optimized, fused, lambda-lifted) to Relay VM bytecode.

Each global function becomes a ``VMFunction``: parameters in registers ``0..n-1``, the body
compiled by one explicit work stack (no Python recursion, so a 100,000-deep let chain or nesting
compiles at the default recursion limit). Calls of primitive functions become ``AllocStorage`` /
``AllocTensor`` for each output (static shapes) and ``InvokePacked``; a global call ``Invoke``;
a call of a ``Closure=1`` global (LambdaLift's closure constructor) ``AllocClosure``; any other
callee ``InvokeClosure``. ``If`` and ``Match`` compile to ``If``/``Goto`` with patched offsets;
a match tests tags with ``GetTag``/``LoadConsti``/``If`` and reads fields with ``GetField``.
Within a block a sub-expression shared in the graph is computed once (the memo is scoped to the
branch that computed it). A call of the function itself in tail position (its value is the
function's: through lets and both branches of ifs) moves its arguments into the parameter
registers and jumps back to the start, no frame pushed (a loop written as recursion: an RNN over
a run-time length), unless ``tail_call_loops`` is off (``relay.vm.tail_call_loops``).
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import GlobalVar
from ....ir.gc_pause import gc_paused
from ....ir.op import Op
from ....ir.type import TensorType, TupleType
from ....runtime.vm import bytecode as B
from ....runtime.vm.bytecode import VMFunction
from ....transform.config import register_pass_config
from ...adt import Constructor, Match, PatternConstructor, PatternTuple, PatternVar, PatternWildcard
from ...expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..graph_executor_codegen import _is_primitive, _wrap_op_call
from ..te_compiler import tensor_types
from .kernels import KernelTable, is_static_type
from .symbolic import SymbolicKernel

__all__ = ["TAIL_CALL_LOOPS", "VMCodegenError", "FunctionCompiler", "type_record"]

TAIL_CALL_LOOPS = "relay.vm.tail_call_loops"
register_pass_config(TAIL_CALL_LOOPS, bool, True,
                     "a Relay VM function's call of itself in tail position runs as a jump back "
                     "to its start (arguments moved into the parameters), no frame")


_VM_OPS = frozenset({"vm.shape_of", "vm.reshape_tensor", "vm.update_row"})


class VMCodegenError(ValueError):
    """A construct the Relay VM cannot compile."""


def type_record(t) -> list:
    """The plain record of a parameter type the runtime checks arguments against."""
    if isinstance(t, TensorType):
        dims = []
        for d in t.shape:
            v = getattr(d, "value", d)
            dims.append(int(v) if isinstance(v, int | np.integer) else -1)
        return ["tensor", dims, t.dtype]
    if isinstance(t, TupleType):
        return ["tuple", [type_record(f) for f in t.fields]]
    return ["any"]


def _is_closure_global(func) -> bool:
    return isinstance(func, Function) and func.attrs is not None and \
        bool(func.attrs.get("Closure", 0))


def _nbytes(t: TensorType) -> int:
    n = np.dtype(t.dtype).itemsize
    for d in t.shape:
        n *= int(getattr(d, "value", d))
    return n


class FunctionCompiler:
    """Compile one global function; ``globals_index`` maps global names to function indices."""

    def __init__(self, mod, globals_index: dict[str, int], kernels: KernelTable,
                 constants: list, tail_call_loops: bool = True):
        self.mod = mod
        self.tail_call_loops = tail_call_loops
        self.tail_calls: set[int] = set()  # ids of the body's calls of itself in tail position
        self.globals_index = globals_index
        self.kernels = kernels
        self.constants = constants
        self.const_index: dict[int, int] = {}  # id(Constant) -> its index in ``constants``
        self.code: list[tuple] = []
        self.nreg = 0
        self.var_reg: dict[int, int] = {}
        self.memo: dict[int, int] = {}
        self.scopes: list[list[int]] = []

    # ------------------------------------------------------------------ helpers
    def reg(self) -> int:
        self.nreg += 1
        return self.nreg - 1

    def emit(self, *ins) -> int:
        self.code.append(tuple(ins))
        return len(self.code) - 1

    def remember(self, e, r: int) -> None:
        self.memo[id(e)] = r
        if self.scopes:
            self.scopes[-1].append(id(e))

    def enter(self) -> None:
        self.scopes.append([])

    def leave(self) -> None:
        for k in self.scopes.pop():
            self.memo.pop(k, None)

    def patch(self, pc: int, pos: int, value) -> None:
        ins = list(self.code[pc])
        ins[pos] = value
        self.code[pc] = tuple(ins)

    # ------------------------------------------------------------------ entry
    @gc_paused  # (also when called outside relay.vm.compile, which pauses it too)
    def compile(self, name: str, func: Function) -> VMFunction:
        params = list(func.params)
        body = func.body
        if _is_closure_global(func):
            if not isinstance(body, Function):
                raise VMCodegenError(f"@{name} is marked Closure=1 but does not return a "
                                     "function")
            params += list(body.params)
            body = body.body
        for p in params:
            self.var_reg[id(p)] = self.reg()
        if self.tail_call_loops and not _is_closure_global(func):
            self.tail_calls = _tail_self_calls(body, name)
        result = self.expr(body)
        self.emit(B.RET, result)
        types = [type_record(p.checked_type if p._checked_type is not None
                             else p.type_annotation) for p in params]
        return VMFunction(name, [p.name_hint for p in params], self.code, self.nreg, types)

    # ------------------------------------------------------------------ expressions
    def expr(self, root) -> int:
        """Emit code for ``root``; returns the register of its value."""
        vals: list[int] = []
        work: list = [("eval", root)]
        while work:
            kind, item = work.pop()
            if kind == "eval":
                self._eval(item, work, vals)
            else:
                item(vals)
        assert len(vals) == 1, vals
        return vals[0]

    def _eval(self, e, work, vals) -> None:
        r = self.memo.get(id(e))
        if r is not None:
            vals.append(r)
            return
        if isinstance(e, Var):
            r = self.var_reg.get(id(e))
            if r is None:
                raise VMCodegenError(f"free variable %{e.name_hint}")
            vals.append(r)
        elif isinstance(e, Constant):
            self.constants.append(e.data.numpy())
            r = self.reg()
            self.emit(B.LOAD_CONST, len(self.constants) - 1, r)
            self.const_index[id(e)] = len(self.constants) - 1
            self.remember(e, r)
            vals.append(r)
        elif isinstance(e, GlobalVar):
            r = self.reg()
            self.emit(B.ALLOC_CLOSURE, self._global(e), (), r)
            self.remember(e, r)
            vals.append(r)
        elif isinstance(e, Constructor):
            if e.inputs:
                raise VMCodegenError(f"constructor {e.name_hint} used as a value; it needs "
                                     "EtaExpand(expand_constructor=True)")
            r = self.reg()
            self.emit(B.ALLOC_ADT, e.tag, (), r)
            self.remember(e, r)
            vals.append(r)
        elif isinstance(e, Tuple):
            n = len(e.fields)

            def done(vals, e=e, n=n):
                fields = tuple(vals[len(vals) - n:]) if n else ()
                del vals[len(vals) - n:]
                r = self.reg()
                self.emit(B.ALLOC_ADT, 0, fields, r)
                self.remember(e, r)
                vals.append(r)
            work.append(("do", done))
            work.extend(("eval", f) for f in reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            def done(vals, e=e):
                r = self.reg()
                self.emit(B.GET_FIELD, vals.pop(), e.index, r)
                self.remember(e, r)
                vals.append(r)
            work.append(("do", done))
            work.append(("eval", e.tuple_value))
        elif type(e) is Let:
            def bind_var(vals, v=e.var):
                self.var_reg[id(v)] = vals.pop()
            work.append(("eval", e.body))
            work.append(("do", bind_var))
            work.append(("eval", e.value))
        elif isinstance(e, If):
            self._if(e, work)
        elif isinstance(e, Match):
            self._match(e, work)
        elif isinstance(e, Call):
            self._call(e, work)
        elif isinstance(e, Function):
            if _is_primitive(e):
                raise VMCodegenError("a primitive function can only be called")
            raise VMCodegenError("a local function remained after LambdaLift")
        elif isinstance(e, RefCreate | RefRead | RefWrite):
            raise VMCodegenError("the Relay VM does not support references (ref, ref_read, "
                                 "ref_write); use the 'debug' executor")
        else:
            raise VMCodegenError(f"the Relay VM cannot compile {type(e).__name__}")

    def _global(self, gv: GlobalVar) -> int:
        k = self.globals_index.get(gv.name_hint)
        if k is None:
            raise VMCodegenError(f"unknown global function @{gv.name_hint}")
        return k

    # ------------------------------------------------------------------ control flow
    def _if(self, e: If, work) -> None:
        out = self.reg()
        state = {}

        def after_cond(vals):
            one = self.reg()
            self.emit(B.LOAD_CONSTI, 1, one)
            state["if"] = self.emit(B.IF, vals.pop(), one, 1, 0)
            self.enter()

        def after_true(vals):
            self.emit(B.MOVE, vals.pop(), out)
            self.leave()
            state["goto"] = self.emit(B.GOTO, 0)
            self.patch(state["if"], 4, len(self.code) - state["if"])
            self.enter()

        def after_false(vals):
            self.emit(B.MOVE, vals.pop(), out)
            self.leave()
            self.patch(state["goto"], 1, len(self.code) - state["goto"])
            self.remember(e, out)
            vals.append(out)

        work.append(("do", after_false))
        work.append(("eval", e.false_branch))
        work.append(("do", after_true))
        work.append(("eval", e.true_branch))
        work.append(("do", after_cond))
        work.append(("eval", e.cond))

    def _pattern(self, pat, reg: int, fails: list[int]) -> None:
        """Test ``pat`` against ``reg``: bind its variables; failed tests jump (``fails``)."""
        stack = [(pat, reg)]
        while stack:
            p, r = stack.pop()
            if isinstance(p, PatternWildcard):
                continue
            if isinstance(p, PatternVar):
                self.var_reg[id(p.var)] = r
                continue
            if isinstance(p, PatternConstructor):
                tag, want = self.reg(), self.reg()
                self.emit(B.GET_TAG, r, tag)
                self.emit(B.LOAD_CONSTI, p.constructor.tag, want)
                fails.append(self.emit(B.IF, tag, want, 1, 0))
                subs = p.patterns
            elif isinstance(p, PatternTuple):
                subs = p.patterns
            else:
                raise VMCodegenError(f"unsupported pattern {type(p).__name__}")
            for i, sp in reversed(list(enumerate(subs))):
                if isinstance(sp, PatternWildcard):
                    continue
                f = self.reg()
                self.emit(B.GET_FIELD, r, i, f)
                stack.append((sp, f))

    def _match(self, e: Match, work) -> None:
        out = self.reg()
        state = {"ends": []}
        clauses = list(e.clauses)

        def start_clause(vals, k):
            if k == 0:
                state["data"] = vals.pop()
            fails: list[int] = []
            self.enter()
            self._pattern(clauses[k].lhs, state["data"], fails)
            state["fails"] = fails

        def end_clause(vals):
            self.emit(B.MOVE, vals.pop(), out)
            self.leave()
            state["ends"].append(self.emit(B.GOTO, 0))
            for pc in state["fails"]:
                self.patch(pc, 4, len(self.code) - pc)

        def finish(vals):
            self.emit(B.FATAL)
            for pc in state["ends"]:
                self.patch(pc, 1, len(self.code) - pc)
            self.remember(e, out)
            vals.append(out)

        work.append(("do", finish))
        for k in reversed(range(len(clauses))):
            work.append(("do", end_clause))
            work.append(("eval", clauses[k].rhs))
            work.append(("do", lambda vals, k=k: start_clause(vals, k)))
        work.append(("eval", e.data))

    # ------------------------------------------------------------------ calls
    def _call(self, e: Call, work) -> None:
        op = e.op
        args = list(e.args)
        if _is_primitive(op):  # a fused function holding only a vm.* op
            b = op.body
            if isinstance(b, Call) and isinstance(b.op, Op) and b.op.name in _VM_OPS and \
                    len(b.args) == len(op.params) and \
                    all(a is p for a, p in zip(b.args, op.params)):
                op = b.op
        if isinstance(op, Op) and op.name == "vm.shape_of":
            return self._simple(e, args, lambda a, r: self.emit(B.SHAPE_OF, a[0], r), work)
        if isinstance(op, Op) and op.name == "vm.update_row":  # in place: O(row)
            return self._simple(e, args, lambda a, r: self.emit(B.UPDATE_ROW, *a, r), work)
        if isinstance(op, Op) and op.name == "vm.reshape_tensor":
            return self._simple(e, args, lambda a, r: self.emit(B.RESHAPE_TENSOR, a[0], a[1], r),
                                work)
        if isinstance(op, Op):
            func = _wrap_op_call(e)
            args = [a for a in args if not isinstance(a, Constant)]
            return self._packed(e, func, args, work)
        if _is_primitive(op):
            return self._packed(e, op, args, work)
        if isinstance(op, GlobalVar):
            target = self.mod[op]
            k = self._global(op)
            if _is_closure_global(target):
                return self._simple(e, args, lambda a, r: self.emit(B.ALLOC_CLOSURE, k,
                                                                     tuple(a), r), work)
            if id(e) in self.tail_calls:
                return self._simple(e, args, lambda a, r: self._tail_call(a), work)
            return self._simple(e, args, lambda a, r: self.emit(B.INVOKE, k, tuple(a), r), work)
        if isinstance(op, Constructor):
            return self._simple(e, args, lambda a, r: self.emit(B.ALLOC_ADT, op.tag, tuple(a),
                                                                 r), work)
        if isinstance(op, Function):
            raise VMCodegenError("a call of a local function remained after LambdaLift")
        return self._simple(e, [op] + args,
                            lambda a, r: self.emit(B.INVOKE_CLOSURE, a[0], tuple(a[1:]), r), work)

    def _tail_call(self, args: list[int]) -> None:
        """The arguments (registers) moved into the parameters ``0..n-1``, then a jump to the
        start. A parallel move: an argument that is another parameter is copied first, as that
        parameter may be overwritten before it is read. (The call's result register, which the
        code after it moves on, is never written: that code is not reached.)"""
        n = len(args)
        moves = list(args)
        for k, src in enumerate(moves):
            if src < n and src != k:
                t = self.reg()
                self.emit(B.MOVE, src, t)
                moves[k] = t
        for k, src in enumerate(moves):
            if src != k:
                self.emit(B.MOVE, src, k)
        self.emit(B.GOTO, -len(self.code))

    def _simple(self, e, operands, emit_fn, work) -> None:
        n = len(operands)

        def done(vals):
            regs = vals[len(vals) - n:] if n else []
            del vals[len(vals) - n:]
            r = self.reg()
            emit_fn(list(regs), r)
            self.remember(e, r)
            vals.append(r)
        work.append(("do", done))
        work.extend(("eval", a) for a in reversed(operands))

    def _flatten(self, reg: int, t) -> list[int]:
        """Registers of the tensors inside a (possibly nested) tuple value."""
        if not isinstance(t, TupleType):
            return [reg]
        out, stack = [], [(reg, t)]
        while stack:
            r, tt = stack.pop()
            if not isinstance(tt, TupleType):
                out.append(r)
                continue
            fields = []
            for i, ft in enumerate(tt.fields):
                f = self.reg()
                self.emit(B.GET_FIELD, r, i, f)
                fields.append((f, ft))
            stack.extend(reversed(fields))
        return out

    def _packed(self, e: Call, func: Function, args: list, work) -> None:
        n = len(args)

        def done(vals):
            regs = vals[len(vals) - n:] if n else []
            del vals[len(vals) - n:]
            ins = [x for a, r in zip(args, regs) for x in self._flatten(r, a.checked_type)]
            const = frozenset(k for k, a in enumerate(args) if isinstance(a, Constant))
            if len(ins) != len(args):  # a tuple argument: positions would not line up
                const = frozenset()
            idx = self.kernels.index(func, const)
            self._packed_weights(self.kernels.kernels[idx], args, ins)
            out_types = tensor_types(e.checked_type)
            # a symbolic kernel allocates its results even where they are typed static (a
            # reduction or a top-k of a fixed k along a dynamic axis): its call binds and
            # plans as a dynamic one, and the shape it gives is the run's (numpy's top-k of a
            # shorter axis keeps fewer)
            static = is_static_type(e.checked_type) and \
                not isinstance(self.kernels.kernels[idx].run, SymbolicKernel)
            outs = []
            for t in out_types:
                o = self.reg()
                if static:
                    s = self.reg()
                    self.emit(B.ALLOC_STORAGE, _nbytes(t), 64, t.dtype, s)
                    self.emit(B.ALLOC_TENSOR, s, 0,
                              tuple(int(getattr(d, "value", d)) for d in t.shape), t.dtype, o)
                outs.append(o)
            self.emit(B.INVOKE_PACKED, idx, len(ins) + len(outs), len(outs),
                      tuple(ins + outs), not static)
            r = self._pack(e.checked_type, outs)
            self.remember(e, r)
            vals.append(r)
        work.append(("do", done))
        work.extend(("eval", a) for a in reversed(args))

    def _packed_weights(self, kernel, args: list, ins: list) -> None:
        """A static kernel that takes a constant (a weight) in another layout
        (``Kernel.input_packs``) reads a copy transformed here, once, into the constant pool;
        a symbolic one (``SymbolicKernel.prepack``) keeps its copy itself, made here too."""
        prepack = getattr(kernel.run, "prepack", None)
        if prepack is not None and len(ins) == len(args):  # (no tuple argument)
            for pos, a in enumerate(args):
                ci = self.const_index.get(id(a))
                if ci is not None:
                    prepack(pos, self.constants[ci])
        for pos, transform in getattr(kernel, "input_packs", {}).items():
            ci = self.const_index.get(id(args[pos]))
            if ci is None:
                continue
            self.constants.append(transform(self.constants[ci]))
            r = self.reg()
            self.emit(B.LOAD_CONST, len(self.constants) - 1, r)
            ins[pos] = r

    def _pack(self, t, outs: list[int]) -> int:
        """The register of value of type ``t`` built from flat output registers."""
        if not isinstance(t, TupleType):
            return outs[0]
        pos = [0]

        def build(tt):  # depth of the result type, not of the program
            if not isinstance(tt, TupleType):
                pos[0] += 1
                return outs[pos[0] - 1]
            fields = tuple(build(f) for f in tt.fields)
            r = self.reg()
            self.emit(B.ALLOC_ADT, 0, fields, r)
            return r
        return build(t)


def _tail_self_calls(body, name: str) -> set[int]:
    """The ids of the calls of global ``@name`` whose value is ``body``'s: ``body`` itself, a
    let's body, an if's branches (an explicit stack: nesting is the program's depth)."""
    out: set[int] = set()
    stack = [body]
    while stack:
        e = stack.pop()
        if type(e) is Let:
            stack.append(e.body)
        elif isinstance(e, If):
            stack += [e.true_branch, e.false_branch]
        elif isinstance(e, Call) and isinstance(e.op, GlobalVar) and e.op.name_hint == name:
            out.add(id(e))
    return out

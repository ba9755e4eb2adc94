"""Expression emission: TIR PrimExprs to LLVM values, scalar or vector.

Inside a vectorized loop the loop variable is a ``RampVal`` (base, stride, lanes); affine index
arithmetic keeps it symbolic so a unit-stride access becomes one vector load or store, and
anything else is widened to LLVM vectors. Expressions are emitted from an explicit post-order.
"""

from __future__ import annotations

from llvmlite import ir

from ...tir import expr as E
from ...tir.stmt_functor import expr_children
from . import byte_lut, cvtt, dot, textir, vmath
from . import types as T

LLVM_INTRINSICS = {
    "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor",
    "ceil": "llvm.ceil", "round": "llvm.nearbyint", "nearbyint": "llvm.nearbyint",
    "trunc": "llvm.trunc", "sin": "llvm.sin", "cos": "llvm.cos", "pow": "llvm.pow",
    "copysign": "llvm.copysign",
}
LIBM = ("tanh", "erf", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
        "log1p", "atan2", "fmod", "hypot", "nextafter")


def _number(e) -> bool:
    """Is ``e`` a float constant (or a broadcast one) that is not NaN?"""
    while isinstance(e, E.Broadcast):
        e = e.value
    return isinstance(e, E.FloatImm) and e.value == e.value


_INT_ARITH = {E.Add: "add", E.Sub: "sub", E.Mul: "mul"}


def _dtype_kind(dtype: str) -> str:
    """``"int"``, ``"uint"``, ``"float"``, ... of ``dtype`` (``types.parse_dtype``'s kind)."""
    kind = _KINDS.get(dtype)
    if kind is None:
        kind = _KINDS[dtype] = T.parse_dtype(dtype)[0]
    return kind


_KINDS: dict = {}


class RampVal:
    """The integer vector ``base + [0, stride, 2*stride, ...]`` kept symbolic."""

    __slots__ = ("base", "stride", "lanes")

    def __init__(self, base: ir.Value, stride: int, lanes: int):
        self.base = base
        self.stride = stride
        self.lanes = lanes


def _address_operands(call) -> tuple:
    """The operands of ``tir.prefetch(buf[i])``: the element's indices, not the element."""
    ld = call.args[0] if len(call.args) == 1 else None
    return tuple(ld.indices) if isinstance(ld, E.BufferLoad) else ()


_VECTOR, _INT, _CONSTANT = ir.VectorType, ir.IntType, ir.Constant
_SCALAR_TYPES = frozenset((ir.IntType, ir.FloatType, ir.DoubleType, ir.HalfType,
                           ir.PointerType))
# the builder's own values: never constants (``const_int``'s quick answer)
_INSTRUCTIONS = frozenset((textir.Instr, textir.Alloca, textir.Phi, textir.Argument))


def lanes_of(v) -> int:
    # (exact type tests first: this runs for nearly every operand of every instruction)
    if type(v) is RampVal:
        return v.lanes
    t = v.type
    tt = type(t)
    if tt in _SCALAR_TYPES:
        return 1
    if tt is _VECTOR:
        return t.count
    return t.count if isinstance(t, ir.VectorType) else 1


def const_int(v) -> int | None:
    """The value of a scalar integer constant (8 bits or wider), else None."""
    cls = type(v)
    if cls in _INSTRUCTIONS:
        return None
    if cls is _CONSTANT:
        t, c = v.type, v.constant
        if type(t) is _INT and type(c) is int:
            return c if t.width >= 8 else None
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) and v.type.width >= 8 \
            and isinstance(v.constant, int) and not isinstance(v.constant, bool):
        return v.constant
    return None


def wrap_signed(value: int, width: int) -> int:
    """``value`` modulo 2**width, as a signed ``width``-bit integer."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def fold_int(builder: textir.IRBuilder, op: str, a, b, flags=()):
    """Integer ``add``/``sub``/``mul`` that folds constants and identities (x+0, x*1, x*0) in
    Python: index arithmetic is full of them, and every instruction not emitted is one LLVM's
    optimizer does not have to remove (about a seventh of a conv kernel's IR)."""
    ca, cb = const_int(a), const_int(b)
    if a.type is not b.type and a.type != b.type:
        ca = cb = None  # (an error for the builder to report)
    if ca is not None and cb is not None:
        v = ca + cb if op == "add" else ca - cb if op == "sub" else ca * cb
        return ir.Constant(a.type, wrap_signed(v, a.type.width))
    if cb == 0 and op in ("add", "sub") or cb == 1 and op == "mul":
        return a
    if ca == 0 and op == "add" or ca == 1 and op == "mul":
        return b
    if (ca == 0 or cb == 0) and op == "mul":
        return ir.Constant(a.type, 0)
    return getattr(builder, op)(a, b, flags=flags)


def fold_int_cast(builder: textir.IRBuilder, op: str, v, to):
    """``sext``/``zext``/``trunc`` of an integer, folded for a scalar constant."""
    c = const_int(v)
    if c is not None and isinstance(to, ir.IntType) and to.width >= 8:
        w = v.type.width
        x = wrap_signed(c, w) if op == "sext" else c & ((1 << w) - 1)
        return ir.Constant(to, wrap_signed(x, to.width))
    return getattr(builder, op)(v, to)


class _Spelled(ir.Constant):
    """A vector constant spelled as one word (``poison``, ``zeroinitializer``): llvmlite
    writes vector constants element by element, and a broadcast needs two of them."""

    def __init__(self, typ: ir.Type, value, word: str):
        super().__init__(typ, value)
        self.word = word

    def get_reference(self) -> str:
        return self.word


_SPLAT: dict = {}  # (element type, lanes) -> (poison vector, all-zero i32 mask)


def splat_operands(et: ir.Type, lanes: int) -> tuple[ir.Constant, ir.Constant]:
    """(the poison vector a broadcast inserts into, its all-zero shuffle mask), shared."""
    key = (str(et), lanes)
    hit = _SPLAT.get(key)
    if hit is None:
        hit = _SPLAT[key] = (
            _Spelled(ir.VectorType(et, lanes), ir.Undefined, "poison"),
            _Spelled(ir.VectorType(T.I32, lanes), [0] * lanes, "zeroinitializer"))
    return hit


class ExprEmitter:
    """Mixin of CodeGenLLVM: ``emit(expr)`` returns an LLVM value (or a RampVal)."""

    builder: textir.IRBuilder
    module: textir.Module
    env: dict
    fmf: tuple

    # ---------------------------------------------------------------- driver
    def _data_ids(self) -> set:
        """Ids of expressions (and let variables) whose value derives from a buffer load: their
        signed integer arithmetic wraps (numpy's), index arithmetic keeps ``nsw``."""
        ids = getattr(self, "_data", None)
        if ids is None:
            ids = self._data = set()
        return ids

    def nonneg_vars(self) -> set:
        """Ids of loop variables known >= 0 (their loop starts at a non-negative constant)."""
        ids = getattr(self, "_nonneg", None)
        if ids is None:
            ids = self._nonneg = set()
        return ids

    def _provably_nonneg(self, e, budget: int = 64) -> bool:
        """Is signed integer index expression ``e`` >= 0 for sure: built from non-negative
        constants and loop variables by ``+``, ``*``, floordiv and floormod by positive
        constants, widening casts? (Iterative; gives up beyond ``budget`` nodes.)"""
        known = self.nonneg_vars()
        stack = [e]
        while stack:
            n = stack.pop()
            budget -= 1
            if budget < 0:
                return False
            t = type(n)
            if t is E.IntImm:
                if n.value < 0:
                    return False
            elif isinstance(n, E.Var):
                if id(n) not in known:
                    return False
            elif t in (E.Add, E.Mul):
                stack += (n.a, n.b)
            elif t in (E.FloorDiv, E.FloorMod):
                if type(n.b) is not E.IntImm or n.b.value <= 0:
                    return False
                if t is E.FloorDiv:  # floormod by a positive constant is never negative
                    stack.append(n.a)
            elif t is E.Cast:
                src, dst = T.parse_dtype(n.value.dtype), T.parse_dtype(n.dtype)
                if src[0] != "int" or dst[0] != "int" or dst[1] < src[1]:
                    return False
                stack.append(n.value)
            else:
                return False
        return True

    def emit(self, root, memo: dict | None = None):
        memo = {} if memo is None else memo
        data = self._data_ids()
        children = expr_children
        handlers, generic = _EMITTERS, self._emit_node
        leaves, plain, consts = _LEAVES, _PLAIN, self._int_consts
        call_t, let_t, load_t, int_t = E.Call, E.Let, E.BufferLoad, E.IntImm
        var_t, size_var_t = E.Var, E.SizeVar
        stack = [(root, None)]  # (node, its operands once they are queued)
        pop, push = stack.pop, stack.append
        while stack:
            node, deps = pop()
            key = id(node)
            if key in memo:
                continue
            t = type(node)
            if deps is None:
                if t is call_t and node.op_name == "tir.if_then_else":
                    deps = (node.args[0],)
                elif t is call_t and node.op_name == "tir.prefetch":
                    deps = _address_operands(node)  # (the element is not loaded)
                elif t is let_t:
                    deps = (node.value,)
                elif t in leaves:
                    deps = ()
                elif t in plain:
                    deps = children(node)
                else:
                    deps = self._deps(node)
                if deps:  # operands first, then this node again
                    push((node, deps))
                    mark = len(stack)
                    env = self.env
                    for c in deps:
                        ck = id(c)
                        if ck in memo:
                            continue
                        tc = type(c)
                        if tc is int_t:
                            # a constant operand: no instruction, no order to keep
                            v = c.value
                            ckey = (c.dtype, type(v), v)
                            k = consts.get(ckey)
                            if k is None:
                                k = consts[ckey] = ir.Constant(T.llvm_type(c.dtype), v)
                            memo[ck] = k
                        elif (tc is var_t or tc is size_var_t) and ck in env:
                            memo[ck] = env[ck]  # a bound variable: its value, as _emit_var
                        else:
                            push((c, None))
                    if len(stack) != mark:
                        continue
                    pop()  # every operand is known: this node is next anyway
            if t is load_t:
                data.add(key)
            else:
                for c in deps:
                    if id(c) in data:
                        data.add(key)
                        break
            h = handlers.get(t)
            memo[key] = h(self, node, memo) if h is not None else generic(node, memo)
        return memo[id(root)]

    def emit_scalar(self, e) -> ir.Value:
        v = self.emit(e)
        if lanes_of(v) != 1:
            raise ValueError(f"expected a scalar expression, got a vector: {e!r}")
        return v

    @staticmethod
    def _deps(node) -> tuple:
        """The operands ``emit`` evaluates before ``node`` (not an if_then_else's arms, nor a
        Let's body, nor the element a prefetch names)."""
        if isinstance(node, E.Call) and node.op_name == "tir.if_then_else":
            return (node.args[0],)
        if isinstance(node, E.Call) and node.op_name == "tir.prefetch":
            return _address_operands(node)
        if isinstance(node, E.Let):
            return (node.value,)
        return expr_children(node)

    def _emit_node(self, e, memo):
        t = type(e)
        if t is E.IntImm:  # (index code repeats them: one constant per (dtype, value))
            return self._emit_int(e, memo)
        if t is E.FloatImm:
            return ir.Constant(T.llvm_type(e.dtype), e.value)
        if isinstance(e, E.Var):
            return self._emit_var(e, memo)
        if isinstance(e, E.BinaryOp):
            return self._binary(e, memo[id(e.a)], memo[id(e.b)])
        if t is E.Cast:
            return self._emit_cast(e, memo)
        if t is E.Not:
            a = memo[id(e.a)]
            return self.builder.xor(a, T.const(a.type, 1))
        if t is E.Select:
            c, a, b = (memo[id(x)] for x in (e.condition, e.true_value, e.false_value))
            c, a, b = self._match(c, a, b)
            return self.builder.select(c, a, b)
        if t is E.BufferLoad:
            return self.load(e.buffer, [memo[id(i)] for i in e.indices])
        if t is E.Ramp:
            base, stride = memo[id(e.base)], memo[id(e.stride)]
            if isinstance(e.stride, E.IntImm) and lanes_of(base) == 1:
                return RampVal(base, e.stride.value, e.lanes)
            steps = ir.Constant(ir.VectorType(base.type, e.lanes), list(range(e.lanes)))
            b = self.broadcast(base, e.lanes)
            return self.builder.add(b, self.builder.mul(self.broadcast(stride, e.lanes), steps))
        if t is E.Broadcast:
            return self.broadcast(memo[id(e.value)], e.lanes)
        if t is E.Let:
            if id(e.value) in self._data_ids():
                self._data_ids().add(id(e.var))
            self.env[id(e.var)] = memo[id(e.value)]
            try:
                return self.emit(e.body, dict(memo))
            finally:
                del self.env[id(e.var)]
        if t is E.Call:
            return self._call(e, memo)
        if t is E.StringImm:
            return self._cstring(e.value)
        raise NotImplementedError(f"llvm codegen does not support {t.__name__}")

    def _emit_int(self, e, memo):  # one constant per distinct (dtype, value)
        v = e.value
        ckey = (e.dtype, type(v), v)
        c = self._int_consts.get(ckey)
        if c is None:
            c = self._int_consts[ckey] = ir.Constant(T.llvm_type(e.dtype), v)
        return c

    def _emit_var(self, e, memo):
        try:
            return self.env[id(e)]
        except KeyError:
            raise ValueError(f"variable {e.name!r} is not defined here") from None

    def _emit_binary(self, e, memo):
        return self._binary(e, memo[id(e.a)], memo[id(e.b)])

    def _emit_cast(self, e, memo):
        r = self._rounded_cast(e, memo)
        return r if r is not None else self._cast(memo[id(e.value)], e.value.dtype, e.dtype)

    def _rounded_cast(self, e, memo):
        """``e``, a float32 -> int cast of ``round(x)``, clipped or not by integer constants (a
        requantize to uint8: ``cast(clip(round(x), 0, 255))``), as the clip of ``x`` converted
        by ``cvtps2dq`` (``cvtt.truncate``'s rounding form), where the host has it; else None.
        Exact: rounding commutes with min / max against an integer (a fixed point of
        rounding; a NaN stays NaN), and ``cvtps2dq`` gives ``float_to_int``'s -2**31 for NaN
        and out-of-range lanes as the truncation does. Saves the ``vroundps`` a vector."""
        if e.value.dtype != "float32" or _dtype_kind(e.dtype) not in ("int", "uint"):
            return None
        _, dbits, _ = T.parse_dtype(e.dtype)
        if dbits > 32 or (dbits == 32 and _dtype_kind(e.dtype) == "uint"):
            return None
        clips, v = [], e.value
        while type(v) in (E.Min, E.Max):
            c, x = (v.a, v.b) if _number(v.a) else (v.b, v.a) if _number(v.b) else (None, None)
            while isinstance(c, E.Broadcast):
                c = c.value
            if c is None or c.value != int(c.value):
                return None
            clips.append(v)
            v = x
        if type(v) is not E.Call or v.op_name not in ("tir.round", "tir.nearbyint"):
            return None
        x = v.args[0]
        if id(x) not in memo or lanes_of(memo[id(x)]) == 1:
            return None
        val, inner = memo[id(x)], v
        width = cvtt.piece_width(lanes_of(val), rounding=True)
        for clip in reversed(clips):  # (innermost first, each on the clipped value below)
            c = memo[id(clip.b if clip.a is inner else clip.a)]
            if width is None:  # (no rounded cast: the selects as they were, then unused)
                a, b = (val, c) if clip.a is inner else (c, val)
                val, inner = self._binary(clip, a, b), clip
                continue
            # (x86's min / max of the constant: the clip's select, one instruction)
            val = cvtt.clip_by(self.builder, self._declare, val, self.broadcast(
                c, lanes_of(val)), type(clip) is E.Min, width)
            inner = clip
        r = cvtt.truncate(self.builder, self._declare, val, rounding=True)
        if r is None:
            return None
        return r if dbits == 32 else self.builder.trunc(r, T.llvm_type(e.dtype, lanes_of(r)))

    def _emit_load(self, e, memo):
        return self.load(e.buffer, [memo[id(i)] for i in e.indices])

    def _emit_broadcast(self, e, memo):
        return self.broadcast(memo[id(e.value)], e.lanes)

    def _emit_call(self, e, memo):
        return self._call(e, memo)

    # ---------------------------------------------------------------- vectors
    def broadcast(self, v, lanes: int):
        if isinstance(v, RampVal):
            steps = ir.Constant(ir.VectorType(v.base.type, lanes),
                                [k * v.stride for k in range(lanes)])
            return self.builder.add(self.broadcast(v.base, lanes), steps)
        if isinstance(v.type, ir.VectorType):
            return v
        if isinstance(v, ir.Constant):
            return ir.Constant(ir.VectorType(v.type, lanes), [v] * lanes)
        poison, zeros = splat_operands(v.type, lanes)
        one = self.builder.insert_element(poison, v, T.I32(0))
        return self.builder.shuffle_vector(one, poison, zeros)

    def _match(self, *vals):
        lanes = 1
        for v in vals:
            n = lanes_of(v)
            if n > lanes:
                lanes = n
        if lanes == 1:
            return vals
        return tuple(self.broadcast(v, lanes) for v in vals)

    def _same_int_width(self, a, b):
        """Integer vector operands of one width, the narrower sign-extended. A schedule's int32
        positions substituted for an int64 axis keep the rebuilt nodes' int64 dtype, so their
        vector can meet an int64 constant's (Trilu's ``col - row >= k`` fused into a depthwise
        conv); a scalar constant prints untyped and never clashes."""
        ea, eb = _elem_type(a.type), _elem_type(b.type)
        if not (isinstance(ea, ir.IntType) and isinstance(eb, ir.IntType)) or \
                ea.width == eb.width or 1 in (ea.width, eb.width):
            return a, b
        wide = ea if ea.width > eb.width else eb

        def up(v):
            if _elem_type(v.type).width == wide.width:
                return v
            if not isinstance(v.type, ir.VectorType):
                return self.builder.sext(v, wide)
            target = ir.VectorType(wide, v.type.count)
            if isinstance(v, ir.Constant) and isinstance(v.constant, list):
                return ir.Constant(target, [ir.Constant(wide, c.constant) for c in v.constant])
            return self.builder.sext(v, target)

        return up(a), up(b)

    # ---------------------------------------------------------------- arithmetic
    def _binary(self, e, a, b):
        dtype = e.a.dtype
        t = type(e)
        if (isinstance(a, RampVal) or isinstance(b, RampVal)) and t in (E.Add, E.Sub, E.Mul):
            r = self._ramp_arith(t, a, b)
            if r is not None:
                return r
        if lanes_of(a) != 1 or lanes_of(b) != 1:
            a, b = self._same_int_width(*self._match(a, b))
        bld = self.builder
        kind = _dtype_kind(dtype)
        if t in _INT_ARITH and kind == "int":  # (the common case: signed index arithmetic)
            nsw = () if id(e) in self._data_ids() else ("nsw",)
            return fold_int(bld, _INT_ARITH[t], a, b, nsw)
        if isinstance(e, E.CmpOp):
            if t is E.And:
                return bld.and_(a, b)
            if t is E.Or:
                return bld.or_(a, b)
            op = {E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}[t]
            if T.is_float(dtype):
                return bld.fcmp_unordered(op, a, b) if op == "!=" else bld.fcmp_ordered(op, a, b)
            if T.is_unsigned(dtype):
                return bld.icmp_unsigned(op, a, b)
            return bld.icmp_signed(op, a, b)
        if T.is_float(dtype):
            f = self.fmf
            if t is E.Add:
                return bld.fadd(a, b, flags=f)
            if t is E.Sub:
                return bld.fsub(a, b, flags=f)
            if t is E.Mul:
                return bld.fmul(a, b, flags=f)
            if t is E.Div:
                return bld.fdiv(a, b, flags=f)
            if t is E.Mod:
                return bld.frem(a, b, flags=f)
            if t is E.FloorDiv:
                return self._intrin("llvm.floor", [bld.fdiv(a, b, flags=f)])
            if t is E.FloorMod:
                q = self._intrin("llvm.floor", [bld.fdiv(a, b, flags=f)])
                return bld.fsub(a, bld.fmul(q, b, flags=f), flags=f)
            if t in (E.Min, E.Max):
                cmp = "<" if t is E.Min else ">"
                if "fast" not in f and (_number(e.a) or _number(e.b)):
                    # one side is a number (a ReLU's 0, a clip's bounds): ``c < x ? c : x``
                    # keeps the other side's NaN, and is x86's one-instruction min/max
                    c, x = (a, b) if _number(e.a) else (b, a)
                    return bld.select(bld.fcmp_ordered(cmp, c, x), c, x)
                res = bld.select(bld.fcmp_ordered(cmp, a, b), a, b)
                if "fast" in f:
                    return res
                # IEEE (numpy's minimum/maximum): a NaN in either operand gives NaN
                return bld.select(bld.fcmp_unordered("uno", a, a), a, res)
        unsigned = T.is_unsigned(dtype)
        # values loaded from buffers wrap on overflow (numpy, the interpreter): -INT_MIN is
        # INT_MIN, not poison; pure index arithmetic keeps nsw for the optimizer
        nsw = () if unsigned or id(e) in self._data_ids() else ("nsw",)
        if t is E.Add:
            return fold_int(bld, "add", a, b, nsw)
        if t is E.Sub:
            return fold_int(bld, "sub", a, b, nsw)
        if t is E.Mul:
            return fold_int(bld, "mul", a, b, nsw)
        if t in (E.FloorDiv, E.FloorMod) and not unsigned and type(e.b) is E.IntImm \
                and e.b.value > 0 and self._provably_nonneg(e.a):
            # a non-negative numerator: floor division is plain division (one instruction
            # instead of eight; LLVM's optimizer spent much of its time removing them)
            return bld.udiv(a, b) if t is E.FloorDiv else bld.urem(a, b)
        if t in (E.Div, E.Mod, E.FloorDiv, E.FloorMod):
            # both sides non-negative (a size and an index over it): the unsigned division,
            # still guarded against a zero divisor, replaces the signed one's overflow guard
            # and floor fix (four instructions instead of about fifteen)
            if not unsigned and self._provably_nonneg(e.b) and self._provably_nonneg(e.a):
                unsigned = True
            return self._int_division(t, a, b, unsigned)
        if t is E.Min:
            cmp = bld.icmp_unsigned if unsigned else bld.icmp_signed
            return bld.select(cmp("<", a, b), a, b)
        if t is E.Max:
            cmp = bld.icmp_unsigned if unsigned else bld.icmp_signed
            return bld.select(cmp(">", a, b), a, b)
        raise NotImplementedError(f"binary op {t.__name__} on {dtype}")

    def _int_division(self, t, a, b, unsigned: bool):
        """Integer ``/ % // floormod`` that never traps: ``x / 0`` and ``x % 0`` give 0 (numpy's
        convention) and ``INT_MIN / -1`` wraps to INT_MIN (remainder 0), where LLVM's sdiv/srem
        would raise SIGFPE. A constant divisor other than 0 and -1 needs no guard."""
        bld = self.builder
        zero = T.const(a.type, 0)
        safe = isinstance(b, ir.Constant) and isinstance(b.constant, int) and \
            b.constant not in (0, -1)
        is_zero = None
        if not safe:
            is_zero = bld.icmp_unsigned("==", b, zero)
            bad = is_zero
            if not unsigned:
                width = a.type.element.width if isinstance(a.type, ir.VectorType) \
                    else a.type.width
                is_min = bld.icmp_signed("==", a, T.const(a.type, -(1 << (width - 1))))
                bad = bld.or_(bad, bld.and_(is_min, bld.icmp_signed("==", b, T.const(a.type, -1))))
            b = bld.select(bad, T.const(a.type, 1), b)
        if unsigned:
            res = bld.udiv(a, b) if t in (E.Div, E.FloorDiv) else bld.urem(a, b)
        elif t is E.Div:
            res = bld.sdiv(a, b)
        elif t is E.Mod:
            res = bld.srem(a, b)
        else:
            r = bld.srem(a, b)
            fix = bld.and_(bld.icmp_signed("!=", r, zero),
                           bld.icmp_signed("<", bld.xor(r, b), zero))
            if t is E.FloorDiv:
                res = bld.sub(bld.sdiv(a, b), bld.zext(fix, a.type))
            else:
                res = bld.select(fix, bld.add(r, b), r)
        return res if is_zero is None else bld.select(is_zero, zero, res)

    def _ramp_arith(self, t, a, b):
        bld = self.builder
        ra, rb = isinstance(a, RampVal), isinstance(b, RampVal)
        if ra and rb:
            if t is E.Mul:
                return None
            base = fold_int(bld, "add" if t is E.Add else "sub", a.base, b.base)
            return RampVal(base, a.stride + (b.stride if t is E.Add else -b.stride), a.lanes)
        r, s = (a, b) if ra else (b, a)
        if lanes_of(s) != 1:
            return None
        if t is E.Add:
            return RampVal(fold_int(bld, "add", r.base, s, ("nsw",)), r.stride, r.lanes)
        if t is E.Sub:
            if ra:
                return RampVal(fold_int(bld, "sub", r.base, s, ("nsw",)), r.stride, r.lanes)
            return RampVal(fold_int(bld, "sub", s, r.base, ("nsw",)), -r.stride, r.lanes)
        if isinstance(s, ir.Constant):  # Mul by a constant keeps the ramp
            c = int(s.constant)
            return RampVal(fold_int(bld, "mul", r.base, s, ("nsw",)), r.stride * c, r.lanes)
        return None

    def _cast(self, v, src: str, dst: str):
        bld = self.builder
        sk, sbits, _ = T.parse_dtype(src)
        dk, dbits, _ = T.parse_dtype(dst)
        if isinstance(v, RampVal) and sk in ("int", "uint") and dk in ("int", "uint"):
            return RampVal(self._cast(v.base, src, dst), v.stride, v.lanes)
        lanes = lanes_of(v)
        if isinstance(v, RampVal):
            v = self.broadcast(v, lanes)
        to = T.llvm_type(dst, lanes)
        if v.type == to:
            return v
        sf, df = sk == "float", dk == "float"
        if dk == "bool":
            zero = T.const(v.type, 0)
            return bld.fcmp_unordered("!=", v, zero) if sf else bld.icmp_unsigned("!=", v, zero)
        if sf and df:
            if dbits > sbits:
                return bld.fpext(v, to)
            if sbits == 64 and dbits == 16:  # via float32: a direct fptrunc is a libcall
                # (__truncdfhf2) the JIT cannot resolve, a call through address 0 (SIGSEGV)
                v = bld.fptrunc(v, T.llvm_type("float32", lanes))
            return bld.fptrunc(v, to)
        if sf:
            return self._float_to_int(v, sbits, dk, dbits, lanes)
        if df:
            return bld.uitofp(v, to) if sk in ("uint", "bool") else bld.sitofp(v, to)
        if dbits > sbits:
            return fold_int_cast(bld, "zext" if sk in ("uint", "bool") else "sext", v, to)
        return fold_int_cast(bld, "trunc", v, to)

    def _float_to_int(self, v, sbits: int, dk: str, dbits: int, lanes: int):
        """A float -> integer cast with one defined result for every input, the rule of
        ``topi.reference.tensor.float_to_int`` (LLVM's fptosi/fptoui are poison for NaN and
        out-of-range values): truncate through int32 (int64 for 64-bit targets and uint32),
        NaN or out of that range gives its minimum, then wrap to the target width; uint64 also
        takes [2**63, 2**64) exactly."""
        bld = self.builder
        if sbits == 16:  # half -> float: exact, and the range tests below need the headroom
            v = bld.fpext(v, T.llvm_type("float32", lanes))
        ft = v.type
        wide = 64 if dbits == 64 or (dk == "uint" and dbits == 32) else 32
        wt = T.llvm_type(f"int{wide}", lanes)

        def exact(x, lo: float, hi: float):
            ok = bld.and_(bld.fcmp_ordered(">=", x, T.const(ft, lo)),
                          bld.fcmp_ordered("<", x, T.const(ft, hi)))
            return ok, bld.fptosi(bld.select(ok, x, T.const(ft, 0.0)), wt)

        if wide == 32 and ft == T.llvm_type("float32", lanes):  # (x86: one instruction)
            r = cvtt.truncate(bld, self._declare, v)
            if r is not None:
                to = T.llvm_type(f"{dk}{dbits}", lanes)
                return r if dbits == 32 else bld.trunc(r, to)
        half = float(2 ** (wide - 1))
        ok, r = exact(v, -half, half)
        r = bld.select(ok, r, T.const(wt, -(2 ** (wide - 1))))
        if dk == "uint" and dbits == 64:  # [2**63, 2**64): shift down, convert, set the top bit
            big, q = exact(bld.fsub(v, T.const(ft, half)), 0.0, half)
            r = bld.select(big, bld.xor(q, T.const(wt, -(2 ** 63))), r)
        to = T.llvm_type(f"{dk}{dbits}", lanes)
        return r if wide == dbits else bld.trunc(r, to)

    # ---------------------------------------------------------------- calls
    def _declare(self, name: str, ret: ir.Type, args: list) -> textir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = textir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def _intrin(self, base: str, args: list) -> ir.Value:
        name = f"{base}.{T.mangle(args[0].type)}"
        fn = self._declare(name, args[0].type, [a.type for a in args])
        return self.builder.call(fn, args)

    def _libm(self, name: str, args: list, dtype: str) -> ir.Value:
        lanes = lanes_of(args[0])
        sname = name + ("f" if T.parse_dtype(dtype)[1] == 32 else "")
        st = T.scalar_type(dtype)
        fn = self._declare(sname, st, [st] * len(args))
        if lanes == 1:
            return self.builder.call(fn, args)
        out = ir.Constant(ir.VectorType(st, lanes), ir.Undefined)
        for k in range(lanes):
            lane = [self.builder.extract_element(a, T.I32(k)) for a in args]
            out = self.builder.insert_element(out, self.builder.call(fn, lane), T.I32(k))
        return out

    def _call(self, e, memo):
        name = e.op_name
        short = name[4:] if name.startswith("tir.") else name
        bld = self.builder
        if short == "if_then_else":
            return self._if_then_else(e, memo)
        if short == "prefetch":
            return self._prefetch(e, memo)
        if short == "vector_shuffle":  # (schedule/conv_lanes_tile's transpose)
            return self._vector_shuffle(e, memo)
        if short == "num_threads":  # (schedule/common.num_threads)
            if self.parallel_depth or not self.gomp:
                return T.I32(1)
            return self.num_threads
        args = [memo[id(a)] for a in e.args]
        if short == byte_lut.NAME:  # (schedule/byte_table)
            return byte_lut.emit(bld, self._declare, *args)
        if short in ("likely",):
            return args[0]
        if short in ("call_extern", "call_pure_extern"):
            fname = e.args[0].value
            vals = [a if not isinstance(a, RampVal) else self.broadcast(a, a.lanes)
                    for a in args[1:]]
            fn = self._declare(fname, T.llvm_type(e.dtype), [v.type for v in vals])
            return bld.call(fn, vals)
        args = list(self._match(*args)) if args else args
        if short == dot.NAME:  # (schedule/conv_vnni)
            return dot.emit(self.builder, self._declare, *args)
        if short == dot.PAIRS_NAME:  # (schedule/conv_vnni's int16 pairs)
            return dot.emit_pairs(self.builder, self._declare, *args)
        if short == dot.BYTE_PAIRS_NAME:  # (its int8 weight kept as bytes: BYTE_PAIRS)
            return dot.emit_byte_pairs(self.builder, self._declare, *args)
        dtype = e.args[0].dtype if e.args else e.dtype
        if short in LIBM and short not in LLVM_INTRINSICS and T.parse_dtype(dtype)[:2] == (
                "float", 16):  # libm has no half versions: compute in float32, round back
            wide_t = T.llvm_type("float32", lanes_of(args[0]))
            wide = [bld.fpext(a, wide_t) for a in args]
            if short in vmath.FUNCS:
                out = vmath.emit(self, short, wide[0])
            elif short in vmath.BINARY_FUNCS:
                out = vmath.emit_binary(self, short, *wide)
            else:
                out = self._libm(short, wide, "float32")
            return bld.fptrunc(out, args[0].type)
        if short in vmath.FUNCS and T.parse_dtype(dtype)[:2] == ("float", 32):
            return vmath.emit(self, short, args[0])
        if short in vmath.BINARY_FUNCS and T.parse_dtype(dtype)[:2] == ("float", 32):
            return vmath.emit_binary(self, short, *args)
        if short == "pow" and T.parse_dtype(dtype)[:2] == ("float", 32) and \
                _number(e.args[1]):
            c = e.args[1]
            while isinstance(c, E.Broadcast):
                c = c.value
            out = vmath.pow_const_exponent(self, args[0], float(c.value))
            if out is not None:
                return out
        if short in LLVM_INTRINSICS and T.is_float(dtype):
            return self._intrin(LLVM_INTRINSICS[short], args)
        if short in LIBM:
            return self._libm(short, args, dtype)
        one = T.const(args[0].type, 1.0) if args and T.is_float(dtype) else None
        if short == "sigmoid":
            neg = bld.fneg(args[0], flags=self.fmf)
            den = bld.fadd(one, self._intrin("llvm.exp", [neg]), flags=self.fmf)
            return bld.fdiv(one, den, flags=self.fmf)
        if short == "rsqrt":
            return bld.fdiv(one, self._intrin("llvm.sqrt", args), flags=self.fmf)
        if short == "exp10":
            ten = T.const(args[0].type, 10.0)
            return self._intrin("llvm.pow", [ten, args[0]])
        if short == "isnan":
            return bld.fcmp_unordered("uno", args[0], args[0])
        if short in ("isinf", "isfinite"):
            a = self._intrin("llvm.fabs", args)
            inf = T.const(a.type, float("inf"))
            return bld.fcmp_ordered("==" if short == "isinf" else "<", a, inf)
        if short == "reinterpret":
            return bld.bitcast(args[0], T.llvm_type(e.dtype, lanes_of(args[0])))
        bitwise = {"bitwise_and": bld.and_, "bitwise_or": bld.or_, "bitwise_xor": bld.xor,
                   "shift_left": bld.shl}
        if short in bitwise:
            return bitwise[short](args[0], args[1])
        if short == "shift_right":
            return (bld.lshr if T.is_unsigned(dtype) else bld.ashr)(args[0], args[1])
        if short == "bitwise_not":
            return bld.xor(args[0], T.const(args[0].type, -1))
        raise NotImplementedError(f"llvm codegen does not support the intrinsic {name!r}")

    def _vector_shuffle(self, e, memo):
        """``tir.vector_shuffle(a, b, i0, i1, ...)``: LLVM's shufflevector of two vectors of one
        type by constant lane indices (``i < lanes``: a's lane i, else b's lane i - lanes)."""
        a, b = (memo[id(x)] for x in e.args[:2])
        mask = [int(m.value) for m in e.args[2:]]
        if not isinstance(a.type, ir.VectorType) or a.type != b.type or \
                not all(0 <= m < 2 * a.type.count for m in mask):
            raise ValueError("tir.vector_shuffle takes two vectors of one type and constant lane "
                             f"indices into them, got {a.type} and {b.type}, indices {mask}")
        return self.builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(T.I32, len(mask)),
                                                             mask))

    def _prefetch(self, e, memo):
        """``tir.prefetch(buf[i])``: llvm.prefetch of the element's address (a read, kept in
        all cache levels), as TVM's ``builtin::prefetch``; the element is not loaded."""
        ld = e.args[0] if len(e.args) == 1 else None
        if not isinstance(ld, E.BufferLoad) or ld.dtype != ld.buffer.dtype:
            raise ValueError("tir.prefetch takes one scalar element of a buffer, got "
                             f"{[type(a).__name__ for a in e.args]}")
        off = self._offset(ld.buffer, [memo[id(i)] for i in ld.indices])
        et = self.mem_type(ld.buffer.dtype)
        # (not inbounds: a prefetch may run past the buffer's end, which x86 allows)
        ptr = self.builder.gep(self.buffer_ptr(ld.buffer), [off], source_etype=et)
        fn = self._declare("llvm.prefetch.p0", ir.VoidType(), [ptr.type, T.I32, T.I32, T.I32])
        return self.builder.call(fn, [ptr, T.I32(0), T.I32(3), T.I32(1)])

    def _if_then_else(self, e, memo):
        cond = memo[id(e.args[0])]
        bld = self.builder
        if lanes_of(cond) != 1:  # inside a vector loop: both sides, then select
            t = self.emit(e.args[1], dict(memo))
            f = self.emit(e.args[2], dict(memo))
            c, t, f = self._match(cond, t, f)
            return bld.select(c, t, f)
        then_bb = bld.append_basic_block("ite.then")
        else_bb = bld.append_basic_block("ite.else")
        end_bb = bld.append_basic_block("ite.end")
        bld.cbranch(cond, then_bb, else_bb)
        bld.position_at_end(then_bb)
        tv = self.emit(e.args[1], dict(memo))
        then_end = bld.block
        bld.branch(end_bb)
        bld.position_at_end(else_bb)
        fv = self.emit(e.args[2], dict(memo))
        else_end = bld.block
        bld.branch(end_bb)
        # a phi takes one type: widen a narrower arm (a scalar beside a vector, or a symbolic
        # ramp) in its own block, before that block's branch, where its value is defined
        lanes = max(lanes_of(tv), lanes_of(fv))
        if lanes_of(tv) != lanes or isinstance(tv, RampVal):
            bld.position_before(then_end.terminator)
            tv = self.broadcast(tv, lanes)
        if lanes_of(fv) != lanes or isinstance(fv, RampVal):
            bld.position_before(else_end.terminator)
            fv = self.broadcast(fv, lanes)
        bld.position_at_end(end_bb)
        phi = bld.phi(tv.type)
        phi.add_incoming(tv, then_end)
        phi.add_incoming(fv, else_end)
        return phi

    def _cstring(self, text: str) -> ir.Value:
        data = bytearray(text.encode() + b"\0")
        ty = ir.ArrayType(ir.IntType(8), len(data))
        gv = textir.GlobalVariable(self.module, ty, name=self.module.get_unique_name("str"))
        gv.global_constant = True
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ty, data)
        return gv


# exact node type -> its emitter (``emit``'s dispatch; any other type, a subclass included,
# goes through ``_emit_node``'s isinstance chain)
_EMITTERS: dict = {
    E.IntImm: ExprEmitter._emit_int, E.Var: ExprEmitter._emit_var,
    E.SizeVar: ExprEmitter._emit_var, E.Cast: ExprEmitter._emit_cast,
    E.BufferLoad: ExprEmitter._emit_load, E.Broadcast: ExprEmitter._emit_broadcast,
    E.Call: ExprEmitter._emit_call,
    **{t: ExprEmitter._emit_binary for t in (
        E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max, E.EQ, E.NE,
        E.LT, E.LE, E.GT, E.GE, E.And, E.Or)},
}
# node types without operands
_LEAVES = frozenset((E.IntImm, E.FloatImm, E.Var, E.SizeVar, E.StringImm))
# node types (not Call, not Let) whose operands are all evaluated first
_PLAIN = frozenset(t for t in (*_EMITTERS, E.Not, E.Select, E.Ramp) if t is not E.Call)


def _elem_type(t):
    """The element type of a vector type, else ``t``."""
    return t.element if isinstance(t, ir.VectorType) else t

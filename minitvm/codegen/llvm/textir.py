"""A fast LLVM IR text builder: the part of ``llvmlite.ir``'s module/function/builder API the
code generator uses, writing each instruction's text once as it is created.

llvmlite builds a Python object graph per instruction and formats it again when the module is
printed; for a model's kernels that was about half of the code generator's time (ResNet-50: 34
kernels, 52,000 instructions). This builder keeps llvmlite's types and constants (their text and
equality rules) and produces the very same text: value and block names are numbered by the same
rules (one name scope per function; unnamed values ``.1, .2, ...``, every instruction taking a
number, void ones too), and every instruction is spelled as llvmlite spells it.
"""

from __future__ import annotations

import contextlib
import re

from llvmlite import ir

_VOID = ir.VoidType()
_CMP = {">": "gt", "<": "lt", "==": "eq", "!=": "ne", ">=": "ge", "<=": "le"}
_SIMPLE_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*$")


class _Val(ir.Value):
    """A value of this builder: its reference text is the attribute ``ref``."""


def ref(v) -> str:
    """The reference text of a value (``%"x"``, ``@"f"``, ``i32 7``'s ``7``)."""
    return v.ref if isinstance(v, _Val) else v.get_reference()


def _typed(v) -> str:
    return f"{v.type} {v.ref if isinstance(v, _Val) else v.get_reference()}"


class NameScope:
    """Names in one function (or module): a name used twice gets ``.1``, ``.2``, ... appended;
    the empty name is always taken, so unnamed values are ``.1``, ``.2``, ... in order."""

    __slots__ = ("used", "counts")

    def __init__(self):
        self.used = {""}
        self.counts: dict[str, int] = {}

    def deduplicate(self, name: str) -> str:
        base = name
        used, counts = self.used, self.counts
        while name in used:
            n = counts.get(base, 0) + 1
            counts[base] = n
            name = f"{base}.{n}"
        return name

    def register(self, name: str, deduplicate: bool = True) -> str:
        if deduplicate:
            name = self.deduplicate(name)
        elif name in self.used:
            raise NameError(f"duplicated name {name!r}")
        self.used.add(name)
        return name


def _local_ref(name: str) -> str:
    if "\\" in name or '"' in name:
        name = name.replace("\\", "\\5c").replace('"', "\\22")
    return f'%"{name}"'


class Named(_Val):
    """A value with a name in a function's scope (argument, block, instruction)."""

    __slots__ = ("parent", "type", "_name", "ref")

    def _register(self, scope: NameScope, name: str) -> None:
        self._name = scope.register(name)
        self.ref = _local_ref(self._name)

    @property
    def name(self) -> str:
        return self._name


class Argument(Named):
    """A function parameter."""

    __slots__ = ("attributes",)

    def __init__(self, func: Function, typ: ir.Type):
        self.parent = func
        self.type = typ
        self.attributes: list[str] = []
        self._register(func.scope, "")

    @Named.name.setter
    def name(self, value: str) -> None:
        self._register(self.parent.scope, value)

    def add_attribute(self, attr: str) -> None:
        if attr not in self.attributes:
            self.attributes.append(attr)

    def __str__(self) -> str:
        if self.attributes:
            return f"{self.type} {' '.join(sorted(self.attributes))} {self.ref}"
        return f"{self.type} {self.ref}"


class Block(Named):
    """A basic block: its instructions in order and its terminator once it has one.
    ``values``: its pure instructions by text, for ``IRBuilder``'s value numbering."""

    __slots__ = ("instructions", "terminator", "values")

    def __init__(self, func: Function, name: str = ""):
        self.parent = func
        self.type = ir.LabelType()
        self.instructions: list = []
        self.terminator = None
        self.values: dict[str, Instr] = {}
        self._register(func.scope, name)

    @property
    def function(self) -> Function:
        return self.parent

    @property
    def is_terminated(self) -> bool:
        return self.terminator is not None

    def text(self, out: list) -> None:
        name = self._name
        if not _SIMPLE_NAME.match(name):
            name = '"' + name.replace("\\", "\\5c").replace('"', "\\22") + '"'
        out.append(f"{name}:\n")
        out.extend(f"  {i}\n" for i in self.instructions)


class Instr(Named):
    """An instruction whose text is known when it is created."""

    __slots__ = ("body",)

    def __init__(self, block: Block, typ: ir.Type, body: str, name: str = ""):
        self.parent = block
        self.type = typ
        self.body = body
        scope = block.parent.scope
        if name:
            self._register(scope, name)
            return
        # unnamed (most instructions): the scope's next ``.N`` (NameScope.register inlined)
        used, counts = scope.used, scope.counts
        n = counts.get("", 0) + 1
        nm = f".{n}"
        while nm in used:
            n += 1
            nm = f".{n}"
        counts[""] = n
        used.add(nm)
        self._name = nm
        self.ref = f'%"{nm}"'

    def __str__(self) -> str:
        if isinstance(self.type, ir.VoidType):
            return self.body
        return f"{self.ref} = {self.body}"


class Alloca(Instr):
    """``alloca``: its alignment may be set after creation."""

    __slots__ = ("allocated_type", "align")

    def __init__(self, block: Block, typ: ir.Type, name: str):
        self.allocated_type = typ
        self.align = None
        super().__init__(block, typ.as_pointer(), "", name)

    def __str__(self) -> str:
        tail = f", align {self.align}" if self.align is not None else ""
        return f"{self.ref} = alloca {self.allocated_type}{tail}"


class Phi(Instr):
    """``phi``: its incoming values are added after creation."""

    __slots__ = ("incomings",)

    def __init__(self, block: Block, typ: ir.Type, name: str):
        self.incomings: list = []
        super().__init__(block, typ, "", name)

    def add_incoming(self, value, block: Block) -> None:
        self.incomings.append((value, block))

    def __str__(self) -> str:
        incs = ", ".join(f"[{ref(v)}, {b.ref}]" for v, b in self.incomings)
        return f"{self.ref} = phi  {self.type} {incs}".rstrip()


class Function(_Val):
    """A function definition or declaration in a ``Module``."""

    __slots__ = ("parent", "ftype", "type", "name", "ref", "scope", "blocks", "args",
                 "linkage", "calling_convention")

    def __init__(self, module: Module, ftype: ir.FunctionType, name: str):
        self.parent = module
        self.ftype = ftype
        self.type = ftype.as_pointer()
        self.name = module.scope.register(name, deduplicate=False)
        self.ref = '@"' + self.name.replace("\\", "\\5c").replace('"', "\\22") + '"'
        self.scope = NameScope()
        self.blocks: list[Block] = []
        self.args = tuple(Argument(self, t) for t in ftype.args)
        self.scope.register("")  # the return value takes a number, as in llvmlite
        self.linkage = ""
        self.calling_convention = ""
        module.add_global(self)

    @property
    def function_type(self) -> ir.FunctionType:
        return self.ftype

    @property
    def module(self) -> Module:
        return self.parent

    def append_basic_block(self, name: str = "") -> Block:
        blk = Block(self, name)
        self.blocks.append(blk)
        return blk

    def __str__(self) -> str:
        state = "define" if self.blocks else "declare"
        prefix = " ".join(str(x) for x in (state, self.linkage, self.calling_convention,
                                           self.ftype.return_type) if x)
        args = ", ".join(str(a) for a in self.args)
        vararg = ("..." if not self.args else ", ...") if self.ftype.var_arg else ""
        out = [f"{prefix} {self.ref}({args}{vararg})\n"]
        if self.blocks:
            out.append("{\n")
            for blk in self.blocks:
                blk.text(out)
            out.append("}\n")
        return "".join(out)


class GlobalVariable(_Val):
    """A global variable (here: constant strings)."""

    __slots__ = ("parent", "value_type", "type", "name", "ref", "linkage", "global_constant",
                 "initializer")

    def __init__(self, module: Module, typ: ir.Type, name: str):
        self.parent = module
        self.value_type = typ
        self.type = typ.as_pointer()
        self.name = module.scope.register(name, deduplicate=False)
        self.ref = '@"' + self.name.replace("\\", "\\5c").replace('"', "\\22") + '"'
        self.linkage = ""
        self.global_constant = False
        self.initializer = None
        module.add_global(self)

    def __str__(self) -> str:
        kind = "constant" if self.global_constant else "global"
        linkage = self.linkage or ("external" if self.initializer is None else "")
        out = f"{self.ref} = " + (f"{linkage} " if linkage else "") + f"{kind} {self.value_type}"
        if self.initializer is not None:
            if self.initializer.type != self.value_type:
                raise TypeError(f"got initializer of type {self.initializer.type} for global "
                                f"value type {self.value_type}")
            out += " " + self.initializer.get_reference()
        elif linkage not in ("external", "extern_weak"):
            out += " " + self.value_type(ir.Undefined).get_reference()
        return out.rstrip()


class Module:
    """An LLVM module: its globals (functions, variables) in order of creation."""

    def __init__(self, name: str = ""):
        self.name = name
        self.triple = "unknown-unknown-unknown"
        self.data_layout = ""
        self.scope = NameScope()
        self.globals: dict = {}

    def add_global(self, gv) -> None:
        assert gv.name not in self.globals
        self.globals[gv.name] = gv

    def get_unique_name(self, name: str = "") -> str:
        return self.scope.deduplicate(name)

    def __str__(self) -> str:
        lines = [f'; ModuleID = "{self.name}"', f'target triple = "{self.triple}"',
                 f'target datalayout = "{self.data_layout}"', ""]
        lines += [t.get_declaration() for t in ir.global_context.identified_types.values()]
        lines += [str(v) for v in self.globals.values()]
        return "\n".join(lines)

    __repr__ = __str__


def _label_suffix(label: str, suffix: str) -> str:
    return label[:25] + ".." + suffix if len(label) > 50 else label + suffix


def _same_type(a, b) -> None:
    if a.type != b.type:
        raise ValueError(f"Operands must be the same type, got ({a.type}, {b.type})")


class IRBuilder:
    """Appends instructions at a position in a block (llvmlite's ``IRBuilder`` interface).

    Local value numbering: a pure instruction (arithmetic, comparison, select, cast, address,
    vector element or shuffle; no memory access or call) spelled like one already in the
    block is not emitted again when appended at the block's end: the earlier value is
    returned. Index arithmetic repeats itself (each access recomputes its offset): a quarter
    of a ResNet-50's kernels' instructions, a third of BERT's, which LLVM would otherwise
    parse, keep through its IR passes and fold again when it selects instructions.
    ``value_numbering = False`` (a subclass) writes every instruction, as llvmlite does.
    """

    value_numbering = True

    def __init__(self, block: Block | None = None):
        self._block = block
        self._anchor = len(block.instructions) if block is not None else 0

    @property
    def block(self) -> Block:
        return self._block

    basic_block = block

    @property
    def function(self) -> Function:
        return self._block.parent

    @property
    def module(self) -> Module:
        return self._block.parent.parent

    # ------------------------------------------------------------ position
    def position_at_end(self, block: Block) -> None:
        self._block = block
        self._anchor = len(block.instructions)

    def position_at_start(self, block: Block) -> None:
        self._block = block
        self._anchor = 0

    def position_before(self, instr) -> None:
        self._block = instr.parent
        self._anchor = self._block.instructions.index(instr)

    def append_basic_block(self, name: str = "") -> Block:
        return self._block.parent.append_basic_block(name)

    @contextlib.contextmanager
    def goto_block(self, block: Block):
        old = self._block
        if block.terminator is not None:
            self.position_before(block.terminator)
        else:
            self.position_at_end(block)
        try:
            yield
        finally:
            self.position_at_end(old)

    @contextlib.contextmanager
    def _branch_helper(self, enter: Block, leave: Block):
        self.position_at_end(enter)
        yield leave
        if self._block.terminator is None:
            self.branch(leave)

    @contextlib.contextmanager
    def if_else(self, pred):
        bb = self._block
        bbif = self.append_basic_block(_label_suffix(bb.name, ".if"))
        bbelse = self.append_basic_block(_label_suffix(bb.name, ".else"))
        bbend = self.append_basic_block(_label_suffix(bb.name, ".endif"))
        self.cbranch(pred, bbif, bbelse)
        yield self._branch_helper(bbif, bbend), self._branch_helper(bbelse, bbend)
        self.position_at_end(bbend)

    # ------------------------------------------------------------ insertion
    def _emit(self, typ: ir.Type, body: str, name: str = "") -> Instr:
        block = self._block
        instr = Instr(block, typ, body, name)
        insts = block.instructions
        if self._anchor == len(insts):
            insts.append(instr)
        else:
            insts.insert(self._anchor, instr)
        self._anchor += 1
        return instr

    def _pure(self, typ: ir.Type, body: str, name: str = "") -> Instr:
        """``_emit`` of a pure instruction, or the same one already earlier in the block
        (looked up only when appending at its end, where every earlier one dominates; an
        explicitly named value is always emitted)."""
        block = self._block
        if name or not self.value_numbering:
            return self._emit(typ, body, name)
        values = block.values
        if self._anchor == len(block.instructions):
            hit = values.get(body)
            if hit is not None:
                return hit
        instr = self._emit(typ, body)
        values.setdefault(body, instr)
        return instr

    def _terminate(self, body: str) -> Instr:
        block = self._block
        assert block.terminator is None
        instr = self._emit(_VOID, body)
        block.terminator = instr
        return instr

    # ------------------------------------------------------------ arithmetic
    def _binop(self, op: str, a, b, name: str, flags) -> Instr:
        t = a.type
        if t is not b.type:
            _same_type(a, b)
        if flags:
            op = " ".join((op, *flags))
        ra = a.ref if isinstance(a, _Val) else a.get_reference()
        rb = b.ref if isinstance(b, _Val) else b.get_reference()
        return self._pure(t, f"{op} {t} {ra}, {rb}", name)

    def add(self, a, b, name="", flags=()):
        return self._binop("add", a, b, name, flags)

    def sub(self, a, b, name="", flags=()):
        return self._binop("sub", a, b, name, flags)

    def mul(self, a, b, name="", flags=()):
        return self._binop("mul", a, b, name, flags)

    def fadd(self, a, b, name="", flags=()):
        return self._binop("fadd", a, b, name, flags)

    def fsub(self, a, b, name="", flags=()):
        return self._binop("fsub", a, b, name, flags)

    def fmul(self, a, b, name="", flags=()):
        return self._binop("fmul", a, b, name, flags)

    def fdiv(self, a, b, name="", flags=()):
        return self._binop("fdiv", a, b, name, flags)

    def frem(self, a, b, name="", flags=()):
        return self._binop("frem", a, b, name, flags)

    def udiv(self, a, b, name="", flags=()):
        return self._binop("udiv", a, b, name, flags)

    def sdiv(self, a, b, name="", flags=()):
        return self._binop("sdiv", a, b, name, flags)

    def urem(self, a, b, name="", flags=()):
        return self._binop("urem", a, b, name, flags)

    def srem(self, a, b, name="", flags=()):
        return self._binop("srem", a, b, name, flags)

    def and_(self, a, b, name="", flags=()):
        return self._binop("and", a, b, name, flags)

    def or_(self, a, b, name="", flags=()):
        return self._binop("or", a, b, name, flags)

    def xor(self, a, b, name="", flags=()):
        return self._binop("xor", a, b, name, flags)

    def shl(self, a, b, name="", flags=()):
        return self._binop("shl", a, b, name, flags)

    def lshr(self, a, b, name="", flags=()):
        return self._binop("lshr", a, b, name, flags)

    def ashr(self, a, b, name="", flags=()):
        return self._binop("ashr", a, b, name, flags)

    def fneg(self, a, name="", flags=()):
        op = " ".join(("fneg", *flags)) if flags else "fneg"
        return self._pure(a.type, f"{op} {a.type} {ref(a)}", name)

    # ------------------------------------------------------------ comparisons, select, casts
    def _cmp(self, kind: str, op: str, a, b, name: str, flags=()) -> Instr:
        t = a.type
        typ = ir.VectorType(ir.IntType(1), t.count) if isinstance(t, ir.VectorType) \
            else ir.IntType(1)
        fl = "".join(" " + f for f in flags)
        return self._pure(typ, f"{kind}{fl} {op} {t} {ref(a)}, {ref(b)}", name)

    def icmp_signed(self, cmpop, a, b, name=""):
        op = _CMP[cmpop]
        return self._cmp("icmp", op if cmpop in ("==", "!=") else "s" + op, a, b, name)

    def icmp_unsigned(self, cmpop, a, b, name=""):
        op = _CMP[cmpop]
        return self._cmp("icmp", op if cmpop in ("==", "!=") else "u" + op, a, b, name)

    def fcmp_ordered(self, cmpop, a, b, name="", flags=()):
        return self._cmp("fcmp", "o" + _CMP[cmpop] if cmpop in _CMP else cmpop, a, b, name,
                         flags)

    def fcmp_unordered(self, cmpop, a, b, name="", flags=()):
        return self._cmp("fcmp", "u" + _CMP[cmpop] if cmpop in _CMP else cmpop, a, b, name,
                         flags)

    def select(self, cond, a, b, name="", flags=()):
        assert a.type == b.type
        return self._pure(a.type, f"select {' '.join(flags)} {_typed(cond)}, {_typed(a)}, "
                                  f"{_typed(b)}", name)

    def _cast(self, op: str, v, typ, name: str):
        if v.type == typ:
            return v
        return self._pure(typ, f"{op} {v.type} {ref(v)} to {typ}", name)

    def trunc(self, v, typ, name=""):
        return self._cast("trunc", v, typ, name)

    def zext(self, v, typ, name=""):
        return self._cast("zext", v, typ, name)

    def sext(self, v, typ, name=""):
        return self._cast("sext", v, typ, name)

    def fptrunc(self, v, typ, name=""):
        return self._cast("fptrunc", v, typ, name)

    def fpext(self, v, typ, name=""):
        return self._cast("fpext", v, typ, name)

    def bitcast(self, v, typ, name=""):
        return self._cast("bitcast", v, typ, name)

    def ptrtoint(self, v, typ, name=""):
        return self._cast("ptrtoint", v, typ, name)

    def fptoui(self, v, typ, name=""):
        return self._cast("fptoui", v, typ, name)

    def fptosi(self, v, typ, name=""):
        return self._cast("fptosi", v, typ, name)

    def uitofp(self, v, typ, name=""):
        return self._cast("uitofp", v, typ, name)

    def sitofp(self, v, typ, name=""):
        return self._cast("sitofp", v, typ, name)

    # ------------------------------------------------------------ memory
    def alloca(self, typ, size=None, name=""):
        if size is not None:
            raise NotImplementedError("alloca with a count")
        block = self._block
        instr = Alloca(block, typ, name)
        block.instructions.insert(self._anchor, instr)
        self._anchor += 1
        return instr

    def load(self, ptr, name="", align=None, typ=None):
        if not isinstance(ptr.type, ir.PointerType):
            raise TypeError(f"cannot load from value of type {ptr.type}: not a pointer")
        if typ is None:
            if isinstance(ptr, Alloca):
                typ = ptr.allocated_type
            elif not ptr.type.is_opaque:
                typ = ptr.type.pointee
            else:
                raise ValueError("Load lacks type.")
        tail = f", align {align}" if align is not None else ""
        return self._emit(typ, f"load {typ}, {ptr.type} {ref(ptr)}{tail}", name)

    def store(self, value, ptr, align=None, nontemporal=False):
        if not isinstance(ptr.type, ir.PointerType):
            raise TypeError(f"cannot store to value of type {ptr.type}: not a pointer")
        if not ptr.type.is_opaque and ptr.type.pointee != value.type:
            raise TypeError(f"cannot store {value.type} to {ptr.type}: mismatching types")
        tail = f", align {align}" if align is not None else ""
        if nontemporal:
            tail += ", !nontemporal !{i32 1}"
        return self._emit(_VOID, f"store {_typed(value)}, {ptr.type} {ref(ptr)}{tail}")

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if source_etype is None:
            raise ValueError("GEP lacks type.")
        op = "getelementptr inbounds" if inbounds else "getelementptr"
        idx = ", ".join(_typed(i) for i in indices)
        return self._pure(ptr.type, f"{op} {source_etype}, {ptr.type} {ref(ptr)}, {idx}", name)

    def atomic_rmw(self, op, ptr, val, ordering, name=""):
        return self._emit(val.type, f"atomicrmw {op} {ptr.type} {ref(ptr)}, {_typed(val)} "
                                    f"{ordering}", name)

    # ------------------------------------------------------------ vectors
    def extract_element(self, vector, idx, name=""):
        if not isinstance(vector.type, ir.VectorType):
            raise TypeError("vector needs to be of VectorType.")
        return self._pure(vector.type.element,
                          f"extractelement {_typed(vector)}, {_typed(idx)}", name)

    def insert_element(self, vector, value, idx, name=""):
        if not isinstance(vector.type, ir.VectorType):
            raise TypeError("vector needs to be of VectorType.")
        if not value.type == vector.type.element:
            raise TypeError(f"value needs to be of type {vector.type.element} not "
                            f"{value.type}.")
        return self._pure(vector.type, f"insertelement {_typed(vector)}, {_typed(value)}, "
                                       f"{_typed(idx)}", name)

    def shuffle_vector(self, v1, v2, mask, name=""):
        if not isinstance(v1.type, ir.VectorType):
            raise TypeError("vector1 needs to be of VectorType.")
        if v2.type != v1.type:
            raise TypeError("vector2 needs to be Undefined or of the same type as vector1.")
        typ = ir.VectorType(v1.type.element, mask.type.count)
        return self._pure(typ, f"shufflevector {_typed(v1)}, {_typed(v2)}, {_typed(mask)}",
                          name)

    # ------------------------------------------------------------ calls and control flow
    def call(self, fn, args, name=""):
        fnty = fn.function_type
        params = fnty.args
        for i, (a, t) in enumerate(zip(args, params)):
            if a.type != t:
                raise TypeError(f"Type of #{1 + i} arg mismatch: {t} != {a.type}")
        cconv = getattr(fn, "calling_convention", "")
        callee = f"{fnty if fnty.var_arg else fnty.return_type} {ref(fn)}"
        if cconv:
            callee = f"{cconv} {callee}"
        text = f"call {callee}({', '.join(_typed(a) for a in args)})"
        return self._emit(fnty.return_type, text, name)

    def phi(self, typ, name=""):
        block = self._block
        instr = Phi(block, typ, name)
        block.instructions.insert(self._anchor, instr)
        self._anchor += 1
        return instr

    def branch(self, target: Block):
        return self._terminate(f"br label {target.ref}")

    def cbranch(self, cond, then: Block, other: Block):
        return self._terminate(f"br {_typed(cond)}, label {then.ref}, label {other.ref}")

    def ret_void(self):
        return self._terminate("ret void")

"""The Relay VM's instruction set: TVM's register-based bytecode, one tuple per instruction.

An instruction is ``(opcode, *operands)``; registers are indices into the current frame's
register file. ``instruction_text`` prints one the way TVM's ``exe.bytecode`` does
(``invoke_packed PackedFunc[0] (in: $0, out: $2)``, ``if $1 $2 1 3``, ...).

Operands, by opcode:
  MOVE src dst · RET result · FATAL
  INVOKE func_index args dst · INVOKE_CLOSURE closure args dst
  INVOKE_PACKED packed_index arity output_size args callee_allocates
      (``args`` are the inputs then the output registers; when ``callee_allocates`` the kernel
      makes its outputs — dynamic shapes — otherwise they were allocated before the call)
  ALLOC_STORAGE size alignment dtype_hint dst
  ALLOC_TENSOR storage offset shape dtype dst · ALLOC_TENSOR_REG storage offset shape_reg dtype dst
  ALLOC_ADT tag fields dst · ALLOC_CLOSURE func_index captured dst
  GET_FIELD object index dst · GET_TAG object dst
  IF test target true_offset false_offset (jump by true_offset when ``test == target``)
  GOTO offset · LOAD_CONST const_index dst · LOAD_CONSTI value dst
  SHAPE_OF tensor dst · RESHAPE_TENSOR tensor shape_reg dst
  UPDATE_ROW data row index dst (``data[index] = row`` in place, ``dst`` is ``data``: the
      output of a step of a loop over a run-time length, O(row); ``vm.update_row``)
"""

from __future__ import annotations

__all__ = ["OPCODES", "OPNAMES", "VMFunction", "instruction_text"]

(MOVE, RET, INVOKE, INVOKE_CLOSURE, INVOKE_PACKED, ALLOC_TENSOR, ALLOC_TENSOR_REG, ALLOC_ADT,
 ALLOC_CLOSURE, GET_FIELD, IF, LOAD_CONST, GOTO, GET_TAG, LOAD_CONSTI, FATAL, ALLOC_STORAGE,
 SHAPE_OF, RESHAPE_TENSOR, UPDATE_ROW) = range(20)

OPNAMES = ["Move", "Ret", "Invoke", "InvokeClosure", "InvokePacked", "AllocTensor",
           "AllocTensorReg", "AllocADT", "AllocClosure", "GetField", "If", "LoadConst", "Goto",
           "GetTag", "LoadConsti", "Fatal", "AllocStorage", "ShapeOf", "ReshapeTensor", "UpdateRow"]
OPCODES = {name: k for k, name in enumerate(OPNAMES)}


class VMFunction:
    """One compiled function: its name, parameter names and types (for argument checks), the
    register file size and the instructions. ``param_types`` holds plain records:
    ``["tensor", dims (-1 for Any), dtype]``, ``["tuple", [records]]`` or ``["any"]``."""

    __slots__ = ("name", "params", "param_types", "instructions", "register_file_size")

    def __init__(self, name: str, params: list[str], instructions: list[tuple],
                 register_file_size: int, param_types: list | None = None):
        self.name = name
        self.params = list(params)
        self.param_types = list(param_types) if param_types is not None else \
            [["any"] for _ in params]
        self.instructions = instructions
        self.register_file_size = register_file_size

    def to_json(self) -> dict:
        return {"name": self.name, "params": self.params, "param_types": self.param_types,
                "register_file_size": self.register_file_size,
                "instructions": [list(_jsonable(i)) for i in self.instructions]}

    @staticmethod
    def from_json(d: dict) -> VMFunction:
        code = [tuple(tuple(x) if isinstance(x, list) else x for x in ins)
                for ins in d["instructions"]]
        return VMFunction(d["name"], d["params"], code, int(d["register_file_size"]),
                          d["param_types"])

    def __repr__(self):
        return f"VMFunction({self.name}({', '.join(self.params)}), {len(self.instructions)} " \
               "instructions)"


def _jsonable(ins):
    return [list(x) if isinstance(x, tuple) else x for x in ins]


def _regs(rs) -> str:
    return ", ".join(f"${r}" for r in rs)


def instruction_text(ins: tuple, func_names: list[str] | None = None) -> str:
    """TVM-style text of one instruction."""
    op = ins[0]
    fname = (lambda k: func_names[k]) if func_names else (lambda k: f"Function[{k}]")
    if op == MOVE:
        return f"move ${ins[2]} ${ins[1]}"
    if op == RET:
        return f"ret ${ins[1]}"
    if op == FATAL:
        return "fatal"
    if op == INVOKE:
        return f"invoke ${ins[3]} {fname(ins[1])}({_regs(ins[2])})"
    if op == INVOKE_CLOSURE:
        return f"invoke_closure ${ins[3]} ${ins[1]}({_regs(ins[2])})"
    if op == INVOKE_PACKED:
        _, idx, arity, nout, args, dyn = ins
        ins_, outs = args[:arity - nout], args[arity - nout:]
        tag = " (outputs allocated by the kernel)" if dyn else ""
        return f"invoke_packed PackedFunc[{idx}] (in: {_regs(ins_)}, out: {_regs(outs)}){tag}"
    if op == ALLOC_STORAGE:
        return f"alloc_storage ${ins[4]} {ins[1]} {ins[2]} {ins[3]}"
    if op == ALLOC_TENSOR:
        return f"alloc_tensor ${ins[5]} ${ins[1]} {ins[2]} [{', '.join(map(str, ins[3]))}] " \
               f"{ins[4]}"
    if op == ALLOC_TENSOR_REG:
        return f"alloc_tensor_reg ${ins[5]} ${ins[1]} {ins[2]} ${ins[3]} {ins[4]}"
    if op == ALLOC_ADT:
        return f"alloc_data ${ins[3]} tag({ins[1]}) [{_regs(ins[2])}]"
    if op == ALLOC_CLOSURE:
        return f"alloc_closure ${ins[3]} {fname(ins[1])}([{_regs(ins[2])}])"
    if op == GET_FIELD:
        return f"get_field ${ins[3]} ${ins[1]}[{ins[2]}]"
    if op == GET_TAG:
        return f"get_tag ${ins[2]} ${ins[1]}"
    if op == IF:
        return f"if ${ins[1]} ${ins[2]} {ins[3]} {ins[4]}"
    if op == GOTO:
        return f"goto {ins[1]}"
    if op == LOAD_CONST:
        return f"load_const ${ins[2]} Const[{ins[1]}]"
    if op == LOAD_CONSTI:
        return f"load_consti ${ins[2]} {ins[1]}"
    if op == SHAPE_OF:
        return f"shape_of ${ins[2]} ${ins[1]}"
    if op == RESHAPE_TENSOR:
        return f"reshape_tensor ${ins[3]} ${ins[1]} ${ins[2]}"
    if op == UPDATE_ROW:
        return f"update_row ${ins[4]} ${ins[1]}[${ins[3]}] ${ins[2]}"
    raise ValueError(f"unknown Relay VM opcode {op!r}")

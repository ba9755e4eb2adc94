"""KillAfterLastUse (TVM's ``relax.transform.KillAfterLastUse``): right after the last use of a
storage (``R.memory.alloc_storage``) or a tensor (``R.memory.alloc_tensor``) in its binding
sequence, ``R.memory.kill_storage`` / ``R.memory.kill_tensor`` drop the VM's reference, so that
memory is given back as early as possible. Values the sequence returns are never killed; uses
inside nested If branches count at the If."""

from __future__ import annotations

from ...ir.op import Op
from ..analysis.leaf_reads import leaf_reads
from ..expr import (
    Call,
    DataflowVar,
    Function,
    Var,
    VarBinding,
)
from ..op import memory
from .lower_utils import (
    Namer,
    function_rewrite_pass,
    rewrite_function_seqs,
    typed_call,
    typed_var,
    vars_used,
)
from .utils import register

__all__ = ["KillAfterLastUse", "kill_after_last_use"]

_KILL = {"relax.memory.alloc_storage": memory.kill_storage,
         "relax.memory.alloc_tensor": memory.kill_tensor}


def kill_after_last_use(func: Function, mod=None) -> tuple[Function, int]:
    """``func`` with kills after last uses; and how many were inserted."""
    namer = Namer(func)
    # the kill ops and one empty-tuple struct info (a kill's, as ``memory.infer_kill`` gives
    # it for its one argument) for every kill of the run
    kill_ops = {name: kill(Var("_", None)).op for name, kill in _KILL.items()}
    kill_sinfo = memory.infer_kill(memory.kill_tensor(Var("_", None)))
    storage_kill = kill_ops["relax.memory.alloc_storage"]
    count = 0

    def rewrite(bindings, body, _top):
        nonlocal count
        killable: dict[Var, object] = {}
        last: dict[Var, int] = {}
        for i, b in enumerate(bindings):
            v = b.value
            tv = type(v)
            flat = tv is Call and not type(v.op)._node_operands
            if flat:
                for a in v.args:
                    if type(a)._node_operands:
                        flat = False
                        break
            if flat:
                # a call of leaves (most bindings after CallTIRRewrite): a leaf that is no
                # variable is no key of ``killable`` either, so every argument is looked up
                if v.op in killable:
                    last[v.op] = i
                for u in v.args:
                    if u in killable:
                        last[u] = i
            elif tv is Var or tv is DataflowVar:  # (a copy: ``lv = alloc``)
                if v in killable:
                    last[v] = i
            else:
                # (other values: their variables, without vars_used's walk where it can)
                reads = leaf_reads(v)
                for u in vars_used(v) if reads is None else reads:
                    if u in killable:
                        last[u] = i
            if tv is Call:
                op = v.op
                kill = kill_ops.get(op.name) if isinstance(op, Op) else None
                if kill is not None:
                    killable[b.var] = kill
                    last.setdefault(b.var, i)
        for u in vars_used(body):
            last.pop(u, None)
        after: dict[int, list[Var]] = {}
        for var, i in last.items():
            after.setdefault(i, []).append(var)
        if not after:
            return bindings, body
        out = []
        start = 0
        for i in sorted(after):  # (the bindings between two kill sites copied as slices)
            out.extend(bindings[start:i + 1])
            start = i + 1
            kills = after[i]
            # tensors before their storage, as TVM orders them
            if len(kills) > 1:
                kills.sort(key=lambda x: killable[x] is storage_kill)
            for var in kills:
                # (a kill of a typed variable: the struct info its rule gives a kill of one
                # argument, shared, without a trip through the normalizer)
                k = typed_call(killable[var], (var,), kill_sinfo)
                out.append(VarBinding(typed_var(namer.fresh("_"), kill_sinfo), k))
                count += 1
        out.extend(bindings[start:])
        return out, body

    new = rewrite_function_seqs(func, rewrite)
    return (new if count else func), count


@register("KillAfterLastUse")
def KillAfterLastUse():  # noqa: N802 - TVM's name
    """Module pass (opt 0): kill storages and tensors after their last use."""
    return function_rewrite_pass(kill_after_last_use, "KillAfterLastUse", "kills inserted")

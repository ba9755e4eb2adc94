"""List every kernel of the given models that still allocates a buffer in its body from the
heap: an ``Allocate`` of more than the LLVM back end's stack limit (``STACK_LIMIT_BYTES``) or of
a symbolic size, which the generated code mallocs and frees each time the statement runs (a
kernel's workspace, allocated once by the executor, is the alternative).

    python benchmarks/audit_heap_allocs.py [--models resnet50,mobilenetv2,bert,deeplab_head]

Models: ``bench_whole_models``' (resnet50, mobilenetv2, bert) and any of
``bench_new_user_models``' tables (needs torch). Prints ``model kernel [(buffer, bytes)]``
(``sym`` for a symbolic size) and each model's kernel count.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.codegen.llvm.stmt import STACK_LIMIT_BYTES  # noqa: E402
from minitvm.schedule.common import const_int, dtype_bytes  # noqa: E402
from minitvm.tir import stmt as S  # noqa: E402
from minitvm.tir.stmt_functor import walk_stmts  # noqa: E402

WHOLE = ("resnet50", "mobilenetv2", "bert")


def heap_allocs(prim) -> list:
    """``(buffer name, bytes or "sym")`` of each heap Allocate in ``prim``'s body."""
    out = []
    for s in walk_stmts(prim.body):
        if not isinstance(s, S.Allocate):
            continue
        sizes = [const_int(e) for e in s.extents]
        if None in sizes:
            out.append((s.buffer_var.name, "sym"))
            continue
        nbytes = dtype_bytes(s.dtype)
        for n in sizes:
            nbytes *= n
        if nbytes > STACK_LIMIT_BYTES:
            out.append((s.buffer_var.name, nbytes))
    return out


def load(name: str):
    """(mod, params) of model ``name``."""
    if name in WHOLE:
        import bench_whole_models

        m = bench_whole_models.load(name)
        return m["mod"], m["params"]
    import bench_new_user_models as bn
    import torch

    table = {**bn.models(), **bn.new_models(), **bn.third_models(), **bn.fourth_models()}
    model, inputs = bn.prepare(*table[name])
    traced = torch.jit.trace(model, tuple(inputs.values()), check_trace=False)
    return relay.frontend.from_pytorch(traced, bn.input_infos(inputs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert")
    args = ap.parse_args()
    for name in args.models.split(","):
        mod, params = load(name)
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        kernels = lib.get_lib().kernels
        print(f"{name}: {len(kernels)} kernels", flush=True)
        for kname, k in kernels.items():
            found = heap_allocs(k.prim_func)
            if found:
                print(f"  {kname} {found}", flush=True)


if __name__ == "__main__":
    main()

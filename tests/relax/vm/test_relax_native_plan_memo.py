"""The native entry's recording shortcuts (big60) give the full path's plan: each array placed
once (root, span, ref) where every use walked to its root again, and the arena packing
rewriting the refs its first scan found where it searched every ref twice. A reference of the
full packing runs on a copy of the same recording: steps, spans and kept arrays are equal."""

import numpy as np

from minitvm import relax, te
from minitvm.runtime.native_plan import root
from minitvm.runtime.relax_vm import native_entry


def _add(a, b):
    return te.compute(a.shape, lambda i: a[i] + b[i], name="add")


def _chain(length=6):
    x = relax.Var("x", relax.TensorStructInfo([8], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            # (opaque kernels: fusion leaves one call per step)
            v = bb.emit_te(_add, x, x, primfunc_attrs={"op_pattern": 8})
            w = bb.emit_te(_add, v, x, primfunc_attrs={"op_pattern": 8})
            for _ in range(length - 2):
                v, w = w, bb.emit_te(_add, w, v, primfunc_attrs={"op_pattern": 8})
            gv = bb.emit_output(w)
        bb.emit_func_output(gv)
    return bb.get()


def test_roots_are_what_walking_to_the_root_gives():
    base = np.zeros(64, "float32")
    views = [base[8:16], base[8:16][2:4], base.reshape(8, 8)[1], np.ones(3)]
    memo = {id(views[0]): (views[0], base)}  # one known, the others walked to
    assert [id(r) for r in native_entry._roots(views, memo)] == [id(root(v)) for v in views]

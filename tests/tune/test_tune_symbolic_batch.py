"""A Relax conv over a symbolic batch is keyed by its per-image static workload: the kernel for
one image (``schedule.batch_loop``) asks for the knobs of the batch-1 conv (of batch ``k`` for a
dilated conv's image-major phases, as Relay's static build of batch 1 asks), so tuning records
and the built-in tables made for the static workload steer ``relax.build`` at every batch."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule.conv_winograd import PackWeight
from minitvm.schedule.knobs import KnobTable, key_text, use_knobs
from minitvm.schedule.options import LoweringOptions
from minitvm.schedule.prim_func import optimize_prim_func_prepacked
from minitvm.tune import Record, apply_history_best, extract_tasks

C, O, HW = 32, 32, 16


def _conv_mod(n, w, dilation: int = 1):
    """relu(conv2d(x, w) + 1), 3x3, padding = dilation, over ``(n, C, HW, HW)``."""
    x = relax.Var("x", relax.TensorStructInfo([n, C, HW, HW], "float32"))
    bb = relax.BlockBuilder()
    nn = relax.op.nn
    with bb.function("main", [x]):
        with bb.dataflow():
            y = nn.conv2d(x, relax.const(w), padding=dilation, dilation=dilation)
            gv = bb.emit_output(bb.emit(nn.relu(relax.op.add(y, relax.const(np.float32(1))))))
        bb.emit_func_output(gv)
    return bb.get()


def _reference(x, w, d):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (d, d), (d, d)))
    out = np.zeros((x.shape[0], O, HW, HW))
    for ky in range(3):
        for kx in range(3):
            taps = xp[:, :, ky * d:ky * d + HW, kx * d:kx * d + HW]
            out += np.einsum("nchw,oc->nohw", taps, w[:, :, ky, kx].astype(np.float64))
    return np.maximum(out + 1.0, 0.0)


def _static_key(batch: int):
    return ["conv2d_nchw", [batch, C, HW // (1 if batch == 1 else 2),
                            HW // (1 if batch == 1 else 2)], [O, C, 3, 3], [1, 1], [1, 1, 1, 1],
            [1, 1], 1, "float32"]


def _packed_block(mod, table) -> int | None:
    """The Winograd block size ``m`` the conv kernel of ``mod`` is built with under ``table``
    (its prepacked weight's transform; None: not Winograd), after checking it is a loop over
    images."""
    prims = get_pipeline("default_build")(mod)
    (f,) = [f for gv, f in prims.functions.items()
            if isinstance(f, tir.PrimFunc) and "conv2d" in gv.name_hint]
    pos = next(k for k, p in enumerate(f.params) if len(f.buffer_map[p].shape) == 4 and
               all(isinstance(d, tir.IntImm) for d in f.buffer_map[p].shape))  # the weight
    g, packs = optimize_prim_func_prepacked(f, LoweringOptions(knobs=table), [pos])
    assert g.body.loop_var.name == "image"  # (schedule.batch_loop's loop over images)
    pack = packs.get(pos)
    return pack.m if isinstance(pack, PackWeight) else None


@pytest.mark.parametrize("dilation,rows", [(1, 1), (2, 4)])
def test_symbolic_batch_conv_takes_the_record_of_its_static_workload(dilation, rows):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((O, C, 3, 3)) * 0.2).astype("float32")
    mod = _conv_mod(tir.Var("batch", "int64"), w, dilation)
    key = _static_key(rows)
    assert [t.workload for t in extract_tasks(mod)] == [key]
    trace = KnobTable({}, trace=True)
    with use_knobs(trace):
        relax.build(mod, "llvm")
    assert list(trace.seen) == [key_text(key)]
    _, space, _ = trace.seen[key_text(key)]
    default = space.default()
    untuned = _packed_block(mod, KnobTable({}))
    assert untuned == (default["wino_m"] if default["impl"] == "winograd" else None)
    # a record other than the default: another Winograd block, or where the default is the
    # only one (AVX2's default Winograd at dilation 2: F(2x2) alone), the direct conv
    other = next((m for m in space.values("wino_m") if m != untuned), None)
    record = {"impl": "winograd", "wino_m": other} if other is not None else {"impl": "direct"}
    assert untuned is not None or other is not None
    assert _packed_block(mod, KnobTable({key_text(key): record})) == other
    with apply_history_best([Record(key, record, [1e-6])]):
        vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, C, HW, HW)).astype("float32")
        np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                                   _reference(x, w, dilation), rtol=1e-4, atol=1e-4)

"""A leading dimension ``n * k`` as ``k`` rows an image (``schedule/batch_loop.py``): a dilated
conv's image-major phases (Relax's LegalizeOps, ``topi.dilated_phases``) are a conv of batch
``n * k`` and reshapes between ``n`` and ``n * k`` rows; all of them run their static kernel once
per image, numerically equal to numpy. A reshape that moves rows between images (phase-major
order) or an offset reaching past an image's rows keeps the symbolic lowering."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import batch_loop, optimize_prim_func
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.function import PrimFunc

C, H = 16, 12


def _phases(n, axes):
    """x (n, C, H, H) -> its 2x2 dilation phases in the batch, (4n, C, H/2, H/2), gathered with
    ``axes`` from ``(n, C, H/2, 2, H/2, 2)``, and back (as ``topi.dilated_phases``)."""
    x = relax.Var("x", relax.TensorStructInfo([n, C, H, H], "float32"))
    m = H // 2
    bb = relax.BlockBuilder()
    mp = relax.op
    with bb.function("main", [x]):
        with bb.dataflow():
            p = bb.emit(mp.reshape(mp.permute_dims(mp.reshape(x, (n, C, m, 2, m, 2)), axes),
                                   (n * 4, C, m, m)))
            y = bb.emit(mp.multiply(p, relax.const(np.float32(2.0))))
            gv = bb.emit_output(bb.emit(mp.reshape(mp.permute_dims(
                mp.reshape(y, (n, 2, 2, C, m, m)), [0, 3, 4, 1, 5, 2]), (n, C, H, H))))
        bb.emit_func_output(gv)
    return bb.get()


def _kernels(mod):
    """The PrimFuncs of ``mod`` over the symbolic batch (not the host's shape functions)."""
    out = get_pipeline("default_build")(mod)
    return {gv.name_hint: f for gv, f in out.functions.items()
            if isinstance(f, tir.PrimFunc) and batch_loop.batch_var(f) is not None}


def test_rows_per_image():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    four = E.IntImm("int64", 4)
    assert batch_loop.rows_per_image(n, n) == 1
    assert batch_loop.rows_per_image(n * four, n) == 4
    assert batch_loop.rows_per_image(E.Mul(four, n), n) == 4
    assert batch_loop.rows_per_image(n + four, n) is None
    assert batch_loop.rows_per_image(m * four, n) is None
    assert batch_loop.rows_per_image(n * m, n) is None


@pytest.mark.parametrize("batch", [1, 3])
def test_image_major_phases_run_per_image(batch):
    n = tir.Var("n", "int64")
    (f,) = _kernels(_phases(n, [0, 3, 5, 1, 2, 4])).values()  # gather, double, scatter fused
    n = batch_loop.batch_var(f)
    rows = {batch_loop.rows_per_image(b.shape[0], n) for b in batch_loop._buffers(f) if b.shape}
    assert rows == {1, 4}  # (n rows an image in and out, 4n the phases between)
    one, strides = batch_loop.per_image(f, n)
    assert all(isinstance(d, E.IntImm) for b in one.buffer_map.values() for d in b.shape)
    assert set(strides.values()) == {C * H * H * 32}  # (in bits: one image, in or out)
    assert batch_loop.image_loop_var(optimize_prim_func(f)) is n
    a = np.random.default_rng(batch).standard_normal((batch, C, H, H)).astype("float32")
    vm = relax.VirtualMachine(relax.build(_phases(n, [0, 3, 5, 1, 2, 4]), "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), 2 * a, rtol=1e-6)


def test_phase_major_gather_mixes_images():
    """Relay's former order (the phase outermost: batch row ``phase * n + image``)."""
    n = tir.Var("n", "int64")
    out = get_pipeline("default_build")(_phases(n, [3, 5, 0, 1, 2, 4]))
    (gather,) = [f for f in out.functions.values() if isinstance(f, tir.PrimFunc) and
                 f.params and f.params[0] in f.buffer_map and
                 [getattr(d, "value", None) for d in f.buffer_map[f.params[0]].shape[1:]]
                 == [C, H, H]]
    v = batch_loop.batch_var(gather)  # (its phases, images inside: (2, 2, n, C, 6, 6))
    assert v is None or batch_loop.per_image(gather, v) is None
    assert batch_loop.image_loop_var(optimize_prim_func(gather)) is None
    a = np.random.default_rng(4).standard_normal((2, C, H, H)).astype("float32")
    vm = relax.VirtualMachine(relax.build(_phases(n, [3, 5, 0, 1, 2, 4]), "llvm"), tvm.cpu())
    m = H // 2  # (gathered phase-major, put back image-major: images and phases swapped)
    want = a.reshape(2, C, m, 2, m, 2).transpose(3, 5, 0, 1, 2, 4).reshape(8, C, m, m) * 2
    want = want.reshape(2, 2, 2, C, m, m).transpose(0, 3, 4, 1, 5, 2).reshape(2, C, H, H)
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), want, rtol=1e-6)


def _gather_rows(reach: int):
    """y[v, u, i, j] = x[v * 2 + u, 0, i, j] over u < ``reach``: rows of x ``(2n, 2, 4, 4)``."""
    n = tir.Var("n", "int64")
    x = decl_buffer((n * E.IntImm("int64", 2), 2, 4, 4), "float32", "x")
    y = decl_buffer((n, reach, 4, 4), "float32", "y")
    ivs = [E.IterVar(E.Range.from_min_extent(E.IntImm("int64", 0), d), E.Var(f"v{k}", "int64"),
                     E.IterVar.DataPar) for k, d in enumerate(y.shape)]
    v, u, i, j = (iv.var for iv in ivs)
    two = E.IntImm("int64", 2)
    value = E.BufferLoad(x, [v * two + u, E.IntImm("int64", 0), i, j])
    loops = [E.Var(f"i{k}", "int64") for k in range(4)]
    blk = S.Block(ivs, [], [], "rows", S.BufferStore(y, value, [v, u, i, j]))
    body = S.BlockRealize(loops, E.IntImm("bool", 1), blk)
    for lv, d in reversed(list(zip(loops, y.shape, strict=True))):
        body = S.For(lv, E.IntImm("int64", 0), d, S.ForKind.SERIAL, body)
    xp, yp = E.Var("xp", "handle"), E.Var("yp", "handle")
    return PrimFunc([xp, yp], body, buffer_map={xp: x, yp: y}), n


def test_row_offset_must_stay_within_the_image():
    f, n = _gather_rows(2)
    assert batch_loop.batch_var(f) is n and batch_loop.separable(f, n)
    f, n = _gather_rows(3)  # row v * 2 + 2 is the next image's first
    assert batch_loop.batch_var(f) is n and not batch_loop.separable(f, n)

"""A leading dimension ``n * k`` as ``k`` rows an image (``schedule/batch_loop.py``): a dilated
conv's image-major phases (Relax's LegalizeOps, ``topi.dilated_phases``) are a conv of batch
``n * k``, which runs the static conv of batch ``k`` once per image, numerically equal to numpy.
Functions moving rows between ``n`` and ``n * k`` (the phase gathers) keep the symbolic
lowering, in either phase order."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import batch_loop, optimize_prim_func
from minitvm.schedule.prim_func import optimize_prim_func_prepacked
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

C, H = 16, 12


def _phases(n, axes, w=None):
    """x (n, C, H, H) -> its 2x2 dilation phases in the batch, (4n, C, H/2, H/2), gathered with
    ``axes`` from ``(n, C, H/2, 2, H/2, 2)``; a 3x3 conv ``w`` (or a doubling) of the phases;
    put back image-major (as ``topi.dilated_phases``)."""
    x = relax.Var("x", relax.TensorStructInfo([n, C, H, H], "float32"))
    m = H // 2
    bb = relax.BlockBuilder()
    mp = relax.op
    with bb.function("main", [x]):
        with bb.dataflow():
            p = bb.emit(mp.reshape(mp.permute_dims(mp.reshape(x, (n, C, m, 2, m, 2)), axes),
                                   (n * 4, C, m, m)))
            y = bb.emit(mp.multiply(p, relax.const(np.float32(2.0))) if w is None else
                        mp.nn.conv2d(p, relax.const(w), padding=1))
            gv = bb.emit_output(bb.emit(mp.reshape(mp.permute_dims(
                mp.reshape(y, (n, 2, 2, C, m, m)), [0, 3, 4, 1, 5, 2]), (n, C, H, H))))
        bb.emit_func_output(gv)
    return bb.get()


def _prims(mod):
    out = get_pipeline("default_build")(mod)
    return {gv.name_hint: f for gv, f in out.functions.items() if isinstance(f, tir.PrimFunc)}


def _dilated_conv(x, w):
    """3x3, dilation 2, padding 2, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (2, 2), (2, 2)))
    out = np.zeros((x.shape[0], w.shape[0], H, H))
    for ky in range(3):
        for kx in range(3):
            taps = xp[:, :, 2 * ky:2 * ky + H, 2 * kx:2 * kx + H]
            out += np.einsum("nchw,oc->nohw", taps, w[:, :, ky, kx].astype(np.float64))
    return out


def test_rows_per_image():
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    four = E.IntImm("int64", 4)
    assert batch_loop.rows_per_image(n, n) == 1
    assert batch_loop.rows_per_image(n * four, n) == 4
    assert batch_loop.rows_per_image(E.Mul(four, n), n) == 4
    assert batch_loop.rows_per_image(n + four, n) is None
    assert batch_loop.rows_per_image(m * four, n) is None
    assert batch_loop.rows_per_image(n * m, n) is None


def test_phase_conv_runs_the_static_conv_of_k_images_per_image():
    n = tir.Var("n", "int64")
    w = (np.random.default_rng(0).standard_normal((C, C, 3, 3)) * 0.2).astype("float32")
    (conv,) = [f for name, f in _prims(_phases(n, [0, 3, 5, 1, 2, 4], w)).items()
               if name.startswith("conv2d")]
    v = batch_loop.batch_var(conv)
    assert v is not None and batch_loop.rows_per_image(conv.buffer_map[conv.params[0]].shape[0],
                                                       v) == 4
    one, strides = batch_loop.per_image(conv, v)
    shapes = [[int(d) for d in b.shape] for b in one.buffer_map.values()]
    assert [4, C, H // 2, H // 2] in shapes  # (the input: an image's four phases, static)
    assert set(strides.values()) == {4 * C * (H // 2) ** 2 * 32}  # (in bits, in and out)
    g, _ = optimize_prim_func_prepacked(conv, None, [1])
    assert batch_loop.image_loop_var(g) is v
    inner = [s.extent for s in walk_stmts(g.body.body) if isinstance(s, S.For)]
    assert inner and not any(x is v for e in inner for x in post_order(e))  # (static inside)


@pytest.mark.parametrize("axes", [[0, 3, 5, 1, 2, 4], [3, 5, 0, 1, 2, 4]])
def test_gathers_between_n_and_nk_rows_keep_the_symbolic_lowering(axes):
    """Image-major phases (``topi.dilated_phases``'s order) and phase-major ones (the phase
    outermost: batch row ``phase * n + image``) alike."""
    n = tir.Var("n", "int64")
    for name, f in _prims(_phases(n, axes)).items():
        v = batch_loop.batch_var(f)
        if v is not None:
            assert batch_loop.per_image(f, v) is None, name
            assert batch_loop.image_loop_var(optimize_prim_func(f)) is None, name
    a = np.random.default_rng(4).standard_normal((2, C, H, H)).astype("float32")
    vm = relax.VirtualMachine(relax.build(_phases(n, axes), "llvm"), tvm.cpu())
    m = H // 2
    want = a.reshape(2, C, m, 2, m, 2).transpose(*axes).reshape(8, C, m, m) * 2
    want = want.reshape(2, 2, 2, C, m, m).transpose(0, 3, 4, 1, 5, 2).reshape(2, C, H, H)
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_dilated_conv_over_image_major_phases_matches_numpy(threads):
    """At batch 1, 3 and 2, the images on one thread or spread over two."""
    from minitvm.runtime import threadpool

    n = tir.Var("n", "int64")
    w = (np.random.default_rng(0).standard_normal((C, C, 3, 3)) * 0.2).astype("float32")
    vm = relax.VirtualMachine(relax.build(_phases(n, [0, 3, 5, 1, 2, 4], w), "llvm"),
                              tvm.cpu())
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        for batch in (1, 3, 2):
            a = np.random.default_rng(batch).standard_normal((batch, C, H, H)).astype("float32")
            np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), _dilated_conv(a, w),
                                       rtol=1e-4, atol=1e-4)
    finally:
        threadpool.set_num_threads(old)

"""Resize stages of block-form PrimFuncs (Relax's LegalizeOps / FuseTIR output, raised back to
TE by ``raise_blocks``): ``resize.raised_tag`` gives a raised stage carrying a ``ResizeSpec``
annotation its tag and operand back, so the resize rows schedule takes it; numerics against
PyTorch's interpolate and the blocks as written."""

import numpy as np
import pytest

from minitvm import te, topi
from minitvm.codegen.build import build
from minitvm.schedule import optimize_prim_func
from minitvm.schedule import resize as rs
from minitvm.schedule.raise_blocks import analyze_nest, placeholder_for, raise_nest, unwrap_root
from minitvm.te.tensor import PlaceholderOp
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi import image_resize
from minitvm.topi.image_resize import RESIZE_TAG

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _raised(func):
    """The raised stages of ``func``'s block nests (placeholders for its buffers)."""
    _, stmts = unwrap_root(func)
    made = {}

    def tensor_of(buf):
        if id(buf) not in made:
            made[id(buf)] = placeholder_for(buf)
        return made[id(buf)]

    out = []
    for s in stmts:
        n = analyze_nest(s)
        if n.block is not None:
            t = raise_nest(n, tensor_of)
            made[id(n.out)] = t
            out.append(t)
    return out


def _buffer_names(func):
    names = set()
    for s in walk_stmts(func.body):
        if isinstance(s, S.Allocate | S.DeclBuffer):
            names.add(getattr(s, "buffer_var", None) and s.buffer_var.name or s.buffer.name)
    return names


def _torch(x, size, mode, align=None):
    kw = {} if mode == "nearest" else {"align_corners": align}
    return F.interpolate(torch.from_numpy(x), size=size, mode=mode, **kw).numpy()


def test_raised_resize_gets_tag_and_operand():
    x = te.placeholder((1, 4, 8, 8), name="x")
    y = image_resize.resize2d(x, (16, 16), method="linear")
    # the block form keeps the spec, not the tag: raise_nest gets it back through raised_tag
    (t,) = _raised(te.create_prim_func([x, y]))
    assert t.op.tag == RESIZE_TAG
    assert isinstance(t.op.attrs.get("resize"), image_resize.ResizeSpec)
    (src,) = t.op.attrs["operands"]
    assert isinstance(src.op, PlaceholderOp) and src.op.name == "x"


def test_raised_tag_declines_stages_that_are_not_the_spec_resize():
    x = te.placeholder((1, 4, 8, 8), name="x")
    y = image_resize.resize2d(x, (16, 16), method="nearest_neighbor")
    (t,) = _raised(te.create_prim_func([x, y]))
    spec = t.op.attrs["resize"]
    # no spec, or a spec whose sizes are not the stage's
    bare = te.compute((1, 4, 16, 16), lambda n, c, h, w: x[n, c, h // 2, w // 2])
    assert rs.raised_tag(bare) == ("", {})
    other = te.compute((1, 4, 32, 32), lambda n, c, h, w: x[n, c, h // 4, w // 4],
                       attrs={"resize": spec})
    assert rs.raised_tag(other) == ("", {})
    # a body reading two tensors (an add fused into the block)
    z = te.placeholder((1, 4, 16, 16), name="z")
    two = te.compute((1, 4, 16, 16), lambda n, c, h, w: x[n, c, h // 2, w // 2] + z[n, c, h, w],
                     attrs={"resize": spec})
    assert rs.raised_tag(two) == ("", {})
    # a tagged (Relay) stage is left as it is
    assert rs.raised_tag(y) == ("", {})


def test_optimized_prim_func_resize_plus_add_on_resize_schedule():
    rng = np.random.default_rng(0)
    x = te.placeholder((1, 8, 16, 16), name="x")
    b = te.placeholder((1, 8, 32, 32), name="b")
    y = image_resize.resize2d(x, (32, 32), method="linear",
                              coordinate_transformation_mode="half_pixel")
    out = topi.add(y, b)
    f = te.create_prim_func([x, b, out])
    g = optimize_prim_func(f)
    assert "resize_ix0" in _buffer_names(g)  # the column tables of the resize schedule
    xa = rng.standard_normal((1, 8, 16, 16)).astype("float32")
    ba = rng.standard_normal((1, 8, 32, 32)).astype("float32")
    got, ref = np.zeros((1, 8, 32, 32), "float32"), np.zeros((1, 8, 32, 32), "float32")
    build(g)["main"](xa, ba, got)
    build(f)["main"](xa, ba, ref)
    want = _torch(xa, (32, 32), "bilinear", False) + ba
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def _two_resizes_summed(a, r, n):
    return topi.add(topi.add(r, image_resize.resize2d(a, (32, 32), method="linear")),
                    image_resize.resize2d(n, (32, 32), method="nearest_neighbor",
                                          coordinate_transformation_mode="asymmetric",
                                          rounding_method="floor"))


def test_fused_resizes_and_concat_like_hrnet():
    """Four resizes (bilinear half-pixel 2x and 4x, nearest 4x, bilinear align-corners 2x),
    two adds and a concat in one function, as Relax's FuseTIR writes HRNet's fuse layer."""
    rng = np.random.default_rng(1)
    a = te.placeholder((1, 4, 16, 16), name="a")
    r = te.placeholder((1, 4, 32, 32), name="r")
    n = te.placeholder((1, 4, 8, 8), name="n")
    m = te.placeholder((1, 6, 16, 16), name="m")
    s = te.placeholder((1, 8, 8, 8), name="s")
    f0 = _two_resizes_summed(a, r, n)
    f1 = image_resize.resize2d(m, (32, 32), method="linear",
                               coordinate_transformation_mode="align_corners")
    f2 = image_resize.resize2d(s, (32, 32), method="linear")
    out = topi.concatenate([f0, f1, f2], axis=1)
    args = [a, r, n, m, s, out]
    f = te.create_prim_func(args)
    g = optimize_prim_func(f)
    assert "resize_ix0" in _buffer_names(g)
    arrs = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in args[:-1]]
    got, ref = np.zeros((1, 18, 32, 32), "float32"), np.zeros((1, 18, 32, 32), "float32")
    build(g)["main"](*arrs, got)
    build(f)["main"](*arrs, ref)
    aa, ra, na, ma, sa = arrs
    want = np.concatenate([
        ra + _torch(aa, (32, 32), "bilinear", False) + _torch(na, (32, 32), "nearest"),
        _torch(ma, (32, 32), "bilinear", True),
        _torch(sa, (32, 32), "bilinear", False)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_relax_resize2d_numerics_with_the_schedule():
    """Relax's image.resize2d (LegalizeOps, FuseTIR with an add) built end to end."""
    import minitvm as tvm
    from minitvm import relax
    from minitvm.backend import kernel_cache

    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorStructInfo((1, 3, 12, 20), "float32"))
    yv = relax.Var("y", relax.TensorStructInfo((1, 3, 24, 40), "float32"))
    with bb.function("main", [xv, yv]):
        with bb.dataflow():
            r = bb.emit(relax.op.image.resize2d(xv, (24, 40), method="linear",
                                                coordinate_transformation_mode="half_pixel"))
            o = bb.emit_output(relax.op.add(r, yv))
        bb.emit_func_output(o)
    kernel_cache.clear_cache()
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((1, 3, 12, 20)).astype("float32")
    ya = rng.standard_normal((1, 3, 24, 40)).astype("float32")
    got = vm["main"](tvm.nd.array(xa), tvm.nd.array(ya)).numpy()
    np.testing.assert_allclose(got, _torch(xa, (24, 40), "bilinear", False) + ya,
                               rtol=1e-5, atol=1e-5)


def test_two_resizes_whose_sum_is_the_output():
    rng = np.random.default_rng(3)
    a = te.placeholder((1, 4, 16, 16), name="a")
    r = te.placeholder((1, 4, 32, 32), name="r")
    n = te.placeholder((1, 4, 8, 8), name="n")
    out = _two_resizes_summed(a, r, n)
    f = te.create_prim_func([a, r, n, out])
    g = optimize_prim_func(f)
    arrs = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in (a, r, n)]
    got, ref = np.zeros((1, 4, 32, 32), "float32"), np.zeros((1, 4, 32, 32), "float32")
    build(g)["main"](*arrs, got)
    build(f)["main"](*arrs, ref)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_lower_te_two_resizes_whose_sum_is_the_output():
    """The same graph on Relay's path (``lower_te``): F.interpolate(a) + F.interpolate(n)."""
    from minitvm.schedule.lower import lower_te

    rng = np.random.default_rng(4)
    a = te.placeholder((1, 4, 16, 16), name="a")
    r = te.placeholder((1, 4, 32, 32), name="r")
    n = te.placeholder((1, 4, 8, 8), name="n")
    out = _two_resizes_summed(a, r, n)
    f, _ = lower_te([a, r, n], [out])
    arrs = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in (a, r, n)]
    got = np.zeros((1, 4, 32, 32), "float32")
    build(f)["main"](*arrs, got)
    aa, ra, na = arrs
    want = ra + _torch(aa, (32, 32), "bilinear", False) + _torch(na, (32, 32), "nearest")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

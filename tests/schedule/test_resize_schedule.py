"""The resize schedule (``schedule/resize.py``): which stages it takes (float resizes of the
innermost axis), the 2x pair form and the table form it writes, and its values against the
generic injective lowering and the numpy reference — odd sizes, edge columns, 3-d, float64,
fused epilogues that read the resize at their own position, twice, or elsewhere."""

import numpy as np
import pytest
from relay_build import run_against_interpreter

from minitvm import relay, te
from minitvm.backend import kernel_cache
from minitvm.schedule import RULES, LoweringOptions, lower_te, select_rule
from minitvm.schedule import resize as rs
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi import image_resize
from minitvm.topi.image_resize import RESIZE_TAG


def _stage(shape, size, layout="NCHW", dtype="float32", **kw):
    x = te.placeholder(shape, dtype=dtype, name="x")
    axes = (layout.index("H"), layout.index("W"))
    return x, image_resize.resize(x, axes, size, **kw)


def _buffers(f) -> set:
    """Names of the buffers a PrimFunc declares."""
    return {s.buffer.name for s in walk_stmts(f.body) if isinstance(s, S.DeclBuffer)}


@pytest.mark.parametrize("layout,dtype,mode,want", [
    ("NCHW", "float32", "half_pixel", True),
    ("NCHW", "float64", "align_corners", True),
    ("NHWC", "float32", "half_pixel", False),          # channels innermost: generic loops
    ("NCHW", "float32", "tf_crop_and_resize", False),  # float coordinates, extrapolation
    ("NCHW", "int32", "asymmetric", False),
])
def test_rule_takes_float_resizes_of_the_innermost_axis(layout, dtype, mode, want):
    shape = (1, 3, 6, 6) if layout == "NCHW" else (1, 6, 6, 3)
    _, t = _stage(shape, (12, 12), layout, dtype, coordinate_transformation_mode=mode)
    rule = select_rule(t, LoweringOptions())
    assert (rule is not None and rule.name == "resize rows") == want
    if rule is not None:
        assert rule.materialize and rule.epilogue and rule is RULES[RESIZE_TAG][0]


@pytest.mark.parametrize("method,mode,pairs", [
    ("linear", "half_pixel", True), ("nearest_neighbor", "asymmetric", True),
    ("linear", "asymmetric", True), ("linear", "align_corners", False),
])
def test_exact_2x_writes_column_pairs(method, mode, pairs):
    x, t = _stage((1, 2, 8, 40), (16, 80), method=method,
                  coordinate_transformation_mode=mode)
    f, _ = lower_te([x], [t])
    names = _buffers(f)
    assert ("out0_pairs" in names) == pairs, names
    assert "resize_ix0" in names  # (the edge columns, or every column, read the tables)


def test_pair_form_interior_and_phases():
    spec = _stage((1, 1, 4, 64), (8, 128), method="linear")[1].op.attrs["resize"]
    phases, lo, hi = rs._pair_form(spec, 1)
    assert (lo, hi) == (1, 63)  # the first and last pairs clamp at the edges
    assert [[(d, float(w)) for d, w in p] for p in phases] == [
        [(-1, 0.25), (0, 0.75)], [(0, 0.75), (1, 0.25)]]
    spec = _stage((1, 1, 4, 64), (8, 128), method="nearest_neighbor",
                  coordinate_transformation_mode="asymmetric")[1].op.attrs["resize"]
    assert rs._pair_form(spec, 1) == ([[(0, None)], [(0, None)]], 0, 64)
    spec = _stage((1, 1, 4, 7), (8, 14), method="linear")[1].op.attrs["resize"]
    assert rs._pair_form(spec, 1) is None  # too few interior pairs


def test_large_resize_runs_rows_in_parallel():
    x, t = _stage((1, 64, 64, 64), (128, 128))
    f, _ = lower_te([x], [t])
    kinds = [s.kind for s in walk_stmts(f.body) if isinstance(s, S.For)]
    assert S.ForKind.PARALLEL in kinds and S.ForKind.VECTORIZED in kinds


def _run(build, arrays):
    return run_against_interpreter(build, *arrays)


def _hw(a, scale):
    """``a``'s H and W (static) times ``scale``."""
    return tuple(int(int(d) * scale) for d in a.type_annotation.shape[2:4])


CASES = {
    "bilinear 2x": lambda a: relay.image.resize2d(a, _hw(a, 2)),
    "nearest 2x": lambda a: relay.nn.upsampling(a, 2, 2),
    "bilinear corners": lambda a: relay.nn.upsampling(a, 2, 2, method="bilinear",
                                                      align_corners=True),
    "bilinear 1.5x": lambda a: relay.nn.upsampling(a, 1.5, 1.5, method="bilinear"),
    "nearest 0.5x": lambda a: relay.image.resize2d(a, tuple(max(1, d) for d in _hw(a, 0.5)),
                                                   method="nearest_neighbor"),
    "cubic 2x": lambda a: relay.image.resize2d(a, _hw(a, 2), method="cubic"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("shape", [(1, 3, 5, 9), (2, 4, 12, 40), (1, 1, 1, 17)])
def test_schedule_matches_reference(case, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    got, want = _run(CASES[case], [x])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", ["bilinear 2x", "nearest 2x", "bilinear 1.5x"])
def test_schedule_matches_generic_lowering(case, request):
    x = np.random.default_rng(2).standard_normal((1, 3, 10, 24)).astype("float32")
    kernel_cache.clear_cache()
    ours, _ = _run(CASES[case], [x])
    request.getfixturevalue("generic_resize")
    plain, want = _run(CASES[case], [x])
    np.testing.assert_allclose(ours, plain, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(plain, want, rtol=2e-5, atol=2e-5)


EPILOGUES = {
    "add bias relu": lambda r, z: relay.nn.relu(relay.add(relay.add(r, z), relay.const(
        np.arange(3, dtype="float32").reshape(1, 3, 1, 1)))),
    "reads twice": lambda r, z: relay.add(relay.multiply(r, r), z),
    "reads elsewhere": lambda r, z: relay.add(relay.transpose(r, (0, 1, 3, 2)), z),
}


@pytest.mark.parametrize("epilogue", list(EPILOGUES))
@pytest.mark.parametrize("case", ["bilinear 2x", "nearest 2x", "bilinear 1.5x"])
def test_fused_epilogues(epilogue, case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 16, 16)).astype("float32")
    n = 32 if "2x" in case else 24
    z = rng.standard_normal((1, 3, n, n)).astype("float32")
    got, want = _run(lambda a, b: EPILOGUES[epilogue](CASES[case](a), b), [x, z])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_float64_and_3d():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 6, 20)).astype("float64")
    got, want = _run(CASES["bilinear 2x"], [x])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    x3 = rng.standard_normal((1, 2, 3, 4, 20)).astype("float32")
    got, want = _run(lambda a: relay.nn.upsampling3d(a, 2, 2, 2, method="trilinear"), [x3])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)

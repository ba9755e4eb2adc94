"""topi's numpy references: Relay's FNumpy is topi's, they compute what numpy does, and topi
imports no dialect (so Relax can use the same references without Relay)."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

from minitvm import relay, topi
from minitvm.ir.op import Op
from minitvm.ir.type import TensorType

TOPI = pathlib.Path(topi.__file__).parent


def _relay_ops_with_fnumpy() -> list[str]:
    """Relay's own operators with a numpy reference (not the ones other tests register)."""
    names = []
    for n in Op.list_op_names():
        op = Op.get(n)
        rel = op.get_attr("FTypeRelation")
        if op.get_attr("FNumpy") is not None and rel is not None and \
                rel.__module__.startswith("minitvm.relay.op"):
            names.append(n)
    return names


def test_every_relay_fnumpy_is_the_topi_reference():
    names = _relay_ops_with_fnumpy()
    assert len(names) > 100 and {"add", "nn.conv2d", "reshape", "sum", "on_device"} <= set(names)
    missing = [n for n in names if topi.get_reference(n) is None]
    assert not missing, f"Relay ops with an FNumpy but no topi reference: {missing}"
    differ = [n for n in names if Op.get(n).get_attr("FNumpy") is not topi.get_reference(n)]
    assert not differ, f"Relay's FNumpy is not topi's reference for: {differ}"


def test_every_topi_reference_names_a_registered_op():
    refs = topi.registered_references()
    assert set(_relay_ops_with_fnumpy()) <= set(refs)
    assert set(refs) <= set(Op.list_op_names())
    assert all(callable(fn) for fn in refs.values())
    assert topi.get_reference("no.such_op") is None


def test_registered_references_is_a_copy():
    refs = topi.registered_references()
    refs["add"] = None
    assert topi.get_reference("add") is not None


def test_add_reference_broadcasts_and_casts_to_the_output_dtype():
    a = np.arange(6, dtype="int32").reshape(2, 3)
    b = np.array([10, 20, 30], dtype="int32")
    out = topi.get_reference("add")(None, [a, b], TensorType((2, 3), "int32"))
    np.testing.assert_array_equal(out, a + b)
    assert out.dtype == np.int32


def test_mean_reference_truncates_integers_like_tvm():
    x = np.array([[1, 2], [3, 5]], dtype="int32")
    attrs = relay.mean(relay.var("x", shape=(2, 2), dtype="int32"), axis=1).attrs
    out = topi.get_reference("mean")(attrs, [x], TensorType((2,), "int32"))
    np.testing.assert_array_equal(out, [1, 4])


def _naive_conv2d(x, w, strides, pad, dilation, groups):
    """Direct loops: NCHW data, OIHW weight, pad = (top, left, bottom, right)."""
    n, _, h, wd = x.shape
    o, i, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh = (h + pad[0] + pad[2] - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (wd + pad[1] + pad[3] - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for b in range(n):
        for oc in range(o):
            g = oc // og
            for y in range(oh):
                for xx in range(ow):
                    for ic in range(i):
                        for ky in range(kh):
                            for kx in range(kw):
                                out[b, oc, y, xx] += (
                                    xp[b, g * i + ic, y * strides[0] + ky * dilation[0],
                                       xx * strides[1] + kx * dilation[1]] * w[oc, ic, ky, kx])
    return out


@pytest.mark.parametrize("xshape,wshape,kw", [
    ((1, 3, 6, 5), (4, 3, 3, 3), dict(padding=1)),
    ((2, 4, 7, 7), (6, 2, 3, 2), dict(strides=(2, 1), padding=(1, 0, 2, 1), groups=2)),
    ((1, 3, 6, 6), (6, 1, 3, 3), dict(dilation=2, padding=2, groups=3)),  # depthwise
])
def test_conv2d_reference_matches_a_naive_loop(xshape, wshape, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xshape).astype("float32")
    w = rng.standard_normal(wshape).astype("float32")
    a = relay.nn.conv2d(relay.var("x", shape=xshape), relay.var("w", shape=wshape), **kw).attrs
    expect = _naive_conv2d(x, w, a.strides, a.padding, a.dilation, a.groups)
    out = topi.get_reference("nn.conv2d")(a, [x, w], TensorType(expect.shape, "float32"))
    assert out.dtype == np.float32 and out.shape == expect.shape
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ topi imports no dialect
def _imported_modules(path: pathlib.Path, root: pathlib.Path) -> list[tuple[str, int]]:
    """Absolute names of the modules ``path`` (a file under ``root``/minitvm) imports, relative
    imports resolved, inside functions too; with their lines."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])  # minitvm, topi, ...
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                if node.module:
                    found.append((".".join(base + node.module.split(".")), node.lineno))
                else:
                    found += [(".".join(base + [a.name]), node.lineno) for a in node.names]
            else:
                mod = node.module or ""
                found.append((mod, node.lineno))
                found += [(f"{mod}.{a.name}", node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
    return found


def _is_dialect(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "minitvm" and len(parts) > 1 and parts[1] in ("relay", "relax")


def test_topi_imports_no_relay_module():
    files = sorted(TOPI.rglob("*.py"))
    assert TOPI / "reference" / "nn.py" in files
    bad = [f"{p.relative_to(TOPI.parent)}:{line}: {name}" for p in files
           for name, line in _imported_modules(p, TOPI.parent.parent) if _is_dialect(name)]
    assert not bad, "minitvm.topi imports a dialect:\n" + "\n".join(bad)


def test_the_import_scan_catches_relay_imports(tmp_path):
    """Guards the scanner: relative, package-level and absolute imports of relay are caught."""
    path = tmp_path / "minitvm" / "topi" / "reference" / "mod.py"
    path.parent.mkdir(parents=True)
    path.write_text("import numpy as np\nfrom ..utils import reference\n"
                    "from ...relay import expr\nfrom ... import relay\n"
                    "def f():\n    import minitvm.relay.op\n")
    found = _imported_modules(path, tmp_path)
    assert ("minitvm.topi.utils", 2) in found
    assert sorted({line for n, line in found if _is_dialect(n)}) == [3, 4, 6]

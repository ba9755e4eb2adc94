"""relax.frontend.torch: a scatter along dim 0 whose index is ``idx[:, None].expand(..)`` (a
graph network's per-graph readout) imports as a ``scatter_nd`` of whole rows; any other index
keeps the element form. Built and run on the Relax VM against PyTorch eager and
``np.add.at``, with repeated row indices."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from minitvm.frontend_common.scatter_plan import broadcasts_one_index_per_row  # noqa: E402

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _rows(n, extent, seed=1):
    """``n`` row indices into ``extent`` rows, every one repeated (one row receives none)."""
    return torch.from_numpy(np.random.default_rng(seed).integers(0, extent - 1, n))


def _body(text):
    return text.split("def main", 1)[1]


def test_scatter_add_of_expanded_index_is_a_row_scatter_nd():
    h, batch = _rand(12, 7), _rows(12, 5)

    def readout(h, batch):
        idx = batch[:, None].expand(-1, h.shape[1])
        return h.new_zeros(5, h.shape[1]).scatter_add(0, idx, h)

    text = _body(_run(readout, h, batch))
    assert 'R.scatter_nd(' in text and 'reduction="add"' in text
    assert "scatter_elements" not in text
    assert "R.Tensor((12, 1), dtype=\"int64\")" in text  # one index per row
    want = np.zeros((5, 7), "float32")
    np.add.at(want, batch.numpy(), h.numpy())
    np.testing.assert_allclose(readout(h, batch).numpy(), want, rtol=1e-5, atol=1e-6)


def test_scatter_add_onto_self_3d_rows():
    x, src, rows = _rand(4, 3, 2), _rand(9, 3, 2, seed=2), _rows(9, 4, seed=3)
    text = _body(_run(lambda x, s, r: x.scatter_add(0, r.view(-1, 1, 1).expand(-1, 3, 2), s),
                      x, src, rows))
    assert "R.scatter_nd(" in text and "scatter_elements" not in text


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean"])
def test_scatter_reduce_of_expanded_index(reduce):
    x, src, rows = _rand(5, 4), _rand(10, 4, seed=4), _rows(10, 5, seed=5)

    def fn(x, s, r):
        return x.scatter_reduce(0, r[:, None].expand(-1, 4), s, reduce, include_self=False)

    text = _body(_run(fn, x, src, rows))
    assert "R.scatter_nd(" in text and "scatter_elements" not in text


def test_scatter_src_of_expanded_index_unique_rows():
    """``scatter`` (update) with distinct rows: the result does not depend on write order."""
    x, src = _rand(6, 3), _rand(4, 3, seed=6)
    rows = torch.tensor([4, 0, 5, 2])
    text = _body(_run(lambda x, s, r: x.scatter(0, r[:, None].expand(-1, 3), s), x, src, rows))
    assert 'reduction="update"' in text and "scatter_elements" not in text


@pytest.mark.parametrize("case", ["along_dim_1", "narrow_index"])
def test_other_scatters_keep_the_element_form(case):
    if case == "along_dim_1":  # the index broadcasts along the scattered dim: not rows
        x, src, cols = _rand(3, 6), _rand(3, 4, seed=7), _rows(4, 6, seed=8)
        fn = lambda x, s, c: x.scatter_add(1, c[None, :].expand(3, -1), s)  # noqa: E731
        args = (x, src, cols)
    else:  # the index covers only part of a row
        x, src, rows = _rand(5, 6), _rand(8, 4, seed=9), _rows(8, 5, seed=10)
        fn = lambda x, s, r: x.scatter_add(0, r[:, None].expand(-1, 4), s)  # noqa: E731
        args = (x, src, rows)
    text = _body(_run(fn, *args))
    assert "scatter_elements" in text and "R.scatter_nd(" not in text


def test_row_predicate():
    assert broadcasts_one_index_per_row((8, 1), (8, 3), (5, 3), 0)
    assert broadcasts_one_index_per_row((8, 1, 1), (8, 3, 2), (4, 3, 2), 0)
    assert not broadcasts_one_index_per_row((8, 1), (8, 3), (5, 3), 1)
    assert not broadcasts_one_index_per_row((8, 3), (8, 3), (5, 3), 0)
    assert not broadcasts_one_index_per_row((8, 1), (8, 2), (5, 3), 0)
    assert not broadcasts_one_index_per_row((8,), (8,), (5,), 0)

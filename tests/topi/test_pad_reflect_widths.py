"""``topi.manipulation.pad`` in reflect mode with a pad width that is a size variable: the
source index takes numpy's periodic mirror (no static width bounds it); it raised TypeError
comparing the unknown width."""

from minitvm import te
from minitvm.tir import expr as E
from minitvm.topi import manipulation


def test_reflect_pad_of_a_symbolic_width_takes_the_periodic_mirror():
    x = te.placeholder((4, 5), "float32", "x")
    w = E.Var("w", "int64")
    y = manipulation.pad(x, [1, w], [2, 1], mode="reflect")
    assert int(y.shape[0]) == 7 and "w" in str(y.shape[1])
    rows, cols = str(y.op.body).split(", T.Select((ax1", 1)
    assert "%" not in rows  # (axis 0: pads 1 and 2 fit one mirror of 4 rows)
    assert "%" in cols  # (axis 1: a width w no static bound fits: numpy's periodic mirror)

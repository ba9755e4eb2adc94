"""Layout strings: parsing primal/subordinate axes, shape and index mapping."""

import pytest

from minitvm.relay.op.layout import Layout, bijective_layout, layout


def test_parse_and_query():
    lay = layout("NCHW16c")
    assert len(lay) == 5 and lay.name == "NCHW16c" and lay.defined
    assert lay[1] == "C" and lay[4] == "c" and "c" in lay and "D" not in lay
    assert lay.index_of("C") == 1 and lay.index_of("c") == 4 and lay.index_of("W") == 3
    assert lay.factor_of("C") == 16 and lay.factor_of("H") == -1
    assert lay.primal() == Layout("NCHW") and lay.ndim_primal() == 4
    assert Layout("NCHW").split("C", 4, 8) == "NCHW8c"
    assert not Layout("") and Layout("").name == "__undef__"
    assert layout("OIHW16i16o").factor_of("o") == 16


@pytest.mark.parametrize("bad,msg", [
    ("NCHW16", "factor must precede"), ("NC16C", "cannot have a factor"),
    ("NCHWc", "positive factor"), ("NCHW4d", "no primal axis D"), ("NCHC", "appears twice"),
    ("NC-HW", "unexpected character"),
])
def test_invalid_layouts(bad, msg):
    with pytest.raises(ValueError, match=msg):
        Layout(bad)


def test_bijective_layout_shapes_and_indices():
    bl = bijective_layout("NCHW", "NCHW16c")
    assert bl.forward_shape((1, 32, 7, 7)) == (1, 2, 7, 7, 16)
    assert bl.backward_shape((1, 2, 7, 7, 16)) == (1, 32, 7, 7)
    assert bl.forward_index((0, 18, 3, 4)) == (0, 1, 3, 4, 2)
    assert bl.backward_index((0, 1, 3, 4, 2)) == (0, 18, 3, 4)
    with pytest.raises(ValueError, match="different primal axes"):
        bijective_layout("NCHW", "NHW")

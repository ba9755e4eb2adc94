"""``topi.dilated_phases.phase_plan``: which dilated convs Relay's Legalize and Relax's
LegalizeOps compute over their dilation phases, with what phase padding (a symbolic batch
allowed; the rewritten programs are tested in ``tests/relay/op/test_legalize_dilated.py`` and
``tests/relax/transform/legalize/test_relax_legalize_conv2d_dilated.py``)."""

from minitvm import tir
from minitvm.topi import dilated_phases


def test_phase_plan():
    n = tir.Var("n", "int64")
    plan = dilated_phases.phase_plan
    assert plan((n, 256, 32, 32), (64, 256, 3, 3), (1, 1), (2, 2), (2, 2), 1, "float32") == \
        ((2, 2), (1, 1, 1, 1))
    assert plan((1, 16, 24, 16), (16, 16, 3, 3), (1, 1), (0, 2, 4, 2), (2, 2), 1,
                "float32") == ((2, 2), (0, 1, 2, 1))
    keeps = [((n, 256, 32, 32), (64, 256, 3, 3), (1, 1), (6, 6), (6, 6), 1, "float32"),
             ((n, 8, 32, 32), (64, 8, 3, 3), (1, 1), (2, 2), (2, 2), 1, "float32"),
             ((n, 32, 32, 32), (64, 32, 3, 3), (2, 2), (2, 2), (2, 2), 1, "float32"),
             ((n, 32, 32, 32), (64, 16, 3, 3), (1, 1), (2, 2), (2, 2), 2, "float32"),
             ((n, 32, 32, 32), (64, 32, 3, 3), (1, 1), (1, 1), (1, 1), 1, "float32"),
             ((n, 32, 32, 32), (64, 32, 3, 3), (1, 1), (2, 2), (2, 2), 1, "float16"),
             ((n, 32, n, 32), (64, 32, 3, 3), (1, 1), (2, 2), (2, 2), 1, "float32")]
    assert all(plan(*args) is None for args in keeps)

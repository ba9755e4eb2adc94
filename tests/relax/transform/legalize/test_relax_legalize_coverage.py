"""Every registered legalization has a numeric test against numpy in this directory (each
Relax op is called by its Python name in one of the test files here)."""

import pathlib
import re

from minitvm.relax.transform.legalize_ops import legalizations

HERE = pathlib.Path(__file__).parent


def test_every_legalized_op_is_tested():
    sources = "\n".join(p.read_text() for p in HERE.glob("test_relax_legalize_*.py")
                        if p.name != pathlib.Path(__file__).name)
    missing = []
    for op_name in legalizations():
        short = op_name.split(".")[-1]
        if not re.search(rf"(\.{short}\b|\"{short}\")", sources):
            missing.append(op_name)
    assert not missing, f"legalizations without a numeric test: {missing}"

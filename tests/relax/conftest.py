"""With ``MINITVM_RELAX_ROUNDTRIP=1``, every Relax test also checks that each IRModule it built
round-trips through TVMScript (see ``script_roundtrip_hook.py``)."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

if os.environ.get("MINITVM_RELAX_ROUNDTRIP") == "1":
    from script_roundtrip_hook import check_all, recording

    @pytest.fixture(autouse=True)
    def _relax_script_roundtrip():
        with recording() as made:
            yield
        failures = check_all(made)
        if failures:
            pytest.fail(f"{len(failures)} module(s) do not round-trip through TVMScript; "
                        f"first:\n{failures[0][:3000]}")

"""Each IRModule that a test of ``ROUNDTRIP_PATHS`` builds must round-trip through TVMScript
(see ``script_roundtrip_hook.py``); with ``MINITVM_RELAX_ROUNDTRIP=1``, every Relax test checks
it."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from script_roundtrip_hook import check_all, recording, roundtrip_checked  # noqa: E402


@pytest.fixture(autouse=True)
def _relax_script_roundtrip(request):
    if not roundtrip_checked(request.node.path, request.node.originalname):
        yield
        return
    with recording() as made:
        yield
    failures = check_all(made)
    if failures:
        pytest.fail(f"{len(failures)} module(s) do not round-trip through TVMScript; "
                    f"first:\n{failures[0][:3000]}")

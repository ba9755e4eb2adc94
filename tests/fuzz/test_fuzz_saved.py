"""CI sample of the saved-executable fuzz checks (``fuzz_long --saved-programs``): a few dynamic
Relay programs through relay.vm.compile, save, export and Executable.load_exec, and a Relax
program through export_library and load_module, each run at a schedule of sizes (0 included)
against the interpreter / the numpy reference; and a planted wrong loaded result is caught."""

import numpy as np
import pytest

from minitvm.testing.fuzz import dynamic_differential
from minitvm.testing.fuzz.dynamic_differential import check_dynamic
from minitvm.testing.fuzz.dynamic_generator import generate_dynamic_program
from minitvm.testing.fuzz.relax_differential import check_relax_sizes
from minitvm.testing.fuzz.relax_generator import generate_relax_program


@pytest.mark.parametrize("seed", [3, 6, 7])  # plain, a while loop with argwhere, dyn.reshape
def test_saved_relay_executables_agree(seed):
    assert check_dynamic(generate_dynamic_program(seed), sizes=[2, 0, 3], saved=True) == []


def test_saved_relax_executable_agrees():
    prog = generate_relax_program(2, symbolic=True)
    assert check_relax_sizes(prog, sizes=[2, 0, 3], saved=True) == []


def test_a_wrong_loaded_executable_is_caught(monkeypatch):
    """The check runs the loaded executable: one whose kernels' constants were damaged on the
    way gives other values, and the check reports the saved run."""
    real = dynamic_differential._saved_and_loaded

    def damaged(exe, folder):
        loaded = real(exe, folder)
        for c in loaded.constants:
            if c.dtype.kind == "f" and c.size:
                c[...] = c + np.asarray(1.5, c.dtype)
        return loaded

    monkeypatch.setattr(dynamic_differential, "_saved_and_loaded", damaged)
    found = []
    for seed in range(3, 12):
        prog = generate_dynamic_program(seed)
        found = check_dynamic(prog, sizes=[2], saved=True)
        if found:
            break
    assert found and found[0].kind == "mismatch" and "saved" in found[0].pass_name

"""Every registered Relay pass on random programs: runs, well formed, same values, deterministic,
input unchanged, text round trip (CI-sized; scripts/fuzz_long.py runs thousands)."""

import warnings

import pytest

from minitvm.testing.fuzz import generate_program
from minitvm.testing.fuzz.differential import (
    NOT_APPLICABLE,
    check_pass,
    compare_values,
    make_pass,
    regression_test_source,
    relay_pass_names,
    shrink,
)

PROGRAMS = 7


@pytest.fixture(scope="module")
def programs():
    return {}


def _programs(cache):
    if "all" not in cache:  # every pass gets the same programs: no pass is restricted
        cache["all"] = [generate_program(1000 + k) for k in range(PROGRAMS)]
    return cache["all"]


@pytest.mark.parametrize("name", [n for n in relay_pass_names() if n not in NOT_APPLICABLE])
def test_pass_on_random_programs(name, programs):
    try:
        make_pass(name)
    except TypeError as err:  # a pass added later that needs model-specific arguments
        pytest.skip(f"{name} needs arguments (add it to differential.PASS_ARGS): {err}")
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ToMixedPrecision warns about unlisted ops
        for prog in _programs(programs):
            found += check_pass(prog, name)
    assert not found, "\n\n".join(str(f)[:3000] for f in found[:2])


def test_every_relay_pass_is_covered():
    names = relay_pass_names()
    assert len(names) >= 40
    for n in ("FoldConstant", "FuseOps", "ToANormalForm", "ConvertLayout", "SimplifyExpr"):
        assert n in names


def test_a_broken_pass_is_caught_and_shrunk():
    from minitvm.relay import const, multiply
    from minitvm.relay.expr_functor import ExprMutator
    from minitvm.relay.transform import function_pass

    class _Double(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            return multiply(new, const(2.0)) if getattr(call.op, "name", "") == "exp" else new

    def broken():
        return function_pass(lambda f, m, c: _Double().visit(f), opt_level=0, name="Broken")

    def fails(p):
        return any(f.kind == "mismatch" for f in check_pass(p, "Broken", pass_factory=broken))

    seed = next(s for s in range(300) if "exp(" in generate_program(s).mod.astext()
                and fails(generate_program(s)))
    found = check_pass(generate_program(seed), "Broken", pass_factory=broken)
    assert found and found[0].kind == "mismatch" and "values differ" in found[0].detail
    small = shrink(seed, fails)
    assert small is not None and small.mod.astext().count("\n") <= generate_program(
        seed).mod.astext().count("\n")
    src = regression_test_source(found[0])
    assert src.startswith("def test_broken_seed") and "relay.parse" in src
    compile(src, "<regression>", "exec")


def test_compare_values_is_nan_aware():
    import numpy as np

    a = [np.array([1.0, np.nan, np.inf], "float32")]
    assert compare_values(a, [a[0].copy()]) is None
    assert "NaN" in compare_values(a, [np.array([1.0, 2.0, np.inf], "float32")])
    assert "infinities" in compare_values(a, [np.array([1.0, np.nan, -np.inf], "float32")])
    assert "dtype" not in (compare_values(a, [a[0].astype("float64")]) or "dtype") or True
    assert compare_values(a, [a[0].astype("float64")]).startswith("output 0: float32")

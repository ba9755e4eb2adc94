"""Hypothesis strategies over the random program generator.

``programs()`` draws a seed and generator options, so hypothesis shrinks toward small seeds and
small programs (``max_ops`` shrinks to 2); ``programs_with_inputs()`` adds input arrays,
``special=True`` sprinkles inf/nan/huge/zero values for IEEE checks.
"""

from __future__ import annotations

from .generator import GeneratedProgram, generate_program


def _hypothesis():
    try:
        from hypothesis import strategies as st
    except ImportError as err:  # pragma: no cover - hypothesis is a dev dependency
        raise ImportError("minitvm.testing.fuzz.strategies needs hypothesis "
                          "(pip install hypothesis)") from err
    return st


def programs(max_ops: int = 12, bounded: bool = True, control_flow: bool | None = None,
             graph_only: bool = False):
    """A strategy of GeneratedProgram (``graph_only``: programs relay.build can run)."""
    st = _hypothesis()

    @st.composite
    def draw(draw_fn) -> GeneratedProgram:
        seed = draw_fn(st.integers(0, 2**31 - 1))
        ops = draw_fn(st.integers(2, max_ops))
        cf = (not graph_only) if control_flow is None else control_flow
        if cf and not graph_only:
            cf = draw_fn(st.booleans())
        return generate_program(seed, max_ops=ops, bounded=bounded, control_flow=cf,
                                closures=cf, adts=cf)

    strategy = draw()
    if graph_only:
        strategy = strategy.filter(lambda p: p.graph_compatible)
    return strategy


def programs_with_inputs(special: bool = False, **options):
    """A strategy of ``(program, inputs)``."""
    st = _hypothesis()
    return st.tuples(programs(**options), st.integers(0, 2**31 - 1)).map(
        lambda pi: (pi[0], pi[0].inputs(seed=pi[1], special=special)))

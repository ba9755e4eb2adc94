"""Hypothesis strategies over the random Relax program generator.

``relax_programs()`` draws a seed and generator options, so hypothesis shrinks toward small
seeds and small programs (``max_ops`` shrinks to 1); ``relax_programs_with_inputs()`` adds the
arguments of ``main`` at a drawn symbolic size, ``special=True`` sprinkling inf/nan/huge/zero.
"""

from __future__ import annotations

from .relax_generator import SYM_VALUES, RelaxProgram, generate_relax_program

__all__ = ["relax_programs", "relax_programs_with_inputs"]


def _hypothesis():
    try:
        from hypothesis import strategies as st
    except ImportError as err:  # pragma: no cover - hypothesis is a dev dependency
        raise ImportError("minitvm.testing.fuzz.relax_strategies needs hypothesis "
                          "(pip install hypothesis)") from err
    return st


def relax_programs(max_ops: int = 10, bounded: bool = True, control_flow: bool | None = None,
                   symbolic: bool | None = None):
    """A strategy of RelaxProgram."""
    st = _hypothesis()

    @st.composite
    def draw(draw_fn) -> RelaxProgram:
        seed = draw_fn(st.integers(0, 2**31 - 1))
        ops = draw_fn(st.integers(1, max_ops))
        cf = draw_fn(st.booleans()) if control_flow is None else control_flow
        return generate_relax_program(seed, max_ops=ops, bounded=bounded, control_flow=cf,
                                      symbolic=symbolic)

    return draw()


def relax_programs_with_inputs(special: bool = False, **options):
    """A strategy of ``(program, n, inputs)``: ``n`` is one of the two symbolic sizes."""
    st = _hypothesis()
    return st.tuples(relax_programs(**options), st.sampled_from(SYM_VALUES),
                     st.integers(0, 2**31 - 1)).map(
        lambda t: (t[0], t[1], t[0].inputs(t[1], seed=t[2], special=special)))

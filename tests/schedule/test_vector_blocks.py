"""``common.vector_blocks``: the loops a reduction and softmax's row max share (blocks of
vectors into independent accumulators, then single vectors)."""

from minitvm.schedule.common import LowerCtx, vector_blocks
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer


def _visits(nvec, lanes, blocks):
    """(offset, lane) pairs the loops store to, found by running them on integers."""
    buf = decl_buffer((1,), "float32", "acc")
    parts = vector_blocks(LowerCtx(), nvec, lanes, blocks,
                          lambda j, lane: S.BufferStore(buf, E.FloatImm("float32", 0.0),
                                                        [j, lane]))
    seen = []

    def ev(e, env):
        if isinstance(e, E.IntImm):
            return e.value
        if isinstance(e, E.Var):
            return env[e]
        return {E.Add: lambda a, b: a + b, E.Mul: lambda a, b: a * b,
                E.FloorDiv: lambda a, b: a // b}[type(e)](ev(e.a, env), ev(e.b, env))

    def run(s, env):
        if isinstance(s, S.For):
            lo = ev(s.min, env)
            for i in range(lo, lo + ev(s.extent, env)):
                run(s.body, {**env, s.loop_var: i})
        else:
            seen.append(tuple(ev(i, env) for i in s.indices))

    for p in parts:
        run(p, {})
    return seen, parts


def test_every_vector_once_with_its_accumulator_lane():
    for nvec, blocks in [(11, 4), (8, 4), (3, 4), (5, 1), (0, 4)]:
        seen, _ = _visits(nvec, 16, blocks)
        assert sorted(j for j, _ in seen) == list(range(nvec * 16))
        bw = blocks * 16 if nvec >= blocks else 16
        for j, lane in seen:
            assert lane == j % (bw if j < (nvec // blocks) * blocks * 16 else 16)


def test_loop_shapes():
    _, parts = _visits(11, 16, 4)
    assert [p.extent.value for p in parts] == [2, 3]  # two blocks of 4, then 3 single vectors
    assert parts[0].body.kind == S.ForKind.VECTORIZED and parts[0].body.extent.value == 64
    _, parts = _visits(8, 16, 4)
    assert len(parts) == 1  # no single-vector loop when the blocks cover every vector
    n = E.Var("n", "int32")
    parts = vector_blocks(LowerCtx(), n, 16, 4, lambda j, lane: S.Evaluate(j))
    assert len(parts) == 2  # symbolic: both loops, the second from 4 * (n // 4)

"""``tir.num_threads()`` (``schedule.common.num_threads``): the threads a parallel loop placed
there runs on, the call's thread count outside parallel loops, 1 inside one (a nested parallel
loop runs serially)."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.runtime import threadpool
from minitvm.schedule.common import num_threads


def _kernel():
    """``B[0]`` = the thread count here; ``B[1 + i]`` = the count inside a parallel loop."""
    B = tir.decl_buffer((9,), "int32", "B")
    i = tir.Var("i", "int32")
    body = tir.SeqStmt([
        tir.BufferStore(B, num_threads(), [0]),
        tir.For(i, 0, 8, tir.ForKind.PARALLEL, tir.BufferStore(B, num_threads(), [i + 1]))])
    return codegen.build(tir.PrimFunc([B], body))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_num_threads_is_the_calls_count_outside_parallel_loops(threads):
    mod = _kernel()
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(threads)
        out = np.zeros(9, "int32")
        mod["main"](out)
    finally:
        threadpool.set_num_threads(before)
    assert out[0] == threads
    assert (out[1:] == 1).all()

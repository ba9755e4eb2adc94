"""LegalizeOps of a two-operand einsum as permute_dims + reshape + one matmul (the GEMM kernels,
not a T_einsum reduction nest): the attention contractions of an einsum transformer, static
and with a symbolic batch, against numpy; other forms keep the one-stage compute."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm import relax
from minitvm.relax import op as R


def _legalized_text(subscripts, sinfos) -> str:
    bb = relax.BlockBuilder()
    vs = [relax.Var(f"x{k}", s) for k, s in enumerate(sinfos)]
    with bb.function("main", vs):
        bb.emit_func_output(bb.emit(R.einsum(vs, subscripts)))
    return str(relax.transform.LegalizeOps()(bb.get()))


_CASES = [
    ("bnd,shde->sbhne", [(2, 5, 8), (3, 2, 8, 4)]),  # fused q/k/v projection
    ("bhie,bhje->bhij", [(2, 3, 5, 4), (2, 3, 6, 4)]),  # scores
    ("bhij,bhje->bhie", [(2, 3, 5, 6), (2, 3, 6, 4)]),  # values
    ("bhne,hed->bnd", [(2, 3, 5, 4), (3, 4, 7)]),  # output projection over heads
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("i,i->", [(6,), (6,)]),
    ("ijx,kj->ik", [(3, 4, 2), (5, 4)]),  # x summed away first
    ("bij,bjk->kib", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("subscripts,shapes", _CASES)
def test_two_operand_einsum_is_a_matmul(subscripts, shapes):
    xs = [rand(s) for s in shapes]
    ref = np.einsum(subscripts, *xs).astype("float32")
    check(lambda *a: R.einsum(a, subscripts), [tensor(s) for s in shapes], xs, ref, rtol=1e-4,
          atol=1e-4)
    text = _legalized_text(subscripts, [relax.TensorStructInfo(s, "float32") for s in shapes])
    assert "matmul" in text and "T_einsum" not in text


@pytest.mark.parametrize("subscripts,shapes", _CASES[:4])
def test_symbolic_batch(subscripts, shapes):
    (n,) = sym("n")
    xs = [rand(s) for s in shapes]
    # the first operand's leading dim (and the second's where it shares the label) symbolic
    second_shares = subscripts.split(",")[1][0] == subscripts[0]
    sinfos = [tensor([n, *shapes[0][1:]]),
              tensor([n, *shapes[1][1:]]) if second_shares else tensor(shapes[1])]
    ref = np.einsum(subscripts, *xs).astype("float32")
    check(lambda *a: R.einsum(a, subscripts), sinfos, xs, ref, rtol=1e-4, atol=1e-4)
    text = _legalized_text(subscripts, sinfos)
    assert "matmul" in text and "T_einsum" not in text


@pytest.mark.parametrize("subscripts,shapes", [
    ("ii->i", [(4, 4)]),  # a diagonal
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),  # a label broadcast from size 1
    ("...ij,...jk", [(2, 3, 4), (1, 4, 5)]),
])
def test_other_forms_keep_the_compute(subscripts, shapes):
    xs = [rand(s) for s in shapes]
    ref = np.einsum(subscripts, *xs).astype("float32")
    check(lambda *a: R.einsum(a, subscripts), [tensor(s) for s in shapes], xs, ref, rtol=1e-4,
          atol=1e-4)
    text = _legalized_text(subscripts, [relax.TensorStructInfo(s, "float32") for s in shapes])
    assert "T_einsum" in text

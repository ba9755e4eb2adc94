"""LegalizeOps with a symbolic leading dimension ``n``: one PrimFunc (``T.match_buffer``) serves
every size; each op checked against numpy at n = 1 and n = 5."""

import numpy as np
import pytest
from legalize_util import check, rand, sym, tensor

from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax.op import nn

N = sym("n")[0]

# name -> (make, input shapes with "n" for the symbolic dim, input dtypes, numpy reference)
CASES = {
    "exp": (R.exp, [("n", 3)], None, np.exp),
    "subtract": (R.subtract, [("n", 3), (3,)], None, np.subtract),
    "permute_dims": (lambda x: R.permute_dims(x, [1, 0, 2]), [("n", 2, 3)], None,
                     lambda a: a.transpose(1, 0, 2)),
    "expand_dims": (lambda x: R.expand_dims(x, [1]), [("n", 3)], None,
                    lambda a: a[:, None]),
    "squeeze": (lambda x: R.squeeze(x, [1]), [("n", 1, 3)], None, lambda a: a[:, 0]),
    "flatten": (R.flatten, [("n", 2, 3)], None, lambda a: a.reshape(-1)),
    "concat": (lambda x, y: R.concat([x, y], axis=1), [("n", 2), ("n", 3)], None,
               lambda a, b: np.concatenate([a, b], 1)),
    "split": (lambda x: R.split(x, [1], axis=1), [("n", 3)], None,
              lambda a: tuple(np.split(a, [1], 1))),
    "strided_slice": (lambda x: R.strided_slice(x, [1], [0], [3], [2]), [("n", 4)], None,
                      lambda a: a[:, 0:3:2]),
    "take": (lambda x, i: R.take(x, i, axis=1), [("n", 4), (2,)], [None, "int64"],
             lambda a, i: a[:, i]),
    "astype": (lambda x: R.astype(x, "float16"), [("n", 3)], None,
               lambda a: a.astype("float16")),
    "where": (R.where, [("n", 3), ("n", 3), (3,)], ["bool", None, None], np.where),
    "argmax": (lambda x: R.argmax(x, 1), [("n", 5)], None, lambda a: np.argmax(a, 1)),
    "zeros_like": (R.zeros_like, [("n", 3)], None, np.zeros_like),
    "ones_like": (R.ones_like, [("n", 3)], None, np.ones_like),
    "tril": (lambda x: R.tril(x, 0), [(2, "n", "n")], None, np.tril),
    "repeat": (lambda x: R.repeat(x, 2, axis=1), [("n", 3)], None,
               lambda a: np.repeat(a, 2, 1)),
    "clip": (lambda x: R.clip(x, -1.0, 1.0), [("n", 3)], None, lambda a: np.clip(a, -1, 1)),
    "max_pool2d": (lambda x: nn.max_pool2d(x, (2, 2), (2, 2)), [("n", 2, 4, 4)], None,
                   lambda a: a.reshape(a.shape[0], 2, 2, 2, 2, 2).max((3, 5))),
    "avg_pool2d": (lambda x: nn.avg_pool2d(x, (2, 2), (2, 2)), [("n", 2, 4, 4)], None,
                   lambda a: a.reshape(a.shape[0], 2, 2, 2, 2, 2).mean((3, 5))),
    "adaptive_avg_pool2d": (lambda x: nn.adaptive_avg_pool2d(x, 1), [("n", 2, 3, 5)], None,
                            lambda a: a.mean((2, 3), keepdims=True)),
    "dropout": (lambda x: nn.dropout(x, 0.5), [("n", 3)], None,
                lambda a: (a, np.ones_like(a))),
    "pad": (lambda x: nn.pad(x, [0, 0, 1, 2]), [("n", 3)], None,
            lambda a: np.pad(a, ((0, 0), (1, 2)))),
    "leakyrelu": (lambda x: nn.leakyrelu(x, 0.2), [("n", 3)], None,
                  lambda a: np.where(a > 0, a, 0.2 * a)),
    "log_softmax": (lambda x: nn.log_softmax(x, 1), [("n", 4)], None,
                    lambda a: a - a.max(1, keepdims=True) -
                    np.log(np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True))),
    "variance": (lambda x: R.variance(x, [0]), [("n", 3)], None, lambda a: a.var(0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("n", [1, 5])
def test_symbolic(name, n):
    make, shapes, dtypes, ref = CASES[name]
    dtypes = dtypes or [None] * len(shapes)
    sinfos, arrays = [], []
    for shape, dt in zip(shapes, dtypes):
        dt = dt or "float32"
        sinfos.append(tensor([N if d == "n" else d for d in shape], dt))
        concrete = tuple(n if d == "n" else d for d in shape)
        arrays.append(rand(concrete, dt, 0, 3) if dt == "int64" else rand(concrete, dt))
    expected = ref(*arrays)
    expected = tuple(np.asarray(e) for e in expected) if isinstance(expected, tuple) \
        else np.asarray(expected)
    mod = check(make, sinfos, arrays, expected, rtol=1e-3, atol=1e-3)
    text = mod.script()
    assert "T.match_buffer" in text and "n = T.int64()" in text



def test_symbolic_output_only_dim_becomes_tir_var():
    """``zeros((n, 3))`` reads no tensor: ``n`` is passed to its PrimFunc as a scalar
    (``call_tir(..., tir_vars=R.shape([n]))``)."""
    a = rand((4, 3))
    mod = check(lambda x: R.add(x, R.zeros(relax.ShapeExpr([N, 3]), "float32")),
                [tensor([N, 3])], [a], a)
    assert "R.shape([n])" in mod["main"].script()

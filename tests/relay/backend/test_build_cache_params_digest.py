"""build_cache._params_digest: each weight is digested once (kept on its NDArray) and the
digest shares its SHA-1 with the structural hash of the constant."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.fingerprint import array_token, ndarray_token
from minitvm.ir.structural import structural_hash
from minitvm.relay.backend.build_cache import _params_digest


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((4, 3)).astype("float32"),
            "b": rng.standard_normal(3).astype("float32")}


def test_digest_is_of_names_and_contents():
    p = _params()
    nd = {k: tvm.nd.array(v) for k, v in p.items()}
    assert _params_digest(p) == _params_digest(nd)  # numpy or NDArray: same bytes, same digest
    assert _params_digest(p) != _params_digest(_params(1))
    assert _params_digest(p) != _params_digest({"w2": p["w"], "b": p["b"]})
    assert _params_digest(p) != _params_digest({"w": p["w"].astype("float64"), "b": p["b"]})


def test_digest_is_kept_on_the_ndarray_and_shared_with_structural_hash():
    w = tvm.nd.array(_params()["w"])
    fresh = tvm.nd.array(w.numpy().copy())
    _params_digest({"w": w})
    assert w._content_hash is not None  # set by the digest: LabelOps will not read it again
    assert structural_hash(relay.const(w)) == structural_hash(relay.const(fresh))
    assert ndarray_token(w) == array_token(w.numpy())
    w.numpy()[0, 0] += 1.0  # an in-place rewrite as the runtime does it clears the hash
    w._content_hash = None
    assert ndarray_token(w) == array_token(w.numpy()) != array_token(fresh.numpy())


def test_copyfrom_new_weights_rebuilds_with_them(monkeypatch):
    """A parameter rewritten in place with ``copyfrom`` between two builds: the second build
    must not reuse the first from the whole-build cache (its kept digest would be stale)."""
    monkeypatch.setenv("MINITVM_DISABLE_BUILD_CACHE", "0")
    from minitvm.contrib import graph_executor

    x = relay.var("x", shape=(2, 4))
    w = relay.var("w", shape=(3, 4))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.dense(x, w)))
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((2, 4)).astype("float32")
    params = {"w": tvm.nd.array(rng.standard_normal((3, 4)).astype("float32"))}
    outs = []
    for _ in range(2):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        gm.set_input("x", xv)
        gm.run()
        outs.append(gm.get_output(0).numpy())
        np.testing.assert_allclose(outs[-1], xv @ params["w"].numpy().T, rtol=1e-5)
        params["w"].copyfrom(rng.standard_normal((3, 4)).astype("float32"))
    assert not np.allclose(outs[0], outs[1])

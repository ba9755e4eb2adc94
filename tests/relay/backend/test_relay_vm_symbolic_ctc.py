"""Relay VM symbolic kernels of CTC's forward variables (``nn.ctc_log_alpha``, the kernel the
torch importer builds ``ctc_loss`` on): over a run-time frame count, batch and targets length,
ONE kernel serves every size (0 and 1 included) with the bits of the static kernel the
per-shape path compiles and the interpreter's values (its numpy reference) within rounding.
The batch agreements the relation assumes are shape conditions, checked at each call; no
targets at all (a zero targets length, which the rule cannot read a label of) takes the
per-shape path, as does every shape that breaks a condition (and raises as the interpreter
does)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.relay.expr import bind
from minitvm.runtime.vm import VirtualMachine

A = relay.Any
WIDTH = 7  # (targets of up to 3 labels)


def _model(concatenated: bool = False):
    lp = relay.var("lp", shape=(A(), A(), 5), dtype="float32")
    tg = relay.var("tg", shape=(A(),) if concatenated else (A(), A()), dtype="int32")
    il = relay.var("il", shape=(A(),), dtype="int32")
    tl = relay.var("tl", shape=(A(),), dtype="int32")
    body = relay.nn.ctc_log_alpha(relay.nn.log_softmax(lp), tg, il, tl, 0, WIDTH)
    return [lp, tg, il, tl], body


def _args(frames: int, batch: int, labels: int, concatenated: bool = False, seed: int = 0):
    r = np.random.default_rng(seed)
    lp = r.standard_normal((frames, batch, 5)).astype("float32")
    tl = r.integers(0, labels + 1, (batch,)).astype("int32")
    il = r.integers(0, frames + 2, (batch,)).astype("int32")  # (past the frames: clamped)
    tg = r.integers(1, 5, (int(tl.sum()),) if concatenated else (batch, labels)).astype("int32")
    return [lp, tg, il, tl]


def _static(params, body, args):
    new = [relay.var(p.name_hint, shape=x.shape, dtype=str(x.dtype))
           for p, x in zip(params, args, strict=True)]
    mod = tvm.IRModule.from_expr(relay.Function(new, bind(body, dict(zip(params, new,
                                                                          strict=True)))))
    return VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu()).run(*args).numpy()


@pytest.mark.parametrize("concatenated", [False, True], ids=["padded", "concatenated"])
def test_one_symbolic_kernel_for_every_frame_count_and_batch(concatenated):
    """Frames 0, 1, 6 and batches 1, 3 (labels up to 3): one compile, no kernel specialized,
    the static kernels' bits and the interpreter's values."""
    params, body = _model(concatenated)
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 2, "specialized": 0}
    runs = [k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel)]
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    for frames, batch in ((6, 3), (1, 1), (0, 2), (9, 1)):
        args = _args(frames, batch, 3, concatenated, seed=frames)
        if concatenated and not len(args[1]):
            continue  # (no labels at all: the per-shape path's case, tested below)
        got = vm.run(*args).numpy()
        assert got.shape == (batch, frames, WIDTH)
        np.testing.assert_allclose(got, interp(*args).numpy(), rtol=1e-5, atol=1e-5)
        assert got.tobytes() == _static(params, body, args).tobytes()
    assert all(r._fallback is None for r in runs)


def test_conditions_checked_at_each_call():
    """Targets or lengths of another batch raise, as the interpreter does; no labels at all (a
    zero targets length) run the per-shape kernel, which gives the interpreter's values."""
    params, body = _model()
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    run = next(k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel) and
               "ctc" in k.name)
    assert {c[0] for c in run.conditions} >= {"equal", "greater"}
    lp, tg, il, tl = _args(4, 2, 3)
    for bad in ([lp, tg[:1], il, tl], [lp, tg, il[:1], tl], [lp, tg, il, np.ones(3, "int32")]):
        with pytest.raises(Exception, match="batch"):
            interp(*bad)
        with pytest.raises(Exception, match="batch"):
            vm.run(*bad)
    args = [lp, np.zeros((2, 0), "int32"), il, np.zeros(2, "int32")]
    np.testing.assert_allclose(vm.run(*args).numpy(), interp(*args).numpy(), rtol=1e-5)
    assert run._fallback is not None  # (the zero targets length: specialized)

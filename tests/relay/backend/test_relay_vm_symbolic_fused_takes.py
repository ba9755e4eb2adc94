"""A fused function of many inlined takes as one symbolic kernel: the 8-bit bilinear resize to a
run-time size that TFLite's importer writes (four taps, each a take of rows then one of columns,
weighted, summed, rounded, clipped to uint8).

Its kernel read a wrong row at the first output rows on an AVX-512 host since sym60 (the uint8
TFLite resize test 150+ steps off): SLP pairs the two int64 row / column indices wrapped when
negative (``take`` mode fast) and their sign test became LLVM's ``vpmovq2m`` + ``kmov``, which
LLVM 22's EVEX compression turns into a VEX ``vmovmskpd`` of xmm16-31 the encoder cannot express
(llvm-project#191304). The JIT recognizes such machine code and makes it again
(tests/runtime/test_jit_evex_movmsk.py reproduces the wrong values at the LLVM level); here the
same kernel is checked against the interpreter at sizes that reach the wrapped rows."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.runtime import vm as runtime_vm


def _f32(e):
    return relay.cast(e, "float32")


def _f64(e):
    return relay.cast(e, "float64")


def _bilinear_uint8():
    """main(x (1, ?, ?, 4) uint8, output rows (?) float32, row scale, source columns (?)
    float32, H - 1, W - 1) -> (1, ?, ?, 4) uint8: half-pixel rows computed in the kernel."""
    x = relay.var("x", shape=(1, relay.Any(), relay.Any(), 4), dtype="uint8")
    oy = relay.var("oy", shape=(relay.Any(),), dtype="float32")
    sy = relay.var("sy", shape=(), dtype="float64")
    xs = relay.var("xs", shape=(relay.Any(),), dtype="float32")
    hmax = relay.var("hmax", shape=(), dtype="int64")
    wmax = relay.var("wmax", shape=(), dtype="int64")
    ys = _f32(_f64(oy + relay.const(0.5)) * sy) - relay.const(0.5)

    def axis(c, last, shape):
        lo_f = relay.maximum(relay.floor(c), relay.const(0.0))
        hi = relay.minimum(relay.cast(relay.ceil(c), "int64"), last)
        frac = c - lo_f
        return ((relay.cast(lo_f, "int64"), relay.reshape(relay.const(1.0) - frac, shape)),
                (hi, relay.reshape(frac, shape)))

    data = _f64(x)
    acc = None
    for yi, wy in axis(ys, hmax, [1, -1, 1, 1]):
        rows = relay.take(data, yi, axis=1, mode="fast")
        for xi, wx in axis(xs, wmax, [1, 1, -1, 1]):
            tap = _f32(relay.take(rows, xi, axis=2, mode="fast") * _f64(_f32(_f64(wy) * _f64(wx))))
            acc = tap if acc is None else acc + tap
    out = relay.cast(relay.clip(relay.floor(acc + relay.const(0.5)), 0.0, 255.0), "uint8")
    return tvm.IRModule.from_expr(relay.Function([x, oy, sy, xs, hmax, wmax], out))


def _args(rng, h, w, oh, ow):
    xs = (np.arange(ow, dtype="float32") + np.float32(0.5)) * np.float32(w / ow) - np.float32(0.5)
    return [rng.integers(0, 256, (1, h, w, 4)).astype("uint8"), np.arange(oh, dtype="float32"),
            np.float64(np.float32(h) / np.float32(oh)), xs.astype("float32"), np.int64(h - 1),
            np.int64(w - 1)]


def test_bilinear_taps_are_one_symbolic_kernel_with_the_interpreters_values():
    mod = _bilinear_uint8()
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    ref = relay.create_executor("debug", mod=mod).evaluate()
    rng = np.random.default_rng(0)
    for h, w, oh, ow in [(2, 4, 4, 12), (3, 5, 7, 3)]:
        args = _args(rng, h, w, oh, ow)
        got = vm.run(*[tvm.nd.array(np.asarray(a)) for a in args]).numpy()
        want = ref(*args).numpy()
        assert got.shape == (1, oh, ow, 4) and got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)

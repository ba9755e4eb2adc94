"""Relax pass-sequence fuzzer, seed 600945 (it failed without any pass: the build alone): a
fused kernel holding a batched ``multiply`` and the ``split`` of a static (2, 1) input that is
also an output. The batch-loop schedule put the whole kernel, split included, inside its loop
over the images, so at a batch of 0 the split never ran and its (1, 1) output held whatever
its storage held (2e-38, then the last call's value). ``batch_loop.separable`` now refuses a
function that writes a parameter without a batch axis."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.backend.options import lowering_options
from minitvm.schedule import optimize_prim_func
from minitvm.schedule.batch_loop import batch_var, separable
from minitvm.script.parser.entry import from_source
from minitvm.tir.function import PrimFunc

_PROGRAM = '''
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x0: R.Tensor(("n", 3, 3, 6), dtype="float32"), x2: R.Tensor((2, 1), dtype="float32")) -> R.Tuple(R.Tensor((1, 1), dtype="float32"), R.Tensor(("n", 3, 6, 6), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            lv9: R.Tensor((n, 3, 6, 6), dtype="float32") = R.concat((x0, x0), axis=2)
            lv10: R.Tuple(R.Tensor((1, 1), dtype="float32"), R.Tensor((1, 1), dtype="float32")) = R.split(x2, indices_or_sections=2, axis=0)
            lv11: R.Tensor((1, 1), dtype="float32") = lv10[0]
            lv12: R.Tensor((n, 3, 6, 6), dtype="float32") = R.multiply(lv11, lv9)
            gv6: R.Tensor((1, 1), dtype="float32") = lv11
            gv7: R.Tensor((n, 3, 6, 6), dtype="float32") = lv12
            R.output(gv6, gv7)
        return (gv6, gv7)
'''


def test_static_output_of_a_batched_kernel_at_every_batch():
    mod = from_source(_PROGRAM)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    x2 = np.array([[1.5], [2.5]], "float32")
    for n in (0, 3, 0, 1):
        x0 = np.arange(n * 54, dtype="float32").reshape(n, 3, 3, 6)
        first, prod = vm["main"](x0, x2)
        assert first.numpy().tolist() == [[1.5]]
        np.testing.assert_array_equal(prod.numpy(), 1.5 * np.concatenate([x0, x0], axis=2))


def test_the_fused_kernel_is_not_scheduled_per_image():
    lowered = relax.get_pipeline()(from_source(_PROGRAM))
    (prim,) = [f for f in lowered.functions.values() if isinstance(f, PrimFunc)]
    n = batch_var(prim)
    assert n is not None and not separable(prim, n)  # (a batch, but a static output too)
    assert "instance_loop" not in optimize_prim_func(prim, lowering_options()).script()

"""Relax sizes-fuzzer seed 400551 (fuzz57's open finding "argmin of zeros differed once"):
argmin over the symbolic axis of ``astype(x <= -1.66)`` (all zeros) returned 9, not 0.

Reproduced with the build of the run that found it (e310ddc9 / 7882276e): legalization then
passed the reduction's ARGUMENT through ``vm.builtin.check_nonempty``, which returned the
argument itself; the memory planner saw the check as the argument's last use, killed its
storage there and gave it to the next tensor (``round``), so the argmin kernel read round's
values (their argmin, 9). Fixed since 97e452ee (the check takes the reduction's result) and
aa3b798 (the check returns a copy). The seed's program, with inputs that make round's argmin
not 0 (the generated inputs at n=5 and the else branch), pins it."""

import numpy as np

import minitvm as tvm
from minitvm import relax
from minitvm.script.parser.entry import from_source

_PROGRAM = '''
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x0: R.Tensor(("n", 4, 4, 4), dtype="float32"), x1: R.Tensor(("n", 2, 1), dtype="float32"), cond: R.Tensor((), dtype="bool")) -> R.Tuple(R.Tensor((1, 1, 1), dtype="int64"), R.Tensor(("n", 1, 2), dtype="float32"), R.Tensor(("n", 1, 2), dtype="bool")):
        n = T.int64()
        with R.dataflow():
            lv: R.Tensor((n, 1, 2), dtype="float32") = R.permute_dims(x1, axes=[0, 2, 1])
            lv1: R.Tensor((n, 2, 2), dtype="float32") = R.matmul(x1, lv, out_dtype="void")
            lv2: R.Tensor((n, 2, 2), dtype="float32") = R.clip(lv1, R.prim_value(T.float64(-30.0)), R.prim_value(T.float64(30.0)))
            lv3: R.Tensor((n, 2, 2), dtype="float32") = R.multiply(lv2, R.const(-1.4155195951461792, "float32"))
            lv4: R.Tensor((n, 2, 2), dtype="float32") = R.square(lv2)
            lv5: R.Tensor((n, 2, 2), dtype="bool") = R.less_equal(lv4, R.const(-1.6571553945541382, "float32"))
            gv: R.Tensor((n, 1, 2), dtype="float32") = lv
            gv1: R.Tensor((n, 2, 2), dtype="float32") = lv3
            gv2: R.Tensor((n, 2, 2), dtype="bool") = lv5
            R.output(gv, gv1, gv2)
        lv6: R.Tensor((n, 1, 2), dtype="float32") = R.match_cast(gv, R.Tensor((n, 1, 2), dtype="float32"))
        with R.dataflow():
            lv7: R.Tensor((n, 2, 2), dtype="float32") = R.astype(gv2, dtype="float32")
            lv8: R.Tensor((n, 2, 2), dtype="bool") = R.equal(gv2, R.const(True, "bool"))
            lv9: R.Tensor((n, 2, 2), dtype="bool") = R.logical_or(lv8, R.const(False, "bool"))
            gv3: R.Tensor((n, 2, 2), dtype="float32") = lv7
            gv4: R.Tensor((n, 2, 2), dtype="bool") = lv8
            gv5: R.Tensor((n, 2, 2), dtype="bool") = lv9
            R.output(gv3, gv4, gv5)
        if cond:
            lv10: R.Tensor((n, 1, 2), dtype="float32") = R.nn.relu(gv)
            lv12: R.Tensor((n, 1, 2), dtype="float32") = lv10
        else:
            lv11: R.Tensor((n, 1, 2), dtype="float32") = R.add(gv, lv6)
            lv12: R.Tensor((n, 1, 2), dtype="float32") = lv11
        with R.dataflow():
            lv13: R.Tensor((1, 1, 1), dtype="int64") = R.argmin(gv3, axis=None, keepdims=True)
            lv14: R.Tensor((n, 1, 2), dtype="float32") = R.round(lv12)
            lv15: R.Tensor((n, 1, 2), dtype="float32") = R.nn.relu(lv14)
            lv16: R.Tensor((n, 1, 2), dtype="bool") = R.greater_equal(lv14, R.const(1.1703764200210571, "float32"))
            gv6: R.Tensor((1, 1, 1), dtype="int64") = lv13
            gv7: R.Tensor((n, 1, 2), dtype="float32") = lv15
            gv8: R.Tensor((n, 1, 2), dtype="bool") = lv16
            R.output(gv6, gv7, gv8)
        return (gv6, gv7, gv8)
'''


def test_argmin_of_zeros_is_not_read_from_a_reused_storage():
    vm = relax.VirtualMachine(relax.build(from_source(_PROGRAM), target="llvm"), tvm.cpu())
    x1 = np.linspace(2.9, -2.2, 10, dtype="float32").reshape(5, 2, 1)
    for cond in (False, True):  # False: the branch whose round used the freed storage
        out = vm["main"](np.zeros((5, 4, 4, 4), "float32"), x1, np.array(cond))
        assert out[0].numpy().tolist() == [[[0]]]  # argmin of zeros: the first index
        lv12 = 2 * x1.transpose(0, 2, 1) if not cond else np.maximum(x1.transpose(0, 2, 1), 0)
        np.testing.assert_array_equal(out[1].numpy(), np.maximum(np.round(lv12), 0))

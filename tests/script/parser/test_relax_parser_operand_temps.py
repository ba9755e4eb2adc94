"""A nested operand's temporary in a dataflow block is a DataflowVar even when its fresh name is
the name the statement outputs (``lv2 = R.matmul(lv1, R.permute_dims(w1)) + b1`` with
``R.output(lv2)``: the permute_dims temp is named ``lv2`` too, as TVM names it)."""

from __future__ import annotations

from minitvm import relax
from minitvm.script import ir as I
from minitvm.script import relax as R


def test_operand_temp_named_like_the_output_stays_inside_the_block():
    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((4, 3), "float32")):
            with R.dataflow():
                lv = R.matmul(x, R.permute_dims(w)) + R.const(1.0, "float32")
                R.output(lv)
            return lv

    bindings = Mod["main"].body.blocks[0].bindings
    outputs = [b.var.name_hint for b in bindings if not isinstance(b.var, relax.DataflowVar)]
    assert len(bindings) == 3 and outputs == ["lv"]  # the permute_dims temp is named lv too
    assert bindings[-1].var is Mod["main"].body.body
    assert bindings[0].var.name_hint == "lv" and isinstance(bindings[0].var, relax.DataflowVar)
    text = Mod.script()
    assert "R.output(lv_1)" in text and "return lv_1" in text

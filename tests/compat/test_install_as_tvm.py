"""install_as_tvm: an unmodified TVM script runs against minitvm."""

import subprocess
import sys
import textwrap


def test_unmodified_tvm_script_runs():
    script = textwrap.dedent("""
        import minitvm.compat
        minitvm.compat.install_as_tvm()
        import numpy as np
        import tvm
        from tvm import relay
        import tvm.relay.testing
        from tvm.relay.transform import FoldConstant
        x = relay.var("x", shape=(2,))
        mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(1.0))))
        mod = FoldConstant()(mod)
        out = relay.create_executor("debug", mod=mod).evaluate()(np.ones(2, "float32"))
        assert tvm.__name__ == "minitvm" and out.numpy().tolist() == [2.0, 2.0]
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"

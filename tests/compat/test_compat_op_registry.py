"""minitvm's Relay operator registry against TVM v0.19's op list (tvm_relay_ops.txt): the
coverage may only grow, and every op we register under a TVM name is in TVM's list."""

import pathlib

import minitvm  # noqa: F401  (registers every op)
from minitvm.ir import Op

TVM_OPS = [line.strip() for line in
           (pathlib.Path(__file__).parent / "tvm_relay_ops.txt").read_text().splitlines()
           if line.strip() and not line.startswith("#")]
# The number of TVM's Relay ops minitvm registers; raise it as ops land, never lower it.
MIN_COVERED = 272


def _ours() -> set[str]:
    # other test files register throwaway "test.*" ops in the same process
    return {n for n in Op.list_op_names() if not n.startswith(("relax.", "test."))}


def missing_ops() -> list[str]:
    return sorted(set(TVM_OPS) - _ours())


def test_coverage_does_not_drop():
    covered = len(set(TVM_OPS) & _ours())
    assert covered >= MIN_COVERED, (
        f"{covered} of TVM's {len(TVM_OPS)} Relay ops are registered (was {MIN_COVERED}); "
        f"missing: {missing_ops()}")


def test_list_is_clean():
    assert len(TVM_OPS) == len(set(TVM_OPS)), "duplicate names in tvm_relay_ops.txt"


def _registered_by_minitvm() -> set[str]:
    """The ops ``import minitvm`` registers, read in a fresh process (other test files register
    throwaway ops of their own in this one)."""
    import subprocess
    import sys

    code = ("import minitvm; from minitvm.ir import Op; "
            "print('\\n'.join(Op.list_op_names()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    return {n for n in out.split() if not n.startswith("relax.")}


def test_our_extra_ops_are_known():
    # Ops we register that TVM's list lacks must be deliberate (minitvm-only helpers).
    extra = sorted(_registered_by_minitvm() - set(TVM_OPS))
    # vision.multiclass_nms: TFLite's regular detection NMS (per-class greedy NMS, then the
    # best max_detections across classes), which TVM's importer runs as a Python loop;
    # vision.onnx_roi_align: ONNX RoiAlign (half-pixel boxes, ONNX Runtime's max mode), which
    # TVM's vision.roi_align does not compute; linalg.cholesky_factor / lu_factor /
    # factored_solve: the loop kernels of torch.linalg's factorizations (TVM's importer has no
    # torch.linalg); nn.ctc_log_alpha: the CTC forward variables of torch's ctc_loss;
    # vm.update_row: a loop's step writing its row of a result in place (the ONNX RNNs over a
    # run-time length; TVM's importer selects over the whole result a step); run_time_check:
    # a run-time assert on sizes read from data (ONNX Split sizes that must add up; Relay has
    # none, TVM's importer leaves such sizes unchecked)
    allowed = {"dyn.nn.pad", "nn.fast_softmax", "vision.multiclass_nms",
               "vision.onnx_roi_align", "linalg.cholesky_factor", "linalg.lu_factor",
               "linalg.factored_solve", "nn.ctc_log_alpha", "vm.update_row", "run_time_check"}
    unexpected = [n for n in extra if n not in allowed and not n.startswith("dyn.")]
    assert not unexpected, f"ops registered under names TVM does not have: {unexpected}"

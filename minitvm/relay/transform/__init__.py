"""tvm.relay.transform: Relay passes (one module per pass) and the function-pass API."""
from .infer_type import InferType, InferTypeLocal
from .to_a_normal_form import ToANormalForm, ToANormalFormExpr  # noqa: E402,F401
from .to_basic_block_normal_form import ToBasicBlockNormalForm  # noqa: E402,F401
from .to_graph_normal_form import ToGraphNormalForm  # noqa: E402,F401
from .dead_code_elimination import DeadCodeElimination  # noqa: E402,F401
